"""The most a wired Linux NIC can negotiate: its supported link modes over ethtool
(ETHTOOL_GLINKSETTINGS through pyroute2's Ethtool). Blocks: call it off the event loop.

The query runs in a short-lived child process (`python -m exotray.agent.hw.ethtool
IFNAME`, printing the answer as JSON): pyroute2 costs an agent ~7.6 MiB for as long as
it runs, for an answer that changes only when the NIC does. hwread.LinuxReader asks
again only when a wired interface appears, is re-created or renegotiates
(docs/design.md, "Memory"). A frozen bundle has no `python -m`: it asks in-process.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from exotray.agent.hw.linux import _require_off_loop

log = logging.getLogger(__name__)

#: an ethtool link mode name ("10000baseT/Full", "2500baseX/Full", "100000baseCR4/Full")
_LINK_MODE = re.compile(r"^(\d+)base", re.IGNORECASE)
#: the child's time to start, import pyroute2 and ask (a loaded machine: seconds)
CHILD_TIMEOUT_S = 20.0
_said: set[str] = set()


def max_mode_mbit(modes: Iterable[object]) -> int | None:
    """The fastest of a NIC's supported link modes, in Mbit/s; None when none is named."""
    speeds = [int(m.group(1)) for x in modes
              if isinstance(x, str) and (m := _LINK_MODE.match(x))]
    return max(speeds) if speeds else None


def read_max_mbit(ifname: str, ethtool_factory: Any = None) -> int | None:
    """The most a wired NIC can negotiate: its supported link modes over ethtool. None
    without pyroute2, for virtual devices (they list none) and on any error. With
    `ethtool_factory` (tests' seam) or frozen, in this process; else in a child.
    Blocks: call it off the loop."""
    _require_off_loop()
    if ethtool_factory is not None or getattr(sys, "frozen", False):
        return _ask(ifname, ethtool_factory)
    return _ask_child(ifname)


def _ask(ifname: str, ethtool_factory: Any = None) -> int | None:
    if ethtool_factory is None:
        try:
            from pyroute2.ethtool import Ethtool as ethtool_factory
        except ImportError:
            return None
    try:
        tool = ethtool_factory()
    except Exception:
        return None
    try:
        return max_mode_mbit(tool.get_link_mode(ifname).supported_modes or ())
    except Exception:  # no such device, not supported by the driver
        return None
    finally:
        tool.close()


def _say_once(what: str, detail: str) -> None:
    if what not in _said:
        _said.add(what)
        log.warning("ethtool link modes: %s (%s); the NIC's maximum speed stays unknown",
                    what, detail)


def child_command(ifname: str) -> list[str]:
    return [sys.executable, "-m", __name__, ifname]


def _ask_child(ifname: str) -> int | None:
    """The answer of a child process (None when it fails, says so once per kind)."""
    root = str(Path(__file__).resolve().parents[2])  # the directory holding exotray/
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH"))
                                         if p)}
    try:
        done = subprocess.run(child_command(ifname), capture_output=True, env=env,
                              stdin=subprocess.DEVNULL, timeout=CHILD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        _say_once("the query timed out", f"{CHILD_TIMEOUT_S:g} s")
        return None
    except OSError as e:
        _say_once("cannot start the query", str(e))
        return None
    if done.returncode != 0:
        _say_once("the query failed", done.stderr.decode(errors="replace").strip()[-200:])
        return None
    try:
        value = json.loads(done.stdout)
    except ValueError:
        return None
    return value if type(value) is int and value > 0 else None


def main(argv: list[str]) -> int:
    """The child: one interface's maximum as JSON (a number of Mbit/s, or null)."""
    if len(argv) != 1:
        print("usage: python -m exotray.agent.hw.ethtool IFNAME", file=sys.stderr)
        return 2
    print(json.dumps(_ask(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
