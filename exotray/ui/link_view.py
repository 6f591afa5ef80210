"""Details of one link: latency and bandwidth charts over time, and its current numbers.

Charts are created once; new data only marks them dirty, and a QTimer at display rate
(``REDRAW_HZ``) pushes it into the curves with ``setData``. Any number of samples that
arrive between two frames cost one redraw.

The charts show what they ask for: `historyWanted` carries a /v1/history query (the
range shown, or the stretch a zoom, a pan or `show_around` reached) and the window
answers with `set_history`. What is loaded and when to ask again is chart_data.py's
job; the crosshair read-out is chart_cursor.py's.
"""

from __future__ import annotations

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
from exotray.ui import linkwords, theme
from exotray.ui.chart_cursor import Crosshair
from exotray.ui.chart_data import (
    AROUND_S,
    LIVE_S,
    MAX_POINTS,
    RANGES,
    Loaded,
    Query,
    envelope,
    fitting_range,
    follow_query,
    wanted,
)
from exotray.ui.chart_style import (
    chart,
    details_style,
    line_label,
    plain,
    rate_bands,
    rule,
    style_chart,
    sub_label,
    title,
)

REDRAW_HZ: Final = 20
#: how long the view rests after a zoom or pan before what it reached is fetched
SETTLE_MS: Final = 250
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
class LinkDetails(QWidget):
    """Latency and bandwidth of one link over time, with its current numbers."""

    #: the selected time range in seconds (one of RANGES), whenever it changes
    rangeChanged = Signal(int)
    #: a /v1/history query (dict of its parameters but the link) for what the charts
    #: show; answer it with set_history
    historyWanted = Signal(object)

    def __init__(
        self, parent: QWidget | None = None, threshold: float = theme.DEFAULT_THRESHOLD
    ) -> None:
        super().__init__(parent)
        self.setObjectName("LinkDetails")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet(details_style())
        self._threshold = threshold
        self._range = RANGES[1][0]
        self._link: dict[str, Any] | None = None
        self._link_id: str | None = None
        self._capacity: float | None = None
        self._data = Loaded.empty()
        #: the view ends now and moves on (else it stays where a zoom, a pan or
        #: show_around put it, until a range is chosen)
        self._following = True
        #: pick the short range that the link's first history fills (until one is chosen)
        self._fit = True
        self._asked: Query | None = None
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(self._fetch_if_needed)
        self._dirty = False
        #: how many times the charts were redrawn (tests and benchmarks read it)
        self.redraw_count = 0

        # -- header: title, state, range switch ---------------------------------------
        # Every label here may show text from a peer's snapshot (its name, its
        # interfaces' names and labels): plain text, never rich text, which would load
        # <img src=...> from any path (issue 18: /dev/zero took 2 GB, a FIFO hung the UI).
        self._title = plain(QLabel("No link selected"))
        self._title.setObjectName("title")
        self._state = plain(QLabel(""))
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
        self.latency_plot = chart("Latency")
        self.bandwidth_plot = chart("Interface traffic")
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
        lat.setTitle(title("Latency", [("line", theme.RTT_MEDIAN, "median"),
                                        ("box", theme.RTT_BAND, "min – max"),
                                        ("line", theme.RTT_BASELINE, "idle baseline")]))

        self._rx = pg.PlotCurveItem(pen=pg.mkPen(theme.RX, width=1.8))
        self._tx = pg.PlotCurveItem(pen=pg.mkPen(theme.TX, width=1.8))
        # coarse rows: each direction's min–max, so a short peak stays visible in 30 days
        self._rate_edges, self._rate_bands = rate_bands(bw)
        self._capacity_line = pg.InfiniteLine(
            angle=0, movable=False,
            pen=pg.mkPen(theme.CAPACITY, width=1.2, style=Qt.PenStyle.DashLine),
            label="capacity", labelOpts=line_label(theme.CAPACITY, above=True),
        )
        self._threshold_line = pg.InfiniteLine(
            angle=0, movable=False,
            pen=pg.mkPen(theme.with_alpha(theme.THRESHOLD, 0.8), width=1.2,
                         style=Qt.PenStyle.DotLine),
            label="threshold", labelOpts=line_label(theme.THRESHOLD, above=False),
        )
        for item in (self._rx, self._tx):
            bw.addItem(item)
        for item in (self._capacity_line, self._threshold_line):
            bw.addItem(item, ignoreBounds=True)
            item.setVisible(False)
        bw.setTitle(title("Interface traffic", [("line", theme.RX, "rx"),
                                                  ("line", theme.TX, "tx")]))

        self._readout = plain(QLabel(""))
        self._readout.setProperty("role", "note")
        # as wide as the charts, never wider: a long read-out is cut, not the window widened
        self._readout.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.crosshair = Crosshair([self.latency_plot, self.bandwidth_plot], self._readout,
                                   self._data_at)
        for plot in (self.latency_plot, self.bandwidth_plot):
            plot.getPlotItem().getViewBox().sigRangeChangedManually.connect(self._moved)
        charts = QVBoxLayout()
        charts.setSpacing(6)
        charts.addWidget(self._readout)
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
                grid.addWidget(rule(), row, 0, 1, 2)
                row += 1
            cap = plain(QLabel(caption))
            cap.setProperty("role", "caption")
            value = plain(QLabel(fmt.DASH))
            value.setProperty("role", "value")
            value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setWordWrap(True)  # never cut: a long value wraps inside the panel
            grid.addWidget(cap, row, 0)
            grid.addWidget(value, row, 1)
            self._values[key] = value
            row += 1
            if key in ("tx_bytes_per_s", "utilization", "capacity"):
                sub = sub_label()
                grid.addWidget(sub, row, 0, 1, 2)
                self._subs[key] = sub
                row += 1
        grid.addWidget(rule(), row, 0, 1, 2)
        row += 1
        self._interface = plain(QLabel(fmt.DASH))
        self._interface.setProperty("role", "value")
        self._interface.setWordWrap(True)
        self._note = plain(QLabel(""))
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
        """Show the current numbers of a link dict from the cluster view (None: none).
        Another link than before clears the charts and asks for its history."""
        self._link = link
        new_id = None if link is None else link.get("id")
        changed = new_id != self._link_id
        if changed:
            self._link_id = new_id
            self.set_result(None)  # a result belongs to the link it was made on
            self._data = Loaded.empty()
            self._asked = None
            self._following = True
            self._fit = self._range <= LIVE_S
            self._mark_dirty()
        self._show_numbers(link, local_name, interfaces)
        if changed and new_id is not None:
            self._ask(follow_query(self._range))

    def _show_numbers(self, link: dict[str, Any] | None, local_name: str | None,
                      interfaces: linkwords.Ifaces | None) -> None:
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
        # "IP only: RDMA not counted · RDMA enabled · rdma_en3 PORT_ACTIVE": a JACCL link
        # on macOS must not read as an idle one
        self._set_sub("tx_bytes_per_s", " · ".join(
            x for x in (linkwords.rdma_short(link), linkwords.rdma_state(link)) if x))
        cap = link.get("capacity_bytes_per_s")
        if not cap or cap <= 0:
            cap = None
        ip_only = link.get("rdma") == "not_counted"  # the IP part of an RDMA link's load
        self._values["utilization"].setText(
            "unknown" if ip_only and cap else fmt.utilization(link.get("utilization"), cap))
        self._values["capacity"].setText(fmt.capacity_rate(cap))
        # one unit per sentence: the busier direction's rate and the capacity in bytes/s,
        # the capacity's link speed (bit/s) as a label of its own
        rates = [(link.get(k), d) for k, d in (("rx_bytes_per_s", "rx"),
                                                ("tx_bytes_per_s", "tx"))
                 if link.get(k) is not None]
        busy = max(rates, key=lambda r: r[0]) if rates else None
        if cap is not None and busy is not None:
            self._set_sub("utilization", ("IP alone: " + fmt.utilization(
                link.get("utilization"), cap) + ", " if ip_only else "")
                + f"{busy[1]} {fmt.rate(busy[0])} of {fmt.capacity_rate(cap)}")
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
        rdma = linkwords.rdma_words(link)
        self._note.setText(linkwords.traffic_note(link, ifaces) + (f" {rdma}" if rdma else ""))
        self._set_capacity(cap)

    def set_result(self, text: str | None) -> None:
        """Show the last result of an action on this link (plain text) until it is
        replaced, cleared with None, or another link is shown."""
        self._result.setText(text or "")
        self._result.setVisible(bool(text))

    def set_history(self, hist: dict[str, Any]) -> None:
        """Show a /v1/history answer (the one to the last historyWanted, or an hour of
        history handed over directly). Until a range is chosen, the shortest range that
        covers it is shown, so that a new link's minute of data fills the charts."""
        self._data = Loaded.from_answer(hist, self._asked)
        self._asked = None
        if self._fit and self._following:
            self._set_range(fitting_range(self._data.cols["t"]))
        self._mark_dirty()

    def append(self, row: dict[str, Any]) -> None:
        """Add one live sample (history column keys) where the charts show full resolution
        up to now (the short ranges); older or coarse data is fetched again instead.
        Samples not newer than the last are dropped."""
        t = row.get("t")
        if t is None:
            return
        data = self._data
        if data.live:
            if data.append(row):
                self._mark_dirty()
        elif (self._following and self._asked is None and data.query is not None
              and float(t) - data.until > max(data.step_s or 0.0, 60.0)):
            self._ask(follow_query(self._range))  # a long range's newest bucket is due

    def set_range(self, seconds: int) -> None:
        """Show the last `seconds` (one of RANGES) up to now, following new data, and
        fetch it when what is loaded does not serve it; emits rangeChanged when the
        range changes."""
        if seconds not in self._range_buttons:
            raise ValueError(f"range {seconds} s is not one of {[r for r, _ in RANGES]}")
        self._fit = False
        self._following = True
        self._set_range(seconds)
        self._mark_dirty()
        self._fetch_if_needed()

    def show_around(self, t: float, span: float | None = None) -> None:
        """Show `span` seconds (default AROUND_S) centred on time t (unix seconds), fetching
        what is not loaded; the view stays there until a range is chosen."""
        span = float(span or AROUND_S)
        self._fit = False
        self._following = False
        self._settle.stop()
        self.latency_plot.getPlotItem().setXRange(t - span / 2, t + span / 2, padding=0)
        self._mark_dirty()
        self._fetch_if_needed()

    def following(self) -> bool:
        """Whether the view ends now and moves on (False after a zoom, a pan, show_around)."""
        return self._following

    def view_range(self) -> tuple[float, float]:
        """The time span the charts show (unix seconds)."""
        x0, x1 = self.latency_plot.getPlotItem().getViewBox().viewRange()[0]
        return float(x0), float(x1)

    def loaded(self) -> Loaded:
        """What the charts hold (tests and benchmarks read it)."""
        return self._data

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
        return len(self._data)

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

    def rate_edges(self) -> dict[str, pg.PlotCurveItem]:
        """For coarse rows only: the rates' max lines ("rx_max", "tx_max") and min–max
        bars ("rx", "tx")."""
        return {**self._rate_edges, **self._rate_bands}

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
        self.setStyleSheet(details_style())
        for plot in (self.latency_plot, self.bandwidth_plot):
            style_chart(plot)
        self.crosshair.restyle()
        for name, item in {**self._rate_edges, **self._rate_bands}.items():
            color = theme.RX if name.startswith("rx") else theme.TX
            alpha = 0.6 if name.endswith("_max") else 0.3
            item.setPen(pg.mkPen(theme.with_alpha(color, alpha), width=1))
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
        self.latency_plot.getPlotItem().setTitle(title(
            "Latency", [("line", theme.RTT_MEDIAN, "median"), ("box", theme.RTT_BAND,
                        "min – max"), ("line", theme.RTT_BASELINE, "idle baseline")]))
        self.bandwidth_plot.getPlotItem().setTitle(title(
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

    def _set_range(self, seconds: int) -> None:
        self._range_buttons[seconds].setChecked(True)
        if seconds != self._range:
            self._range = seconds
            self._mark_dirty()
            self.rangeChanged.emit(seconds)

    def _ask(self, query: Query) -> None:
        self._asked = query
        self.historyWanted.emit(dict(query))

    def _fetch_if_needed(self) -> None:
        if self._link_id is None:
            return
        query = wanted(self._data, self._following, self._range, self.view_range())
        if query is not None and query != self._asked:
            self._ask(query)

    def _moved(self, _mask: object) -> None:
        """A zoom or pan with the mouse: the view stays where it was put; what it reaches
        is fetched once it rests."""
        self._fit = False
        self._following = False
        self._mark_dirty()
        self._settle.start()

    def _data_at(self, t: float) -> dict[str, Any] | None:
        return self._data.at(t)

    def _redraw(self) -> None:
        self._dirty = False
        self.redraw_count += 1
        data = self._data
        c = data.cols
        t = c["t"]
        lat, bw = self.latency_plot.getPlotItem(), self.bandwidth_plot.getPlotItem()
        if self._following:
            end = data.until
            start = end - self._range
            lat.setXRange(start, end, padding=0)
        else:
            start, end = self.view_range()
        # the band's polygon with a vertex per pixel, not per sample: QPainter took ~200 ms
        # to fill an hour of noisy samples (bench/gui_history.py), ~10 ms this way
        px = (end - start) / max(1.0, lat.getViewBox().width())
        bt, lo, hi = envelope(t, c["rtt_min_ms_min"], c["rtt_max_ms_max"], px)
        lo, hi = lo.copy(), hi.copy()
        gap = ~(np.isfinite(lo) & np.isfinite(hi))
        lo[gap] = hi[gap] = np.nan  # the band needs matching gaps on both sides
        self._rtt.setData(t, c["rtt_ms"], connect="finite")
        self._rtt_min.setData(bt, lo, connect="finite")
        self._rtt_max.setData(bt, hi, connect="finite")
        self._baseline.setData(t, c["rtt_baseline_ms"], connect="finite")
        self._rx.setData(t, c["rx_bytes_per_s"], connect="finite")
        self._tx.setData(t, c["tx_bytes_per_s"], connect="finite")
        for way, bars in self._rate_bands.items():
            lo, hi = c[f"{way}_bytes_per_s_min"], c[f"{way}_bytes_per_s_max"]
            for item in (bars, self._rate_edges[f"{way}_max"]):
                item.setVisible(data.coarse)
            if data.coarse:
                bars.setData(np.repeat(t, 2), np.column_stack((lo, hi)).ravel(),
                             connect="pairs")
                self._rate_edges[f"{way}_max"].setData(t, hi, connect="finite")

        rtt_top = data.top(start, end, "rtt_max_ms_max", "rtt_ms")
        lat.setYRange(0, (rtt_top or 1.0) * 1.12, padding=0)
        rates = ("rx_bytes_per_s", "tx_bytes_per_s") if not data.coarse else (
            "rx_bytes_per_s_max", "tx_bytes_per_s_max")
        rate_top = data.top(start, end, *rates)
        if self._capacity:
            rate_top = max(rate_top or 0.0, self._capacity)
        bw.setYRange(0, (rate_top or 1000.0) * 1.12, padding=0)


__all__ = ["MAX_POINTS", "RANGES", "LinkDetails", "fitting_range"]
