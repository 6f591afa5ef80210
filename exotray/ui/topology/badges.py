"""The topology map's badges: an edge's numbers ("12.3 MB/s · 0.8 ms", and the exo model
when exo's traffic runs on it) in a small framed label on the edge.

One badge per edge while the graph is small (``BADGE_LIMIT`` edges); above that only the
selected edge carries one (the "focus" badge), because thousands of badges are an
unreadable pile — and laying out and drawing them would be most of a large map's update.
Badges sit at the middle of their edge, slid along it when the middle is taken; a badge
with no free place is hidden (its numbers stay in the tooltip), except the selected
edge's, which is placed first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QFont

from exotray.core import fmt, shares
from exotray.core.topology import Edge
from exotray.ui.style import theme
from exotray.ui.topology import tips as topology_tips
from exotray.ui.topology.edges import KINDS
from exotray.ui.topology.layout import bezier, overlap

#: per-edge badges are drawn while there are at most this many edges
BADGE_LIMIT: Final = 24
#: where along an edge a badge may sit, tried in order when the middle is taken
BADGE_SLOTS: Final = (0.5, 0.4, 0.6, 0.32, 0.68, 0.25, 0.75, 0.8, 0.2, 0.85)


def badge_text(edge: Edge) -> str:
    # a link's own bytes, where read, with its shared carrier's beside them (core/shares.py)
    own = shares.badge(edge.primary) if edge.primary.get("flow_source") else None
    text = f"{own or fmt.rate(edge.rate_bytes_per_s)} · {fmt.ms(edge.rtt_ms)}"
    exo = topology_tips.edge_exo(edge)
    return f"{text}\nexo: {', '.join(exo)}" if exo else text


class EdgeBadges:
    """The badges of a map's view box: one per edge (small graphs) or the focus one."""

    def __init__(self, vb: pg.ViewBox) -> None:
        self._vb = vb
        self._font = QFont()
        self._font.setPointSizeF(9)
        self.per_edge: dict[str, pg.TextItem] = {}  # by edge key
        self.focus = self._new()
        self.focus.setVisible(False)
        self.focus.setZValue(21)
        vb.addItem(self.focus, ignoreBounds=True)

    def _new(self) -> pg.TextItem:
        badge = pg.TextItem(
            anchor=(0.5, 0.5),
            color=theme.TEXT,
            fill=pg.mkBrush(theme.with_alpha(theme.BACKGROUND, 0.94)),
            border=pg.mkPen(theme.GRID, width=1),
        )
        badge.setFont(self._font)
        return badge

    def restyle(self) -> None:
        for badge in [*self.per_edge.values(), self.focus]:
            badge.fill = pg.mkBrush(theme.with_alpha(theme.BACKGROUND, 0.94))
            badge.setColor(theme.TEXT)

    def item(self, edge: Edge, selected: bool) -> pg.TextItem | None:
        """The badge showing `edge`'s numbers, if one is drawn."""
        badge = self.per_edge.get(edge.key)
        if badge is not None:
            return badge
        return self.focus if selected else None

    @staticmethod
    def _style(badge: pg.TextItem, edge: Edge, kind: str, selected: bool) -> None:
        text = badge_text(edge)
        color = theme.TEXT_MUTED if kind in ("down", "unknown") else theme.TEXT
        if badge.toPlainText() != text or badge.color != pg.mkColor(color):
            badge.setText(text, color)
        border_color = theme.SELECTION if selected else theme.KIND_COLOR[kind]
        border = pg.mkPen(border_color, width=2 if selected else 1)
        if kind == "down":
            border.setStyle(Qt.PenStyle.DashLine)
        if badge.border != border:
            badge.border = border
            badge.update()

    def update(self, edges: Sequence[Edge], codes: np.ndarray, sel: int | None) -> None:
        """Badges for `edges` (codes: each one's drawing class, an index into KINDS), the
        selected edge (`sel`, an index) framed in the selection colour."""
        per_edge = len(edges) <= BADGE_LIMIT
        keep = {e.key for e in edges} if per_edge else set()
        for key in set(self.per_edge) - keep:
            self._vb.removeItem(self.per_edge.pop(key))
        if per_edge:
            for i, e in enumerate(edges):
                badge = self.per_edge.get(e.key)
                if badge is None:
                    badge = self._new()
                    badge.setZValue(20)
                    self._vb.addItem(badge, ignoreBounds=True)
                    self.per_edge[e.key] = badge
                self._style(badge, e, KINDS[codes[i]], i == sel)
            self.focus.setVisible(False)
        elif sel is not None:
            self._style(self.focus, edges[sel], KINDS[codes[sel]], True)
            self.focus.setVisible(True)
        else:
            self.focus.setVisible(False)

    def place(self, edges: Sequence[Edge], ctrl: np.ndarray, nodes: Sequence[tuple[float, float]],
              node_radius_px: float, sel: int | None, px: float | None) -> None:
        """Put the badges on their edges (ctrl: per edge start, control point, end),
        clear of the nodes (at `nodes`, `node_radius_px` pixels wide) and of each other;
        px: a screen pixel in view units, None before the view has a size."""
        def middle(i: int) -> tuple[float, float]:
            m = 0.25 * ctrl[i][0] + 0.5 * ctrl[i][1] + 0.25 * ctrl[i][2]
            return float(m[0]), float(m[1])

        if not self.per_edge:
            if sel is not None and self.focus.isVisible():
                self.focus.setPos(*middle(sel))
            return
        taken: list[tuple[float, float, float, float]] = []  # x0, y0, x1, y1, view units
        if px is not None:
            r = (node_radius_px + 3) * px
            taken = [(x - r, y - r, x + r, y + r) for x, y in nodes]
        slots = np.array(BADGE_SLOTS)
        order = sorted(range(len(edges)), key=lambda i: (i != sel, i))
        for i in order:
            badge = self.per_edge.get(edges[i].key)
            if badge is None:
                continue
            p0, c, p2 = ctrl[i]
            cands = bezier(p0, c, p2, slots)
            best = cands[0]
            free = True
            if px is not None:
                rect = badge.textItem.boundingRect()
                hw, hh = (rect.width() / 2 + 3) * px, (rect.height() / 2 + 2) * px
                free = False
                for x, y in cands:
                    box = (x - hw, y - hh, x + hw, y + hh)
                    if not any(overlap(box, t) for t in taken):
                        best = np.array([x, y])
                        free = True
                        break
                if free or i == sel:
                    taken.append((best[0] - hw, best[1] - hh, best[0] + hw, best[1] + hh))
            badge.setVisible(free or i == sel)
            badge.setPos(float(best[0]), float(best[1]))

    def hit(self, scene_pos: QPointF, edges: Sequence[Edge], sel: int | None) -> int | None:
        """The index of the edge whose shown badge is under `scene_pos`, if any."""
        for key, badge in self.per_edge.items():
            if badge.isVisible() and badge.mapRectToScene(badge.boundingRect()).contains(
                scene_pos
            ):
                return next(i for i, e in enumerate(edges) if e.key == key)
        if sel is not None and self.focus.isVisible():
            fb = self.focus
            if fb.mapRectToScene(fb.boundingRect()).contains(scene_pos):
                return sel
        return None


__all__ = ["BADGE_LIMIT", "EdgeBadges", "badge_text"]
