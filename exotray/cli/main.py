"""Command line: `exotray` (tray app), `exotray agent`, `exotray status`.

This module is the entry point (`main`) and the commands that start something: the
agent, the tray app, the demo. The arguments and the agent's settings are in
cli/args.py, the commands that ask a running agent in cli/reads.py."""

from __future__ import annotations

import argparse
import logging
import re
import sys
from pathlib import Path

from exotray.cli.args import build_parser, default_config_path, settings_from_args
from exotray.cli.reads import (
    cmd_export,
    cmd_interfaces,
    cmd_measure,
    cmd_prometheus_sd,
    cmd_status,
)
from exotray.core.settings import EXIT_CONFIG, LOG_FORMAT, SettingsError


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


def _gui_missing() -> str | None:
    import importlib.util

    try:
        import PySide6.QtWidgets  # noqa: F401
        # Looked up, not imported: pyqtgraph and numpy (~45 MiB) load with the window.
        if importlib.util.find_spec("pyqtgraph") is None:
            raise ImportError(name="pyqtgraph")
    except ImportError as e:
        return gui_import_problem(e)
    return None


def gui_import_problem(e: ImportError) -> str:
    """What to do when the GUI does not import: a system library Qt links is missing (a
    machine without a desktop), or a part of this install is."""
    from exotray.cli.display import debian_package

    lib = re.search(r"(lib\S+\.so[.\d]*): cannot open shared object file", str(e))
    if lib:
        return (f"exotray: the tray app cannot load Qt: {lib[1]} is missing (Debian/Ubuntu: "
                f"apt install {debian_package(lib[1])}). On a server, run `exotray agent`.")
    return (f"exotray: the tray app cannot load its GUI ({e.name} is missing from this "
            "install): reinstall exotray (pip install --force-reinstall exotray). On a "
            "server, run `exotray agent`.")


def _no_display() -> str | None:
    """Qt aborts the process when it has no display to open; say so before it does."""
    from exotray.cli import display

    return display.problem()


def _cannot_show() -> str | None:
    """Why the tray app or the demo cannot show anything here: no display first (on a
    server that is the news, whatever else is missing), then Qt that does not load."""
    for check in (_no_display, _gui_missing):
        if (problem := check()) is not None:
            return problem
    return None


def cmd_tray(args: argparse.Namespace) -> int:
    if (problem := _cannot_show()) is not None:
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
    if (problem := _cannot_show()) is not None:
        print(problem, file=sys.stderr)
        return 2
    from exotray.ui.demo import main as demo_main

    return demo_main(saturate=args.saturate, seconds=args.seconds, verbose=args.verbose)


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
    if args.command == "doctor":
        from exotray.cli.doctor import cmd_doctor

        return cmd_doctor(args)
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
