"""What exo knows of this node's Thunderbolt ports and bridge (exo/state.py decodes exo's
/state; this reads three of its parts). Pure.

How exo fills them (exo commit b5375f8c):

- `nodeThunderbolt[node].interfaces[]` (`shared/types/thunderbolt.py`
  `ThunderboltIdentifier`, made by `ThunderboltConnectivityData.ident` on the node
  itself): one per host receptacle of `system_profiler SPThunderboltDataType`.
  `rdmaInterface` is `rdma_` + the device `networksetup -listallhardwareports` gives the
  hardware port "Thunderbolt N", N the receptacle's `receptacle_id_key`: so `rdma_enX` is
  this machine's interface `enX`, as exo's own JACCL devices are (exo/state.py
  `rdma_port`). `domainUuid` is the receptacle's Thunderbolt domain (exo joins two nodes'
  receptacles by it into RDMA edges). `linkSpeed` is the receptacle's
  `current_speed_key` whether cabled or not: "80 Gb/s" cabled, "Up to 120 Gb/s" (the
  port's maximum) empty — a maximum is no link speed and is not taken as one.
- `nodeThunderboltBridge[node]` (`shared/types/profiling.py` `ThunderboltBridgeStatus`:
  `enabled`, `exists`, `serviceName`): the network service of a bridge with a
  Thunderbolt member, as `networksetup` says.
- `thunderboltBridgeCycles` (`shared/topology.py` `get_thunderbolt_bridge_cycles`):
  node ids in loops of two or more nodes with the bridge on, cabled by Thunderbolt
  (exo's warning: such a loop makes a broadcast storm).

Only this node's entries are kept (its node id known); what cannot be read is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exotray.agent.base.limits import (
    MAX_EXO_PEERS_PER_INSTANCE,
    MAX_EXO_TB_CYCLES,
    MAX_EXO_TB_PORTS,
)
from exotray.agent.exo.instances import _get, _text
from exotray.agent.hw.macos import parse_gbs


@dataclass(frozen=True)
class TbPort:
    """One of this node's Thunderbolt receptacles as exo lists it."""

    interface: str  # "en2": the network interface of the receptacle's hardware port
    rdma_device: str  # "rdma_en2"
    link_speed: str  # exo's words ("80 Gb/s", "Up to 120 Gb/s"; "" when it has none)
    #: the negotiated speed in Mbit/s; None for a maximum ("Up to …") or words not read
    speed_mbit: int | None


@dataclass(frozen=True)
class ExoThunderbolt:
    """exo's Thunderbolt facts of this node."""

    ports: tuple[TbPort, ...] = ()
    #: nodeThunderboltBridge of this node: whether the bridge's service is on and exists,
    #: its name (None each when exo does not say)
    bridge_enabled: bool | None = None
    bridge_exists: bool | None = None
    bridge_service: str | None = None
    #: how many Thunderbolt Bridge loops exo lists, and the first one this node is in
    #: (node ids; () when in none)
    cycles: int = 0
    cycle: tuple[str, ...] = ()

    def speeds(self) -> dict[str, float]:
        """interface -> exo's negotiated speed (Mbit/s), of the cabled ports only."""
        return {p.interface: float(p.speed_mbit) for p in self.ports if p.speed_mbit}


def _mine(part: Any, node_id: str) -> Any:
    return part.get(node_id) if isinstance(part, dict) else None


def _bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def read(state: Mapping[str, Any], node_id: str | None) -> ExoThunderbolt | None:
    """exo's Thunderbolt facts of node `node_id` from /state's parts (decoded), or None
    when the node is unknown or exo has none of them (not a Mac, an older exo)."""
    tb = _get(state, "nodeThunderbolt", "node_thunderbolt")
    bridge = _get(state, "nodeThunderboltBridge", "node_thunderbolt_bridge")
    cycles = _get(state, "thunderboltBridgeCycles", "thunderbolt_bridge_cycles")
    if node_id is None or (tb is None and bridge is None and cycles is None):
        return None
    ports: dict[str, TbPort] = {}
    mine = _mine(tb, node_id)
    listed = _get(mine, "interfaces") if isinstance(mine, dict) else None
    for item in listed if isinstance(listed, list) else ():
        if not isinstance(item, dict):
            continue
        dev = _text(_get(item, "rdmaInterface", "rdma_interface"))
        iface = dev[5:] if dev and dev.startswith("rdma_") else ""
        if not iface or len(iface) > 64 or dev in ports:
            continue
        words = _get(item, "linkSpeed", "link_speed")
        mbit, is_max = parse_gbs(words)
        ports[dev] = TbPort(iface, dev, _text(words) or "", None if is_max else mbit)
        if len(ports) == MAX_EXO_TB_PORTS:
            break
    status = _mine(bridge, node_id)
    status = status if isinstance(status, dict) else {}
    listed_cycles = cycles if isinstance(cycles, list) else []
    cycle: tuple[str, ...] = ()
    for c in listed_cycles[:MAX_EXO_TB_CYCLES]:
        if isinstance(c, list) and node_id in c:
            k = c.index(node_id)  # from this node on: it is in what is kept
            cycle = tuple(t for n in (c[k:] + c[:k])[:MAX_EXO_PEERS_PER_INSTANCE]
                          if (t := _text(n)))
            break
    return ExoThunderbolt(
        ports=tuple(ports.values()),
        bridge_enabled=_bool(status.get("enabled")),
        bridge_exists=_bool(status.get("exists")),
        bridge_service=_text(_get(status, "serviceName", "service_name")),
        cycles=len(listed_cycles), cycle=cycle)
