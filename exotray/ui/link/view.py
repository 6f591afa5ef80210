"""Details of one link: latency and bandwidth charts over time, and its current numbers.

This module assembles the view (a header with the title, the link's state and the range
switch; the charts, link/charts.py; the numbers panel, link/numbers.py) and decides what
the charts show, when they are redrawn and what history to ask for.

Charts are created once; new data only marks them dirty, and a QTimer at display rate
(``REDRAW_HZ``) pushes it into the curves with ``setData``. Any number of samples that
arrive between two frames cost one redraw.

The charts show what they ask for: `historyWanted` carries a /v1/history query (the
range shown, or the stretch a zoom, a pan or `show_around` reached) and the window
answers with `set_history`. What is loaded and when to ask again is link/chart_data.py's
job; the crosshair read-out is link/chart_cursor.py's.
"""

from __future__ import annotations

from typing import Any, Final

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from exotray.core.events import event_time, unix
from exotray.ui.link import words as linkwords
from exotray.ui.link.chart_data import (
    AROUND_S,
    LIVE_S,
    MAX_POINTS,
    RANGES,
    Loaded,
    Query,
    fitting_range,
    follow_query,
    wanted,
)
from exotray.ui.link.chart_style import details_style, plain
from exotray.ui.link.charts import LinkCharts
from exotray.ui.link.numbers import NumbersPanel, capacity
from exotray.ui.style import theme

REDRAW_HZ: Final = 20
#: how long the view rests after a zoom or pan before what it reached is fetched
SETTLE_MS: Final = 250


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
        self._released = False  # (release(): the app quits)

        header = self._header()
        #: the two charts and their read-out (link/charts.py)
        self.charts = LinkCharts(self._data_at)
        for plot in self.charts.plots():
            plot.getPlotItem().getViewBox().sigRangeChangedManually.connect(self._moved)
        #: the numbers panel beside them (link/numbers.py)
        self.panel = NumbersPanel()

        body = QHBoxLayout()
        body.setSpacing(10)
        body.addLayout(self.charts.layout, 1)
        body.addWidget(self.panel)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(12, 10, 12, 12)
        outer.setSpacing(8)
        outer.addLayout(header)
        outer.addLayout(body, 1)

        self._timer = QTimer(self)
        self._timer.setInterval(round(1000 / REDRAW_HZ))
        self._timer.timeout.connect(self._tick)
        self.charts.set_rate_axis()
        self.set_link(None)

    def _header(self) -> QHBoxLayout:
        """The title, the link's state and the range switch."""
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
        return header

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
            self.panel.show_link(None, interfaces)
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
        self.panel.show_link(link, interfaces)
        self._set_capacity(capacity(link))

    def set_result(self, text: str | None) -> None:
        """Show the last result of an action on this link (plain text) until it is
        replaced, cleared with None, or another link is shown."""
        self.panel.set_result(text)

    def set_tests(self, events: list[dict[str, Any]]) -> None:
        """Mark this link's capacity tests (its `capacity_test` events) on the charts."""
        intervals = []
        for ev in events:
            start, end = unix(ev.get("started_at")), event_time(ev)
            if start is not None and end is not None and end >= start:
                intervals.append((start, end))
        if intervals != self.charts.tests:
            self.charts.set_tests(intervals)
            self._mark_dirty()

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
        self.charts.latency_plot.getPlotItem().setXRange(t - span / 2, t + span / 2, padding=0)
        self._mark_dirty()
        self._fetch_if_needed()

    def following(self) -> bool:
        """Whether the view ends now and moves on (False after a zoom, a pan, show_around)."""
        return self._following

    def view_range(self) -> tuple[float, float]:
        """The time span the charts show (unix seconds)."""
        x0, x1 = self.charts.latency_plot.getPlotItem().getViewBox().viewRange()[0]
        return float(x0), float(x1)

    def release(self) -> None:
        """Before the window goes (the app quits): no more redraws or fetches, and the
        charts unlinked (LinkCharts.release)."""
        self._released = True  # (nothing starts them again: a late answer, a restyle)
        self._timer.stop()
        self._settle.stop()
        self.charts.release()

    def loaded(self) -> Loaded:
        """What the charts hold (tests and benchmarks read it)."""
        return self._data

    def range_seconds(self) -> int:
        return self._range

    def set_threshold(self, threshold: float) -> None:
        self._threshold = threshold
        self._set_capacity(self.charts.capacity)

    def flush(self) -> None:
        """Redraw now if anything changed (the timer does this at REDRAW_HZ)."""
        if self._dirty:
            self._redraw()

    # -- introspection (tests) ----------------------------------------------------------
    def point_count(self) -> int:
        return len(self._data)

    def numbers(self) -> dict[str, str]:
        """The numbers panel's texts by key (NumbersPanel.numbers), and the header's
        "title" and "state"."""
        out = self.panel.numbers()
        out["title"] = self._title.text()
        out["state"] = self._state.text()
        return out

    def number_labels(self) -> list[QLabel]:
        """Every label of the numbers panel (tests check that none is cut)."""
        return self.panel.findChildren(QLabel)

    def range_buttons(self) -> dict[int, QPushButton]:
        return dict(self._range_buttons)

    def redraw_timer(self) -> QTimer:
        return self._timer

    def restyle(self) -> None:
        """Take style/theme.py's current colours and fmt's units (exotray.ui.style.look calls this
        through the window when the system's scheme or the Preferences' units change)."""
        self.setStyleSheet(details_style())
        self.charts.restyle()
        if self._link is not None:
            self._state.setStyleSheet(
                f"color: white; background: {theme.state_color(self._link.get('state'))};"
                " border-radius: 8px; padding: 1px 8px; font-weight: 600;")
        self._set_capacity(self.charts.capacity)

    # -- drawing ---------------------------------------------------------------------------
    def _set_capacity(self, cap: float | None) -> None:
        self.charts.set_capacity(cap, self._threshold)
        self._mark_dirty()

    def _mark_dirty(self) -> None:
        self._dirty = True
        if not self._timer.isActive() and not self._released:
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
        if not self._released:
            self._settle.start()

    def _data_at(self, t: float) -> dict[str, Any] | None:
        return self._data.at(t)

    def _redraw(self) -> None:
        self._dirty = False
        self.redraw_count += 1
        data = self._data
        if self._following:
            end = data.until
            start = end - self._range
            self.charts.latency_plot.getPlotItem().setXRange(start, end, padding=0)
        else:
            start, end = self.view_range()
        self.charts.draw(data, start, end)

__all__ = ["MAX_POINTS", "RANGES", "LinkDetails", "fitting_range"]

