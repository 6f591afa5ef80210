"""The most a wired Linux NIC can negotiate: its supported link modes over ethtool
(ETHTOOL_GLINKSETTINGS through pyroute2's Ethtool). Blocks: call it off the event loop."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from exotray.agent.hw_linux import _require_off_loop

#: an ethtool link mode name ("10000baseT/Full", "2500baseX/Full", "100000baseCR4/Full")
_LINK_MODE = re.compile(r"^(\d+)base", re.IGNORECASE)


def max_mode_mbit(modes: Iterable[object]) -> int | None:
    """The fastest of a NIC's supported link modes, in Mbit/s; None when none is named."""
    speeds = [int(m.group(1)) for x in modes
              if isinstance(x, str) and (m := _LINK_MODE.match(x))]
    return max(speeds) if speeds else None


def read_max_mbit(ifname: str, ethtool_factory: Any = None) -> int | None:
    """The most a wired NIC can negotiate: its supported link modes over ethtool
    (ETHTOOL_GLINKSETTINGS through pyroute2's Ethtool). None without pyroute2, for
    virtual devices (they list none) and on any error. Blocks: call it off the loop."""
    _require_off_loop()
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
