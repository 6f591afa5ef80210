"""The README's command-line section against the real thing: every option of
`exotray … --help` is in its summary, and the two-agent example gives the output shown."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from helpers import free_port, wait_for

from exotray.cli_args import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(title)
    end = text.find("\n#", start + len(title))
    return text[start:end if end > 0 else None]


def _blocks(section: str) -> list[str]:
    return re.findall(r"```(?:sh)?\n(.*?)```", section, re.S)


def test_the_option_summary_lists_every_option():
    summary = _blocks(_section("### Command line"))[0]
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    commands = {"": parser, **sub.choices}
    for name, p in commands.items():
        lines = [ln for ln in summary.splitlines() if ln.startswith(f"exotray {name}".rstrip())]
        if name == "":  # the tray app's line: `exotray [--port N] ...`
            lines = [ln for ln in summary.splitlines() if ln.startswith("exotray [")]
        assert lines, f"no line for `exotray {name}` in the README's summary"
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
                f"`exotray {name}` {flags[0]} is not in the README's summary"


def _example() -> tuple[list[str], str]:
    """The example's commands (continuation lines joined) and its shown output."""
    section = _section("Two agents by hand")
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
