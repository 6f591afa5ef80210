"""How the link details look: a time chart, a title with its legend inline, the label of
a horizontal line, the rates' min–max for coarse rows, and the numbers panel's labels,
rules and style sheet (ui/link/charts.py and ui/link/numbers.py lay them out and fill
them)."""

from __future__ import annotations

from typing import Any, Final

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QFrame, QLabel

from exotray.ui.link.chart_data import RANGES
from exotray.ui.style import theme

AXIS_W: Final = 64


def chart(title: str) -> pg.PlotWidget:
    w = pg.PlotWidget(background=theme.BACKGROUND, axisItems={"bottom": pg.DateAxisItem()})
    w.setAntialiasing(True)
    pi = w.getPlotItem()
    pi.setMenuEnabled(False)
    pi.hideButtons()
    pi.setMouseEnabled(x=True, y=False)  # drag pans, the wheel zooms: time only
    pi.getViewBox().setLimits(minXRange=10, maxXRange=2 * RANGES[-1][0])
    pi.disableAutoRange()
    pi.showGrid(x=True, y=True, alpha=0.12)
    pi.setTitle(title, color=theme.TEXT_MUTED, size="9pt", justify="left")
    pi.layout.setContentsMargins(4, 0, 10, 4)
    font = QFont()
    font.setPointSizeF(8)
    for name in ("left", "bottom"):
        pi.getAxis(name).setStyle(tickFont=font, tickTextOffset=4)
    style_chart(w)
    pi.getAxis("left").setWidth(AXIS_W)
    w.setMinimumHeight(140)
    return w


def style_chart(w: pg.PlotWidget) -> None:
    """A chart's background and axes in style/theme.py's current colours (again on restyle)."""
    w.setBackground(theme.BACKGROUND)
    pi = w.getPlotItem()
    for name in ("left", "bottom"):
        ax = pi.getAxis(name)
        ax.setPen(pg.mkPen(theme.GRID))
        ax.setTextPen(pg.mkPen(theme.TEXT_MUTED))
        if ax.labelText:  # the label's colour is in its own style
            ax.labelStyle["color"] = theme.TEXT_MUTED
            ax._updateLabel()


def rate_bands(plot: pg.PlotItem) -> tuple[dict[str, pg.PlotCurveItem],
                                            dict[str, pg.PlotCurveItem]]:
    """Hidden items for each rate's min–max over coarse rows: a vertical bar per row from
    its min to its max ("rx", "tx"; a band where rows are denser than pixels) and the max
    as a line ("rx_max", "tx_max"), so a short peak stays a visible spike in a 30-day
    view. Bars, not a filled polygon: QPainter filled two 2000-point polygons of noisy
    rates in ~240 ms a frame (found with bench/gui_history.py); the bars take ~10 ms."""
    edges: dict[str, pg.PlotCurveItem] = {}
    bars: dict[str, pg.PlotCurveItem] = {}
    for name, color in (("rx", theme.RX), ("tx", theme.TX)):
        # one-pixel (cosmetic) pen: a wider one goes through QPainter's stroker, ~10x slower
        bars[name] = pg.PlotCurveItem(pen=pg.mkPen(theme.with_alpha(color, 0.3), width=1))
        edges[f"{name}_max"] = pg.PlotCurveItem(
            pen=pg.mkPen(theme.with_alpha(color, 0.6), width=1))
        for item in (bars[name], edges[f"{name}_max"]):
            item.setZValue(-1)
            item.setVisible(False)
            plot.addItem(item)
    return edges, bars


def line_label(color: str, above: bool) -> dict[str, Any]:
    """Label at the left end of a horizontal line, just above or just below it."""
    anchor = (0, 1) if above else (0, 0)
    return {
        "position": 0.01,
        "anchors": [anchor, anchor],
        "color": color,
        "fill": theme.with_alpha(theme.BACKGROUND, 0.85),
        "movable": False,
    }


def title(text: str, keys: list[tuple[str, str, str]]) -> str:
    """A chart title with its legend inline: ("line" | "box", colour, name) per series."""
    parts = [f'<span style="color:{theme.TEXT}; font-weight:600">{text}</span>']
    for shape, color, name in keys:
        mark = "━" if shape == "line" else "■"
        parts.append(
            f'&nbsp;&nbsp;&nbsp;<span style="color:{color}">{mark}</span>'
            f'<span style="color:{theme.TEXT_MUTED}">&nbsp;{name}</span>'
        )
    return "".join(parts)


def plain(label: QLabel) -> QLabel:
    """`label`, showing its text as plain text (Qt's default guesses, and renders
    anything that looks like HTML)."""
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def sub_label() -> QLabel:
    """A muted, right-aligned, wrapping line under a value (spans the panel)."""
    sub = QLabel("")
    sub.setProperty("role", "sub")
    sub.setWordWrap(True)
    sub.setTextFormat(Qt.TextFormat.PlainText)
    sub.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    sub.hide()
    return sub


def rule() -> QFrame:
    rule = QFrame()
    rule.setObjectName("rule")
    rule.setFixedHeight(1)
    return rule


def details_style() -> str:
    """The panel's style sheet in style/theme.py's current colours."""
    return f"""
#LinkDetails {{ background: {theme.BACKGROUND}; }}
QLabel {{ color: {theme.TEXT}; font-size: 9pt; }}
QLabel#title {{ font-size: 12pt; font-weight: 600; }}
QFrame#numbers {{ background: {theme.PANEL}; border-radius: 8px; }}
QFrame#rule {{ background: {theme.GRID}; }}
QLabel[role="caption"] {{ color: {theme.TEXT_MUTED}; }}
QLabel[role="value"] {{ font-weight: 600; }}
QLabel[role="note"] {{ color: {theme.TEXT_MUTED}; font-size: 8pt; }}
QLabel[role="sub"] {{ color: {theme.TEXT_MUTED}; font-size: 8pt; }}
QLabel#result {{
    background: {theme.BACKGROUND}; border: 1px solid {theme.GRID}; border-radius: 6px;
    padding: 4px 6px;
}}
QPushButton {{
    color: {theme.TEXT}; background: {theme.BACKGROUND}; border: 1px solid {theme.GRID};
    padding: 3px 6px; font-size: 9pt; min-width: 42px;
}}
QPushButton[segment="first"] {{ border-top-left-radius: 6px; border-bottom-left-radius: 6px; }}
QPushButton[segment="last"] {{ border-top-right-radius: 6px; border-bottom-right-radius: 6px; }}
QPushButton:checked {{
    color: white; background: {theme.ACCENT}; border-color: {theme.ACCENT};
}}
"""
