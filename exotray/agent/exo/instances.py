"""exo's instances as the reader takes them apart (agent/exo/state.py reads `/state`): the
key spellings and tagged models every part uses (`_get`, `_text`, `_untag`), a ring's
neighbours and a JACCL rank's RDMA devices, and the shard assignments in both shapes exo
has had (`nodeToRunner` and `runnerToShard`; and, exo #2147, `shards: [[nodeId,
runnerId, shard]]`) and both shapes of JACCL device cells (one device or none; and, exo
#2160/#2195, a list of them). Pure functions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from exotray.agent.base.limits import MAX_EXO_PEERS_PER_INSTANCE

#: exo's placeholders in a ring's host list: its own slot, and non-neighbours' slots
RING_SELF = "0.0.0.0"
RING_PLACEHOLDER = "198.51.100.1"
#: text from exo we keep (model ids, names) is cut to this length
MAX_TEXT = 128


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


def _first(values: Iterable[str | None]) -> tuple[str, ...]:
    """The first MAX_EXO_PEERS_PER_INSTANCE distinct values, None left out: what links
    need of a ring's hosts or a rank's devices (exo's ring sends to two neighbours)."""
    out: dict[str, None] = {}
    for v in values:
        if v and v not in out:
            out[v] = None
            if len(out) == MAX_EXO_PEERS_PER_INSTANCE:
                break
    return tuple(out)


def _shards(assign: Mapping[str, Any]) -> dict[str, Any]:
    """node id -> its shard, from either shape exo has: `nodeToRunner` and `runnerToShard`,
    or (exo #2147) `shards: [[nodeId, runnerId, shard]]`."""
    listed = _get(assign, "shards")
    if isinstance(listed, list):
        return {row[0]: row[2] for row in listed
                if isinstance(row, list) and len(row) == 3 and isinstance(row[0], str)}
    n2r = _get(assign, "nodeToRunner", "node_to_runner")
    r2s = _get(assign, "runnerToShard", "runner_to_shard")
    if not isinstance(n2r, dict) or not isinstance(r2s, dict):
        return {}
    return {n: r2s.get(r) for n, r in n2r.items() if isinstance(n, str)}


def _model(assign: Mapping[str, Any]) -> str:
    model = _text(_get(assign, "modelId", "model_id"))
    if model is None:  # older exo: only in the shards' model card / model meta
        for shard in _shards(assign).values():
            _, meta = _untag(shard)
            if isinstance(meta, dict):
                card = _get(meta, "modelCard", "model_card", "modelMeta", "model_meta")
                if isinstance(card, dict):
                    model = _text(_get(card, "modelId", "model_id"))
                    if model:
                        break
    return model or "unknown model"


def _rank(assign: Mapping[str, Any], node_id: str | None) -> int | None:
    """This node's device rank: its shard's deviceRank (`_shards`)."""
    if node_id is None:
        return None
    _, shard = _untag(_shards(assign).get(node_id))
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


def _ring(body: Mapping[str, Any], node_id: str | None,
          local: frozenset[str] = frozenset()) -> tuple[tuple[str, ...], bool]:
    by_node = _get(body, "hostsByNode", "hosts_by_node")
    if isinstance(by_node, dict):
        if node_id is None or node_id not in by_node:
            return (), False  # a ring this node is not in, or we cannot tell which we are
        hosts, mine = by_node[node_id], True
    else:  # exo before Dec 2025: one list for the whole ring
        hosts = _get(body, "hosts")
        if not isinstance(hosts, list):
            raise TypeError("ring hosts are not a list")
        if node_id is None:
            # our own entry, by address: the ring neighbours are the entries beside it
            ips = [_ip(h) for h in hosts]
            me = next((i for i, ip in enumerate(ips) if ip in local), None)
            if me is None:
                return (), False
            hosts = [hosts[j] for j in ((me - 1) % len(hosts), (me + 1) % len(hosts))
                     if j != me]
            return _first(map(_ip, hosts)), True
        nodes = _shards(_get(body, "shardAssignments", "shard_assignments") or {})
        mine = not nodes or node_id in nodes
        if not mine:
            return (), False
    if not isinstance(hosts, list):
        raise TypeError("ring hosts are not a list")
    return _first(map(_ip, hosts)), mine


def _jaccl(body: Mapping[str, Any], assign: Mapping[str, Any],
           node_id: str | None) -> tuple[tuple[str, ...], bool]:
    matrix = _get(body, "jacclDevices", "jaccl_devices", "ibvDevices", "ibv_devices")
    if not isinstance(matrix, list):
        raise TypeError("jaccl devices are not a list")
    if node_id is None or node_id not in _shards(assign):
        return (), False  # not ours, or we cannot tell which node we are
    rank = _rank(assign, node_id)
    if rank is None:
        raise ValueError("jaccl: this node's rank cannot be read")
    if not 0 <= rank < len(matrix) or not isinstance(matrix[rank], list):
        raise ValueError(f"jaccl: no device row for rank {rank}")
    # a cell is one device or none (exo before #2160), or a list of them (after)
    cells = [c if isinstance(c, list) else [c] for c in matrix[rank]]
    if any(not isinstance(d, str | None) for c in cells for d in c):
        raise ValueError("jaccl: this node's devices cannot be read")
    return _first(map(_text, (d for c in cells for d in c))), True


def _raw_ip(host: Any) -> str | None:
    """A ring slot's IP as written, placeholders included."""
    if isinstance(host, dict):
        ip = _get(host, "ip", "address")
        return ip if isinstance(ip, str) else None
    if isinstance(host, str):
        return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return None
