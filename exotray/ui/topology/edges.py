"""The topology map's edges: where each one runs, and one batch of lines per colour.

* `edge_geometry`: per edge its ends and control point (parallel edges between one pair
  of nodes bend apart), its polyline, and the segments the mouse is hit-tested against.
  Computed when the set of links or the layout changes, not per update.
* `kind_codes`: every edge's drawing class at once (numpy), the same rule as
  `theme.link_kind`, from the edges' states and utilizations; `edge_pen` a class's pen.
* `EdgeBatches`: per drawing class two curve items, one for the straight edges (one
  line per edge, drawn by `QPainter.drawLines` from an array: no path is built) and one
  for the bent ones (NaN-separated polylines); a class's items get new data only when an
  edge joins or leaves it. A 64-node full mesh (2016 edges) is five line arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPen

from exotray.core.topology import Edge
from exotray.ui.style import theme
from exotray.ui.topology.layout import bezier

#: drawing classes, in drawing order (the last on top)
KINDS: Final = ("unknown", "calm", "busy", "hot", "down")
UNKNOWN, CALM, BUSY, HOT, DOWN = range(len(KINDS))
#: samples of a curved (parallel) edge
CURVE_SAMPLES: Final = 25
#: control-point offset between neighbouring parallel edges, as a fraction of the length
PARALLEL_SPREAD: Final = 0.36


@dataclass(frozen=True)
class Geometry:
    #: per edge: start, control point, end (n, 3, 2)
    ctrl: np.ndarray
    #: per edge: whether it bends (a parallel edge)
    curved: np.ndarray
    #: per edge: its polyline and a NaN row (straight: 2 points; bent: CURVE_SAMPLES)
    paths: list[np.ndarray]
    #: every drawn segment (start, end) and the edge it belongs to, for hit-testing
    seg0: np.ndarray
    seg1: np.ndarray
    seg_edge: np.ndarray


def edge_geometry(edges: Sequence[Edge], pos: dict[str, tuple[float, float]]) -> Geometry:
    # An edge's key (its link ids) fixes its ends and its place among parallel edges;
    # the layout fixes where the ends are.
    n = len(edges)
    ctrl = np.zeros((n, 3, 2))
    curved = np.zeros(n, dtype=bool)
    for i, e in enumerate(edges):
        a, b = (e.a, e.b) if e.a <= e.b else (e.b, e.a)  # one side for every parallel
        pa, pb = np.array(pos[a]), np.array(pos[b])
        d = pb - pa
        off = (e.index - (e.count - 1) / 2) * min(PARALLEL_SPREAD, 0.9 / max(e.count - 1, 1))
        normal = np.array([-d[1], d[0]])
        ctrl[i] = (pa, (pa + pb) / 2 + off * normal, pb)
        curved[i] = off != 0
    nan = np.full((1, 2), np.nan)
    ts = np.linspace(0.0, 1.0, CURVE_SAMPLES)
    paths: list[np.ndarray] = []
    for i in range(n):
        p0, c, p2 = ctrl[i]
        pts = bezier(p0, c, p2, ts) if curved[i] else ctrl[i, [0, 2]]
        paths.append(np.vstack([pts, nan]))
    if paths:
        allp = np.concatenate(paths)
        owner = np.concatenate([np.full(len(p), i) for i, p in enumerate(paths)])
        s0, s1 = allp[:-1], allp[1:]
        ok = np.isfinite(s0).all(axis=1) & np.isfinite(s1).all(axis=1)
        seg0, seg1, seg_edge = s0[ok], s1[ok], owner[:-1][ok]
    else:
        seg0 = seg1 = np.zeros((0, 2))
        seg_edge = np.zeros(0, dtype=np.int64)
    return Geometry(ctrl, curved, paths, seg0, seg1, seg_edge)


def kind_codes(states: Sequence[str], utilizations: Sequence[float | None],
               threshold: float) -> np.ndarray:
    """Index into KINDS of every edge, as `theme.link_kind(state, utilization,
    threshold)` would give it (and an utilization that is NaN is unknown too)."""
    u = np.asarray(utilizations, dtype=float)  # None -> NaN
    st = np.asarray(states, dtype=object)
    codes = np.full(len(u), HOT, dtype=np.int8)
    codes[u < threshold] = BUSY
    codes[u < min(theme.CALM_BELOW, threshold)] = CALM
    codes[np.isnan(u)] = UNKNOWN
    codes[st == "saturated"] = HOT
    codes[st == "down"] = DOWN
    return codes


def edge_pen(kind: str, width: float, alpha: float = 1.0) -> QPen:
    """The pen of a drawing class (one of KINDS): its colour, round caps; down is dashed."""
    color = theme.KIND_COLOR[kind]
    pen = pg.mkPen(theme.with_alpha(color, alpha), width=width)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    if kind == "down":
        pen.setCapStyle(Qt.PenCapStyle.FlatCap)
        pen.setStyle(Qt.PenStyle.DashLine)
    return pen


class EdgeBatches:
    """Per drawing class: a curve item of straight lines and one of bent polylines."""

    def __init__(self, add: Callable[[pg.PlotCurveItem], None]) -> None:
        self.straight: dict[str, pg.PlotCurveItem] = {}
        self.bent: dict[str, pg.PlotCurveItem] = {}
        for z, kind in enumerate(KINDS):
            line = pg.PlotCurveItem(connect="pairs", skipFiniteCheck=True)
            line.setSegmentedLineMode("on")  # drawLines from the array, no QPainterPath
            bent = pg.PlotCurveItem(connect="finite")
            for item in (line, bent):
                item.setZValue(z)
                add(item)
            self.straight[kind], self.bent[kind] = line, bent
        self._geom: Geometry | None = None
        self._a = self._b = np.zeros((0, 2))
        self._members: dict[str, np.ndarray] = {}

    def set_pen(self, kind: str, pen: QPen) -> None:
        for item in (self.straight[kind], self.bent[kind]):
            if item.opts["pen"] != pen:
                item.setPen(pen)

    def set_geometry(self, geom: Geometry) -> None:
        self._geom = geom
        self._a, self._b = geom.ctrl[:, 0], geom.ctrl[:, 2]
        self._members = {}  # every batch again at the next set_kinds

    def set_kinds(self, codes: np.ndarray) -> None:
        """Give each class's items the edges of that class (codes: index into KINDS per
        edge); a class whose members did not change is left alone."""
        geom = self._geom
        if geom is None:
            return
        curved = geom.curved
        for k, kind in enumerate(KINDS):
            members = np.flatnonzero(codes == k)
            last = self._members.get(kind)
            if last is not None and np.array_equal(last, members):
                continue
            self._members[kind] = members
            straight = members[~curved[members]]
            bent = members[curved[members]]
            # (an empty item is hidden: the scene then does not ask for its bounds)
            line, curve = self.straight[kind], self.bent[kind]
            if len(straight):
                pts = np.empty((2 * len(straight), 2))
                pts[0::2] = self._a[straight]
                pts[1::2] = self._b[straight]
                line.setData(pts[:, 0], pts[:, 1], connect="pairs")
            elif line.isVisible():
                line.setData([], [])
            line.setVisible(bool(len(straight)))
            if len(bent):
                pts = np.concatenate([geom.paths[i] for i in bent])
                curve.setData(pts[:, 0], pts[:, 1], connect="finite")
            elif curve.isVisible():
                curve.setData([], [])
            curve.setVisible(bool(len(bent)))


__all__ = ["CURVE_SAMPLES", "KINDS", "EdgeBatches", "Geometry", "edge_geometry", "kind_codes"]
