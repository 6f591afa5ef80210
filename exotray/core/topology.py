"""The cluster as a graph: nodes, and edges that pair both ends' views of one link.

Every agent reports its own links. The link A→B over Thunderbolt and the link B→A over
the same cable are one edge: B's end is the link of B whose local interface carries the
address A probes (found in B's interface list). Unpaired links (the other end has no
snapshot, or only one side probes) are edges of their own. Parallel edges between one
pair of nodes are numbered so a view can draw them apart.

Plain data in, plain data out: no Qt, no clock. (numpy: the graph cache reads a view's
numbers for all edges at once.)
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from exotray.core import shares

_STATE_RANK = {"paused": -1, "up": 0, "saturated": 1, "down": 2}


@dataclass(frozen=True)
class Node:
    id: str
    name: str
    is_self: bool
    #: False for a peer we only know from links (no valid snapshot yet)
    known: bool
    reachable: bool
    age_s: float | None


def node_condition(node: dict[str, Any]) -> tuple[str, ...] | None:
    """A cluster view's node that is not measuring now: ("stale", "70") when its agent
    stopped answering 70 s ago (its links are its last word, not its state now),
    ("paused",) when its monitoring is paused; None for a live node."""
    if not node.get("reachable", True):
        return ("stale", f"{node.get('age_s') or 0:.0f}")
    if node.get("paused"):
        return ("paused",)
    return None


def as_shown(cluster: dict[str, Any]) -> dict[str, Any]:
    """The cluster view as the UI shows it: a node whose monitoring is paused reports its
    links' last numbers, not their state now, so each of its links is "paused", with no
    utilization or RTT (the other end's view, when it has one, still counts). The view
    itself is not changed; a view with no paused node is returned as it is."""
    nodes = cluster.get("nodes") or []
    if not any(n.get("paused") for n in nodes):
        return cluster
    return {**cluster, "nodes": [
        {**n, "links": [{**lk, "state": "paused", "utilization": None, "rtt_ms": None}
                        for lk in n.get("links", [])]} if n.get("paused") else n
        for n in nodes]}


def _known_utilization(link: dict[str, Any]) -> float | None:
    """A link end's utilization, None where its RDMA traffic is not counted; a link
    quiet on a full shared carrier (core/shares.py), its own share of the capacity."""
    if link.get("rdma") == "not_counted":
        return None
    if link.get("flow_source") and shares.quiet(link):
        return shares.own_rate(link) / link["capacity_bytes_per_s"] \
            if link.get("capacity_bytes_per_s") else None  # type: ignore[operator]
    return link.get("utilization")


def _drawn_state(link: dict[str, Any]) -> str:
    """A link end's state as the map draws it: a link saturated only because a neighbour
    fills their shared carrier is drawn by its own share ("up"), not as full."""
    if link["state"] == "saturated" and link.get("flow_source") and shares.quiet(link):
        return "up"
    return link["state"]


class Edge:
    """One link as one or two ends. Built once per cluster view (`build`), for the map,
    the table and the window alike; its state and utilization are worked out once."""

    __slots__ = (
        "a",
        "b",
        "count",
        "index",
        "key",
        "link_ids",
        "primary",
        "reverse",
        "state",
        "utilization",
    )

    def __init__(self, key: str, a: str, b: str, primary: dict[str, Any],
                 reverse: dict[str, Any] | None, index: int = 0, count: int = 1,
                 link_ids: tuple[str, ...] = ()) -> None:
        #: stable identity: the sorted link ids of both ends
        self.key = key
        self.a = a
        self.b = b
        #: the link as seen from `a` (the node earliest in the cluster view that reports it)
        self.primary = primary
        #: the same link as seen from `b`, if b reports it
        self.reverse = reverse
        #: 0..count-1 among the edges between a and b
        self.index = index
        self.count = count
        self.link_ids = link_ids
        #: the worse end's state (as drawn: _drawn_state)
        state = _drawn_state(primary)
        #: the busier end's utilization (None when neither end knows it; an end whose
        #: RDMA traffic is not counted, macOS JACCL, knows only its IP part: unknown, so
        #: the edge is not drawn as an idle one)
        util = _known_utilization(primary)
        if reverse is not None:
            other = _drawn_state(reverse)
            if _STATE_RANK.get(other, 2) > _STATE_RANK.get(state, 2):
                state = other
            u = _known_utilization(reverse)
            if u is not None and (util is None or u > util):
                util = u
        self.state: str = state
        self.utilization: float | None = util

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Edge):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in Edge.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Edge({self.key!r}, {self.a!r} -> {self.b!r}, {self.state})"

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

    used: set[int] = set()  # id() of the links already part of an edge
    found: list[tuple[str, str, dict[str, Any], dict[str, Any] | None, str, tuple]] = []
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for snap in cluster.get("nodes", []):
        a = snap["node"]["id"]
        for link in snap.get("links", []):
            if id(link) in used:
                continue
            b = link.get("peer_id") or f"addr:{link['peer_address']}"
            if b not in nodes:
                nodes[b] = Node(b, link.get("peer_name") or link["peer_address"], False,
                                False, False, None)
            reverse = None
            b_owner = owner.get(b)
            b_iface = b_owner.get(link["peer_address"]) if b_owner else None
            if b_iface is not None:
                for o in back[b].get((a, b_iface), ()):
                    if id(o) not in used:
                        reverse = o
                        used.add(id(o))
                        break
            lid = link["id"]
            if reverse is None:
                ids: tuple[str, ...] = (lid,)
            else:
                rid = reverse["id"]
                ids = (lid, rid) if lid <= rid else (rid, lid)
            groups[(a, b) if a <= b else (b, a)].append(len(found))
            found.append((a, b, link, reverse, "+".join(ids), ids))

    # Number parallel edges per unordered pair, in a stable order (by key).
    number: dict[int, tuple[int, int]] = {}
    for members in groups.values():
        if len(members) > 1:
            members.sort(key=lambda i: found[i][4])
            for n, i in enumerate(members):
                number[i] = (n, len(members))
    edges = []
    for i, (a, b, link, reverse, key, ids) in enumerate(found):
        n, count = number.get(i, (0, 1))
        edges.append(Edge(key, a, b, link, reverse, n, count, ids))
    return list(nodes.values()), edges


_LINK_SHAPE = itemgetter("id", "peer_id", "peer_address", "local_interface", "peer_name")


def _links_shape(links: list[dict[str, Any]]) -> tuple:
    try:
        return tuple(map(_LINK_SHAPE, links))  # every key there (a /v1/cluster view): in C
    except KeyError:
        return tuple([(lk["id"], lk.get("peer_id"), lk["peer_address"],
                       lk.get("local_interface"), lk.get("peer_name")) for lk in links])


def _shape(cluster: dict[str, Any]) -> tuple:
    """What the pairing and numbering of edges depend on: who reports which links (ids,
    peers, addresses, interfaces) and which addresses each node's interfaces own."""
    return (cluster.get("self"), tuple(
        (snap["node"]["id"],
         tuple([(i.get("name"), tuple(i.get("addresses", ())))
                for i in snap.get("interfaces", [])]),
         _links_shape(snap.get("links", [])))
        for snap in cluster.get("nodes", [])))


class EdgeNumbers:
    """One view's numbers for the edges of a `GraphCache`, as arrays (edge i at index i):
    worked out from all the view's links at once, with no Python per edge.

    `state`: the worse end's state (object array of str); `utilization`: the busier end's
    (float, NaN where neither end knows it); `exo`: whether either end carries exo's
    traffic (its `exo_instances`)."""

    __slots__ = ("exo", "links", "primary", "reverse", "state", "utilization")

    def __init__(self, primary: np.ndarray, reverse: np.ndarray) -> None:
        #: per edge: the index of its primary end, and of its reverse end (-1: none), in
        #: the view's links in order (node by node)
        self.primary, self.reverse = primary, reverse
        self.links: list[dict[str, Any]] = []
        self.state = np.zeros(0, dtype=object)
        self.utilization = np.zeros(0)
        self.exo = np.zeros(0, dtype=bool)

    def read(self, links: list[dict[str, Any]]) -> None:
        """Take the numbers of a view whose links (in order) are `links`."""
        n = len(links)
        self.links = links
        states = list(map(itemgetter("state"), links))
        if any(map(dict.get, links, repeat("flow_source"))):  # (own bytes read somewhere)
            states = list(map(_drawn_state, links))
            util = np.array(list(map(_known_utilization, links)), dtype=float)
        else:
            util = np.array(list(map(dict.get, links, repeat("utilization"))), dtype=float)
        rank = np.fromiter(map(_STATE_RANK.get, states, repeat(2)), np.int8, n)
        if any(map(dict.get, links, repeat("rdma"))):
            # an end whose RDMA traffic is not counted knows only its IP part: unknown
            rdma = [lk.get("rdma") == "not_counted" for lk in links]
            util[np.array(rdma, dtype=bool)] = np.nan
        if any(map(dict.get, links, repeat("exo_instances"))):
            exo = np.fromiter(map(bool, map(dict.get, links, repeat("exo_instances"))),
                              bool, n)
        else:
            exo = np.zeros(n, dtype=bool)
        # one more entry at the end, for the reverse index -1 (no reverse end)
        rank, util = np.append(rank, -1), np.append(util, np.nan)
        st = np.empty(n + 1, dtype=object)
        st[:n] = states
        exo = np.append(exo, False)
        p, r = self.primary, self.reverse
        self.state = st[np.where(rank[r] > rank[p], r, p)]
        with np.errstate(invalid="ignore"):
            self.utilization = np.fmax(util[p], util[r])
        self.exo = exo[p] | exo[r]


class _ViewEdge(Edge):
    """An edge of a `GraphCache`: its ends and numbers are read from the cache's
    `EdgeNumbers` when asked for, so a new view costs nothing per edge."""

    __slots__ = ("_i", "_numbers")

    def __init__(self, edge: Edge, numbers: EdgeNumbers, i: int) -> None:
        self.key, self.a, self.b = edge.key, edge.a, edge.b
        self.index, self.count, self.link_ids = edge.index, edge.count, edge.link_ids
        self._numbers, self._i = numbers, i

    @property  # type: ignore[override]
    def primary(self) -> dict[str, Any]:
        nb = self._numbers
        return nb.links[nb.primary[self._i]]

    @property  # type: ignore[override]
    def reverse(self) -> dict[str, Any] | None:
        nb = self._numbers
        r = nb.reverse[self._i]
        return None if r < 0 else nb.links[r]

    @property  # type: ignore[override]
    def state(self) -> str:
        return self._numbers.state[self._i]

    @property  # type: ignore[override]
    def utilization(self) -> float | None:
        u = float(self._numbers.utilization[self._i])
        return None if math.isnan(u) else u


class Edges(list):  # type: ignore[type-arg]
    """The edges of one view, and (from a `GraphCache`) their numbers as arrays."""

    def __init__(self, edges: list[Edge], numbers: EdgeNumbers | None = None) -> None:
        super().__init__(edges)
        self.numbers = numbers


def edge_numbers(edges: list[Edge]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(state, utilization, exo) per edge as arrays, as `EdgeNumbers` has them: the
    graph cache's when `edges` are its latest view's, else read edge by edge."""
    nb = getattr(edges, "numbers", None)
    if nb is not None and len(nb.primary) == len(edges):
        return nb.state, nb.utilization, nb.exo
    state = np.empty(len(edges), dtype=object)
    state[:] = [e.state for e in edges]
    util = np.array([e.utilization for e in edges], dtype=float)
    exo = np.array([bool(e.primary.get("exo_instances")
                         or (e.reverse is not None and e.reverse.get("exo_instances")))
                    for e in edges], dtype=bool)
    return state, util, exo


class GraphCache:
    """`build` for a view that comes every second. While the cluster's shape is the one
    of the last view (the same nodes reporting the same links over the same interfaces),
    which ends pair into an edge and how parallel edges are numbered are taken from last
    time: only the links' numbers (and the nodes' reachability) are read again, all at
    once into an `EdgeNumbers` (arrays); the edges read theirs from it when asked.

    The Edge objects are kept and show the latest view's numbers (the lists returned
    are new): the map and the table hold only the latest view's."""

    def __init__(self) -> None:
        self._shape: tuple | None = None
        self._edges: list[Edge] = []
        self._numbers = EdgeNumbers(np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))
        self._unknown: list[Node] = []  # peers known only from links

    def build(self, cluster: dict[str, Any]) -> tuple[list[Node], list[Edge]]:
        shape = _shape(cluster)
        snaps = cluster.get("nodes", [])
        links = list(chain.from_iterable(snap.get("links", []) for snap in snaps))
        if shape != self._shape:
            nodes, edges = build(cluster)
            where = {id(lk): i for i, lk in enumerate(links)}
            numbers = EdgeNumbers(
                np.array([where[id(e.primary)] for e in edges], dtype=np.intp),
                np.array([-1 if e.reverse is None else where[id(e.reverse)] for e in edges],
                         dtype=np.intp))
            numbers.read(links)
            self._numbers = numbers
            self._edges = [_ViewEdge(e, numbers, i) for i, e in enumerate(edges)]
            self._unknown = [n for n in nodes if not n.known]
            self._shape = shape
            return nodes, Edges(self._edges, numbers)
        self_id = cluster.get("self")
        known: dict[str, Node] = {}
        for snap in snaps:
            nid = snap["node"]["id"]
            if nid not in known:
                known[nid] = Node(nid, snap["node"]["name"], nid == self_id, True,
                                  bool(snap.get("reachable", True)), snap.get("age_s"))
        self._numbers.read(links)
        return [*known.values(), *self._unknown], Edges(self._edges, self._numbers)


def find_edge(edges: list[Edge], link_id: str) -> Edge | None:
    return next((e for e in edges if link_id in e.link_ids), None)
