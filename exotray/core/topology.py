"""The cluster as a graph: nodes, and edges that pair both ends' views of one link.

Every agent reports its own links. The link A→B over Thunderbolt and the link B→A over
the same cable are one edge: B's end is the link of B whose local interface carries the
address A probes (found in B's interface list). Unpaired links (the other end has no
snapshot, or only one side probes) are edges of their own. Parallel edges between one
pair of nodes are numbered so a view can draw them apart.

Plain data in, plain data out: no Qt, no clock.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

_STATE_RANK = {"up": 0, "saturated": 1, "down": 2}


@dataclass(frozen=True)
class Node:
    id: str
    name: str
    is_self: bool
    #: False for a peer we only know from links (no valid snapshot yet)
    known: bool
    reachable: bool
    age_s: float | None


@dataclass(frozen=True)
class Edge:
    #: stable identity: the sorted link ids of both ends
    key: str
    a: str
    b: str
    #: the link as seen from `a` (the node earliest in the cluster view that reports it)
    primary: dict[str, Any]
    #: the same link as seen from `b`, if b reports it
    reverse: dict[str, Any] | None
    #: 0..count-1 among the edges between a and b
    index: int = 0
    count: int = 1
    link_ids: tuple[str, ...] = field(default=())

    @property
    def state(self) -> str:
        states = [self.primary["state"]] + ([self.reverse["state"]] if self.reverse else [])
        return max(states, key=lambda s: _STATE_RANK.get(s, 2))

    @property
    def utilization(self) -> float | None:
        # an end whose RDMA traffic is not counted (macOS JACCL) knows only its IP part:
        # unknown, so the edge is not drawn as an idle one
        values = [
            lk.get("utilization")
            for lk in (self.primary, self.reverse)
            if lk is not None and lk.get("utilization") is not None
            and lk.get("rdma") != "not_counted"
        ]
        return max(values) if values else None

    @property
    def rtt_ms(self) -> float | None:
        return self.primary.get("rtt_ms")

    @property
    def rate_bytes_per_s(self) -> float | None:
        """The busier direction of the carrying interface, as seen from a."""
        rx, tx = self.primary.get("rx_bytes_per_s"), self.primary.get("tx_bytes_per_s")
        if rx is None and tx is None:
            return None
        return max(rx or 0.0, tx or 0.0)

    @property
    def label(self) -> str:
        p = self.primary
        return p.get("local_label") or p.get("local_interface") or "?"


def _peer_node_id(link: dict[str, Any]) -> str:
    return link.get("peer_id") or f"addr:{link['peer_address']}"


def build(cluster: dict[str, Any]) -> tuple[list[Node], list[Edge]]:
    self_id = cluster.get("self")
    nodes: dict[str, Node] = {}
    # per node: which of its interfaces owns an address, and its links by (peer, iface)
    owner: dict[str, dict[str, str]] = {}
    back: dict[str, dict[tuple[str | None, str | None], list[dict[str, Any]]]] = {}
    for snap in cluster.get("nodes", []):
        nid = snap["node"]["id"]
        nodes[nid] = Node(
            id=nid,
            name=snap["node"]["name"],
            is_self=nid == self_id,
            known=True,
            reachable=bool(snap.get("reachable", True)),
            age_s=snap.get("age_s"),
        )
        owner[nid] = {a: i["name"] for i in snap.get("interfaces", [])
                      for a in i.get("addresses", [])}
        idx: dict[tuple[str | None, str | None], list[dict[str, Any]]] = defaultdict(list)
        for lk in snap.get("links", []):
            idx[(lk.get("peer_id"), lk.get("local_interface"))].append(lk)
        back[nid] = idx

    used: set[tuple[str, str]] = set()  # (node id, link id) already part of an edge
    edges: list[Edge] = []
    for snap in cluster.get("nodes", []):
        a = snap["node"]["id"]
        for link in snap.get("links", []):
            if (a, link["id"]) in used:
                continue
            b = _peer_node_id(link)
            if b not in nodes:
                nodes[b] = Node(b, link.get("peer_name") or link["peer_address"], False,
                                False, False, None)
            reverse = None
            b_iface = owner.get(b, {}).get(link["peer_address"])
            if b_iface is not None:
                reverse = next((o for o in back[b].get((a, b_iface), [])
                                if (b, o["id"]) not in used), None)
            used.add((a, link["id"]))
            if reverse is not None:
                used.add((b, reverse["id"]))
            ids = tuple(sorted([link["id"]] + ([reverse["id"]] if reverse else [])))
            edges.append(Edge("+".join(ids), a, b, link, reverse, link_ids=ids))

    # Number parallel edges per unordered pair, in a stable order.
    groups: dict[frozenset[str], list[int]] = defaultdict(list)
    for i, e in enumerate(edges):
        groups[frozenset((e.a, e.b))].append(i)
    for idx_list in groups.values():
        idx_list.sort(key=lambda i: edges[i].key)
        for n, i in enumerate(idx_list):
            e = edges[i]
            edges[i] = Edge(e.key, e.a, e.b, e.primary, e.reverse, n, len(idx_list), e.link_ids)
    return list(nodes.values()), edges


def find_edge(edges: list[Edge], link_id: str) -> Edge | None:
    return next((e for e in edges if link_id in e.link_ids), None)
