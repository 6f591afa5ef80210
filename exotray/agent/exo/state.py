"""Reading exo's own account of its inference traffic (github exo-explore/exo): pure
functions over the JSON of its API's `GET /state` and `GET /node_id`. No I/O here; the
poll is `exo/watch.py`.

The shapes come from exo's pydantic models (exo commit b5375f8c, June 2026):
`src/exo/shared/types/state.py` (`State`: camelCase aliases, `instances`,
`nodeIdentities`, `nodeNetwork`, `nodeRdmaCtl`; the Thunderbolt parts: exo/thunderbolt.py),
`shared/types/worker/instances.py`
(`MlxRingInstance`: `hostsByNode`, `ephemeralPort`; `MlxJacclInstance`: `jacclDevices`,
`jacclCoordinators`; each wrapped as `{"ClassName": {...}}` by `TaggedModel`),
`shared/types/worker/runners.py` (`ShardAssignments`: `modelId`, `runnerToShard`,
`nodeToRunner`), `shared/types/worker/shards.py` (tagged shard metadata with
`deviceRank`), `master/placement_utils.py` (a ring node's own slot is `0.0.0.0`, its
neighbours' slots the IPs it connects to, other slots `198.51.100.1` port 0) and
`api/main.py` (`/node_id` answers the node id as a JSON string; `/state` the `State`).

Older exo spelled things differently, and the reader takes both: `hosts` (one ring list
for every node, before Dec 2025), `ibvDevices` / `ibvCoordinators` / `ibvCoordinator`
(JACCL before it was renamed from "ibv", Dec 2025), `MlxIbvInstance`, `modelMeta` (the
model card before `modelCard`), and snake_case keys (a `model_dump()` without aliases).
Unknown keys are ignored; an instance that cannot be read is skipped and counted; a
document that is not a JSON object is `ExoUnreadable`.

Only what links need is read, and kept within bounds (issue 33 point 4): of `/state`'s
parts `decode_state` decodes the instances, `nodeNetwork`, `nodeRdmaCtl` and the three
Thunderbolt parts, `nodeThunderbolt`, `nodeThunderboltBridge`, `thunderboltBridgeCycles`
(a few hundred bytes a node, read by exo/thunderbolt.py; every other
part, `nodeIdentities`, tasks, downloads, topology and model cards among them, is skipped
in msgspec's C parser, unread: a 13.9 MB answer cost 330 MiB as Python objects), at most
MAX_EXO_READ_BYTES of them in all (over it the answer is unreadable); an instance keeps
at most MAX_EXO_PEERS_PER_INSTANCE ring neighbours or RDMA devices.

Which node is this machine? exo's `/node_id` says. When it does not answer (an exo
without it, an error), `identify_self` looks for this machine's own addresses in exo's
state: in `nodeNetwork` (an address listed for one node only), else at a node's own slot
of a ring (the IP the other nodes connect to at the index of that node's `0.0.0.0`).
When neither tells one node, nothing is marked: every address a ring uses would mark
links this node does not use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from exotray.agent.base.limits import MAX_EXO_READ_BYTES
from exotray.agent.exo import thunderbolt
from exotray.agent.exo.instances import (  # noqa: F401 (RING_*, MAX_TEXT: re-exported)
    MAX_TEXT,
    RING_PLACEHOLDER,
    RING_SELF,
    _get,
    _ip,
    _jaccl,
    _model,
    _raw_ip,
    _ring,
    _text,
    _untag,
)

#: instance tags exo has used, and the backend each one means
RING_TAGS = ("MlxRingInstance", "MlxRing")
JACCL_TAGS = ("MlxJacclInstance", "MlxIbvInstance", "MlxJaccl", "MlxIbv")
MAX_INSTANCES = 64


class ExoUnreadable(ValueError):
    """exo answered something this reader cannot use (the reason is short text)."""


@dataclass(frozen=True)
class ExoInstance:
    id: str
    model: str
    backend: str  # "ring" | "jaccl"
    #: ring: the IPs this node connects to (its ring neighbours)
    neighbours: tuple[str, ...] = ()
    #: jaccl: this node's RDMA devices towards its peers ("rdma_en3", …)
    devices: tuple[str, ...] = ()
    #: whether this node takes part (False when we could not tell which node we are)
    mine: bool = True

    def wire(self) -> dict[str, str]:
        return {"id": self.id, "model": self.model, "backend": self.backend}


@dataclass(frozen=True)
class ExoState:
    node_id: str | None
    instances: tuple[ExoInstance, ...] = ()
    #: instances present but not understood (unknown tag, wrong types, this node's rank
    #: or devices unreadable), and why (the first few reasons, each once)
    skipped: int = 0
    skip_reasons: tuple[str, ...] = ()
    #: exo's own view of this node's RDMA (`nodeRdmaCtl`), None when it does not say
    rdma_enabled: bool | None = None
    #: how `node_id` was known: "node_id" (exo's /node_id), "network" (this machine's
    #: address in nodeNetwork), "ring" (its address at its own ring slot); None: unknown
    identified_by: str | None = None
    #: why this node could not be told apart (when `identified_by` is None)
    unidentified: str | None = None
    #: exo's Thunderbolt ports, bridge and bridge loops of this node (None: none known)
    thunderbolt: thunderbolt.ExoThunderbolt | None = None


class _NodeId(msgspec.Struct):
    """`/node_id` as an object (tolerated): the id under any of its spellings."""

    nodeId: str | None = None
    node_id: str | None = None
    id: str | None = None


_NODE_ID = msgspec.json.Decoder(str | _NodeId)


def parse_node_id(raw: bytes | str | Any) -> str | None:
    """`GET /node_id`'s answer (a JSON string) -> the id, or None. Anything else is
    refused at its first byte (a huge array is never built)."""
    if isinstance(raw, bytes | bytearray | str):
        try:
            raw = _NODE_ID.decode(raw)
        except (msgspec.MsgspecError, RecursionError):  # (not a string; nested too deep)
            return None
    if isinstance(raw, _NodeId):  # tolerate {"nodeId": "…"} / {"node_id": "…"}
        raw = next((v for v in (raw.nodeId, raw.node_id, raw.id) if v is not None), None)
    elif isinstance(raw, dict):
        raw = _get(raw, "nodeId", "node_id", "id")
    return _text(raw)


_NOTHING = msgspec.Raw()


class _Parts(msgspec.Struct):
    """The parts of exo's State the reader uses, undecoded, under each spelling exo has
    used; msgspec skips every other key without making an object of it."""

    instances: msgspec.Raw = _NOTHING
    nodeNetwork: msgspec.Raw = _NOTHING
    node_network: msgspec.Raw = _NOTHING
    nodeRdmaCtl: msgspec.Raw = _NOTHING
    node_rdma_ctl: msgspec.Raw = _NOTHING
    nodeThunderbolt: msgspec.Raw = _NOTHING
    node_thunderbolt: msgspec.Raw = _NOTHING
    nodeThunderboltBridge: msgspec.Raw = _NOTHING
    node_thunderbolt_bridge: msgspec.Raw = _NOTHING
    thunderboltBridgeCycles: msgspec.Raw = _NOTHING
    thunderbolt_bridge_cycles: msgspec.Raw = _NOTHING


_PARTS = msgspec.json.Decoder(_Parts)
_JSON_TYPES = {"array": "list", "str": "str", "int": "int", "float": "float",
               "bool": "bool", "null": "null"}


def decode_state(raw: bytes | bytearray) -> dict[str, Any]:
    """The body of `GET /state` -> the parts the reader uses (a dict with exo's keys),
    or ExoUnreadable: not a JSON object, or those parts over MAX_EXO_READ_BYTES."""
    try:
        found = _PARTS.decode(raw)
    except msgspec.ValidationError as e:  # JSON, but not an object
        got = str(e).rpartition("got `")[2].partition("`")[0]
        raise ExoUnreadable(f"a JSON {_JSON_TYPES.get(got, got)}, not an object") from None
    except msgspec.DecodeError as e:
        raise ExoUnreadable(f"not JSON ({str(e)[:60]})") from None
    except RecursionError:
        raise ExoUnreadable("JSON nested deeper than can be read") from None
    parts = {k: v for k in _Parts.__struct_fields__ if len(v := getattr(found, k))}
    if (size := sum(len(v) for v in parts.values())) > MAX_EXO_READ_BYTES:
        big = max(parts, key=lambda k: len(parts[k]))
        what = (f"{big}: {len(parts[big]) / 1e6:.1f} MB of JSON"
                if len(parts[big]) > MAX_EXO_READ_BYTES
                else f"{', '.join(parts)}: {size / 1e6:.1f} MB of JSON together")
        raise ExoUnreadable(f"{what}, over the {MAX_EXO_READ_BYTES >> 20} MiB the agent reads")
    try:
        return {k: msgspec.json.decode(v) for k, v in parts.items()}
    except msgspec.ValidationError as e:  # (a number too large for a double)
        raise ExoUnreadable(f"not JSON exotray can read ({str(e)[:60]})") from None


def identify_self(state: Mapping[str, Any], local_addresses: Iterable[str],
                  ) -> tuple[str | None, str]:
    """Which exo node this machine is, when `/node_id` did not say: (id, "network" |
    "ring"), or (None, why not). Only an answer naming exactly one node counts."""
    local = frozenset(a for a in local_addresses if isinstance(a, str) and a
                      and a not in (RING_SELF, RING_PLACEHOLDER) and not a.startswith("127."))
    if not local:
        return None, "this machine has no address to look for"
    # exo's own list of each node's addresses; an address two nodes share (a VM
    # bridge's 192.168.64.1 on every Mac) says nothing
    owners: dict[str, set[str]] = {}
    net = _get(state, "nodeNetwork", "node_network")
    for nid, info in (net.items() if isinstance(net, dict) else ()):
        ifaces = _get(info, "interfaces") if isinstance(info, dict) else None
        for i in (ifaces if isinstance(ifaces, list) else ()):
            ip = _get(i, "ipAddress", "ip_address") if isinstance(i, dict) else None
            if isinstance(ip, str):
                owners.setdefault(ip, set()).add(str(nid))
    found = {next(iter(n)) for ip, n in owners.items() if ip in local and len(n) == 1}
    if len(found) == 1:
        return found.pop(), "network"
    if len(found) > 1:
        return None, "this machine's addresses belong to several exo nodes"
    # a ring: the other nodes connect to us at our slot (the index of our 0.0.0.0)
    raw = _get(state, "instances")
    for value in (raw.values() if isinstance(raw, dict) else ()):
        _, body = _untag(value)
        by_node = _get(body, "hostsByNode", "hosts_by_node") if isinstance(body, dict) else None
        if not isinstance(by_node, dict):
            continue
        lists = {str(n): h for n, h in by_node.items() if isinstance(h, list)}
        for nid, hosts in lists.items():
            slots = [i for i, h in enumerate(hosts) if _raw_ip(h) == RING_SELF]
            if len(slots) != 1:
                continue
            if any(len(h) > slots[0] and _ip(h[slots[0]]) in local
                   for other, h in lists.items() if other != nid):
                found.add(nid)
    if len(found) == 1:
        return found.pop(), "ring"
    if len(found) > 1:
        return None, "this machine's addresses are at several nodes' ring slots"
    return None, "no address of this machine in exo's state"


def parse_state(state: Mapping[str, Any], node_id: str | None,
                local_addresses: Iterable[str] | None = None) -> ExoState:
    """exo's `/state` (decoded) and this node's exo id (None when unknown) -> ExoState.
    Without an id, this machine's `local_addresses` (when given) tell which node it is
    (`identify_self`); else nothing of the rings and JACCL instances is marked as ours.
    Tolerant: a missing part is empty, a broken instance is skipped and counted."""
    identified_by: str | None = "node_id" if node_id is not None else None
    unidentified: str | None = None
    local = frozenset(local_addresses or ())
    if node_id is None:
        node_id, how = identify_self(state, local)
        identified_by, unidentified = (how, None) if node_id is not None else (None, how)
    instances: list[ExoInstance] = []
    skipped, reasons = 0, []
    raw = _get(state, "instances")
    items = list(raw.items()) if isinstance(raw, dict) else []
    if raw is not None and not isinstance(raw, dict):
        skipped += 1
    for key, value in items[:MAX_INSTANCES]:
        tag, body = _untag(value)
        try:
            if not isinstance(body, dict):
                raise TypeError("not an object")
            if tag is None:  # untagged: tell by its keys
                tag = ("MlxRingInstance" if _get(body, "hostsByNode", "hosts_by_node",
                                                 "hosts") is not None
                       else "MlxJacclInstance" if _get(body, "jacclDevices", "jaccl_devices",
                                                       "ibvDevices", "ibv_devices")
                       is not None else None)
            assign = _get(body, "shardAssignments", "shard_assignments")
            assign = assign if isinstance(assign, dict) else {}
            iid = _text(_get(body, "instanceId", "instance_id")) or _text(key) or "?"
            if tag in RING_TAGS:
                ips, mine = _ring(body, node_id, local)
                instances.append(ExoInstance(iid, _model(assign), "ring", neighbours=ips,
                                             mine=mine))
            elif tag in JACCL_TAGS:
                devs, mine = _jaccl(body, assign, node_id)
                instances.append(ExoInstance(iid, _model(assign), "jaccl", devices=devs,
                                             mine=mine))
            else:
                skipped += 1
                reasons.append(f"unknown kind {str(tag)[:40]}")
        except (TypeError, AttributeError, ValueError) as e:
            skipped += 1
            reasons.append(str(e)[:80] or type(e).__name__)
    skipped += max(0, len(items) - MAX_INSTANCES)
    rdma = None
    ctl = _get(state, "nodeRdmaCtl", "node_rdma_ctl")
    if isinstance(ctl, dict) and node_id in ctl:
        _, mine = _untag(ctl[node_id])
        enabled = mine.get("enabled") if isinstance(mine, dict) else None
        rdma = enabled if isinstance(enabled, bool) else None
    return ExoState(node_id, tuple(instances), skipped, tuple(dict.fromkeys(reasons))[:4],
                    rdma, identified_by, unidentified, thunderbolt.read(state, node_id))


def rdma_port(device: str) -> str | None:
    """exo's RDMA device name -> the network interface it is: "rdma_en3" -> "en3"."""
    return device[5:] or None if device.startswith("rdma_") else None


def link_instances(state: ExoState | None, peer_address: str, local_interface: str | None,
                   members: Callable[[str], Iterable[str]] = lambda _: ()) -> list[ExoInstance]:
    """The instances whose traffic this node sends over the link to `peer_address`
    through `local_interface`: a ring neighbour whose IP is the link's peer address, or a
    JACCL device `rdma_enX` whose port enX is (or is a member of) the local interface."""
    if state is None:
        return []
    out = []
    ports: set[str] | None = None
    for inst in state.instances:
        if inst.backend == "ring":
            if peer_address in inst.neighbours:
                out.append(inst)
        elif local_interface:
            if ports is None:
                ports = {local_interface, *members(local_interface)}
            if any(rdma_port(d) in ports for d in inst.devices):
                out.append(inst)
    return out


def short_model(model: str) -> str:
    """"mlx-community/Llama-3.3-70B-Instruct-4bit" -> "Llama-3.3-70B-Instruct-4bit"."""
    return model.rsplit("/", 1)[-1] or model
