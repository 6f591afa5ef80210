"""macOS Wi-Fi transmit rate (a PHY rate: real throughput is well below it).

Two sources, both without root (``airport`` is gone since macOS 14.4, ``wdutil`` needs
root):

* CoreWLAN through pyobjc, where importable:
  ``CWWiFiClient.sharedWiFiClient().interface().transmitRate()`` (Mbit/s, float). Reached
  through a *loader* seam so it is tested here without a Mac.
* ``system_profiler SPAirPortDataType -json``: per interface
  ``spairport_current_network_information`` -> ``spairport_network_rate`` (Mbit/s),
  ``spairport_network_phymode`` ("802.11ax") and ``spairport_network_channel``
  ("36 (5GHz, 80MHz)", or a bare number on older systems).

Parsers never raise; runners are synchronous, change nothing, and return ``None`` with one
log line on failure (see :mod:`exotray.agent.hw.macos`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from exotray.agent.hw.macos import SP_TIMEOUT_S, Runner, run_command

logger = logging.getLogger(__name__)

AIRPORT_CMD = ("system_profiler", "SPAirPortDataType", "-json")


@dataclass(frozen=True)
class WifiRate:
    interface: str
    rate_mbit: float  # current transmit (PHY) rate
    phy_mode: str | None = None  # "802.11ax"
    channel: int | None = None
    band_ghz: float | None = None  # 2.4, 5, 6
    width_mhz: int | None = None
    source: str = "system_profiler"  # or "corewlan"


_CHANNEL = re.compile(r"^\s*(\d+)\s*(?:\(\s*(\d+(?:\.\d+)?)\s*GHz\s*,\s*(\d+)\s*MHz\s*\))?",
                      re.IGNORECASE)


def parse_channel(value: object) -> tuple[int | None, float | None, int | None]:
    """``"36 (5GHz, 80MHz)"`` -> ``(36, 5.0, 80)``; ``149`` -> ``(149, None, None)``.
    system_profiler writes 2.4 GHz as "2GHz"; it is reported as 2.4."""
    if isinstance(value, bool):
        return None, None, None
    if isinstance(value, int):
        return (value if value > 0 else None), None, None
    if not isinstance(value, str):
        return None, None, None
    m = _CHANNEL.match(value)
    if not m:
        return None, None, None
    band = float(m.group(2)) if m.group(2) else None
    if band == 2.0:
        band = 2.4
    return int(m.group(1)), band, int(m.group(3)) if m.group(3) else None


def _rate(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value > 0 else None
    if isinstance(value, str):
        m = re.match(r"^\s*(\d+(?:\.\d+)?)", value)
        return float(m.group(1)) if m and float(m.group(1)) > 0 else None
    return None


def parse_sp_airport(text: object) -> dict[str, WifiRate]:
    """``{interface: WifiRate}`` for every interface of ``system_profiler
    SPAirPortDataType -json`` that has a current network with a rate; ``{}`` for garbage,
    Wi-Fi off or not associated."""
    try:
        data = json.loads(text) if isinstance(text, (str, bytes)) else None
    except ValueError:
        return {}
    sections = data.get("SPAirPortDataType") if isinstance(data, dict) else None
    out: dict[str, WifiRate] = {}
    for section in sections if isinstance(sections, list) else []:
        ifaces = section.get("spairport_airport_interfaces") if isinstance(section, dict) else None
        for iface in ifaces if isinstance(ifaces, list) else []:
            if not isinstance(iface, dict) or not isinstance(iface.get("_name"), str):
                continue
            cur = iface.get("spairport_current_network_information")
            if not isinstance(cur, dict):
                continue
            rate = _rate(cur.get("spairport_network_rate"))
            if rate is None:
                continue
            channel, band, width = parse_channel(cur.get("spairport_network_channel"))
            phy = cur.get("spairport_network_phymode")
            out[iface["_name"]] = WifiRate(
                interface=iface["_name"], rate_mbit=rate,
                phy_mode=phy if isinstance(phy, str) else None,
                channel=channel, band_ghz=band, width_mhz=width,
            )
    return out


# --------------------------------------------------------------------------- CoreWLAN


def _load_corewlan() -> Any:
    """The ``CWWiFiClient`` class, or ``None`` where pyobjc-framework-CoreWLAN is absent."""
    try:
        from CoreWLAN import CWWiFiClient  # type: ignore[import-not-found]
    except Exception:  # ImportError off macOS; anything pyobjc raises on a broken install
        return None
    return CWWiFiClient


def corewlan_rate(loader: Callable[[], Any] = _load_corewlan) -> WifiRate | None:
    """The default Wi-Fi interface's transmit rate through CoreWLAN; ``None`` when
    CoreWLAN is not importable, Wi-Fi is off or not associated (rate 0)."""
    client_cls = loader()
    if client_cls is None:
        return None
    try:
        iface = client_cls.sharedWiFiClient().interface()
        if iface is None:
            return None
        rate = _rate(iface.transmitRate())
        name = iface.interfaceName()
        channel = iface.wlanChannel() if hasattr(iface, "wlanChannel") else None
        number = channel.channelNumber() if channel is not None else None
    except Exception as exc:  # pyobjc surfaces Objective-C errors as many types
        logger.warning("CoreWLAN transmitRate failed: %s", exc)
        return None
    if rate is None or not isinstance(name, str) or not name:
        return None
    return WifiRate(
        interface=name, rate_mbit=rate,
        channel=number if isinstance(number, int) and number > 0 else None,
        source="corewlan",
    )


def wifi_rates(runner: Runner = run_command,
               loader: Callable[[], Any] = _load_corewlan) -> dict[str, WifiRate] | None:
    """Current Wi-Fi transmit rates by interface: CoreWLAN's where it answers (cheap),
    else system_profiler's. ``{}`` when not associated; ``None`` when neither source can
    be read."""
    fast = corewlan_rate(loader)
    if fast is not None:
        return {fast.interface: fast}
    text = runner(AIRPORT_CMD, SP_TIMEOUT_S)
    if text is None:
        return None
    return parse_sp_airport(text)
