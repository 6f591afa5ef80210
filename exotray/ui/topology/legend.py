"""The topology map's legend: a sample line per drawing class (calm, busy, hot, capacity
unknown, down) with the utilization each stands for at the current threshold, in the
map's lower left corner."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsItem

from exotray.core import fmt
from exotray.ui.style import theme
from exotray.ui.topology.edges import KINDS, edge_pen


class MapLegend:
    """The legend item, anchored to the map's view box, and its sample lines."""

    def __init__(self, vb: pg.ViewBox, threshold: float) -> None:
        self.item = pg.LegendItem(
            colCount=len(KINDS), labelTextColor=theme.TEXT_MUTED, labelTextSize="8pt",
            horSpacing=14, brush=pg.mkBrush(theme.with_alpha(theme.BACKGROUND, 0.9)),
        )
        self.item.setParentItem(vb)
        self.item.anchor(itemPos=(0, 1), parentPos=(0, 1), offset=(8, -6))
        self._samples = {k: pg.PlotDataItem(pen=edge_pen(k, 2.5)) for k in KINDS}
        self.fill(threshold)

    def restyle(self, threshold: float) -> None:
        """Take style/theme.py's current colours."""
        self.item.setBrush(pg.mkBrush(theme.with_alpha(theme.BACKGROUND, 0.9)))
        self.item.setLabelTextColor(theme.TEXT_MUTED)
        for kind, sample in self._samples.items():
            sample.setPen(edge_pen(kind, 2.5))
        self.fill(threshold)

    def fill(self, threshold: float) -> None:
        """The entries, their texts from `threshold` (a new threshold calls this again)."""
        calm = min(theme.CALM_BELOW, threshold)
        names = {
            "calm": f"&lt; {fmt.percent(calm)}",
            "busy": f"&lt; {fmt.percent(threshold)}",
            # a link on a full shared interface is hot when its own bytes fill it; one
            # whose neighbour fills it is drawn by its own share (core/shares.py)
            "hot": f"≥ {fmt.percent(threshold)} (own share, where read)",
            "unknown": "capacity unknown",
            "down": "down",
        }
        self.item.clear()
        for kind in ("calm", "busy", "hot", "unknown", "down"):
            self.item.addItem(self._samples[kind], names[kind])
        # The legend changes only here and in restyle: each of its parts is kept as a
        # pixmap until it changes (Qt redraws an item's cache when the item is updated).
        todo: list[QGraphicsItem] = [self.item]
        while todo:
            item = todo.pop()
            item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            todo.extend(item.childItems())
