"""TopologyView with the recorded /v1/cluster fixture: real widgets, offscreen."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyqtgraph")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor

from exotray.core import fmt, topology
from exotray.ui.style import theme
from exotray.ui.topology.view import BADGE_LIMIT, TopologyView

FIXTURES = Path(__file__).parent / "fixtures"
SHOTS = Path("/tmp/xt-shots")
SELF_ID = "c2f46f1384be"
STUDIO2 = "a4f99a915b13"
GPU3 = "e407eae12b94"
SATURATED = "0386def512a998f6"  # studio-1 -> studio-2 over xt1a (the far end: 20b2e75791c21204)
PARALLEL = "8d398daebb711140"  # studio-1 -> studio-2 over xt1c
DOWN = "8f432a8f84089cd4"  # studio-1 -> gpu-3


def _click(qtbot: Any, view: TopologyView, link_id: str) -> None:
    pos = view.mapFromScene(view.edge_scene_pos(link_id))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def _links(cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {lk["id"]: lk for snap in cluster["nodes"] for lk in snap["links"]}


def test_nodes_and_edges_follow_topology_build(view: TopologyView, cluster: dict) -> None:
    _nodes, edges = topology.build(cluster)
    assert len(view.nodes()) == 3
    assert set(view.node_positions()) == {SELF_ID, STUDIO2, GPU3}
    assert len(view.edges()) == len(edges) == 4
    assert view.node_item().data.size == 3
    assert [e.key for e in view.edges()] == [e.key for e in edges]
    # every link id of every edge resolves to its edge
    for e in edges:
        for lid in e.link_ids:
            assert view.edge_for(lid).key == e.key


def test_self_on_top_and_unreachable_node_drawn_differently(view: TopologyView) -> None:
    pos = view.node_positions()
    assert pos[SELF_ID] == pytest.approx((0.0, 1.0))
    spots = {p.data(): p for p in view.node_item().points()}
    me, peer, down = spots[SELF_ID], spots[STUDIO2], spots[GPU3]
    assert me.brush().color() == QColor(theme.NODE_SELF)
    assert me.size() > peer.size()
    assert down.brush().color() == QColor(theme.NODE_UNREACHABLE)
    assert down.pen().style() == Qt.PenStyle.DashLine
    assert peer.pen().style() == Qt.PenStyle.SolidLine
    assert "unreachable" in view.label_item(GPU3).toPlainText()
    assert "studio-1" in view.label_item(SELF_ID).toPlainText()


def test_saturated_edge_is_red_with_its_badge(view: TopologyView, cluster: dict) -> None:
    assert view.edge_kind(SATURATED) == "hot"
    assert view.edge_pen(SATURATED).color() == QColor(theme.LINK_HOT)
    assert view.edge_pen(SATURATED).style() == Qt.PenStyle.SolidLine
    link = _links(cluster)[SATURATED]
    expected = (
        fmt.rate(max(link["rx_bytes_per_s"], link["tx_bytes_per_s"]))
        + " · "
        + fmt.ms(link["rtt_ms"])
    )
    assert expected == "6.3 MB/s · 159 ms"
    badge = view.badge_item(SATURATED)
    assert badge is not None and badge.isVisible()
    assert badge.toPlainText() == expected
    # the far end's id finds the same edge and badge
    assert view.badge_item("20b2e75791c21204") is badge


def test_calm_edge_is_green(view: TopologyView) -> None:
    assert view.edge_kind(PARALLEL) == "calm"
    assert view.edge_pen(PARALLEL).color() == QColor(theme.LINK_CALM)


def test_down_edges_are_dashed(view: TopologyView) -> None:
    down = [e for e in view.edges() if e.state == "down"]
    assert len(down) == 2
    for e in down:
        pen = view.edge_pen(e.link_ids[0])
        assert pen.style() == Qt.PenStyle.DashLine
        assert pen.color() == QColor(theme.LINK_DOWN)
    assert view.edge_pen(SATURATED).style() == Qt.PenStyle.SolidLine


def test_unknown_capacity_is_grey(qtbot: Any, view: TopologyView, cluster: dict) -> None:
    c = copy.deepcopy(cluster)
    for lid in ("8d398daebb711140", "b1acdbf567a31b08"):
        lk = _links(c)[lid]
        lk.update(capacity_bytes_per_s=None, capacity_source="unknown", utilization=None)
    view.set_cluster(c)
    assert view.edge_kind(PARALLEL) == "unknown"
    assert view.edge_pen(PARALLEL).color() == QColor(theme.LINK_UNKNOWN)
    assert "unknown" in view.edge_tooltip(PARALLEL)


def test_parallel_edges_are_drawn_apart(view: TopologyView) -> None:
    a, b = view.edge_for(SATURATED), view.edge_for(PARALLEL)
    assert {a.a, a.b} == {b.a, b.b} and a.count == b.count == 2
    ma, mb = view.edge_midpoint(SATURATED), view.edge_midpoint(PARALLEL)
    assert math.dist(ma, mb) > 0.1
    pa, pb = view.edge_scene_pos(SATURATED), view.edge_scene_pos(PARALLEL)
    assert math.hypot(pa.x() - pb.x(), pa.y() - pb.y()) > 30  # pixels
    # and so are their badges
    ra = view.badge_item(SATURATED).sceneBoundingRect()
    rb = view.badge_item(PARALLEL).sceneBoundingRect()
    assert not ra.intersects(rb)


def test_no_badges_overlap(view: TopologyView) -> None:
    rects = [view.badge_item(e.link_ids[0]).sceneBoundingRect() for e in view.edges()]
    for i, r in enumerate(rects):
        for other in rects[i + 1 :]:
            assert not r.intersects(other)


def test_tooltip_has_the_numbers(view: TopologyView) -> None:
    tip = view.edge_tooltip(SATURATED)
    for text in ("159 ms", "60.0 ms", "200 ms", "6.4 ms", "0 %", "141 kB/s", "6.3 MB/s",
                 "50 Mbit/s", "your setting", "Virtual (xt1a)", "saturated"):
        assert text in tip, text
    # the capacity in bytes/s like the rates, rounded, its link speed as a label of its own
    assert "6.25 MB/s (50 Mbit/s), your setting" in tip


def test_tooltip_rounds_a_measured_capacity(qtbot: Any, view: TopologyView,
                                            cluster: dict) -> None:
    c = copy.deepcopy(cluster)
    _links(c)[SATURATED].update(capacity_bytes_per_s=835_137_500.0, capacity_source="measured")
    view.set_cluster(c)
    tip = view.edge_tooltip(SATURATED)
    assert "835 MB/s (6.68 Gbit/s), measured" in tip and "6.6811" not in tip


def test_update_keeps_positions_and_items(qtbot: Any, view: TopologyView, cluster: dict) -> None:
    positions = view.node_positions()
    curves = view.curve_items()
    nodes_item = view.node_item()
    labels = {nid: view.label_item(nid) for nid in positions}
    badges = {e.key: view.badge_item(e.link_ids[0]) for e in view.edges()}
    scene_items = len(view.scene().items())

    c = copy.deepcopy(cluster)
    lk = _links(c)[SATURATED]
    lk.update(rtt_ms=0.8, tx_bytes_per_s=12.3e6, utilization=0.3, state="up")
    _links(c)["20b2e75791c21204"].update(utilization=0.3, state="up")  # the far end
    view.set_cluster(c)

    assert view.node_positions() == positions
    assert view.curve_items() == curves
    assert all(view.curve_items()[k] is curves[k] for k in curves)
    assert view.node_item() is nodes_item
    assert all(view.label_item(nid) is item for nid, item in labels.items())
    assert all(view.badge_item(e.link_ids[0]) is badges[e.key] for e in view.edges())
    assert len(view.scene().items()) == scene_items
    assert view.badge_text(SATURATED) == "12.3 MB/s · 0.80 ms"
    assert badges[view.edge_for(SATURATED).key].toPlainText() == "12.3 MB/s · 0.80 ms"
    assert view.edge_kind(SATURATED) == "calm"


def test_same_cluster_same_layout_in_a_new_view(qtbot: Any, view: TopologyView,
                                                cluster: dict) -> None:
    other = TopologyView()
    qtbot.addWidget(other)
    other.set_cluster(cluster)
    assert other.node_positions() == view.node_positions()


def test_new_node_places_deterministically(qtbot: Any, view: TopologyView, cluster: dict) -> None:
    c = copy.deepcopy(cluster)
    c["nodes"][0]["links"].append(
        dict(_links(c)[PARALLEL], id="feedfacecafe0001", peer_id="0000new", peer_name="new-4",
             peer_address="10.213.9.9")
    )
    view.set_cluster(c)
    first = view.node_positions()
    assert len(first) == 4 and first["0000new"]
    assert first[SELF_ID] == pytest.approx((0.0, 1.0))
    view.set_cluster(c)
    assert view.node_positions() == first
    spots = {p.data(): p for p in view.node_item().points()}
    assert spots["0000new"].pen().style() == Qt.PenStyle.DotLine  # never seen: unknown
    view.set_cluster(cluster)  # and back: the original layout again
    assert len(view.node_positions()) == 3


@pytest.mark.parametrize("link_id", [SATURATED, PARALLEL, DOWN])
def test_click_on_edge_emits_link_selected(qtbot: Any, view: TopologyView, link_id: str) -> None:
    with qtbot.waitSignal(view.linkSelected, timeout=1000) as blocker:
        _click(qtbot, view, link_id)
    primary = view.edge_for(link_id).primary["id"]
    assert blocker.args == [primary]
    assert view.selected_link() == primary
    assert len(view.selection_halo().getData()[0]) > 0


def test_click_beside_the_line_still_hits(qtbot: Any, view: TopologyView) -> None:
    # a point on the straight down edge, away from its badge, 4 px to the side
    e = view.edge_for(DOWN)
    pa = view.node_positions()[e.a]
    mid = view.edge_midpoint(DOWN)
    quarter = ((pa[0] + mid[0]) / 2, (pa[1] + mid[1]) / 2)
    from PySide6.QtCore import QPointF

    scene = view.getPlotItem().getViewBox().mapViewToScene(QPointF(*quarter))
    pos = view.mapFromScene(scene) + QPoint(4, 0)
    with qtbot.waitSignal(view.linkSelected, timeout=1000) as blocker:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert blocker.args == [e.primary["id"]]


def test_click_on_empty_space_emits_nothing(qtbot: Any, view: TopologyView) -> None:
    with qtbot.assertNotEmitted(view.linkSelected):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(8, 8))
        qtbot.wait(20)
    assert view.selected_link() is None


def test_select_link_highlights_without_signal(qtbot: Any, view: TopologyView) -> None:
    with qtbot.assertNotEmitted(view.linkSelected):
        view.select_link("20b2e75791c21204")  # the far end's id of the saturated edge
    assert view.selected_link() == "20b2e75791c21204"
    xs, ys = view.selection_halo().getData()
    sat = view.edge_for(SATURATED)
    assert len(xs) > 0
    pos = view.node_positions()
    ends = {(round(float(xs[0]), 6), round(float(ys[0]), 6))}
    assert ends & {(round(pos[sat.a][0], 6), round(pos[sat.a][1], 6)),
                   (round(pos[sat.b][0], 6), round(pos[sat.b][1], 6))}
    badge = view.badge_item(SATURATED)
    assert badge.border.color() == QColor(theme.SELECTION)
    view.select_link(None)
    assert view.selected_link() is None
    assert len(view.selection_halo().getData()[0]) == 0
    assert view.badge_item(SATURATED).border.color() != QColor(theme.SELECTION)


def _luminance(color: str) -> float:
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    q = QColor(color)
    return 0.2126 * lin(q.redF()) + 0.7152 * lin(q.greenF()) + 0.0722 * lin(q.blueF())


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_selection_colour_means_nothing_else(view: TopologyView) -> None:
    """Issue 17.12: the selected edge's halo was the legend's "capacity unknown" blue-grey
    (a translucent accent blue). Its colour, as drawn over the background, must differ in
    hue from every legend colour and the self node, and stand out on light and dark."""
    view.select_link(SATURATED)
    pen = view.selection_halo().opts["pen"]
    drawn = pen.color()
    alpha = drawn.alphaF()
    bg = QColor(theme.BACKGROUND)
    over = QColor.fromRgbF(*(alpha * getattr(drawn, f)() + (1 - alpha) * getattr(bg, f)()
                             for f in ("redF", "greenF", "blueF")))
    others = [*theme.KIND_COLOR.values(), theme.NODE_SELF, theme.NODE_PEER]
    for other in others:
        o = QColor(other)
        hue_gap = abs(over.hueF() - o.hueF()) * 360 if o.hueF() >= 0 else 360
        hue_gap = min(hue_gap, 360 - hue_gap)
        assert hue_gap >= 40 or abs(over.saturationF() - o.saturationF()) > 0.5, other
    for background in (theme.BACKGROUND, "#1f2937"):
        assert _contrast(over.name(), background) >= 3.0, background


def test_selection_halo_is_drawn_in_its_own_colour(qtbot: Any, view: TopologyView) -> None:
    """What reaches the screen: selection-coloured pixels beside the selected edge only."""
    sel = QColor(theme.SELECTION)

    def count() -> int:
        img = view.grab().toImage()
        n = 0
        for x in range(0, img.width(), 2):
            for y in range(0, img.height(), 2):
                c = img.pixelColor(x, y)
                if (abs(c.red() - sel.red()) < 30 and abs(c.green() - sel.green()) < 30
                        and abs(c.blue() - sel.blue()) < 30):
                    n += 1
        return n

    assert count() == 0
    view.select_link(PARALLEL)  # a calm edge: green inside a magenta casing
    qtbot.wait(10)
    assert count() > 50


def test_rendered_pixels_show_red_and_dashes(qtbot: Any, view: TopologyView) -> None:
    """What reaches the screen: the saturated curve is red near its quarter point."""
    img = view.grab().toImage()
    vb = view.getPlotItem().getViewBox()
    from PySide6.QtCore import QPointF

    e = view.edge_for(SATURATED)
    pa = view.node_positions()[e.a]
    mid = view.edge_midpoint(SATURATED)
    # a point of the curve a quarter of the way: sample the drawn path instead
    path = vb.mapViewToScene(QPointF((pa[0] + mid[0]) / 2, (pa[1] + mid[1]) / 2))
    p = view.mapFromScene(path)
    red = QColor(theme.LINK_HOT)
    found = False
    for dx in range(-12, 13):
        for dy in range(-12, 13):
            c = img.pixelColor(p.x() + dx, p.y() + dy)
            if abs(c.red() - red.red()) < 40 and abs(c.green() - red.green()) < 40 \
                    and abs(c.blue() - red.blue()) < 40:
                found = True
    assert found


def test_large_mesh_batches_items(qtbot: Any) -> None:
    """A 40-node full mesh: 780 edges in a handful of curve items, badges only on demand."""
    n = 40
    ids = [f"n{i:03d}" for i in range(n)]
    nodes = []
    for i, nid in enumerate(ids):
        links = []
        for j, other in enumerate(ids):
            if i == j:
                continue
            links.append({
                "id": f"{nid}-{other}", "peer_id": other, "peer_name": other,
                "local_interface": "eth0", "local_label": "Ethernet",
                "peer_address": f"10.0.0.{j + 1}", "state": "up", "rtt_ms": 0.2,
                "rx_bytes_per_s": 1e6, "tx_bytes_per_s": 2e6,
                "capacity_bytes_per_s": 1.25e9, "capacity_source": "nic", "utilization": 0.1,
            })
        nodes.append({
            "node": {"id": nid, "name": nid}, "reachable": True, "age_s": 0.1,
            "interfaces": [{"name": "eth0", "addresses": [f"10.0.0.{i + 1}"]}],
            "links": links,
        })
    v = TopologyView()
    qtbot.addWidget(v)
    v.resize(800, 600)
    v.show()
    v.set_cluster({"self": ids[0], "nodes": nodes})
    assert len(v.edges()) == n * (n - 1) // 2 > BADGE_LIMIT
    assert len(v.scene().items()) < 200
    assert v.badge_item(v.edges()[5].link_ids[0]) is None
    v.select_link(v.edges()[5].link_ids[0])
    badge = v.badge_item(v.edges()[5].link_ids[0])
    assert badge is not None and badge.isVisible()
    with qtbot.waitSignal(v.linkSelected, timeout=1000):
        _click(qtbot, v, v.edges()[100].link_ids[0])
    v.grab()


def test_screenshot(qtbot: Any, view: TopologyView) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    view.select_link(SATURATED)
    qtbot.wait(10)
    assert view.grab().save(str(SHOTS / "topology.png"))
