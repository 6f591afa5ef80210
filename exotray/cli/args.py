"""The command line's arguments: the parser of every sub-command (`build_parser`) and
the agent's settings from its options and config file (`settings_from_args`). The
commands themselves are in cli/main.py (what starts a process) and cli/reads.py (what asks a
running agent)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from exotray import __version__
from exotray.core import configfile, fmt, paths
from exotray.core.settings import (
    CAPTEST_SECONDS,
    CAPTEST_STREAMS,
    DEFAULT_PORT,
    SHARING,
    Settings,
    SettingsError,
    load_file,
    parse_capacity,
    parse_peer,
)


def default_config_path() -> Path:
    return paths.config_file()


def units_preference(config: Path | None = None) -> str:
    """The user's unit system for rates, "bytes" or "bits": `units` in the config file
    (the tray app's Preferences save it there), else bytes. A file the agent would
    refuse is the agent's to report; here it only means no preference."""
    try:
        value = load_file(config or default_config_path()).get("units")
    except SettingsError:
        return "bytes"
    return value if value in fmt.UNITS else "bytes"


def _units_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--units", choices=fmt.UNITS,
                   help="show rates, speeds and capacities in bytes/s or bits/s (default: "
                        "`units` in the config file, as the tray app's Preferences set it; "
                        "else bytes)")


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


#: `prometheus-sd --refresh`: at least a second (each rewrite asks the agent for the whole
#: cluster view), at most a day
SD_REFRESH_S = (1.0, 86400.0)

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
        base = configfile.read(config, base)  # names the file, the line and the key
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
    _units_option(it)
    it.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    it.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    me = sub.add_parser("measure", help="measure a link's capacity with a bulk TCP transfer")
    me.add_argument("peer", help="the peer's name, id, address or address:port")
    me.add_argument("--interface", help="which of our interfaces (when several reach it)")
    me.add_argument("--seconds", type=_ranged(float, *CAPTEST_SECONDS, " s"), default=5.0,
                    help=f"per direction, {CAPTEST_SECONDS[0]:g}..{CAPTEST_SECONDS[1]:g} s "
                         "(default 5)")
    me.add_argument("--streams", type=_ranged(int, *CAPTEST_STREAMS), default=4,
                    help=f"parallel TCP streams, {CAPTEST_STREAMS[0]}..{CAPTEST_STREAMS[1]} "
                         "(default 4)")
    me.add_argument("--state-dir", help="the local agent's state dir (for its control token)")
    _units_option(me)
    me.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    me.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    sd = sub.add_parser("prometheus-sd",
                        help="write a Prometheus file_sd_configs file of every agent")
    sd.add_argument("--output", "-o", help="file to keep up to date (default: stdout)")
    sd.add_argument("--refresh", type=_ranged(float, *SD_REFRESH_S, " s"), default=30.0,
                    metavar="SECONDS",
                    help=f"seconds between rewrites, {SD_REFRESH_S[0]:g}..{SD_REFRESH_S[1]:g} "
                         "(default 30)")
    sd.add_argument("--once", action="store_true", help="write once and exit")
    sd.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    sd.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    dr = sub.add_parser("doctor", help="why is the cluster slow: checks, each pass, warn or "
                                       "fail, with what to do (exit 1 when one fails)")
    dr.add_argument("--json", action="store_true",
                    help='print {"checks": [{"id", "status", "summary", "fix", "nodes", '
                         '"links"}]}')
    dr.add_argument("--active", action="store_true",
                    help="first measure, as `exotray measure` does (5 s each way, at most 3 "
                         "links), this node's links that carry traffic of an unknown "
                         "capacity, then check again; asks first on a terminal, runs "
                         "nothing elsewhere without --yes (no MTU probe: the agent checks "
                         "path MTUs itself)")
    dr.add_argument("--yes", "-y", action="store_true",
                    help="with --active: run its tests without asking")
    dr.add_argument("--state-dir", help="the local agent's state dir (for its control token, "
                                        "with --active)")
    _units_option(dr)
    dr.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    dr.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    st = sub.add_parser("status", help="the cluster as the local agent sees it")
    st.add_argument("--json", action="store_true", help="print /v1/cluster as JSON")
    _units_option(st)
    st.add_argument("--port", type=PORT, default=DEFAULT_PORT, help="the local agent's port")
    st.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    return parser
