"""Details of one link: latency and bandwidth charts over time, and its current numbers.

Charts are created once; new data only marks them dirty, and a QTimer at display rate
(``REDRAW_HZ``) pushes it into the curves with ``setData``. Any number of samples that
arrive between two frames cost one redraw.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Final

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFont, QPen
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from exotray.core import fmt
from exotray.core.history import LINK_COLUMNS
from exotray.ui import linkwords, theme

#: the time ranges offered, in seconds, with their button text
RANGES: Final[tuple[tuple[int, str], ...]] = ((60, "1 min"), (600, "10 min"), (3600, "1 h"))
#: samples kept (one hour at the agents' 1 s interval)
MAX_POINTS: Final = 3600
REDRAW_HZ: Final = 20
#: the numeric history columns, as /v1/history names them
COLUMNS: Final = tuple(c for c in LINK_COLUMNS if c != "state")
#: rows of the numbers panel: key, caption
NUMBER_ROWS: Final = (
    ("rtt_ms", "RTT median"),
    ("rtt_min_ms", "RTT min"),
    ("rtt_max_ms", "RTT max"),
    ("rtt_p90_ms", "RTT p90"),
    ("rtt_baseline_ms", "Idle RTT"),
    ("queue_delay_ms", "Queueing"),
    ("jitter_ms", "Jitter"),
    ("loss", "Loss"),
    ("rx_bytes_per_s", "rx"),
    ("tx_bytes_per_s", "tx"),
    ("utilization", "Utilization"),
    ("capacity", "Capacity"),
)
_AXIS_W: Final = 64
#: a range still "covers" data up to this much longer than itself (61 s of data: 1 min)
_FIT_SLACK: Final = 1.1
def _floats(values: Any) -> np.ndarray:
    """A float array with None (JSON null) as NaN."""
    return np.array([math.nan if v is None else float(v) for v in values], dtype=float)


def _chart(title: str) -> pg.PlotWidget:
    w = pg.PlotWidget(background=theme.BACKGROUND, axisItems={"bottom": pg.DateAxisItem()})
    w.setAntialiasing(True)
    pi = w.getPlotItem()
    pi.setMenuEnabled(False)
    pi.hideButtons()
    pi.setMouseEnabled(x=False, y=False)
    pi.disableAutoRange()
    pi.showGrid(x=True, y=True, alpha=0.12)
    pi.setTitle(title, color=theme.TEXT_MUTED, size="9pt", justify="left")
    pi.layout.setContentsMargins(4, 0, 10, 4)
    font = QFont()
    font.setPointSizeF(8)
    for name in ("left", "bottom"):
        pi.getAxis(name).setStyle(tickFont=font, tickTextOffset=4)
    _style_chart(w)
    pi.getAxis("left").setWidth(_AXIS_W)
    w.setMinimumHeight(140)
    return w


def _style_chart(w: pg.PlotWidget) -> None:
    """A chart's background and axes in theme.py's current colours."""
    w.setBackground(theme.BACKGROUND)
    pi = w.getPlotItem()
    for name in ("left", "bottom"):
        ax = pi.getAxis(name)
        ax.setPen(pg.mkPen(theme.GRID))
        ax.setTextPen(pg.mkPen(theme.TEXT_MUTED))
        if ax.labelText:  # the label's colour is in its own style
            ax.labelStyle["color"] = theme.TEXT_MUTED
            ax._updateLabel()


class LinkDetails(QWidget):
    """Latency and bandwidth of one link over time, with its current numbers."""

    #: the selected time range in seconds (60, 600 or 3600), whenever it changes
    rangeChanged = Signal(int)

    def __init__(
        self, parent: QWidget | None = None, threshold: float = theme.DEFAULT_THRESHOLD
    ) -> None:
        super().__init__(parent)
        self.setObjectName("LinkDetails")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet(_style())
        self._threshold = threshold
        self._range = RANGES[1][0]
        self._link: dict[str, Any] | None = None
        self._link_id: str | None = None
        self._capacity: float | None = None
        self._cols: dict[str, np.ndarray] = {c: np.zeros(0) for c in COLUMNS}
        self._states: deque[str | None] = deque(maxlen=MAX_POINTS)
        self._dirty = False
        #: how many times the charts were redrawn (tests and benchmarks read it)
        self.redraw_count = 0

        # -- header: title, state, range switch ---------------------------------------
        # Every label here may show text from a peer's snapshot (its name, its
        # interfaces' names and labels): plain text, never rich text, which would load
        # <img src=...> from any path (issue 18: /dev/zero took 2 GB, a FIFO hung the UI).
        self._title = _plain(QLabel("No link selected"))
        self._title.setObjectName("title")
        self._state = _plain(QLabel(""))
        self._state.setObjectName("state")
        self._range_group = QButtonGroup(self)
        self._range_group.setExclusive(True)
        switch = QHBoxLayout()
        switch.setSpacing(0)
        self._range_buttons: dict[int, QPushButton] = {}
        for i, (seconds, text) in enumerate(RANGES):
            b = QPushButton(text)
            b.setCheckable(True)
            b.setChecked(seconds == self._range)
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            b.setProperty("segment", "first" if i == 0 else "last" if i == len(RANGES) - 1
                          else "middle")
            self._range_group.addButton(b, seconds)
            self._range_buttons[seconds] = b
            switch.addWidget(b)
        self._range_group.idClicked.connect(self.set_range)
        header = QHBoxLayout()
        header.addWidget(self._title)
        header.addSpacing(8)
        header.addWidget(self._state)
        header.addStretch(1)
        header.addLayout(switch)

        # -- charts ---------------------------------------------------------------------
        self.latency_plot = _chart("Latency")
        self.bandwidth_plot = _chart("Interface traffic")
        lat, bw = self.latency_plot.getPlotItem(), self.bandwidth_plot.getPlotItem()
        lat.getAxis("left").setLabel("RTT", units="ms", color=theme.TEXT_MUTED)
        lat.getAxis("left").enableAutoSIPrefix(False)
        lat.getAxis("bottom").setStyle(showValues=False)
        bw.getAxis("left").setLabel("rate", units=fmt.rate_unit(), color=theme.TEXT_MUTED)
        for ax in (lat.getAxis("left"), bw.getAxis("left")):
            ax.label.setFont(QFont(ax.label.font().family(), 8))
        bw.setXLink(lat)

        self._rtt_min = pg.PlotCurveItem(pen=pg.mkPen(theme.with_alpha(theme.RTT_BAND, 0.9)))
        self._rtt_max = pg.PlotCurveItem(pen=pg.mkPen(theme.with_alpha(theme.RTT_BAND, 0.9)))
        self._band = pg.FillBetweenItem(
            self._rtt_min, self._rtt_max, brush=pg.mkBrush(theme.with_alpha(theme.RTT_BAND, 0.45))
        )
        self._rtt = pg.PlotCurveItem(pen=pg.mkPen(theme.RTT_MEDIAN, width=2))
        # the path's idle RTT: the median's distance above it is the queueing delay
        self._baseline = pg.PlotCurveItem(
            pen=pg.mkPen(theme.RTT_BASELINE, width=1.5, style=Qt.PenStyle.DashLine))
        for z, item in ((0, self._band), (1, self._rtt_min), (1, self._rtt_max), (2, self._rtt),
                        (3, self._baseline)):
            item.setZValue(z)
            lat.addItem(item)
        # legends live in the titles, where they cannot cover a curve or a line label
        lat.setTitle(_title("Latency", [("line", theme.RTT_MEDIAN, "median"),
                                        ("box", theme.RTT_BAND, "min – max"),
                                        ("line", theme.RTT_BASELINE, "idle baseline")]))

        self._rx = pg.PlotCurveItem(pen=pg.mkPen(theme.RX, width=1.8))
        self._tx = pg.PlotCurveItem(pen=pg.mkPen(theme.TX, width=1.8))
        self._capacity_line = pg.InfiniteLine(
            angle=0, movable=False,
            pen=pg.mkPen(theme.CAPACITY, width=1.2, style=Qt.PenStyle.DashLine),
            label="capacity", labelOpts=_line_label(theme.CAPACITY, above=True),
        )
        self._threshold_line = pg.InfiniteLine(
            angle=0, movable=False,
            pen=pg.mkPen(theme.with_alpha(theme.THRESHOLD, 0.8), width=1.2,
                         style=Qt.PenStyle.DotLine),
            label="threshold", labelOpts=_line_label(theme.THRESHOLD, above=False),
        )
        for item in (self._rx, self._tx):
            bw.addItem(item)
        for item in (self._capacity_line, self._threshold_line):
            bw.addItem(item, ignoreBounds=True)
            item.setVisible(False)
        bw.setTitle(_title("Interface traffic", [("line", theme.RX, "rx"),
                                                  ("line", theme.TX, "tx")]))

        charts = QVBoxLayout()
        charts.setSpacing(6)
        charts.addWidget(self.latency_plot, 1)
        charts.addWidget(self.bandwidth_plot, 1)

        # -- numbers ------------------------------------------------------------------------
        panel = QFrame()
        panel.setObjectName("numbers")
        panel.setFixedWidth(250)
        grid = QGridLayout(panel)
        grid.setContentsMargins(14, 12, 14, 12)
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(5)
        self._values: dict[str, QLabel] = {}
        self._subs: dict[str, QLabel] = {}
        row = 0
        for key, caption in NUMBER_ROWS:
            if key in ("rtt_baseline_ms", "jitter_ms", "rx_bytes_per_s", "utilization"):
                grid.addWidget(_rule(), row, 0, 1, 2)
                row += 1
            cap = _plain(QLabel(caption))
            cap.setProperty("role", "caption")
            value = _plain(QLabel(fmt.DASH))
            value.setProperty("role", "value")
            value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setWordWrap(True)  # never cut: a long value wraps inside the panel
            grid.addWidget(cap, row, 0)
            grid.addWidget(value, row, 1)
            self._values[key] = value
            row += 1
            if key in ("utilization", "capacity"):
                sub = _sub_label()
                grid.addWidget(sub, row, 0, 1, 2)
                self._subs[key] = sub
                row += 1
        grid.addWidget(_rule(), row, 0, 1, 2)
        row += 1
        self._interface = _plain(QLabel(fmt.DASH))
        self._interface.setProperty("role", "value")
        self._interface.setWordWrap(True)
        self._note = _plain(QLabel(""))
        self._note.setProperty("role", "note")
        self._note.setWordWrap(True)
        # the last result of an action on this link (a capacity test, an export): it
        # stays until it is replaced or another link is shown
        self._result = QLabel("")
        self._result.setObjectName("result")
        self._result.setWordWrap(True)
        self._result.setTextFormat(Qt.TextFormat.PlainText)
        self._result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._result.hide()
        grid.addWidget(self._interface, row, 0, 1, 2)
        grid.addWidget(self._note, row + 1, 0, 1, 2)
        grid.addWidget(self._result, row + 2, 0, 1, 2)
        grid.setRowStretch(row + 3, 1)
        panel.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)

        body = QHBoxLayout()
        body.setSpacing(10)
        body.addLayout(charts, 1)
        body.addWidget(panel)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(12, 10, 12, 12)
        outer.setSpacing(8)
        outer.addLayout(header)
        outer.addLayout(body, 1)

        self._timer = QTimer(self)
        self._timer.setInterval(round(1000 / REDRAW_HZ))
        self._timer.timeout.connect(self._tick)
        self._set_rate_axis()
        self.set_link(None)

    # -- public API ------------------------------------------------------------------------
    def set_link(self, link: dict[str, Any] | None, local_name: str | None = None,
                 interfaces: linkwords.Ifaces | None = None) -> None:
        """Show the current numbers of a link dict from the cluster view (None: none)."""
        self._link = link
        new_id = None if link is None else link.get("id")
        if new_id != self._link_id:
            self._link_id = new_id
            self.set_result(None)  # a result belongs to the link it was made on
        if link is None:
            self._title.setText("No link selected")
            self._state.setText("")
            self._state.setVisible(False)
            for label in self._values.values():
                label.setText(fmt.DASH)
            for sub in self._subs.values():
                sub.setText("")
                sub.hide()
            self._interface.setText("")
            self._note.setText("Click a link in the map to see its latency and traffic.")
            self._set_capacity(None)
            return
        peer = link.get("peer_name") or link.get("peer_address") or "?"
        self._title.setText(f"{local_name} → {peer}" if local_name else f"→ {peer}")
        state = link.get("state") or "unknown"
        self._state.setText(state)
        self._state.setVisible(True)
        self._state.setStyleSheet(
            f"color: white; background: {theme.state_color(state)};"
            " border-radius: 8px; padding: 1px 8px; font-weight: 600;"
        )
        for key in ("rtt_ms", "rtt_min_ms", "rtt_max_ms", "rtt_p90_ms", "rtt_baseline_ms",
                    "jitter_ms"):
            self._values[key].setText(fmt.ms(link.get(key)))
        qd = link.get("queue_delay_ms")
        self._values["queue_delay_ms"].setText(fmt.DASH if qd is None else f"+{fmt.ms(qd)}")
        self._values["loss"].setText(fmt.percent(link.get("loss")))
        self._values["rx_bytes_per_s"].setText(fmt.rate(link.get("rx_bytes_per_s")))
        self._values["tx_bytes_per_s"].setText(fmt.rate(link.get("tx_bytes_per_s")))
        cap = link.get("capacity_bytes_per_s")
        if not cap or cap <= 0:
            cap = None
        self._values["utilization"].setText(fmt.utilization(link.get("utilization"), cap))
        self._values["capacity"].setText(fmt.capacity_rate(cap))
        # one unit per sentence: the busier direction's rate and the capacity in bytes/s,
        # the capacity's link speed (bit/s) as a label of its own
        rates = [(link.get(k), d) for k, d in (("rx_bytes_per_s", "rx"),
                                                ("tx_bytes_per_s", "tx"))
                 if link.get(k) is not None]
        busy = max(rates, key=lambda r: r[0]) if rates else None
        if cap is not None and busy is not None:
            self._set_sub("utilization", f"{busy[1]} {fmt.rate(busy[0])} of "
                                         f"{fmt.capacity_rate(cap)}")
        else:
            self._set_sub("utilization", "")
        ifaces = interfaces or {}
        if cap is not None:
            words = linkwords.capacity_words(link, ifaces)
            self._set_sub("capacity", f"({fmt.capacity_other(cap)}) · {words}")
        else:
            self._set_sub("capacity", "set it in Preferences, or Measure capacity")
        at = linkwords.speed(link, ifaces)
        self._interface.setText(f"via {linkwords.via(link, ifaces)}" + (f" · {at}" if at else ""))
        self._note.setText(linkwords.traffic_note(link, ifaces))
        self._set_capacity(cap)

    def set_result(self, text: str | None) -> None:
        """Show the last result of an action on this link (plain text) until it is
        replaced, cleared with None, or another link is shown."""
        self._result.setText(text or "")
        self._result.setVisible(bool(text))

    def set_history(self, hist: dict[str, Any]) -> None:
        """Replace the charts' data with a /v1/history answer (the last MAX_POINTS rows),
        and show the smallest range that covers it, so that the data fills the charts."""
        n = len(hist.get("t", []))
        cols = {}
        for c in COLUMNS:
            values = hist.get(c)
            cols[c] = _floats(values)[-MAX_POINTS:] if values is not None else np.full(n, np.nan)
        self._cols = cols
        self._states = deque(hist.get("state", [None] * n)[-MAX_POINTS:], maxlen=MAX_POINTS)
        self.set_range(fitting_range(cols["t"]))
        self._mark_dirty()

    def append(self, row: dict[str, Any]) -> None:
        """Add one sample (history column keys). Samples not newer than the last are dropped."""
        t = row.get("t")
        if t is None:
            return
        ts = self._cols["t"]
        if len(ts) and not float(t) > ts[-1]:
            return
        keep = MAX_POINTS - 1
        for c in COLUMNS:
            v = row.get(c)
            self._cols[c] = np.append(self._cols[c][-keep:], math.nan if v is None else float(v))
        self._states.append(row.get("state"))
        self._mark_dirty()

    def set_range(self, seconds: int) -> None:
        """Show the last `seconds` (60, 600 or 3600); emits rangeChanged when it changes."""
        if seconds not in self._range_buttons:
            raise ValueError(f"range {seconds} s is not one of {[r for r, _ in RANGES]}")
        self._range_buttons[seconds].setChecked(True)
        if seconds == self._range:
            return
        self._range = seconds
        self._mark_dirty()
        self.rangeChanged.emit(seconds)

    def range_seconds(self) -> int:
        return self._range

    def set_threshold(self, threshold: float) -> None:
        self._threshold = threshold
        self._set_capacity(self._capacity)

    def flush(self) -> None:
        """Redraw now if anything changed (the timer does this at REDRAW_HZ)."""
        if self._dirty:
            self._redraw()

    # -- introspection (tests) ----------------------------------------------------------
    def point_count(self) -> int:
        return len(self._cols["t"])

    def numbers(self) -> dict[str, str]:
        """The numbers panel's texts by key: NUMBER_ROWS keys, "utilization_detail",
        "capacity_detail", "interface", "note", "result", "title" and "state"."""
        out = {k: v.text() for k, v in self._values.items()}
        out["interface"] = self._interface.text()
        out["note"] = self._note.text()
        out["utilization_detail"] = self._subs["utilization"].text()
        out["capacity_detail"] = self._subs["capacity"].text()
        out["result"] = "" if self._result.isHidden() else self._result.text()
        out["title"] = self._title.text()
        out["state"] = self._state.text()
        return out

    def number_labels(self) -> list[QLabel]:
        """Every label of the numbers panel (tests check that none is cut)."""
        return self.findChild(QFrame, "numbers").findChildren(QLabel)

    def range_buttons(self) -> dict[int, QPushButton]:
        return dict(self._range_buttons)

    def curves(self) -> dict[str, pg.PlotCurveItem]:
        return {
            "rtt": self._rtt, "rtt_min": self._rtt_min, "rtt_max": self._rtt_max,
            "rtt_baseline": self._baseline, "rx": self._rx, "tx": self._tx,
        }

    def band(self) -> pg.FillBetweenItem:
        return self._band

    def capacity_line(self) -> pg.InfiniteLine:
        return self._capacity_line

    def threshold_line(self) -> pg.InfiniteLine:
        return self._threshold_line

    def redraw_timer(self) -> QTimer:
        return self._timer

    def restyle(self) -> None:
        """Take theme.py's current colours and fmt's units (exotray.ui.look calls this
        through the window when the system's scheme or the Preferences' units change)."""
        self.setStyleSheet(_style())
        for plot in (self.latency_plot, self.bandwidth_plot):
            _style_chart(plot)
        band = theme.with_alpha(theme.RTT_BAND, 0.9)
        for item, pen in ((self._rtt_min, pg.mkPen(band)), (self._rtt_max, pg.mkPen(band)),
                          (self._rtt, pg.mkPen(theme.RTT_MEDIAN, width=2)),
                          (self._baseline, pg.mkPen(theme.RTT_BASELINE, width=1.5,
                                                    style=Qt.PenStyle.DashLine)),
                          (self._rx, pg.mkPen(theme.RX, width=1.8)),
                          (self._tx, pg.mkPen(theme.TX, width=1.8))):
            item.setPen(pen)
        self._band.setBrush(pg.mkBrush(theme.with_alpha(theme.RTT_BAND, 0.45)))
        for line, color, alpha in ((self._capacity_line, theme.CAPACITY, 1.0),
                                   (self._threshold_line, theme.THRESHOLD, 0.8)):
            pen = QPen(line.pen)
            pen.setColor(pg.mkColor(theme.with_alpha(color, alpha)))
            line.setPen(pen)
            line.label.setColor(color)
            line.label.fill = pg.mkBrush(theme.with_alpha(theme.BACKGROUND, 0.85))
        self.latency_plot.getPlotItem().setTitle(_title(
            "Latency", [("line", theme.RTT_MEDIAN, "median"), ("box", theme.RTT_BAND,
                        "min – max"), ("line", theme.RTT_BASELINE, "idle baseline")]))
        self.bandwidth_plot.getPlotItem().setTitle(_title(
            "Interface traffic", [("line", theme.RX, "rx"), ("line", theme.TX, "tx")]))
        if self._link is not None:
            self._state.setStyleSheet(
                f"color: white; background: {theme.state_color(self._link.get('state'))};"
                " border-radius: 8px; padding: 1px 8px; font-weight: 600;")
        self._set_rate_axis()
        self._set_capacity(self._capacity)

    # -- drawing ---------------------------------------------------------------------------
    def _set_rate_axis(self) -> None:
        """The bandwidth axis in the rates' unit: B/s, or bit/s (the data, bytes/s, x 8)."""
        ax = self.bandwidth_plot.getPlotItem().getAxis("left")
        ax.setScale(8.0 if fmt.units() == "bits" else 1.0)
        ax.setLabel("rate", units=fmt.rate_unit(), color=theme.TEXT_MUTED)

    def _set_capacity(self, cap: float | None) -> None:
        self._capacity = cap
        known = cap is not None and cap > 0
        self._capacity_line.setVisible(known)
        self._threshold_line.setVisible(known)
        if known:
            assert cap is not None
            self._capacity_line.setPos(cap)
            self._capacity_line.label.setFormat(
                f"capacity {fmt.capacity_rate(cap)} ({fmt.capacity_other(cap)})")
            self._threshold_line.setPos(cap * self._threshold)
            self._threshold_line.label.setFormat(f"threshold {fmt.percent(self._threshold)}")
        self._mark_dirty()

    def _set_sub(self, key: str, text: str) -> None:
        sub = self._subs[key]
        if sub.text() != text:
            sub.setText(text)
        sub.setVisible(bool(text))

    def _mark_dirty(self) -> None:
        self._dirty = True
        if not self._timer.isActive():
            self._timer.start()

    def _tick(self) -> None:
        if self._dirty:
            self._redraw()
        else:
            self._timer.stop()

    def _redraw(self) -> None:
        self._dirty = False
        self.redraw_count += 1
        c = self._cols
        t = c["t"]
        lo, hi = c["rtt_min_ms"].copy(), c["rtt_max_ms"].copy()
        gap = ~(np.isfinite(lo) & np.isfinite(hi))
        lo[gap] = hi[gap] = np.nan  # the band needs matching gaps on both sides
        self._rtt.setData(t, c["rtt_ms"], connect="finite")
        self._rtt_min.setData(t, lo, connect="finite")
        self._rtt_max.setData(t, hi, connect="finite")
        self._baseline.setData(t, c["rtt_baseline_ms"], connect="finite")
        self._rx.setData(t, c["rx_bytes_per_s"], connect="finite")
        self._tx.setData(t, c["tx_bytes_per_s"], connect="finite")

        end = float(t[-1]) if len(t) else 0.0
        start = end - self._range
        lat, bw = self.latency_plot.getPlotItem(), self.bandwidth_plot.getPlotItem()
        lat.setXRange(start, end, padding=0)
        seen = t >= start
        rtt_top = _top(hi[seen], c["rtt_ms"][seen])
        lat.setYRange(0, (rtt_top or 1.0) * 1.12, padding=0)
        rate_top = _top(c["rx_bytes_per_s"][seen], c["tx_bytes_per_s"][seen])
        if self._capacity:
            rate_top = max(rate_top or 0.0, self._capacity)
        bw.setYRange(0, (rate_top or 1000.0) * 1.12, padding=0)


def fitting_range(t: np.ndarray) -> int:
    """The smallest of RANGES that covers the time span of `t` (allowing _FIT_SLACK),
    the longest when none does: a new link's minute of data fills the charts."""
    span = float(t[-1] - t[0]) if len(t) >= 2 else 0.0
    for seconds, _text in RANGES:
        if span <= seconds * _FIT_SLACK:
            return seconds
    return RANGES[-1][0]


def _top(*arrays: np.ndarray) -> float | None:
    values = [a[np.isfinite(a)] for a in arrays]
    values = [v for v in values if len(v)]
    return float(max(v.max() for v in values)) if values else None


def _line_label(color: str, above: bool) -> dict[str, Any]:
    """Label at the left end of a horizontal line, just above or just below it."""
    anchor = (0, 1) if above else (0, 0)
    return {
        "position": 0.01,
        "anchors": [anchor, anchor],
        "color": color,
        "fill": theme.with_alpha(theme.BACKGROUND, 0.85),
        "movable": False,
    }


def _title(text: str, keys: list[tuple[str, str, str]]) -> str:
    """A chart title with its legend inline: ("line" | "box", colour, name) per series."""
    parts = [f'<span style="color:{theme.TEXT}; font-weight:600">{text}</span>']
    for shape, color, name in keys:
        mark = "━" if shape == "line" else "■"
        parts.append(
            f'&nbsp;&nbsp;&nbsp;<span style="color:{color}">{mark}</span>'
            f'<span style="color:{theme.TEXT_MUTED}">&nbsp;{name}</span>'
        )
    return "".join(parts)


def _plain(label: QLabel) -> QLabel:
    """`label`, showing its text as plain text (Qt's default guesses, and renders
    anything that looks like HTML)."""
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def _sub_label() -> QLabel:
    """A muted, right-aligned, wrapping line under a value (spans the panel)."""
    sub = QLabel("")
    sub.setProperty("role", "sub")
    sub.setWordWrap(True)
    sub.setTextFormat(Qt.TextFormat.PlainText)
    sub.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    sub.hide()
    return sub


def _rule() -> QFrame:
    rule = QFrame()
    rule.setObjectName("rule")
    rule.setFixedHeight(1)
    return rule


def _style() -> str:
    """The panel's style sheet in theme.py's current colours."""
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
    padding: 3px 12px; font-size: 9pt; min-width: 44px;
}}
QPushButton[segment="first"] {{ border-top-left-radius: 6px; border-bottom-left-radius: 6px; }}
QPushButton[segment="last"] {{ border-top-right-radius: 6px; border-bottom-right-radius: 6px; }}
QPushButton:checked {{
    color: white; background: {theme.ACCENT}; border-color: {theme.ACCENT};
}}
"""


__all__ = ["MAX_POINTS", "RANGES", "LinkDetails", "fitting_range"]
