"""Pairing both ends' views of a link into one edge, and numbering parallel edges."""

from __future__ import annotations

from exotray.core.topology import build, find_edge


def _link(id_, peer_id, peer_name, peer_address, iface, state="up", util=None, rtt=0.4):
    return {"id": id_, "peer_id": peer_id, "peer_name": peer_name, "peer_address": peer_address,
            "peer_port": 52480, "local_interface": iface, "local_label": iface.upper(),
            "state": state, "utilization": util, "rtt_ms": rtt, "rx_bytes_per_s": 10.0,
            "tx_bytes_per_s": 20.0}


def _node(id_, name, ifaces, links, **extra):
    return {"node": {"id": id_, "name": name, "version": "0.1.0"},
            "interfaces": [{"name": n, "addresses": a} for n, a in ifaces.items()],
            "links": links, "age_s": 0.1, "reachable": True, **extra}


# A and B joined by Thunderbolt (169.254/16) and Ethernet (10.0.0/24); C only by Ethernet
# and C has sent no snapshot yet.
A = _node("a", "studio-1", {"bridge0": ["169.254.0.1"], "en0": ["10.0.0.1"]}, [
    _link("a-tb", "b", "studio-2", "169.254.0.2", "bridge0", util=0.2),
    _link("a-en", "b", "studio-2", "10.0.0.2", "en0", util=0.95, state="saturated"),
    _link("a-c", None, None, "10.0.0.3", "en0", state="down"),
])
B = _node("b", "studio-2", {"bridge0": ["169.254.0.2"], "en0": ["10.0.0.2"]}, [
    _link("b-en", "a", "studio-1", "10.0.0.1", "en0", util=0.5),
    _link("b-tb", "a", "studio-1", "169.254.0.1", "bridge0", util=0.3, state="down"),
])
CLUSTER = {"self": "a", "nodes": [A, B]}


def test_nodes():
    nodes, _ = build(CLUSTER)
    by_id = {n.id: n for n in nodes}
    assert by_id["a"].is_self and by_id["a"].known
    assert not by_id["b"].is_self and by_id["b"].known
    assert by_id["addr:10.0.0.3"].name == "10.0.0.3" and not by_id["addr:10.0.0.3"].known


def test_both_ends_pair_into_one_edge_per_cable():
    _, edges = build(CLUSTER)
    assert sorted(e.link_ids for e in edges) == [("a-c",), ("a-en", "b-en"), ("a-tb", "b-tb")]
    tb = find_edge(edges, "b-tb")
    assert tb is find_edge(edges, "a-tb") or tb == find_edge(edges, "a-tb")
    assert tb.primary["id"] == "a-tb" and tb.reverse["id"] == "b-tb"
    assert tb.state == "down"  # the worse end wins
    assert tb.utilization == 0.3  # the busier end wins
    en = find_edge(edges, "a-en")
    assert en.state == "saturated" and en.utilization == 0.95
    assert en.label == "EN0" and en.rate_bytes_per_s == 20.0


def test_parallel_edges_are_numbered_stably():
    _, edges = build(CLUSTER)
    ab = sorted((e for e in edges if {e.a, e.b} == {"a", "b"}), key=lambda e: e.index)
    assert [(e.index, e.count) for e in ab] == [(0, 2), (1, 2)]
    # The same numbering whatever order the nodes arrive in.
    _, again = build({"self": "b", "nodes": [B, A]})
    assert {e.key: e.index for e in again} == {e.key: e.index for e in edges}


def test_unpaired_link_when_other_end_unknown():
    _, edges = build({"self": "a", "nodes": [A]})
    assert all(e.reverse is None for e in edges)
    assert len(edges) == 3


def test_empty():
    assert build({"self": "a", "nodes": []}) == ([], [])


def test_graph_cache_reads_new_numbers_and_notices_a_new_shape():
    import copy

    from exotray.core.topology import GraphCache

    cache = GraphCache()
    assert cache.build(CLUSTER) == build(CLUSTER)
    # new numbers, same shape: the same graph as a fresh build, with the new numbers
    busier = copy.deepcopy(CLUSTER)
    busier["nodes"][0]["links"][0].update(utilization=0.97, state="saturated")
    busier["nodes"][1]["reachable"] = False
    nodes, edges = cache.build(busier)
    assert (nodes, edges) == build(busier)
    tb = find_edge(edges, "a-tb")
    assert tb.utilization == 0.97 and tb.state == "down"  # b's end is down
    assert tb.primary is busier["nodes"][0]["links"][0]
    assert not next(n for n in nodes if n.id == "b").reachable
    # a new shape: C answers and reports its end of the Ethernet link to A
    c = _node("c", "gpu-3", {"en0": ["10.0.0.3"]},
              [_link("c-a", "a", "studio-1", "10.0.0.1", "en0")])
    grown = copy.deepcopy(busier)
    grown["nodes"][0]["links"][2]["peer_id"] = "c"
    grown["nodes"].append(c)
    assert cache.build(grown) == build(grown)
    assert find_edge(cache.build(grown)[1], "c-a").link_ids == ("a-c", "c-a")


def test_graph_cache_numbers_are_those_of_the_edges():
    """The cache reads every edge's state, utilization and exo flag at once (arrays); the
    edges, and `edge_numbers` of a plain build, give the same as `Edge` works out."""
    import copy
    import math

    import numpy as np

    from exotray.core.topology import GraphCache, edge_numbers

    cache = GraphCache()
    cache.build(CLUSTER)
    c = copy.deepcopy(CLUSTER)
    a_tb, a_en, a_c = c["nodes"][0]["links"]
    b_en, b_tb = c["nodes"][1]["links"]
    a_tb.update(utilization=0.9, rdma="not_counted")  # its RDMA unseen: b's 0.3 is all
    b_tb.update(state="up")
    b_en.update(utilization=None, exo_instances=[{"instance": "i1", "model": "m"}])
    a_en.update(state="probing", utilization=None)  # a state the map does not know
    a_c.update(utilization=0.4)
    _nodes, edges = cache.build(c)
    fresh = build(c)[1]
    assert edges == fresh
    state, util, exo = edge_numbers(edges)
    plain = edge_numbers(list(fresh))  # read edge by edge
    assert list(state) == list(plain[0]) == [e.state for e in fresh]
    assert np.array_equal(util, plain[1], equal_nan=True)
    assert [None if math.isnan(u) else u for u in util] == [e.utilization for e in fresh]
    assert list(exo) == list(plain[2]) == [False, True, False]
    tb, en = find_edge(edges, "a-tb"), find_edge(edges, "a-en")
    assert tb.utilization == 0.3 and tb.state == "up"
    assert en.state == "probing" and en.utilization is None  # neither end knows it
    assert en.reverse is b_en and find_edge(edges, "a-c").reverse is None
