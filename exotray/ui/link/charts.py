"""The link's two charts (latency, interface traffic) with their read-out line: the
curves, the RTT band, the rates' min–max for coarse rows, the capacity and threshold
lines, and drawing what is loaded (chart_data.Loaded) into them for a time span.

Which span, when to redraw and what to fetch is ui/link/view.py's job; the look of a
chart is link/chart_style.py's, the crosshair link/chart_cursor.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QPen
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout

from exotray.core import fmt
from exotray.ui.link.chart_cursor import Crosshair
from exotray.ui.link.chart_data import Loaded, envelope
from exotray.ui.link.chart_style import (
    chart,
    line_label,
    plain,
    rate_bands,
    style_chart,
    title,
)
from exotray.ui.style import theme


def _latency_title() -> str:
    return title("Latency", [("line", theme.RTT_MEDIAN, "median"),
                             ("box", theme.RTT_BAND, "min – max"),
                             ("line", theme.RTT_BASELINE, "idle baseline")])


def _traffic_title() -> str:
    return title("Interface traffic", [("line", theme.RX, "rx"), ("line", theme.TX, "tx")])


#: capacity tests marked on the charts at once (the newest)
MAX_TEST_REGIONS = 8


class LinkCharts:
    """Latency above interface traffic, time-linked, with a crosshair read-out above
    both; `layout` holds the three for the details view to place."""

    def __init__(self, data_at: Callable[[float], dict[str, Any] | None]) -> None:
        #: the capacity drawn as a line (bytes/s), None when unknown
        self.capacity: float | None = None
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
        lat.setTitle(_latency_title())

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
        bw.setTitle(_traffic_title())
        #: capacity tests over this link (wall-clock intervals): shaded in both charts,
        #: and left out when the traffic axis is fitted. A few regions, made once.
        self.tests: list[tuple[float, float]] = []
        self._test_regions = [
            (self._test_region(lat, label=False), self._test_region(bw, label=True))
            for _ in range(MAX_TEST_REGIONS)]

        self._readout = plain(QLabel(""))
        self._readout.setProperty("role", "note")
        # as wide as the charts, never wider: a long read-out is cut, not the window widened
        self._readout.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.crosshair = Crosshair([self.latency_plot, self.bandwidth_plot], self._readout,
                                   data_at)
        self.layout = QVBoxLayout()
        self.layout.setSpacing(6)
        self.layout.addWidget(self._readout)
        self.layout.addWidget(self.latency_plot, 1)
        self.layout.addWidget(self.bandwidth_plot, 1)

    @staticmethod
    def _test_region(plot: pg.PlotItem, *, label: bool) -> pg.LinearRegionItem:
        region = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(
            theme.with_alpha(theme.CAPACITY, 0.15)), pen=pg.mkPen(None))
        region.setZValue(-10)
        region.setVisible(False)
        if label:
            pg.InfLineLabel(region.lines[0], "capacity test", position=0.6, anchors=[
                (0, 0), (0, 0)], color=theme.TEXT_MUTED)
        plot.addItem(region, ignoreBounds=True)
        return region

    def set_tests(self, intervals: list[tuple[float, float]]) -> None:
        """Mark the capacity tests over this link ((start, end), unix seconds; the last
        MAX_TEST_REGIONS); takes effect at the next draw."""
        self.tests = sorted(intervals)[-MAX_TEST_REGIONS:]
        for k, pair in enumerate(self._test_regions):
            shown = k < len(self.tests)
            for region in pair:
                region.setVisible(shown)
                if shown:
                    region.setRegion(self.tests[k])

    def plots(self) -> tuple[pg.PlotWidget, pg.PlotWidget]:
        return self.latency_plot, self.bandwidth_plot

    def release(self) -> None:
        """Unlink the two charts' time axes and stop following the mouse, before they
        are destroyed: range changes still queued between linked views, handled while
        one chart's axes are being deleted, crashed pyqtgraph (a segfault in
        `AxisItem.linkedViewChanged`, seen once in CI at a window's teardown)."""
        self.bandwidth_plot.getPlotItem().setXLink(None)
        self.crosshair.release()

    # -- introspection (tests) ----------------------------------------------------------
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

    def test_regions(self) -> list[pg.LinearRegionItem]:
        """The traffic chart's capacity-test regions that show."""
        return [bw for _, bw in self._test_regions if bw.isVisible()]

    # -- drawing ---------------------------------------------------------------------------
    def restyle(self) -> None:
        """Take style/theme.py's current colours and fmt's units (the capacity line's label
        follows at the next set_capacity)."""
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
        for pair in self._test_regions:
            for region in pair:
                region.setBrush(pg.mkBrush(theme.with_alpha(theme.CAPACITY, 0.15)))
        self.latency_plot.getPlotItem().setTitle(_latency_title())
        self.bandwidth_plot.getPlotItem().setTitle(_traffic_title())
        self.set_rate_axis()

    def set_rate_axis(self) -> None:
        """The bandwidth axis in the rates' unit: B/s, or bit/s (the data, bytes/s, x 8)."""
        ax = self.bandwidth_plot.getPlotItem().getAxis("left")
        ax.setScale(8.0 if fmt.units() == "bits" else 1.0)
        ax.setLabel("rate", units=fmt.rate_unit(), color=theme.TEXT_MUTED)

    def set_capacity(self, cap: float | None, threshold: float) -> None:
        """The capacity and threshold lines at `cap` (bytes/s) and cap x threshold;
        hidden while the capacity is unknown."""
        self.capacity = cap
        known = cap is not None and cap > 0
        self._capacity_line.setVisible(known)
        self._threshold_line.setVisible(known)
        if known:
            assert cap is not None
            self._capacity_line.setPos(cap)
            self._capacity_line.label.setFormat(
                f"capacity {fmt.capacity_rate(cap)} ({fmt.capacity_other(cap)})")
            self._threshold_line.setPos(cap * threshold)
            self._threshold_line.label.setFormat(f"threshold {fmt.percent(threshold)}")

    def draw(self, data: Loaded, start: float, end: float) -> None:
        """Put `data` into the curves and fit the y axes to what shows from start to end
        (the x range is the caller's)."""
        c = data.cols
        t = c["t"]
        lat, bw = self.latency_plot.getPlotItem(), self.bandwidth_plot.getPlotItem()
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
        rate_top = data.top(start, end, *rates, besides=self.tests)
        if self.capacity:
            rate_top = max(rate_top or 0.0, self.capacity)
        bw.setYRange(0, (rate_top or 1000.0) * 1.12, padding=0)
