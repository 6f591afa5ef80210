"""Reading exo's own account of its inference traffic (github exo-explore/exo): pure
functions over the JSON of its API's `GET /state` and `GET /node_id`. No I/O here; the
poll is `exowatch.py`.

The shapes come from exo's pydantic models (exo commit b5375f8c, June 2026):
`src/exo/shared/types/state.py` (`State`: camelCase aliases, `instances`,
`nodeIdentities`, `nodeNetwork`, `nodeRdmaCtl`), `shared/types/worker/instances.py`
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
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: exo's placeholders in a ring's host list: its own slot, and non-neighbours' slots
RING_SELF = "0.0.0.0"
RING_PLACEHOLDER = "198.51.100.1"
#: instance tags exo has used, and the backend each one means
RING_TAGS = ("MlxRingInstance", "MlxRing")
JACCL_TAGS = ("MlxJacclInstance", "MlxIbvInstance", "MlxJaccl", "MlxIbv")
#: text from exo we keep (model ids, names) is cut to this length
MAX_TEXT = 128
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
    #: instances present but not understood (unknown tag, wrong types)
    skipped: int = 0
    #: exo's own view of this node's RDMA (`nodeRdmaCtl`), None when it does not say
    rdma_enabled: bool | None = None
    #: exo node id -> friendly name (`nodeIdentities`)
    names: dict[str, str] = field(default_factory=dict)


def _get(d: Mapping[str, Any], *keys: str) -> Any:
    """The first of `keys` present in `d` (camelCase and snake_case spellings)."""
    for k in keys:
        if k in d:
            return d[k]
    return None


def _text(v: Any) -> str | None:
    if not isinstance(v, str) or not v:
        return None
    clean = "".join(ch for ch in v if ch.isprintable())
    return clean[:MAX_TEXT] or None


def _untag(v: Any, tags: Iterable[str] | None = None) -> tuple[str | None, Any]:
    """exo's TaggedModel: `{"ClassName": {...}}` -> ("ClassName", {...}); an untagged
    dict comes back as (None, dict)."""
    if isinstance(v, dict) and len(v) == 1:
        (tag, inner), = v.items()
        if isinstance(inner, dict) and (tags is None or tag in tags or tag[:1].isupper()):
            return tag, inner
    return None, v


def parse_node_id(raw: bytes | str | Any) -> str | None:
    """`GET /node_id`'s answer (a JSON string) -> the id, or None."""
    if isinstance(raw, bytes | str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if isinstance(raw, dict):  # tolerate {"nodeId": "…"} / {"node_id": "…"}
        raw = _get(raw, "nodeId", "node_id", "id")
    return _text(raw)


def decode_state(raw: bytes) -> dict[str, Any]:
    """The body of `GET /state` -> a dict, or ExoUnreadable."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise ExoUnreadable(f"not JSON ({str(e)[:60]})") from None
    if not isinstance(obj, dict):
        raise ExoUnreadable(f"a JSON {type(obj).__name__}, not an object")
    return obj


def _model(assign: Mapping[str, Any]) -> str:
    model = _text(_get(assign, "modelId", "model_id"))
    if model is None:  # older exo: only in the shards' model card / model meta
        shards = _get(assign, "runnerToShard", "runner_to_shard")
        for shard in (shards.values() if isinstance(shards, dict) else ()):
            _, meta = _untag(shard)
            if isinstance(meta, dict):
                card = _get(meta, "modelCard", "model_card", "modelMeta", "model_meta")
                if isinstance(card, dict):
                    model = _text(_get(card, "modelId", "model_id"))
                    if model:
                        break
    return model or "unknown model"


def _rank(assign: Mapping[str, Any], node_id: str | None) -> int | None:
    """This node's device rank: runnerToShard[nodeToRunner[node]].deviceRank."""
    if node_id is None:
        return None
    n2r = _get(assign, "nodeToRunner", "node_to_runner")
    r2s = _get(assign, "runnerToShard", "runner_to_shard")
    if not isinstance(n2r, dict) or not isinstance(r2s, dict):
        return None
    _, shard = _untag(r2s.get(n2r.get(node_id)))
    rank = _get(shard, "deviceRank", "device_rank") if isinstance(shard, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def _ip(host: Any) -> str | None:
    if isinstance(host, dict):
        ip, port = _get(host, "ip", "address"), host.get("port")
        if port == 0:  # exo's non-neighbour placeholder has port 0
            return None
    elif isinstance(host, str):  # "ip:port"
        ip = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    else:
        return None
    if not isinstance(ip, str) or ip in (RING_SELF, RING_PLACEHOLDER, ""):
        return None
    return _text(ip)


def _ring(body: Mapping[str, Any], node_id: str | None) -> tuple[tuple[str, ...], bool]:
    by_node = _get(body, "hostsByNode", "hosts_by_node")
    if isinstance(by_node, dict):
        if node_id is not None and node_id in by_node:
            hosts, mine = by_node[node_id], True
        elif node_id is not None:
            return (), False  # a ring this node is not in
        else:  # we do not know which node we are: every address the ring uses
            hosts = [h for hs in by_node.values() if isinstance(hs, list) for h in hs]
            mine = False
    else:  # exo before Dec 2025: one list for the whole ring
        hosts, mine = _get(body, "hosts"), node_id is None
        if node_id is not None:
            n2r = _get(_get(body, "shardAssignments", "shard_assignments") or {},
                       "nodeToRunner", "node_to_runner")
            mine = not isinstance(n2r, dict) or node_id in n2r
            if not mine:
                return (), False
    if not isinstance(hosts, list):
        raise TypeError("ring hosts are not a list")
    ips = (_ip(h) for h in hosts)
    return tuple(dict.fromkeys(ip for ip in ips if ip)), mine


def _jaccl(body: Mapping[str, Any], assign: Mapping[str, Any],
           node_id: str | None) -> tuple[tuple[str, ...], bool]:
    matrix = _get(body, "jacclDevices", "jaccl_devices", "ibvDevices", "ibv_devices")
    if not isinstance(matrix, list):
        raise TypeError("jaccl devices are not a list")
    rank = _rank(assign, node_id)
    if rank is None or not 0 <= rank < len(matrix) or not isinstance(matrix[rank], list):
        return (), False
    devs = (_text(d) for d in matrix[rank])
    return tuple(dict.fromkeys(d for d in devs if d)), True


def parse_state(state: Mapping[str, Any], node_id: str | None) -> ExoState:
    """exo's `/state` (decoded) and this node's exo id (None when unknown) -> ExoState.
    Tolerant: a missing part is empty, a broken instance is skipped and counted."""
    instances: list[ExoInstance] = []
    skipped = 0
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
                ips, mine = _ring(body, node_id)
                instances.append(ExoInstance(iid, _model(assign), "ring", neighbours=ips,
                                             mine=mine))
            elif tag in JACCL_TAGS:
                devs, mine = _jaccl(body, assign, node_id)
                instances.append(ExoInstance(iid, _model(assign), "jaccl", devices=devs,
                                             mine=mine))
            else:
                skipped += 1
        except (TypeError, AttributeError, ValueError):
            skipped += 1
    skipped += max(0, len(items) - MAX_INSTANCES)
    names: dict[str, str] = {}
    idents = _get(state, "nodeIdentities", "node_identities")
    for nid, ident in (idents.items() if isinstance(idents, dict) else ()):
        name = _text(_get(ident, "friendlyName", "friendly_name")) if isinstance(
            ident, dict) else None
        if name and name != "Unknown":
            names[str(nid)[:MAX_TEXT]] = name
    rdma = None
    ctl = _get(state, "nodeRdmaCtl", "node_rdma_ctl")
    if isinstance(ctl, dict) and node_id in ctl:
        _, mine = _untag(ctl[node_id])
        enabled = mine.get("enabled") if isinstance(mine, dict) else None
        rdma = enabled if isinstance(enabled, bool) else None
    return ExoState(node_id, tuple(instances), skipped, rdma, names)


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
