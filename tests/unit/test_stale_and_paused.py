"""What is not measured now is not shown as now (issue 34 points 12 and 13): a node whose
agent stopped answering shows its rows as stale, with their age, in `exotray status`; a
down link shows no RTT; a paused node's links are "paused", not the red of their last
state."""

from __future__ import annotations

import json
from pathlib import Path

from exotray.core.status import status_lines
from exotray.core.topology import GraphCache, as_shown, build, node_condition

CLUSTER = json.loads((Path(__file__).parents[1] / "qt" / "fixtures" / "cluster.json")
                     .read_text())


def _rows(lines: list[str], node: str) -> list[str]:
    return [ln for ln in lines if ln.startswith(node + " ")]


def test_a_stale_nodes_rows_say_how_old_they_are():
    gpu = next(n for n in CLUSTER["nodes"] if n["node"]["name"] == "gpu-3")
    assert node_condition(gpu) == ("stale", "5") and gpu["reachable"] is False
    rows = _rows(status_lines(CLUSTER), "gpu-3")
    assert len(rows) == 2 and all(r.endswith("up 5 s ago (no answer since)") for r in rows)
    assert all(" – " in r for r in rows)  # no RTT of now


def test_a_down_link_shows_no_rtt():
    studio = CLUSTER["nodes"][0]
    down = next(lk for lk in studio["links"] if lk["state"] == "down")
    assert down["rtt_ms"] is not None  # the agent's last one
    (row,) = [r for r in _rows(status_lines(CLUSTER), "studio-1") if r.endswith("down")]
    assert f"{down['rtt_ms']:.2f}" not in row and " – " in row


def test_a_paused_node_is_paused_not_red():
    paused = {**CLUSTER, "nodes": [{**CLUSTER["nodes"][0], "paused": True},
                                   *CLUSTER["nodes"][1:]]}
    shown = as_shown(paused)
    assert [lk["state"] for lk in shown["nodes"][0]["links"]] == ["paused"] * 3
    assert CLUSTER["nodes"][0]["links"][1]["state"] == "saturated"  # the view is not changed
    assert as_shown(CLUSTER) is CLUSTER
    assert all(r.endswith("paused") for r in _rows(status_lines(paused), "studio-1"))
    # on the map an edge of the paused node takes the other end's state, else "paused"
    own = {lk["id"] for lk in CLUSTER["nodes"][0]["links"]}
    ends = {lk["id"]: lk["state"] for n in CLUSTER["nodes"][1:] for lk in n["links"]}
    for _nodes, edges in (build(shown), GraphCache().build(shown)):
        mine = [e for e in edges if e.primary["id"] in own]
        assert mine and all(
            e.state == ("paused" if e.reverse is None else ends[e.reverse["id"]])
            for e in mine)
    # alone in the view (no other end): every edge of it is "paused", the saturated too
    alone = as_shown({**paused, "nodes": paused["nodes"][:1]})
    for _nodes, edges in (build(alone), GraphCache().build(alone)):
        assert [e.state for e in edges] == ["paused"] * 3
