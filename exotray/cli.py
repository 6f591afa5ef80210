"""Command line: `exotray` (tray app), `exotray agent`, `exotray status`."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from exotray import __version__
from exotray.core import paths
from exotray.core.settings import (
    CAPTEST_SECONDS,
    CAPTEST_STREAMS,
    DEFAULT_PORT,
    EXIT_CONFIG,
    LOG_FORMAT,
    SHARING,
    Settings,
    SettingsError,
    from_mapping,
    load_file,
    parse_capacity,
    parse_peer,
)
from exotray.core.status import diagnostics, status_lines  # noqa: F401 (diagnostics: re-exported)


def default_config_path() -> Path:
    return paths.config_file()


def _ranged(kind: type, lo: float, hi: float, unit: str = "") -> Callable[[str], float]:
    """An argparse type: a number of `kind` within lo..hi, else an error naming the range."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not (math.isfinite(value) and lo <= value <= hi):
            raise argparse.ArgumentTypeError(f"must be {lo:g}..{hi:g}{unit}, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse's "invalid int value" wording, if ever used
    return parse


#: an agent's port: 1..65535 (0, "any free port", would leave peers and the tray unable to
#: find it, and the capacity test's port is derived from it)
PORT = _ranged(int, 1, 65535)


def _agent_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("agent", help="run the headless agent (measures, shares, serves the API)")
    p.add_argument("--name", help="this node's name (default: host name)")
    p.add_argument("--port", type=PORT,
                   help=f"TCP and UDP port, 1..65535 (default {DEFAULT_PORT}); the agent's "
                        "only fixed port")
    p.add_argument("--bind", help="address to listen on (default 0.0.0.0)")
    p.add_argument("--interval", type=float, help="sampling interval in seconds (default 1)")
    p.add_argument("--peer", action="append", default=[], metavar="HOST:PORT",
                   help="a peer to monitor without mDNS (repeatable)")
    p.add_argument("--no-mdns", action="store_true", help="do not discover peers with mDNS")
    p.add_argument("--mdns-interface", action="append", default=[], metavar="ADDR",
                   help="limit mDNS to the interface with this address (repeatable)")
    p.add_argument("--capacity", action="append", default=[], metavar="IFACE=MBIT",
                   help="capacity of an interface in Mbit/s, overriding what the OS says")
    p.add_argument("--threshold", type=float, help="utilization that counts as saturated (0.9)")
    p.add_argument("--sustain", type=float, help="seconds above threshold before saturated (3)")
    p.add_argument("--clear", type=float, help="seconds below threshold-0.05 before cleared (5)")
    p.add_argument("--events", metavar="FILE|-", help="append events as JSON lines ('-': stdout)")
    p.add_argument("--config", metavar="FILE",
                   help=f"TOML settings file (default {default_config_path()} if it exists)")
    p.add_argument("--state-dir", metavar="DIR", help="where the node id and tokens live")
    p.add_argument("--key-file", metavar="FILE",
                   help="cluster key: snapshots and probes are authenticated (HMAC) and "
                        "peers without the key are refused")
    p.add_argument("--sharing", choices=SHARING,
                   help="how peers share snapshots: stream (default: one connection per "
                        "peer pushing what changed) or poll (the previous protocol: fetch "
                        "each peer's snapshot every interval); the two interoperate")
    p.add_argument("--exo-url", metavar="URL",
                   help="the local exo node's API, to see which links exo uses "
                        "(default http://127.0.0.1:52415; \"\" = off)")
    p.add_argument("--history-days", type=_ranged(float, 0, 3650, " days"), metavar="DAYS",
                   help="days of history kept in the state dir's database (default 30; 0: "
                        "none, the last hour in memory only)")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")


def settings_from_args(args: argparse.Namespace) -> Settings:
    base = Settings()
    config = args.config or (str(default_config_path()) if default_config_path().exists() else None)
    if config:
        base = from_mapping(load_file(config), base)
    over: dict = {}
    for opt, key in (("name", "name"), ("port", "port"), ("bind", "bind"),
                     ("interval", "interval"), ("threshold", "threshold"),
                     ("sustain", "sustain"), ("clear", "clear"), ("events", "events"),
                     ("state_dir", "state_dir"), ("key_file", "key_file"),
                     ("sharing", "sharing"), ("exo_url", "exo_url"),
                     ("history_days", "history_days")):
        value = getattr(args, opt)
        if value is not None:
            over[key] = value
    if args.peer:
        for spec in args.peer:
            parse_peer(spec)
        over["peers"] = tuple(base.peers) + tuple(args.peer)
    if args.no_mdns:
        over["mdns"] = False
    if args.mdns_interface:
        over["mdns_interfaces"] = tuple(args.mdns_interface)
    if args.capacity:
        caps = dict(base.capacity)
        for spec in args.capacity:
            iface, mbit = parse_capacity(spec)
            caps[iface] = mbit
        over["capacity"] = caps
    settings = replace(base, **over).validate()
    if settings.port == 0:
        raise SettingsError("port 0 (any free port) cannot be used: peers, the tray app and "
                            "`exotray status` find an agent by its port; give 1..65535")
    return settings


def cmd_agent(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format=LOG_FORMAT,
        stream=sys.stderr,
    )
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        settings = settings_from_args(args)
    except SettingsError as e:
        print(f"exotray agent: {e}", file=sys.stderr)
        return EXIT_CONFIG
    from exotray.agent.main import run
    from exotray.agent.runtime import ClusterKeyError, StartError
    from exotray.appnap import keep_timers_on_time

    keep_timers_on_time("exotray agent: probing and sampling links every interval")

    config_file = Path(args.config) if args.config else default_config_path()
    try:
        import asyncio  # here, not at the top: the tray app never needs it (nor ssl)

        return asyncio.run(run(settings, config_file))
    except ClusterKeyError as e:
        # 1, not EXIT_CONFIG: the file to fix is the key file, which the tray app does
        # not watch; it retries (with backoff) and shows this line meanwhile.
        print(f"exotray agent: {e}", file=sys.stderr)
        return 1
    except StartError as e:  # the port, the state dir, the events file: each by name
        print(f"exotray agent: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"exotray agent: {e}", file=sys.stderr)
        return 1


def _show(args: argparse.Namespace, path: str, lines) -> int:
    """GET `path` from the local agent: as JSON with --json, else as `lines` renders it.
    A reader that stops early (`| head`) ends the output quietly, not with a traceback."""
    answer = _get(args, path)
    try:
        if args.json:
            json.dump(answer, sys.stdout, indent=2)
            print()
        else:
            print("\n".join(lines(answer)))
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    return _show(args, "/v1/cluster", status_lines)


def cmd_interfaces(args: argparse.Namespace) -> int:
    from exotray.core.status import interface_lines

    return _show(args, "/v1/interfaces", interface_lines)


def _get(args: argparse.Namespace, path: str, **params: object) -> dict:
    """GET from the local agent, or exit with a clear message."""
    import httpx

    url = f"http://{args.host}:{args.port}{path}"
    try:
        r = httpx.get(url, params=params, timeout=5.0, trust_env=False)
    except httpx.HTTPError as e:
        raise SystemExit(f"exotray {args.command}: no exotray agent answered at {args.host}:"
                         f"{args.port} ({e}).\nStart one with `exotray agent` (or the tray "
                         "app), or give --port.") from None
    if r.status_code != 200:
        try:
            detail = r.json().get("error", r.text)
        except ValueError:
            detail = r.text
        raise SystemExit(f"exotray: {path}: {detail}")
    return r.json()


def _find_link(cluster: dict, wanted: str) -> dict:
    """A link of this node by id, peer name or peer address."""
    links = cluster["nodes"][0]["links"]
    hits = [lk for lk in links if wanted in (lk["id"], lk.get("peer_name"),
                                             lk["peer_address"])]
    if len(hits) == 1:
        return hits[0]
    choices = ", ".join(f"{lk['id']} ({lk.get('peer_name') or lk['peer_address']} via "
                        f"{lk.get('local_interface')})" for lk in links) or "none"
    what = "is ambiguous" if hits else "matches no link of this node"
    raise SystemExit(f"exotray export: {wanted!r} {what}; links: {choices}")


#: rows an export asks the agent for at most (its /v1/history bound)
EXPORT_POINTS = 50_000
#: one request's stretch: its 1-minute rows (and the finer tiers' newest minutes) fit in
#: EXPORT_POINTS, so a retention over ~34 days comes in several answers, never averaged
EXPORT_WINDOW_S = (EXPORT_POINTS - 1000) * 60.0


def _export_history(args: argparse.Namespace, link_id: str, seconds: float) -> dict:
    """The link's history of the last `seconds`, every row of its tier: one answer per
    EXPORT_WINDOW_S, newest first (the agent's clock ends the newest), joined oldest
    first."""
    newest = _get(args, "/v1/history", link=link_id, seconds=min(seconds, EXPORT_WINDOW_S),
                  points=EXPORT_POINTS)
    parts, start, end = [newest], newest["until"] - seconds, newest["since"]
    while end > start:
        since = max(start, end - EXPORT_WINDOW_S)
        part = _get(args, "/v1/history", link=link_id, since=since, until=end - 0.001,
                    points=EXPORT_POINTS)
        if part["t"]:
            parts.append(part)
        end = since
    hist = dict(newest, since=newest["until"] - seconds)
    for key, values in newest.items():
        if isinstance(values, list):
            hist[key] = [v for part in reversed(parts) for v in part.get(key, [])]
    return hist


def cmd_export(args: argparse.Namespace) -> int:
    from exotray.core import export

    try:
        seconds = export.parse_since(args.since)
    except ValueError as e:
        print(f"exotray export: {e}", file=sys.stderr)
        return 2
    link = _find_link(_get(args, "/v1/cluster"), args.link)
    # Every row of the range's tier (e.g. 30 days at 1 min: 43200), in as few answers
    # as fit the agent's bound.
    hist = _export_history(args, link["id"], seconds)
    fmt_ = args.format or ("json" if args.output and args.output.endswith(".json") else "csv")
    text = export.to_json(hist, link) if fmt_ == "json" else export.to_csv(hist)
    if args.output and args.output != "-":
        try:
            Path(args.output).write_text(text)
        except OSError as e:
            print(f"exotray export: cannot write {args.output}: {e.strerror or e}",
                  file=sys.stderr)
            return 1
        print(f"wrote {len(hist['t'])} rows of {link.get('peer_name') or link['peer_address']}"
              f" via {link.get('local_interface')} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_measure(args: argparse.Namespace) -> int:
    import httpx

    _get(args, "/v1/snapshot")  # an agent answers (or exit saying so) before "measuring…"
    state = Path(args.state_dir) if args.state_dir else paths.state_dir()
    token = paths.read_token(state)
    if token is None:
        print(f"exotray measure: no control token in {state} (is the agent running as this "
              "user? give --state-dir)", file=sys.stderr)
        return 1
    body = {"peer": args.peer, "seconds": args.seconds, "streams": args.streams}
    if args.interface:
        body["interface"] = args.interface
    print(f"measuring the link to {args.peer} for about {2 * args.seconds:g} s…",
          file=sys.stderr)
    try:
        r = httpx.post(f"http://{args.host}:{args.port}/v1/control/measure", json=body,
                       headers={"authorization": f"Bearer {token}"},
                       timeout=2 * args.seconds + 30, trust_env=False)
    except httpx.HTTPError as e:
        print(f"exotray measure: no exotray agent answered at {args.host}:{args.port} ({e})",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the agent sees the connection close and stops the test
        print("exotray measure: interrupted; the test is cancelled", file=sys.stderr)
        return 130
    data = r.json()
    if r.status_code != 200:
        print(f"exotray measure: {data.get('error', r.text)}", file=sys.stderr)
        return 1
    print(f"{data.get('peer_name') or data['peer']} via {data['interface']}: "
          f"{data['up_mbit_s']} Mbit/s up, {data['down_mbit_s']} Mbit/s down "
          f"({data['streams']} streams, {data['seconds']:g} s each way); now the capacity "
          f"of {data['interface']}")
    return 0


def cmd_prometheus_sd(args: argparse.Namespace) -> int:
    import time

    from exotray.core.sd import file_sd

    while True:
        groups = file_sd(_get(args, "/v1/cluster"), args.port)
        text = json.dumps(groups, indent=1) + "\n"
        if args.output in (None, "-"):
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            out = Path(args.output)
            tmp = out.with_name(out.name + ".tmp")
            try:
                tmp.write_text(text)
                tmp.replace(out)  # Prometheus never reads a half-written file
            except OSError as e:
                tmp.unlink(missing_ok=True)
                print(f"exotray prometheus-sd: cannot write {out}: {e.strerror or e}",
                      file=sys.stderr)
                return 1
        if args.once:
            return 0
        try:
            time.sleep(args.refresh)
        except KeyboardInterrupt:
            return 0


def _gui_missing() -> str | None:
    import importlib.util

    try:
        import PySide6.QtWidgets  # noqa: F401
        # Looked up, not imported: pyqtgraph and numpy (~45 MiB) load with the window.
        if importlib.util.find_spec("pyqtgraph") is None:
            raise ImportError(name="pyqtgraph")
    except ImportError as e:
        return (f"exotray: the tray app cannot load its GUI ({e.name} is missing from this "
                "install): reinstall exotray (pip install --force-reinstall exotray). On a "
                "server, run `exotray agent`.")
    return None


def _no_display() -> str | None:
    """Qt aborts the process when it has no display to open; say so before it does."""
    if sys.platform in ("darwin", "win32") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return ("exotray: no display (neither DISPLAY nor WAYLAND_DISPLAY is set): the tray app "
            "needs a desktop session. Run `exotray agent` for the headless agent.")


def cmd_tray(args: argparse.Namespace) -> int:
    for problem in (_gui_missing(), _no_display()):
        if problem is not None:
            print(problem, file=sys.stderr)
            return 2
    from exotray.ui.lean import forget_module_sources

    forget_module_sources()  # before the app's imports (~12 MiB of source lines)
    from exotray.ui.app import main as tray_main

    agent_args = ["--no-mdns"] if args.no_mdns else []
    if args.state_dir:
        agent_args += ["--state-dir", args.state_dir]
    return tray_main(port=args.port, agent_args=agent_args,
                     state_dir=Path(args.state_dir) if args.state_dir else None,
                     dashboard=args.dashboard, verbose=args.verbose)


def cmd_demo(args: argparse.Namespace) -> int:
    for problem in (_gui_missing(), _no_display()):
        if problem is not None:
            print(problem, file=sys.stderr)
            return 2
    from exotray.ui.demo import main as demo_main

    return demo_main(saturate=args.saturate, seconds=args.seconds, verbose=args.verbose)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exotray", description="See your cluster's network: links, RTT, load, saturation."
    )
    parser.add_argument("--version", action="version", version=f"exotray {__version__}")
    parser.add_argument("--port", type=PORT, default=DEFAULT_PORT,
                        help="the local agent's port (tray app)")
    parser.add_argument("--no-mdns", action="store_true",
                        help="start the local agent with mDNS off (tray app)")
    parser.add_argument("--state-dir", metavar="DIR",
                        help="the local agent's state dir (tray app; default: platform's)")
    parser.add_argument("--dashboard", action="store_true",
                        help="open the dashboard window at start (tray app)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging, libraries' too (tray app)")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="three agents on loopback and the window, to try it out")
    demo.add_argument("--saturate", action="store_true",
                      help="drive one link into saturation with a paced transfer")
    demo.add_argument("--seconds", type=float, default=0,
                      help="quit after this long (0: when the window closes)")
    demo.add_argument("-v", "--verbose", action="store_true",
                      help="debug logging, libraries' too (e.g. every HTTP request)")
    _agent_parser(sub)
    ex = sub.add_parser("export", help="a link's history as CSV or JSON (units in the header)")
    ex.add_argument("link", help="link id, or the peer's name or address")
    ex.add_argument("--since", default="10m",
                    help="how far back: 90s, 10m, 1h, 30d (default 10m; the agent keeps "
                         "history_days, full resolution for 6 h, then 10 s and 1 min rows)")
    ex.add_argument("--format", choices=["csv", "json"],
                    help="default: from --output's extension, else csv")
    ex.add_argument("--output", "-o", help="file to write (default: stdout)")
    ex.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    ex.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    it = sub.add_parser("interfaces",
                        help="what the local agent knows of each interface: kind, speed, "
                             "capacity and its source, bridge members, counters")
    it.add_argument("--json", action="store_true", help="print /v1/interfaces as JSON")
    it.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    it.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    me = sub.add_parser("measure", help="measure a link's capacity with a bulk TCP transfer")
    me.add_argument("peer", help="the peer's name, id or address")
    me.add_argument("--interface", help="which of our interfaces (when several reach it)")
    me.add_argument("--seconds", type=_ranged(float, *CAPTEST_SECONDS, " s"), default=5.0,
                    help=f"per direction, {CAPTEST_SECONDS[0]:g}..{CAPTEST_SECONDS[1]:g} s "
                         "(default 5)")
    me.add_argument("--streams", type=_ranged(int, *CAPTEST_STREAMS), default=4,
                    help=f"parallel TCP streams, {CAPTEST_STREAMS[0]}..{CAPTEST_STREAMS[1]} "
                         "(default 4)")
    me.add_argument("--state-dir", help="the local agent's state dir (for its control token)")
    me.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    me.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    sd = sub.add_parser("prometheus-sd",
                        help="write a Prometheus file_sd_configs file of every agent")
    sd.add_argument("--output", "-o", help="file to keep up to date (default: stdout)")
    sd.add_argument("--refresh", type=float, default=30.0, help="seconds between rewrites")
    sd.add_argument("--once", action="store_true", help="write once and exit")
    sd.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    sd.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    st = sub.add_parser("status", help="the cluster as the local agent sees it")
    st.add_argument("--json", action="store_true", help="print /v1/cluster as JSON")
    st.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    st.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # with the usage of the subcommand they were given to, not the top level's
        subparsers = next(a for a in parser._actions
                          if isinstance(a, argparse._SubParsersAction))
        parser = subparsers.choices.get(args.command, parser)
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "agent":
        return cmd_agent(args)
    if args.command == "status":
        return cmd_status(args)
    if args.command == "demo":
        return cmd_demo(args)
    if args.command == "export":
        return cmd_export(args)
    if args.command == "interfaces":
        return cmd_interfaces(args)
    if args.command == "measure":
        return cmd_measure(args)
    if args.command == "prometheus-sd":
        return cmd_prometheus_sd(args)
    return cmd_tray(args)


if __name__ == "__main__":
    sys.exit(main())
