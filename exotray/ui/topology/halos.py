"""The wide casings under the topology map's edges: the selected edge's, the hovered
edge's, and one under every edge that carries exo's inference traffic. Each is one curve
item that traces the edges it marks (their polylines from topology_edges.edge_geometry)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QPen

from exotray.ui.style import theme


def _pens() -> tuple[QPen, QPen, QPen, QPen]:
    """Selection casing, its core, hover, exo: in style/theme.py's current colours."""
    return (pg.mkPen(theme.SELECTION, width=13), pg.mkPen(theme.BACKGROUND, width=7),
            pg.mkPen(theme.with_alpha(theme.SELECTION, 0.22), width=11),
            pg.mkPen(theme.with_alpha(theme.EXO, 0.5), width=19))


def _trace(item: pg.PlotCurveItem, pts: np.ndarray | None) -> None:
    if pts is None:
        item.setData([], [])
    else:
        item.setData(pts[:, 0], pts[:, 1], connect="finite")


class Halos:
    """The selection, hover and exo casings; `layers` places them under the edges."""

    def __init__(self) -> None:
        # The selection is a magenta casing with a light core, so that the edge keeps
        # its own colour inside it: a colour of its own (the legend's "capacity unknown"
        # is blue-grey), visible on light and on dark backgrounds.
        sel, core, hover, exo = _pens()
        self.selection = pg.PlotCurveItem(pen=sel, connect="finite")
        self._core = pg.PlotCurveItem(pen=core, connect="finite")
        self._hover = pg.PlotCurveItem(pen=hover, connect="finite")
        self.exo = pg.PlotCurveItem(pen=exo, connect="finite")

    def layers(self) -> tuple[tuple[float, pg.PlotCurveItem], ...]:
        """(z value, item), bottom first; the edges are drawn at z 0 and above."""
        return ((-3, self.exo), (-2, self._hover), (-1.5, self.selection), (-1, self._core))

    def restyle(self) -> None:
        """Take style/theme.py's current colours."""
        for item, pen in zip((self.selection, self._core, self._hover, self.exo), _pens(),
                             strict=True):
            item.setPen(pen)

    def select(self, path: np.ndarray | None) -> None:
        """Case the selected edge's polyline (None: nothing is selected)."""
        for halo in (self.selection, self._core):
            _trace(halo, path)

    def hover(self, path: np.ndarray | None) -> None:
        """Case the polyline under the mouse (None: none)."""
        _trace(self._hover, path)

    def mark_exo(self, paths: Sequence[np.ndarray]) -> None:
        """Case every polyline of edges that carry exo's traffic (none: clear)."""
        _trace(self.exo, np.concatenate(paths) if paths else None)
