"""The cluster map: nodes on a circle, one edge per link, coloured by utilization.

Drawing model (everything is created once and updated in place):

* nodes: one ``ScatterPlotItem`` (all circles) and one pre-rendered name per node id
  (``topology_labels``);
* edges: per drawing class (calm, busy, hot, unknown, down) one item of straight lines
  and one of bent polylines (``topology_edges``), so a 128-node full mesh (8128 edges)
  is five line arrays, not 8128 items; their colours are worked out for all edges at
  once from the graph cache's arrays (``topology.EdgeNumbers``);
* selection and hover: two wide translucent "halo" curves under the edges
  (``topology_halos``);
* links that carry exo's inference traffic (their `exo_instances`): one more wide casing
  in theme.EXO under them, and the model on their badge and tooltip (nothing without exo);
* badges ("12.3 MB/s · 0.8 ms"): one per edge while the graph is small, above that only
  on the selected edge (``topology_badges``);
* the legend of the edges' colours (``topology_legend``).

Node positions are assigned once per set of node ids (self on top, the others clockwise
by name, then id) and never move while that set is unchanged. Clicks and hovers are
hit-tested in pixels against the drawn polylines (``topology_hits``: ``HIT_PX`` either
side of the line); this module handles them (hover halo, cursor, tooltip from
``topology_tips``, selection on a left click).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QCursor, QFont, QPen
from PySide6.QtWidgets import QGraphicsItem, QToolTip, QWidget

from exotray.core import topology
from exotray.core.topology import Edge, Node
from exotray.ui.link import words as linkwords
from exotray.ui.style import theme
from exotray.ui.topology import tips as topology_tips
from exotray.ui.topology.badges import BADGE_LIMIT, EdgeBadges, badge_text
from exotray.ui.topology.edges import KINDS, EdgeBatches, edge_geometry, edge_pen, kind_codes
from exotray.ui.topology.halos import Halos
from exotray.ui.topology.hits import edge_at, node_at, pixel_size
from exotray.ui.topology.labels import Geometry, NodeLabel, NodeLabels
from exotray.ui.topology.layout import (
    label_geometry,
    label_markup,
    layout,
    node_style,
)
from exotray.ui.topology.legend import MapLegend

#: label distance from the node centre, in view units (the circle has radius 1)
LABEL_GAP: Final = 0.1
#: margin around the node circle, in view units, so that labels fit
VIEW_MARGIN: Final = 0.36


class TopologyView(pg.PlotWidget):
    """The cluster's nodes and links; click an edge to select its link."""

    #: the primary link id of the edge the user clicked
    linkSelected = Signal(str)

    def __init__(
        self, parent: QWidget | None = None, threshold: float = theme.DEFAULT_THRESHOLD
    ) -> None:
        super().__init__(parent=parent, background=theme.BACKGROUND)
        self._threshold = threshold
        self.setAntialiasing(True)
        self.setMinimumSize(240, 180)
        pi = self.getPlotItem()
        pi.hideAxis("left")
        pi.hideAxis("bottom")
        pi.hideButtons()
        pi.setMenuEnabled(False)
        pi.layout.setContentsMargins(4, 4, 4, 4)
        self._vb: pg.ViewBox = pi.getViewBox()
        self._vb.setMouseEnabled(x=False, y=False)
        self._vb.setAspectLocked(True)
        self._vb.disableAutoRange()
        self._vb.setRange(xRange=(-1.4, 1.4), yRange=(-1.4, 1.4), padding=0)

        self._label_font = QFont()
        self._label_font.setPointSizeF(10)

        # -- items, created once --------------------------------------------------------
        self._halos = Halos()  # selection, hover, exo
        self._exo_sig: tuple[int, ...] | None = None
        self._node_item = pg.ScatterPlotItem(pxMode=True, hoverable=False)
        # the circles change only when a node's look does: one pixmap until then
        self._node_item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        for z, item in (*self._halos.layers(), (10, self._node_item)):
            item.setZValue(z)
            self._vb.addItem(item, ignoreBounds=True)
        self._batches = EdgeBatches(lambda item: self._vb.addItem(item, ignoreBounds=True))
        self._curves = self._batches.straight
        self._legend = MapLegend(self._vb, self._threshold)
        self._labels = NodeLabels(lambda item: self._vb.addItem(item, ignoreBounds=True),
                                  self._vb.removeItem, z=11)
        self._badges = EdgeBadges(self._vb)

        # -- model --------------------------------------------------------------------
        self._graphs = topology.GraphCache()  # for views given without their graph
        self._nodes: list[Node] = []
        self._edges: list[Edge] = []
        self._numbers = topology.edge_numbers([])  # state, utilization, exo per edge
        self._ifaces: dict[str, linkwords.Ifaces] = {}
        self._pos: dict[str, tuple[float, float]] = {}
        self._pos_ids: frozenset[str] = frozenset()
        self._label_geoms: dict[str, Geometry] = {}  # per node: where its name goes
        self._node_sig: tuple[Any, ...] | None = None
        self._node_px = 30.0
        self._geom_sig: tuple[Any, ...] | None = None
        self._geom_numbers: object = None  # the graph cache's numbers of those edges
        self._ctrl = np.zeros((0, 3, 2))  # per edge: start, control point, end
        self._paths: list[np.ndarray] = []  # per edge: polyline + a NaN row
        self._seg0 = np.zeros((0, 2))
        self._seg1 = np.zeros((0, 2))
        self._seg_edge = np.zeros(0, dtype=np.int64)
        self._edge_index: dict[str, int] = {}  # any link id -> index in self._edges
        self._codes = np.zeros(0, dtype=np.int8)  # per edge: its drawing class, in KINDS
        self._style_sig: tuple[Any, ...] | None = None
        self._selected_id: str | None = None
        self._hover: int | None = None
        self._hover_node: str | None = None

        scene = self.scene()
        scene.sigMouseClicked.connect(self._on_click)
        scene.sigMouseMoved.connect(self._on_move)
        self._vb.sigResized.connect(self._place_badges)

    # -- public API ------------------------------------------------------------------------
    @property
    def threshold(self) -> float:
        return self._threshold

    def set_threshold(self, threshold: float) -> None:
        self._threshold = threshold
        self._style_sig = None
        self._legend.fill(threshold)
        if self._edges:
            self._restyle()

    def restyle(self) -> None:
        """Take style/theme.py's current colours (exotray.ui.style.look, through the window): what
        was drawn once is recoloured here, the rest at the next set_cluster, which
        gives every node, edge and badge its new colours (the names are rendered again:
        their markup carries the colours)."""
        self.setBackground(theme.BACKGROUND)
        self._halos.restyle()
        self._legend.restyle(self._threshold)
        self._badges.restyle()
        self._node_sig = self._style_sig = None

    def set_cluster(self, cluster: dict[str, Any],
                    graph: tuple[list[Node], list[Edge]] | None = None) -> None:
        """Show a /v1/cluster view (and its graph, `topology.build(cluster)`, when the
        caller has built it already). Positions only change when the set of nodes does;
        of the edges only what changed is set again: the geometry when the set of links
        changes, a colour's batch when an edge joins or leaves it."""
        nodes, edges = graph if graph is not None else self._graphs.build(cluster)
        self._nodes, self._edges = nodes, edges
        self._numbers = topology.edge_numbers(edges)
        self._ifaces = {n["node"]["id"]: linkwords.node_interfaces(n)
                        for n in cluster.get("nodes", [])}
        self._update_layout(nodes)
        self._update_nodes(nodes)
        self._update_geometry(edges)
        self._restyle()
        self._update_exo()
        self._update_badges()
        self._update_selection()
        if self._hover is not None and self._hover >= len(edges):
            self._set_hover(None)

    def select_link(self, link_id: str | None) -> None:
        """Highlight the edge that carries `link_id` (either end's id); no signal."""
        self._selected_id = link_id
        self._update_selection()

    def selected_link(self) -> str | None:
        """The selected link id: the one passed to select_link, or the clicked edge's."""
        return self._selected_id

    def edge_scene_pos(self, link_id: str) -> QPointF:
        """The middle of the edge carrying `link_id`, in scene coordinates."""
        x, y = self.edge_midpoint(link_id)
        return self._vb.mapViewToScene(QPointF(x, y))

    # -- introspection (tests, tooltips) -----------------------------------------------
    def edges(self) -> list[Edge]:
        return list(self._edges)

    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def node_positions(self) -> dict[str, tuple[float, float]]:
        return dict(self._pos)

    def edge_for(self, link_id: str) -> Edge:
        return self._edges[self._index(link_id)]

    def edge_midpoint(self, link_id: str) -> tuple[float, float]:
        """The middle of the drawn edge (t = 0.5 on its curve), in view coordinates."""
        p0, c, p2 = self._ctrl[self._index(link_id)]
        m = 0.25 * p0 + 0.5 * c + 0.25 * p2
        return float(m[0]), float(m[1])

    def edge_kind(self, link_id: str) -> str:
        return KINDS[self._codes[self._index(link_id)]]

    def edge_pen(self, link_id: str) -> QPen:
        """The pen the edge is drawn with (its class's curve item)."""
        return QPen(self._curves[self.edge_kind(link_id)].opts["pen"])

    def curve_items(self) -> dict[str, pg.PlotCurveItem]:
        return dict(self._curves)

    def node_item(self) -> pg.ScatterPlotItem:
        return self._node_item

    def label_item(self, node_id: str) -> NodeLabel:
        return self._labels[node_id]

    def badge_item(self, link_id: str) -> pg.TextItem | None:
        """The badge showing the edge's numbers, if one is drawn."""
        edge = self.edge_for(link_id)
        sel = self._selected_index()
        return self._badges.item(edge, sel is not None and self._edges[sel].key == edge.key)

    def badge_text(self, link_id: str) -> str:
        return badge_text(self.edge_for(link_id))

    def edge_tooltip(self, link_id: str) -> str:
        return self._tooltip(self.edge_for(link_id))

    def exo_link_ids(self) -> list[str]:
        """Primary link ids of the edges drawn as carrying exo traffic."""
        return [e.primary["id"] for e in self._edges if topology_tips.edge_exo(e)]

    def exo_halo(self) -> pg.PlotCurveItem:
        return self._halos.exo

    def selection_halo(self) -> pg.PlotCurveItem:
        return self._halos.selection

    # -- layout and nodes --------------------------------------------------------------
    def _update_layout(self, nodes: list[Node]) -> None:
        ids = frozenset(n.id for n in nodes)
        if ids == self._pos_ids:
            return
        self._pos_ids = ids
        self._pos = layout(nodes)
        count = len(nodes)
        self._node_px = 30.0 if count <= 12 else max(9.0, 30.0 * 12 / count)
        self._label_font.setPointSizeF(10 if count <= 12 else 8 if count <= 40 else 7)
        size = self._label_font.pointSizeF()
        self._label_geoms = {nid: label_geometry(xy, size, count > 12, LABEL_GAP)
                             for nid, xy in self._pos.items()}
        if self._pos:
            xs = [p[0] for p in self._pos.values()]
            ys = [p[1] for p in self._pos.values()]
            m = VIEW_MARGIN if count <= 12 else VIEW_MARGIN + 0.2
            self._vb.setRange(
                xRange=(min(xs) - m - 0.2, max(xs) + m + 0.2),
                yRange=(min(ys) - m, max(ys) + m),
                padding=0,
            )
        self._node_sig = None
        self._geom_sig = None

    def _update_nodes(self, nodes: list[Node]) -> None:
        sig = (*((n.id, n.is_self, n.known, n.reachable) for n in nodes), self._node_px)
        if sig != self._node_sig:
            self._node_sig = sig
            spots = []
            for n in nodes:
                fill, ring, width, style = node_style(n)
                size = self._node_px * (1.15 if n.is_self else 1.0)
                spots.append(
                    {
                        "pos": self._pos[n.id],
                        "size": size,
                        "brush": pg.mkBrush(fill),
                        "pen": pg.mkPen(ring, width=width, style=style),
                        "symbol": "o",
                        "data": n.id,
                    }
                )
            self._node_item.setData(spots)
        radial = len(nodes) > 12
        look = (self._label_font, self._label_font.toString(), theme.TEXT,
                max(1.0, self.devicePixelRatioF()))
        geoms = self._label_geoms
        for n in nodes:
            self._labels.show(n.id, label_markup(n, compact=radial), geoms[n.id], look)
        self._labels.keep_only(self._pos)

    # -- edges -------------------------------------------------------------------------
    def _update_geometry(self, edges: list[Edge]) -> None:
        # The graph cache's edges are the same edges (keys, order) while its numbers
        # object is: then there is no need to compare 2016 keys.
        numbers = getattr(edges, "numbers", None)
        if (numbers is not None and numbers is self._geom_numbers
                and self._geom_sig is not None and self._geom_sig[0] == self._pos_ids):
            return
        self._geom_numbers = numbers
        sig = (self._pos_ids, tuple([e.key for e in edges]))
        if sig == self._geom_sig:
            return
        self._geom_sig = sig
        self._edge_index = {lid: i for i, e in enumerate(edges) for lid in e.link_ids}
        geom = edge_geometry(edges, self._pos)
        self._ctrl, self._paths = geom.ctrl, geom.paths
        self._seg0, self._seg1, self._seg_edge = geom.seg0, geom.seg1, geom.seg_edge
        self._batches.set_geometry(geom)
        self._style_sig = None

    def _update_exo(self) -> None:
        idx = tuple(np.flatnonzero(self._numbers[2]).tolist())
        sig = (*idx, id(self._paths))
        if sig == self._exo_sig:
            return
        self._exo_sig = sig
        self._halos.mark_exo([self._paths[i] for i in idx])

    def _restyle(self) -> None:
        state, util, _exo = self._numbers
        self._codes = kind_codes(state, util, self._threshold)
        n = len(self._edges)
        width = 3.0 if n <= 60 else 1.5 if n <= 500 else 1.0
        alpha = 1.0 if n <= 500 else 0.55
        sig = (width, alpha, id(self._paths))
        if sig != self._style_sig:  # new pens or new geometry: every batch again
            self._style_sig = sig
            for kind in KINDS:
                self._batches.set_pen(kind, edge_pen(kind, width, alpha))
        self._batches.set_kinds(self._codes)

    def _update_badges(self) -> None:
        self._badges.update(self._edges, self._codes, self._selected_index())
        self._place_badges()

    def _place_badges(self) -> None:
        sel = self._selected_index()
        px = pixel_size(self._vb) if self._badges.per_edge else None
        self._badges.place(self._edges, self._ctrl, list(self._pos.values()),
                           self._node_px / 2, sel, px)

    # -- selection and hover ---------------------------------------------------------------
    def _index(self, link_id: str) -> int:
        try:
            return self._edge_index[link_id]
        except KeyError:
            raise KeyError(f"no edge carries link {link_id!r}") from None

    def _selected_index(self) -> int | None:
        return None if self._selected_id is None else self._edge_index.get(self._selected_id)

    def _update_selection(self) -> None:
        sel = self._selected_index()
        self._halos.select(None if sel is None else self._paths[sel])
        if len(self._codes):
            self._update_badges()

    def _set_hover(self, index: int | None) -> None:
        if index == self._hover:
            return
        self._hover = index
        self._halos.hover(None if index is None else self._paths[index])

    def _node_at(self, scene_pos: QPointF) -> str | None:
        return node_at(self._vb, scene_pos, self._pos, self._node_px / 2 + 2)

    def _edge_at(self, scene_pos: QPointF) -> int | None:
        """The edge under a scene point: its badge, or its line if no node is there."""
        on_badge = self._badges.hit(scene_pos, self._edges, self._selected_index())
        if on_badge is not None:
            return on_badge
        if self._node_at(scene_pos) is not None:
            return None
        return edge_at(self._vb, scene_pos, self._seg0, self._seg1, self._seg_edge)

    def _on_click(self, ev: Any) -> None:
        if ev.button() != Qt.MouseButton.LeftButton:
            return
        index = self._edge_at(ev.scenePos())
        if index is None:
            return
        link_id = self._edges[index].primary["id"]
        self._selected_id = link_id
        self._update_selection()
        self.linkSelected.emit(link_id)

    def _on_move(self, scene_pos: QPointF) -> None:
        index = self._edge_at(scene_pos)
        node = self._node_at(scene_pos) if index is None else None
        self._set_hover(index)
        if index is None and node is None:
            if self._hover_node is not None or QToolTip.isVisible():
                QToolTip.hideText()
            self._hover_node = None
            self.viewport().unsetCursor()
            return
        if index is not None:
            self.viewport().setCursor(Qt.CursorShape.PointingHandCursor)
            text = self._tooltip(self._edges[index])
        else:
            self.viewport().unsetCursor()
            text = self._node_tooltip(node)
        self._hover_node = node
        QToolTip.showText(QCursor.pos(), text, self.viewport())

    # -- tooltips ------------------------------------------------------------------------
    def _name(self, node_id: str) -> str:
        return next((n.name for n in self._nodes if n.id == node_id), node_id)

    def _tooltip(self, edge: Edge) -> str:
        return topology_tips.edge_tooltip(edge, self._name, self._ifaces)

    def _node_tooltip(self, node_id: str | None) -> str:
        return topology_tips.node_tooltip(next((n for n in self._nodes if n.id == node_id),
                                               None))


__all__ = ["BADGE_LIMIT", "TopologyView"]
