"""The README and docs/reference.md against the real thing: every option of
`exotray … --help` is in the reference's command-line summary, the README's two-agent
example gives the output shown, every `exotray` and `scripts/dev` command the README
shows parses as written, every path and link the documentation names exists, and the
reference lists every config key, event type, metric and limit."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import free_port, wait_for

from exotray.agent.base import limits
from exotray.agent.http import metrics
from exotray.cli.args import build_parser
from exotray.core.events import EVENT_TYPES
from exotray.core.settings import Settings, parse_capacity, parse_peer

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REFERENCE = ROOT / "docs" / "reference.md"
#: the README and the pages of docs/ it leads to (docs/design.md and docs/benchmarks.md
#: are link targets here, not checked themselves)
DOCS = [README, *(ROOT / "docs" / f"{name}.md"
                  for name in ("reference", "agent", "install", "tray", "exo", "testing"))]




def _section(path: Path, title: str) -> str:
    text = path.read_text()
    start = text.index(title)
    end = text.find("\n#", start + len(title))
    return text[start:end if end > 0 else None]


def _blocks(section: str) -> list[str]:
    return re.findall(r"```(?:sh)?\n(.*?)```", section, re.S)


def _first_cells(section: str) -> list[str]:
    """The first cell of each row of the section's tables (headers included)."""
    return re.findall(r"^\| (.+?) \|", section, re.M)


def test_the_option_summary_lists_every_option():
    summary = _blocks(_section(REFERENCE, "## Command line"))[0]
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    commands = {"": parser, **sub.choices}
    for name, p in commands.items():
        lines = [ln for ln in summary.splitlines() if ln.startswith(f"exotray {name}".rstrip())]
        if name == "":  # the tray app's line: `exotray [--port N] ...`
            lines = [ln for ln in summary.splitlines() if ln.startswith("exotray [")]
        assert lines, f"no line for `exotray {name}` in the reference's summary"
        i = summary.index(lines[0])
        block = summary[i:].split("\nexotray ", 1)[0]  # the command's continuation lines
        for action in p._actions:
            flags = [o for o in action.option_strings if o.startswith("--")] or \
                action.option_strings
            if not flags or flags[0] in ("-h", "--help") or action.help == "==SUPPRESS==":
                continue
            if name == "" and flags[0] == "--version":
                assert "exotray --version" in summary
                continue
            assert any(f in block for f in action.option_strings), \
                f"`exotray {name}` {flags[0]} is not in the reference's summary"


def _example() -> tuple[list[str], str]:
    """The example's commands (continuation lines joined) and its shown output."""
    section = _section(README, "Two agents by hand")
    script, output = _blocks(section)[:2]
    commands = [c.strip() for c in script.replace("\\\n", " ").splitlines() if c.strip()]
    return commands, output


def test_the_two_agent_example_is_safe_as_written():
    commands, _ = _example()
    agents = [shlex.split(c.split("2>")[0].rstrip(" &")) for c in commands
              if c.startswith("scripts/dev run agent")]
    assert len(agents) == 2

    def opt(argv: list[str], name: str) -> str:
        return argv[argv.index(name) + 1]

    for argv in agents:
        assert "--no-mdns" in argv  # never announce on the reader's real network
        assert opt(argv, "--bind") == "127.0.0.1"
    ports = [int(opt(a, "--port")) for a in agents]
    assert ports[0] != ports[1]
    assert opt(agents[0], "--peer") == f"127.0.0.1:{ports[1]}"
    assert opt(agents[1], "--peer") == f"127.0.0.1:{ports[0]}"
    assert opt(agents[0], "--state-dir") != opt(agents[1], "--state-dir")
    assert commands[0].startswith("scripts/dev run --version")  # one venv creation, first


def test_the_two_agent_example_gives_the_output_shown(tmp_path):
    """Run as written, with the program for `scripts/dev run`, free ports for the
    example's and tmp_path for /tmp."""
    commands, shown = _example()
    agent_lines = [c for c in commands if c.startswith("scripts/dev run agent")]
    old_ports = re.findall(r"--port (\d+)", " ".join(agent_lines))
    new_ports = {p: str(free_port()) for p in old_ports}
    procs = []
    try:
        for line in agent_lines:
            for old, new in new_ports.items():
                line = line.replace(old, new)
            line = line.replace("/tmp/", f"{tmp_path}/")
            argv = shlex.split(line.split("2>")[0].rstrip(" &"))
            log = open(line.split("2>")[1].split()[0], "wb")  # noqa: SIM115
            procs.append((subprocess.Popen([sys.executable, "-m", "exotray", *argv[2:]],
                                           stderr=log), log))
        status = [sys.executable, "-m", "exotray", "status", "--port",
                  new_ports[old_ports[0]]]
        seen: list[str] = []

        def as_shown() -> bool:
            seen.append(subprocess.run(status, capture_output=True, text=True,
                                       timeout=10).stdout)
            return _shape(seen[-1]) == _shape(shown)

        # Names and rates take a snapshot exchange or two; the README waits 3 s.
        assert wait_for(as_shown, 15, every=0.5), seen[-1]
    finally:
        for p, log in procs:
            p.terminate()
            p.wait(10)
            log.close()


def _shape(text: str) -> list[list[str]]:
    """The output up to the measured numbers."""
    return [re.sub(r"\d+(\.\d+)? (ms|kB/s|B/s|MB/s)", "N", ln).split()
            for ln in text.strip().splitlines()]


def _readme_commands() -> list[str]:
    """Every `exotray …` and `scripts/dev …` command of the README: the lines of its sh
    blocks (continuations joined, comments, `&`, `;` and redirections taken off) and its
    inline code."""
    text = README.read_text()
    found: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            found += re.split(r";|&&", line.split(" #")[0])
    prose = re.sub(r"```.*?```", "", text, flags=re.S).replace("\n", " ")
    found += re.findall(r"`([^`]+)`", prose)
    commands = []
    for c in found:
        c = re.sub(r"\s*2>\S+", "", re.sub(r"\s+", " ", c)).strip().rstrip("&").strip()
        if c == "exotray" or c.startswith(("exotray ", "scripts/dev")):
            commands.append(c)
    return commands


def _parses(args: list[str], command: str) -> None:
    """`exotray ARGS` as the program's parser takes it (a --peer or --capacity value as
    the agent's settings take it); `--version` and `--help` exit 0."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            ns = build_parser().parse_args(args)
    except SystemExit as e:
        assert e.code == 0, f"`{command}` does not parse: {err.getvalue().strip()}"
        return
    if ns.command == "agent":
        for spec in ns.peer:
            parse_peer(spec)
        for spec in ns.capacity:
            parse_capacity(spec)


def test_every_command_the_readme_shows_parses_as_written():
    commands = _readme_commands()
    for expected in ("scripts/dev run", "scripts/dev test", "scripts/dev run demo --saturate",
                     "scripts/dev run agent"):
        assert expected in commands  # the two commands it starts with; the tour's
    for command in commands:
        argv = shlex.split(command)
        if argv[0] == "scripts/dev":
            assert argv[1:2] in (["run"], ["test"], ["lint"]), \
                f"`{command}`: scripts/dev has run, test and lint"
            if argv[1] != "run":
                continue
            argv = argv[1:]  # `scripts/dev run ARGS` runs `exotray ARGS`
        _parses(argv[1:], command)


#: a path in this repository (`exotray/config.toml` in the platform's config dir is not)
_REPO_PATH = re.compile(r"(?:scripts|packaging|docs|tests|bench|\.ci|"
                        r"exotray/(?:core|agent|ui|cli))(?:/[\w./-]*)?")


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", m.strip().lower()).replace(" ", "-")
            for m in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_and_link_it_names_exists(doc: Path):
    text = doc.read_text()
    prose = re.sub(r"```.*?```", "", text, flags=re.S).replace("\n", " ")
    for span in re.findall(r"`([^`]+)`", prose):
        if _REPO_PATH.fullmatch(span):
            assert (ROOT / span).exists(), f"{doc.name} names `{span}`, which does not exist"
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):  # https:// and the like
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        assert file.exists(), f"{doc.name} links to {target}, which does not exist"
        if anchor:
            assert anchor in _anchors(file), f"{doc.name} links to {target}: no such heading"


def _cell_value(cell: str) -> object:
    """A default as the table writes it: 52480, 0.9, `true`, `"stream"`, `[]`; None for
    words."""
    cell = cell.strip()
    if re.fullmatch(r"-?\d+(\.\d+)?", cell):
        return float(cell)
    m = re.fullmatch(r"`(true|false|\[\]|\"[^\"]*\")`", cell)
    if m is None:
        return None
    return {"true": True, "false": False, "[]": ()}.get(m.group(1), m.group(1).strip('"'))


def test_the_reference_lists_every_config_key_with_its_default():
    section = _section(REFERENCE, "## Config file")
    rows = {m.group(1): m.group(2) for m in
            re.finditer(r"^\| `(\w+)` \| [^|]*(?:\\\|[^|]*)* \| ([^|]+) \|", section, re.M)}
    assert set(rows) == {f.name for f in dataclasses.fields(Settings)}
    defaults = Settings()
    for key, cell in rows.items():
        shown = _cell_value(cell)
        if shown is not None:
            actual = getattr(defaults, key)
            assert (float(actual) if isinstance(shown, float) else actual) == shown, \
                f"config key {key}: the reference says {cell.strip()}, the default is {actual!r}"


def test_the_reference_lists_every_event_type():
    cells = _first_cells(_section(REFERENCE, "## Events"))
    assert set(re.findall(r"`(\w+)`", " ".join(cells))) == set(EVENT_TYPES)


def test_the_reference_lists_every_metric():
    names = set()
    for kind, name in re.findall(r'(Gauge|Counter|Info)MetricFamily\(\s*f?"([^"]+)"',
                                 inspect.getsource(metrics)):
        suffix = {"Gauge": "", "Counter": "_total", "Info": "_info"}[kind]
        for stat in ("median", "min", "max", "p90") if "{stat}" in name else ("",):
            names.add(name.replace("{stat}", stat) + suffix)
    assert len(names) > 10
    cells = _first_cells(_section(REFERENCE, "## Prometheus, export"))
    assert set(re.findall(r"`(exotray_\w+)`", " ".join(cells))) == names


#: each limit: the start of its row in the reference's Limits table, and how its value
#: is written there ({} is the value: a number, MiB for bytes)
LIMIT_ROWS = {
    "MAX_PEERS": ("peers in the table", "| {} |"),
    "MAX_WAITING_PEERS": ("peers in the table", "up to {} waiting"),
    "NEVER_UP_EVICT_S": ("peers in the table", "within {} s of it"),
    "MAX_ADDRESSES_PER_RECORD": ("addresses taken from one mDNS record", "| {} |"),
    "MAX_LINKS_PER_PEER": ("links per peer", "| {} |"),
    "MAX_MDNS_PEERS_PER_ADDRESS": ("mDNS peers announcing one address", "| {} |"),
    "NEVER_UP_FORGET_S": ("an mDNS peer that never answers a probe", "forgotten after {} s"),
    "UNANSWERED_PROBES_PER_S": ("probes to addresses that never answered one",
                                "| {} a second in all"),
    "MAX_RESOLVING": ("mDNS services being resolved / waiting", "| {} / "),
    "MAX_RESOLVE_QUEUE": ("mDNS services being resolved / waiting", " / {} |"),
    "MAX_KNOWN_SERVICES": ("mDNS service names remembered", "| {} ("),
    "MAX_FETCHES": ("snapshot fetches and stream openings at once", "| {} |"),
    "MAX_STREAM_FRAMES_PER_S": ("frames a followed stream brings", "| {} a second"),
    "STREAM_FRAMES_BURST": ("frames a followed stream brings", "in bursts of {} ("),
    "MAX_CLIENT_CONNECTIONS": ("outgoing HTTP connections", "| {} ("),
    "MAX_CLIENT_KEEPALIVE": ("outgoing HTTP connections", "({} kept alive)"),
    "MAX_CLUSTER_LINKS_PER_NODE": ("a peer's links / interfaces shown", "| {} / "),
    "MAX_CLUSTER_IFACES_PER_NODE": ("a peer's links / interfaces shown", " / {} |"),
    "MAX_CONNECTIONS_PER_SOURCE": ("TCP connections from one LAN address", "| {} / "),
    "MAX_LAN_CONNECTIONS": ("TCP connections from one LAN address", " / {} / "),
    "MAX_LOOPBACK_CONNECTIONS": ("TCP connections from one LAN address", " / {} |"),
    "HEADER_TIMEOUT_S": ("time to send a whole request head", "| {} s |"),
    "KEEPALIVE_S": ("idle keep-alive connection", "| {} s |"),
    "SEND_TIMEOUT_S": ("a response the client does not read", "| {} s |"),
    "MAX_VIEWS_HELD": ("renderings of `/v1/cluster` in memory", "| {} |"),
    "CAPTEST_SESSIONS_PER_SOURCE": ("capacity-test sessions per LAN address", "| {} per "),
    "CAPTEST_WINDOW_S": ("capacity-test sessions per LAN address", " per {} s |"),
    "EVENTS_FILE_MAX_BYTES": ("the `--events` file", "| {} MiB |"),
    "FLAP_CHANGES": ("a peer's changes of state", "| more than {} within"),
    "FLAP_WINDOW_S": ("a peer's changes of state", " within {} s |"),
    "FLAP_HOLD_S": ("a peer's changes of state", " one of each per {} s"),
    "MAX_EXO_READ_BYTES": ("the parts of exo's `/state` decoded", "| {} MiB |"),
    "MAX_EXO_PEERS_PER_INSTANCE": ("ring neighbours (or RDMA devices) kept per exo", "| {} |"),
    "MAX_EXO_TB_PORTS": ("this node's Thunderbolt receptacles kept from exo", "| {} |"),
    "MAX_EXO_TB_CYCLES": ("Thunderbolt Bridge loops of exo", "| {} |"),
    "MAX_EVENTS_PER_PEER_PER_DAY": ("events of one peer (or of this node's own)", "| {} |"),
    "MAX_UNSTORED_EVENTS": ("events waiting for a history database", "| {} |"),
    "MAX_LAN_HISTORY_READS": ("history reads (`/v1/history`", "| {} |"),
    "MAX_LAN_HISTORY_POINTS": ("rows in one history answer to a LAN client", "| {} |"),
    "MAX_LOCAL_HISTORY_READS": ("history reads running at once from loopback", "| {} |"),
}


def test_the_reference_lists_every_limit_with_its_value():
    section = _section(REFERENCE, "## Limits")
    bounds = {name: value for name, value in vars(limits).items()
              if name.isupper() and isinstance(value, int | float)}
    assert set(bounds) == set(LIMIT_ROWS), "a limit without its row here, or the reverse"
    for name, (row_start, written) in LIMIT_ROWS.items():
        rows = [ln for ln in section.splitlines() if ln.startswith(f"| {row_start}")]
        assert rows, f"no row for {name} ({row_start!r}) in the reference's Limits"
        value = bounds[name] / (1 << 20) if name.endswith("_BYTES") else bounds[name]
        assert written.format(f"{value:g}") in rows[0], \
            f"{name} = {bounds[name]}: the reference's row says {rows[0]!r}"
