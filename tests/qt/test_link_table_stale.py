"""The link table says what is not measured now (issue 34 points 12 and 13): a stale
node's rows carry their age, a down link has no RTT, a paused node's links are paused."""

from __future__ import annotations

import json
from pathlib import Path

from exotray.core.topology import as_shown
from exotray.ui.link.model import RTT, STATE, LinkModel

CLUSTER = json.loads((Path(__file__).parent / "fixtures" / "cluster.json").read_text())


def _cells(model: LinkModel, node: str, column: int) -> list[str]:
    return [model.text(column, r.vals[column]) for r in model.rows if r.vals[0] == node]


def test_stale_down_and_paused_rows(qtbot):
    model = LinkModel()
    model.update(CLUSTER)
    assert _cells(model, "gpu-3", STATE) == ["up, 5 s ago"] * 2
    assert _cells(model, "gpu-3", RTT) == ["–", "–"]
    states = _cells(model, "studio-1", STATE)
    rtts = dict(zip(states, _cells(model, "studio-1", RTT), strict=True))
    assert rtts["down"] == "–" and rtts["up"] != "–"
    paused = {**CLUSTER, "nodes": [{**CLUSTER["nodes"][0], "paused": True},
                                   *CLUSTER["nodes"][1:]]}
    model.update(as_shown(paused))
    assert _cells(model, "studio-1", STATE) == ["paused"] * 3
    assert _cells(model, "studio-1", RTT) == ["–"] * 3
