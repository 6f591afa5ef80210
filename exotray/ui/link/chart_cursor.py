"""The link charts' crosshair: a vertical line through both charts at the time under the
mouse, and one line of text with the values there (time, RTT, rx and tx; a coarse row's
min and max)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPointF, Qt
from PySide6.QtWidgets import QLabel

from exotray.core import fmt
from exotray.ui.style import theme

#: what the read-out says while the mouse is not over a chart
HINT = "Drag to pan, scroll to zoom; point at a chart to read its values."


class Crosshair(QObject):
    """Follows the mouse over `plots` (x-linked), showing `lookup(t)` in `label`."""

    def __init__(self, plots: list[pg.PlotWidget], label: QLabel,
                 lookup: Callable[[float], dict[str, Any] | None]) -> None:
        super().__init__(label)
        self._plots = plots
        self._label = label
        self._lookup = lookup
        self._lines: list[pg.InfiniteLine] = []
        for plot in plots:
            line = pg.InfiniteLine(angle=90, movable=False,
                                   pen=pg.mkPen(theme.with_alpha(theme.TEXT_MUTED, 0.7),
                                                width=1, style=Qt.PenStyle.DashLine))
            line.setZValue(10)
            line.setVisible(False)
            plot.getPlotItem().addItem(line, ignoreBounds=True)
            self._lines.append(line)
            # the viewport's own events: the scene's sigMouseMoved drops moves that come
            # less than 10 ms apart, which can leave the line short of where the mouse stopped
            plot.viewport().installEventFilter(self)
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setText(HINT)

    def release(self) -> None:
        """Stop following the mouse (the charts are about to go)."""
        for plot in self._plots:
            plot.viewport().removeEventFilter(self)

    def show_at(self, t: float) -> str:
        """Put the crosshair at time t; the read-out's text."""
        row = self._lookup(t)
        x = t if row is None else row["t"] + (row["step_s"] or 0) / 2
        for line in self._lines:
            line.setPos(x)
            line.setVisible(True)
        text = readout(t, row)
        self._label.setText(text)
        return text

    def restyle(self) -> None:
        """Take style/theme.py's current colours (the system's scheme changed)."""
        for line in self._lines:
            line.setPen(pg.mkPen(theme.with_alpha(theme.TEXT_MUTED, 0.7), width=1,
                                 style=Qt.PenStyle.DashLine))

    def hide(self) -> None:
        for line in self._lines:
            line.setVisible(False)
        self._label.setText(HINT)

    def text(self) -> str:
        return self._label.text()

    def _moved(self, plot: pg.PlotWidget, pos: QPointF) -> None:
        vb = plot.getPlotItem().getViewBox()
        at = plot.mapToScene(pos.toPoint())
        if vb.sceneBoundingRect().contains(at):
            self.show_at(vb.mapSceneToView(at).x())
        else:
            self.hide()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.MouseMove:
            plot = next((p for p in self._plots if p.viewport() is obj), None)
            if plot is not None:
                self._moved(plot, event.position())  # type: ignore[attr-defined]
        elif event.type() == QEvent.Type.Leave:
            self.hide()
        return False


def readout(t: float, row: dict[str, Any] | None) -> str:
    """One line for the values at time t: "14:02:31 · RTT 0.52 ms (0.31–0.90) · rx … · tx …";
    for a coarse row its span, its mean and its min–max."""
    if row is None:
        return f"{_when(t)} · no data"
    step = row.get("step_s")
    when = _when(row["t"]) if not step else f"{_when(row['t'])} – {_clock(row['t'] + step)}"
    rtt = f"RTT {fmt.ms(row.get('rtt_ms'))}"
    lo, hi = row.get("rtt_min_ms_min"), row.get("rtt_max_ms_max")
    if lo is not None and hi is not None:
        rtt += f" ({fmt.ms(lo)} – {fmt.ms(hi)})"
    parts = [when, rtt]
    for key, name in (("rx_bytes_per_s", "rx"), ("tx_bytes_per_s", "tx")):
        text = f"{name} {fmt.rate(row.get(key))}"
        if step:
            text += f" (max {fmt.rate(row.get(key + '_max'))})"
        parts.append(text)
    if row.get("state") in ("saturated", "down"):
        parts.append(str(row["state"]) if not step else f"{row['state']} at times")
    return " · ".join(parts)


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))
