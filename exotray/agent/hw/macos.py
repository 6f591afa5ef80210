"""macOS link speeds that psutil does not report: Thunderbolt ports, the Thunderbolt
Bridge, and Ethernet media subtypes it cannot map (2.5G, 5G, 10G...).

Pure parsers (text in, values out; never raise) plus thin runners that call one command
each through a *runner* seam and return ``None`` (with one log line) when it fails. The
runners are synchronous and change nothing: the agent calls them off its event loop.

Sources, as recorded in tests/fixtures/macos/:

* ``system_profiler SPThunderboltDataType -json``: one entry per host bus; its
  ``receptacle_1_tag`` has ``receptacle_id_key`` (the N of the hardware port
  "Thunderbolt N"), ``receptacle_status_key`` (``receptacle_connected`` /
  ``receptacle_no_devices_connected``) and ``current_speed_key``: the negotiated speed of a
  cabled port ("80 Gb/s", "40 Gb/s") or the port's maximum when nothing is cabled
  ("Up to 120 Gb/s"). A cabled port does not say its maximum; it is taken from the
  machine's uncabled ports (``max_inferred``), since Apple's host ports are all one
  generation.
* ``networksetup -listallhardwareports``: "Thunderbolt N" -> ``enX``
  (:func:`exotray.agent.hw.kinds.parse_networksetup`).
* ``ifconfig`` / ``ifconfig -m enX``: ``member: en2 flags=...`` lines of a bridge,
  ``media: autoselect (2500Base-T <full-duplex>)``, ``status: active`` and the
  ``supported media:`` list (``media 10Gbase-T mediaopt full-duplex``).

Wi-Fi is in :mod:`exotray.agent.hw.macos_wifi`.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from exotray.agent.hw.kinds import parse_networksetup

logger = logging.getLogger(__name__)


class _OncePerHour(logging.Filter):
    """The readers run every few minutes: a command that keeps failing the same way is
    said once an hour, not every time (never an error loop in the log)."""

    def __init__(self, every_s: float = 3600.0) -> None:
        super().__init__()
        self.every_s = every_s
        self._said: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = record.getMessage()
        last = self._said.get(key)
        if last is not None and record.created - last < self.every_s:
            return False
        if len(self._said) > 256:
            self._said.clear()
        self._said[key] = record.created
        return True


logger.addFilter(_OncePerHour())

# (argv, timeout seconds) -> stdout, or None when the command could not give it.
Runner = Callable[[Sequence[str], float], "str | None"]

SP_TIMEOUT_S = 20.0  # system_profiler takes seconds on a busy machine
CMD_TIMEOUT_S = 5.0
THUNDERBOLT_CMD = ("system_profiler", "SPThunderboltDataType", "-json")
NETWORKSETUP_CMD = ("networksetup", "-listallhardwareports")


def run_command(argv: Sequence[str], timeout: float) -> str | None:
    """Run ``argv`` and return its stdout; ``None`` and one log line on any failure."""
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False,
            errors="replace",
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        logger.warning("%s failed: %s", " ".join(argv), exc)
        return None
    if proc.returncode != 0:
        err = (proc.stderr or "").strip().splitlines()
        logger.warning("%s exited %d%s", " ".join(argv), proc.returncode,
                       f": {err[0][:200]}" if err else "")
        return None
    return proc.stdout


# --------------------------------------------------------------------------- speeds

_GBS = re.compile(r"^\s*(up\s+to\s+)?(\d+(?:\.\d+)?)\s*([gm])b/s\b", re.IGNORECASE)


def parse_gbs(text: object) -> tuple[int | None, bool]:
    """``"80 Gb/s"`` -> ``(80000, False)``; ``"Up to 120 Gb/s"`` -> ``(120000, True)``
    (a maximum, not a negotiated speed); anything else -> ``(None, False)``."""
    if not isinstance(text, str):
        return None, False
    m = _GBS.match(text)
    if not m:
        return None, False
    value = float(m.group(2)) * (1000 if m.group(3).lower() == "g" else 1)
    return (int(value) if value > 0 else None), bool(m.group(1))


# media subtype -> Mbit/s: 10baseT/UTP, 100baseTX, 1000baseT, 2500Base-T, 5000Base-T,
# 10Gbase-T, 2.5GBase-T, 25GBase-SR, 40GbaseSR4, 100GBase-CR4 ...
_SUBTYPE = re.compile(r"^(\d+(?:\.\d+)?)(g?)base", re.IGNORECASE)


def media_subtype_mbit(subtype: object) -> int | None:
    if not isinstance(subtype, str):
        return None
    m = _SUBTYPE.match(subtype.strip())
    if not m:
        return None
    value = float(m.group(1)) * (1000 if m.group(2) else 1)
    return int(value) if value > 0 else None


# --------------------------------------------------------------------------- ifconfig


@dataclass(frozen=True)
class IfconfigInfo:
    """One interface block of ``ifconfig`` / ``ifconfig -m`` output."""

    name: str
    status: str | None = None  # "active", "inactive", or None when not printed
    media: str | None = None  # the text after "media: "
    subtype: str | None = None  # "2500Base-T"; None for "autoselect", "<unknown type>"
    members: tuple[str, ...] = ()  # bridge members, in ifconfig's order
    supported: tuple[str, ...] = ()  # media subtypes of "supported media:" (ifconfig -m)

    @property
    def speed_mbit(self) -> int | None:
        """Negotiated speed; ``None`` unless the link is up with a known subtype."""
        if self.status == "inactive":
            return None
        return media_subtype_mbit(self.subtype)

    @property
    def max_mbit(self) -> int | None:
        """Fastest supported subtype (``ifconfig -m``); ``None`` when not listed."""
        speeds = [s for s in map(media_subtype_mbit, self.supported) if s]
        return max(speeds) if speeds else None


_BLOCK_START = re.compile(r"^([A-Za-z][A-Za-z0-9_.]*):\s+flags=")


def _media_subtype(media: str) -> str | None:
    inner = media
    if "(" in media and ")" in media:
        inner = media[media.index("(") + 1:media.rindex(")")]
    token = inner.strip().split(" ")[0].strip("<>") if inner.strip() else ""
    return token if media_subtype_mbit(token) else None


def parse_ifconfig(text: object) -> dict[str, IfconfigInfo]:
    """Parse ``ifconfig [-m] [name]`` output into ``{name: IfconfigInfo}``; never raises."""
    if not isinstance(text, str):
        return {}
    blocks: dict[str, dict[str, Any]] = {}
    cur: dict[str, Any] | None = None
    in_supported = False
    for raw in text.splitlines():
        m = _BLOCK_START.match(raw)
        if m:
            cur = blocks.setdefault(m.group(1), {"members": [], "supported": []})
            in_supported = False
            continue
        if cur is None:
            continue
        line = raw.strip()
        key, sep, value = line.partition(":")
        if in_supported and line.startswith("media "):
            sub = line.split()[1] if len(line.split()) > 1 else ""
            if media_subtype_mbit(sub) and sub not in cur["supported"]:
                cur["supported"].append(sub)
            continue
        in_supported = False
        if not sep:
            continue
        value = value.strip()
        if key == "status":
            cur["status"] = value or None
        elif key == "media":
            cur["media"] = value or None
            cur["subtype"] = _media_subtype(value)
        elif key == "member" and value:
            cur["members"].append(value.split()[0])
        elif key == "supported media":
            in_supported = True
    return {
        name: IfconfigInfo(
            name=name, status=b.get("status"), media=b.get("media"), subtype=b.get("subtype"),
            members=tuple(b["members"]), supported=tuple(b["supported"]),
        )
        for name, b in blocks.items()
    }


def parse_bridge_members(text: object, bridge: str = "bridge0") -> list[str]:
    """Members of ``bridge`` in ``ifconfig bridge0`` (or full ``ifconfig``) output."""
    info = parse_ifconfig(text).get(bridge)
    return list(info.members) if info else []


# --------------------------------------------------------------------------- Thunderbolt


@dataclass(frozen=True)
class LinkSpeed:
    """What the OS says of one interface's link: negotiated speed and maximum, Mbit/s."""

    interface: str
    label: str
    speed_mbit: int | None = None  # negotiated; None when down / not cabled / unknown
    max_mbit: int | None = None  # the port's (or NIC's) maximum, when the OS says
    max_inferred: bool = False  # max taken from the machine's other receptacles
    cabled: bool = False
    peer: str | None = None  # what is at the other end ("Mac Studio", "Envoy Ultra")
    members: tuple[str, ...] = ()  # a bridge's members
    detail: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Receptacle:
    """One host Thunderbolt port from ``system_profiler SPThunderboltDataType``."""

    receptacle: int
    cabled: bool
    speed_mbit: int | None  # negotiated, cabled ports only
    max_mbit: int | None  # "Up to N Gb/s", uncabled ports only
    speed_text: str
    peer: str | None
    bus: str
    #: what is cabled offers Thunderbolt networking (an XDomain "service_ip": a Mac or PC
    #: at the other end), so the port's speed is a network link's; a drive or dock is not
    ip_service: bool = False


def _ip_service(item: dict[str, Any]) -> bool:
    services = item.get("services_title")
    return isinstance(services, list) and any(
        isinstance(s, dict) and s.get("_name") == "service_ip" for s in services)


def _receptacle(bus: dict[str, Any]) -> Receptacle | None:
    tag = bus.get("receptacle_1_tag")
    if not isinstance(tag, dict):
        return None
    try:
        rid = int(str(tag.get("receptacle_id_key", "")).strip())
    except ValueError:
        return None
    text = tag.get("current_speed_key")
    mbit, is_max = parse_gbs(text)
    status = tag.get("receptacle_status_key")
    items = bus.get("_items")
    first = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}
    cabled = status == "receptacle_connected" or (status is None and bool(first))
    peer = first.get("_name") or first.get("device_name_key")
    return Receptacle(
        receptacle=rid, cabled=cabled,
        speed_mbit=mbit if cabled and not is_max else None,
        max_mbit=mbit if is_max else None,
        speed_text=text if isinstance(text, str) else "",
        peer=peer if isinstance(peer, str) else None,
        bus=str(bus.get("_name", "")),
        ip_service=cabled and _ip_service(first),
    )


def parse_sp_thunderbolt(text: object) -> list[Receptacle]:
    """Host receptacles of ``system_profiler SPThunderboltDataType -json``, by port
    number; ``[]`` for garbage. Devices behind a port (docks, drives) are not ports."""
    try:
        data = json.loads(text) if isinstance(text, (str, bytes)) else None
    except ValueError:
        return []
    buses = data.get("SPThunderboltDataType") if isinstance(data, dict) else None
    if not isinstance(buses, list):
        return []
    found = {r.receptacle: r for r in (_receptacle(b) for b in buses if isinstance(b, dict)) if r}
    return [found[k] for k in sorted(found)]


def thunderbolt_speeds(
    receptacles: Iterable[Receptacle], ports: dict[str, tuple[str, str]],
    bridges: dict[str, Sequence[str]] | None = None,
) -> dict[str, LinkSpeed]:
    """Join receptacles to interfaces: ``{"en2": LinkSpeed, ..., "bridge0": LinkSpeed}``.

    ``ports`` is :func:`parse_networksetup`'s ``{device: (kind, label)}``; receptacle N
    goes to the device whose hardware port is "Thunderbolt N". A cabled port's maximum is
    the machine's highest "Up to" (marked ``max_inferred``). A bridge (``{"bridge0":
    ["en1", "en2"]}``) gets its members': the fastest cabled member's speed (a link through
    the bridge uses one cable) and the highest maximum, with the members listed."""
    by_label = {label: dev for dev, (_kind, label) in ports.items()}
    recs = list(receptacles)
    ceiling = max((r.max_mbit for r in recs if r.max_mbit), default=None)
    out: dict[str, LinkSpeed] = {}
    for r in recs:
        label = f"Thunderbolt {r.receptacle}"
        dev = by_label.get(label)
        if dev is None:
            continue
        own_max = r.max_mbit
        out[dev] = LinkSpeed(
            interface=dev, label=label, speed_mbit=r.speed_mbit,
            max_mbit=own_max if own_max else ceiling,
            max_inferred=own_max is None and ceiling is not None,
            cabled=r.cabled, peer=r.peer,
            detail={"receptacle": r.receptacle, "current_speed": r.speed_text, "bus": r.bus,
                    "ip_service": r.ip_service},
        )
    for bridge, members in (bridges or {}).items():
        mine = [out[m] for m in members if m in out]
        speeds = [m.speed_mbit for m in mine if m.speed_mbit]
        maxes = [m.max_mbit for m in mine if m.max_mbit]
        label = ports.get(bridge, ("", "Thunderbolt Bridge"))[1]
        out[bridge] = LinkSpeed(
            interface=bridge, label=label,
            speed_mbit=max(speeds) if speeds else None,
            max_mbit=max(maxes) if maxes else None,
            max_inferred=bool(mine) and all(m.max_inferred for m in mine if m.max_mbit),
            cabled=any(m.cabled for m in mine), members=tuple(members),
            detail={"cabled_members": [m.interface for m in mine if m.cabled]},
        )
    return out


def thunderbolt_links(runner: Runner = run_command) -> dict[str, LinkSpeed] | None:
    """Thunderbolt ports and bridges of this Mac, by interface; ``None`` when
    system_profiler or networksetup cannot be read (each logs its line)."""
    sp = runner(THUNDERBOLT_CMD, SP_TIMEOUT_S)
    if sp is None:
        return None
    ns = runner(NETWORKSETUP_CMD, CMD_TIMEOUT_S)
    if ns is None:
        return None
    ports = parse_networksetup(ns)
    bridges: dict[str, Sequence[str]] = {}
    for dev, (_kind, label) in ports.items():
        if dev.startswith("bridge") and label.lower().startswith("thunderbolt"):
            members = parse_bridge_members(runner(("ifconfig", dev), CMD_TIMEOUT_S), dev)
            bridges[dev] = members
    return thunderbolt_speeds(parse_sp_thunderbolt(sp), ports, bridges)


# --------------------------------------------------------------------------- Ethernet


def ethernet_media(interface: str, runner: Runner = run_command) -> LinkSpeed | None:
    """Negotiated media and maximum of ``interface`` from ``ifconfig -m``; ``None`` when
    ifconfig fails or does not list the interface."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.]{0,15}", interface or ""):
        logger.warning("ethernet_media: not an interface name: %r", interface)
        return None
    info = parse_ifconfig(runner(("ifconfig", "-m", interface), CMD_TIMEOUT_S)).get(interface)
    if info is None:
        return None
    return LinkSpeed(
        interface=interface, label=interface, speed_mbit=info.speed_mbit,
        max_mbit=info.max_mbit, cabled=info.status == "active",
        detail={"media": info.media, "subtype": info.subtype, "status": info.status,
                "supported": list(info.supported)},
    )
