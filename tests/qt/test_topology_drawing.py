"""How the topology map draws (issue 15, the 64-node update): edges batched per colour
as line arrays (straight) and polylines (bent), colours worked out for all edges at once,
node names pre-rendered and pointing outward on crowded circles. Real widgets, offscreen."""

from __future__ import annotations

import copy
import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyqtgraph")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor

from exotray.ui.style import theme
from exotray.ui.topology.edges import KINDS, kind_codes
from exotray.ui.topology.view import TopologyView

FIXTURES = Path(__file__).parent / "fixtures"
SATURATED = "0386def512a998f6"  # bent: one of two parallel edges studio-1 <-> studio-2
PARALLEL = "8d398daebb711140"  # the other one, calm
DOWN = "8f432a8f84089cd4"  # studio-1 -> gpu-3, straight


def _mesh(n: int) -> dict[str, Any]:
    ids = [f"n{i:03d}" for i in range(n)]
    nodes = []
    for i, nid in enumerate(ids):
        links = [{"id": f"{nid}-{o}", "peer_id": o, "peer_name": f"node-{j}",
                  "local_interface": "eth0", "peer_address": f"10.0.0.{j + 1}",
                  "state": "up", "rtt_ms": 0.2, "rx_bytes_per_s": 1e6, "tx_bytes_per_s": 2e6,
                  "capacity_bytes_per_s": 1.25e9, "utilization": 0.1}
                 for j, o in enumerate(ids) if j != i]
        nodes.append({"node": {"id": nid, "name": f"node-{i}"}, "reachable": True,
                      "age_s": 0.1, "links": links,
                      "interfaces": [{"name": "eth0", "addresses": [f"10.0.0.{i + 1}"]}]})
    return {"self": ids[0], "nodes": nodes}


def _points(item: Any) -> set[tuple[float, float]]:
    xs, ys = item.getData()
    if xs is None:
        return set()
    return {(round(float(x), 9), round(float(y), 9))
            for x, y in zip(xs, ys, strict=True) if math.isfinite(x)}


def test_kind_codes_are_link_kind_for_every_edge_at_once() -> None:
    states = ["up", "saturated", "down", "probing"]
    utils = [None, 0.0, 0.2, 0.5, 0.69, 0.7, 0.89, 0.9, 0.95, 1.3]
    for threshold in (0.3, 0.7, 0.9):
        pairs = list(itertools.product(states, utils))
        codes = kind_codes([s for s, _ in pairs], [u for _, u in pairs], threshold)
        assert [KINDS[c] for c in codes] == [theme.link_kind(s, u, threshold)
                                             for s, u in pairs]


def test_straight_edges_are_line_pairs_and_bent_ones_polylines(view: TopologyView) -> None:
    """Each colour's edges: the straight ones as (start, end) pairs in its line item, the
    parallel (bent) ones as polylines in its curve item, both with the colour's pen."""
    batches = view._batches
    down = [e for e in view.edges() if e.state == "down"]
    ends = {p for e in down for p in (view.node_positions()[e.a], view.node_positions()[e.b])}
    assert _points(batches.straight["down"]) == {(round(x, 9), round(y, 9)) for x, y in ends}
    assert batches.straight["down"].opts["connect"] == "pairs"
    for link_id, kind in ((SATURATED, "hot"), (PARALLEL, "calm")):
        assert view.edge_kind(link_id) == kind
        xs, _ys = batches.bent[kind].getData()
        assert np.isfinite(xs).sum() == 25  # one curve of CURVE_SAMPLES points
        assert not batches.straight[kind].isVisible()  # no straight edge of that colour
        assert batches.bent[kind].opts["pen"] == batches.straight[kind].opts["pen"]
    assert batches.straight["hot"].opts["pen"].color() == QColor(theme.LINK_HOT)


def test_an_edge_changing_colour_moves_between_batches(qtbot: Any, view: TopologyView,
                                                       cluster: dict) -> None:
    c = copy.deepcopy(cluster)
    links = {lk["id"]: lk for snap in c["nodes"] for lk in snap["links"]}
    edge = view.edge_for(DOWN)
    for lid in edge.link_ids:
        links[lid].update(state="up", utilization=0.95)
    assert len(view._batches.straight["down"].getData()[0]) == 4  # two down edges
    view.set_cluster(c)
    assert view.edge_kind(DOWN) == "hot"
    ends = {tuple(round(v, 9) for v in view.node_positions()[n]) for n in (edge.a, edge.b)}
    assert _points(view._batches.straight["hot"]) == ends
    assert len(view._batches.straight["down"].getData()[0]) == 2  # the other one
    # and back
    view.set_cluster(cluster)
    assert view.edge_kind(DOWN) == "down"
    assert len(view._batches.straight["down"].getData()[0]) == 4
    assert not view._batches.straight["hot"].isVisible()


def test_crowded_names_point_outward_and_read_plainly(qtbot: Any) -> None:
    v = TopologyView()
    qtbot.addWidget(v)
    v.resize(1000, 650)
    v.show()
    v.set_cluster(_mesh(16))
    v.grab()
    vb = v.getPlotItem().getViewBox()

    def on_screen(view_xy: tuple[float, float]) -> QPointF:
        return QPointF(v.mapFromScene(vb.mapViewToScene(QPointF(*view_xy))))

    centre = on_screen((0, 0))
    for nid, (x, y) in v.node_positions().items():
        label = v.label_item(nid)
        assert label.toPlainText() == f"node-{int(nid[1:])}"
        assert label.angle() % 180 == pytest.approx(math.degrees(math.atan2(y, x)) % 180)
        # in pixels: outside the circle, on its node's side, never over the node
        rect = label.deviceTransform(v.viewportTransform()).mapRect(label.boundingRect())
        node = on_screen((x, y))
        assert not rect.contains(node)
        out, radius = rect.center() - centre, node - centre
        assert out.x() * radius.x() + out.y() * radius.y() > 0
        assert math.hypot(out.x(), out.y()) > math.hypot(radius.x(), radius.y())
        assert rect.width() < 200 and rect.height() < 200  # drawn at its size, not zoomed
    # pre-rendered already rotated: drawn as it is, not turned at each paint
    at = {(round(x, 6), round(y, 6)): nid for nid, (x, y) in v.node_positions().items()}
    right = v.label_item(at[(1.0, 0.0)])  # right of the circle: level
    assert right.angle() == 0 and right.transform().isIdentity()
    assert right.pixmap().width() > 2 * right.pixmap().height()
    diagonal = v.label_item(at[(round(math.sqrt(0.5), 6), round(math.sqrt(0.5), 6))])
    assert diagonal.angle() == pytest.approx(45) and diagonal.transform().isIdentity()
    assert diagonal.pixmap().height() > 0.5 * diagonal.pixmap().width()


def test_names_are_drawn_again_in_a_new_scheme(qtbot: Any, view: TopologyView,
                                               cluster: dict) -> None:
    label = view.label_item("a4f99a915b13")  # studio-2, a peer: drawn in theme.TEXT
    before = label.pixmap().cacheKey()

    def darkest() -> int:
        img = label.pixmap().toImage()
        return min(QColor(img.pixel(x, y)).lightness() for x in range(img.width())
                   for y in range(img.height()) if QColor.fromRgba(img.pixel(x, y)).alpha() > 200)

    light_text = darkest()
    try:
        assert theme.use("dark")
        view.restyle()
        view.set_cluster(cluster)
        assert label.pixmap().cacheKey() != before
        assert label.toPlainText() == "studio-2"
        # light text on the dark background now, dark text before
        img = label.pixmap().toImage()
        opaque = [QColor(img.pixel(x, y)) for x in range(img.width())
                  for y in range(img.height()) if QColor.fromRgba(img.pixel(x, y)).alpha() > 200]
        assert max(c.lightness() for c in opaque) > 160 > light_text
    finally:
        theme.use("light")
