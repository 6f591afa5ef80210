"""The window reads the agent's history database (issue 15 point 3): a real agent on
loopback (mDNS off) whose database already holds a day of one link's rows from a
previous run, a real AgentClient, the real window offscreen. The 24 h range shows the
restored day with its 3 s peak; the range buttons, a zoom and show_around fetch what
they show; the crosshair reads the values under the mouse."""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np
import pytest
from helpers import AgentProc, free_port

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication

from exotray.agent.history.db import HistoryDB
from exotray.agent.peers.links import link_id
from exotray.core.history import LINK_COLUMNS
from exotray.ui.client.poll import AgentClient
from exotray.ui.window.dashboard import MainWindow

DAY = 86400.0
NODE_ID = "5e11ed0a1b2c"
QUIET_RX, PEAK_RX = 2.0e4, 6.0e6
QUIET_RTT, PEAK_RTT = 0.2, 180.0


def _row(t: float, peak: bool) -> tuple:
    rtt, rx = (PEAK_RTT, PEAK_RX) if peak else (QUIET_RTT, QUIET_RX)
    values = {"t": t, "rtt_ms": rtt, "rtt_min_ms": rtt * 0.8, "rtt_max_ms": rtt * 1.1,
              "rx_bytes_per_s": rx, "tx_bytes_per_s": rx / 10,
              "utilization": 0.97 if peak else 0.003,
              "state": "saturated" if peak else "up", "rtt_baseline_ms": QUIET_RTT,
              "queue_delay_ms": rtt - QUIET_RTT, "flow_rx_bytes_per_s": None,
              "flow_tx_bytes_per_s": None, "loss": 0.0}
    return tuple(values[c] for c in LINK_COLUMNS)


@pytest.fixture(scope="module")
def restored(tmp_path_factory: Any) -> Any:
    """An agent started on a state dir whose history database holds the last day of its
    link (every 10 s, and a 3 s saturation at 1 s twelve hours ago), written by the
    database's own code as a previous run would have."""
    tmp = tmp_path_factory.mktemp("restored")
    port, peer_port = free_port(), free_port()
    state = tmp / "state-studio-1"
    state.mkdir(mode=0o700)
    (state / "node_id").write_text(f"{NODE_ID}\n")
    lid = link_id(NODE_ID, ("127.0.0.1", peer_port))
    now = time.time()
    peak = now - DAY / 2
    times = [now - DAY + 10 * i for i in range(int((DAY - 600) / 10))]
    rows = [_row(t, False) for t in times if not peak - 10 < t < peak + 10]
    rows += [_row(peak + i, True) for i in range(3)]
    rows.sort()
    db = HistoryDB(state / "history.db", 30 * DAY)
    db.write(now - 600, [("link", lid, LINK_COLUMNS, r) for r in rows], [])
    db.close()
    # the peer is never there: the link is down now, its history is what was recorded
    agent = AgentProc(tmp, "studio-1", port, [peer_port])
    try:
        agent.wait_ready()
        yield {"agent": agent, "link": lid, "now": now, "peak": peak}
    finally:
        agent.close()


@pytest.fixture
def window(qtbot: Any, restored: dict) -> Any:
    agent = restored["agent"]
    client = AgentClient(agent.port, agent.state, interval=0.2)
    w = MainWindow(client)
    client.clusterChanged.connect(w.set_cluster)
    qtbot.addWidget(w)
    w.resize(1280, 820)
    w.show()
    qtbot.waitExposed(w)
    client.start()
    try:
        lid = restored["link"]
        qtbot.waitUntil(lambda: w._link(lid) is not None, timeout=10_000)
        w.select_link(lid)
        qtbot.waitUntil(lambda: w._history_for == lid, timeout=10_000)
        yield w
    finally:
        client.stop()


def _loaded(w: MainWindow, **query: float) -> bool:
    """The details hold the answer to `query` (a subset of its parameters)."""
    q = w.details.loaded().query or {}
    return all(q.get(k) == v for k, v in query.items())


def _click(qtbot: Any, w: MainWindow, button: int, **query: float) -> None:
    qtbot.mouseClick(w.details.range_buttons()[button], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _loaded(w, **query), timeout=10_000)
    w.details.flush()


def _pixel(w: MainWindow, t: float) -> QPointF:
    """Where time t is, halfway up the bandwidth chart, in its viewport's pixels."""
    plot = w.details.charts.bandwidth_plot
    vb = plot.getPlotItem().getViewBox()
    y = sum(vb.viewRange()[1]) / 2
    return QPointF(plot.mapFromScene(vb.mapViewToScene(QPointF(t, y))))


def _bucket(text: str) -> tuple[float, float]:
    """The start and end, as epoch seconds, of the bucket a crosshair text names:
    "YYYY-MM-DD HH:MM:SS – HH:MM:SS · …" in local time."""
    m = re.match(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) – (\d\d:\d\d:\d\d)", text)
    assert m, text
    day, t0, t1 = m.groups()
    start = time.mktime(time.strptime(f"{day} {t0}", "%Y-%m-%d %H:%M:%S"))
    end = time.mktime(time.strptime(f"{day} {t1}", "%Y-%m-%d %H:%M:%S"))
    return start, end if end >= start else end + DAY


def test_the_24h_range_shows_the_restored_day_and_its_short_peak(qtbot: Any, window: Any,
                                                                  restored: dict) -> None:
    d = window.details
    _click(qtbot, window, 86400, seconds=86400)
    data = d.loaded()
    assert data.until - data.since == pytest.approx(DAY)
    x0, x1 = d.view_range()
    assert x1 - x0 == pytest.approx(DAY)
    xs, _ = d.charts.curves()["rx"].getData()
    # the restored day is there from its first hour (not only the agent's own minutes)
    assert xs[0] < restored["now"] - DAY + 3600 and len(xs) > 1000
    # coarse rows: the band's top keeps the 3 s peak that the mean smooths away
    assert data.coarse and d.charts.rate_edges()["rx_max"].isVisible()
    edge_x, edge_y = d.charts.rate_edges()["rx_max"].getData()
    i = int(np.nanargmax(edge_y))
    assert edge_y[i] == pytest.approx(PEAK_RX)
    assert abs(edge_x[i] - restored["peak"]) < 2 * data.step_s
    assert d.charts.curves()["rx"].getData()[1][i] < PEAK_RX * 0.9  # the mean alone would hide it
    assert np.nanmax(d.charts.curves()["rtt_max"].getData()[1]) == pytest.approx(PEAK_RTT * 1.1)
    # and the y axis makes room for it
    assert d.charts.bandwidth_plot.getPlotItem().getViewBox().viewRange()[1][1] >= PEAK_RX


def test_range_buttons_change_the_fetched_span(qtbot: Any, window: Any) -> None:
    d = window.details
    _click(qtbot, window, 7 * 86400, seconds=7 * DAY, points=2000)
    assert d.loaded().until - d.loaded().since == pytest.approx(7 * DAY)
    assert d.view_range()[1] - d.view_range()[0] == pytest.approx(7 * DAY)
    _click(qtbot, window, 30 * 86400, seconds=30 * DAY)
    assert d.loaded().until - d.loaded().since == pytest.approx(30 * DAY)
    # back to an hour: full resolution again, and live samples are appended to it
    _click(qtbot, window, 3600, seconds=3600, points=3600)
    assert not d.loaded().coarse and d.loaded().live
    n = d.point_count()
    qtbot.waitUntil(lambda: d.point_count() > n, timeout=10_000)


def test_zoom_with_the_wheel_fetches_finer_rows(qtbot: Any, window: Any,
                                                restored: dict) -> None:
    d = window.details
    _click(qtbot, window, 86400, seconds=86400)
    coarse_step = d.loaded().step_s
    assert coarse_step is not None and coarse_step >= 40
    plot = d.charts.bandwidth_plot
    at = _pixel(window, restored["peak"])
    wheel = QWheelEvent(at, plot.viewport().mapToGlobal(at), QPoint(0, 0), QPoint(0, 1200),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(plot.viewport(), wheel)
    x0, x1 = d.view_range()
    assert x1 - x0 < DAY / 10 and x0 < restored["peak"] < x1
    assert not d.following()
    # both charts moved (linked x)
    lat = d.charts.latency_plot.getPlotItem().getViewBox()
    assert lat.viewRange()[0] == pytest.approx([x0, x1])
    qtbot.waitUntil(lambda: "since" in (d.loaded().query or {}), timeout=10_000)
    data = d.loaded()
    assert data.since == pytest.approx(x0 - (x1 - x0) / 2)
    assert data.until == pytest.approx(x1 + (x1 - x0) / 2)
    assert data.step_s is not None and data.step_s < coarse_step  # the 10 s tier
    # a range button returns to now
    _click(qtbot, window, 86400, seconds=86400)
    assert d.following() and d.view_range()[1] == pytest.approx(d.loaded().until)


def test_pan_with_the_mouse_fetches_what_it_reaches(qtbot: Any, window: Any) -> None:
    d = window.details
    _click(qtbot, window, 3600, seconds=3600)
    since = d.loaded().since
    plot = d.charts.bandwidth_plot
    vp = plot.viewport()
    start = QPointF(vp.width() * 0.3, vp.height() / 2)
    buttons = Qt.MouseButton.LeftButton

    def send(kind: QEvent.Type, pos: QPointF, held: Any) -> None:
        QApplication.sendEvent(vp, QMouseEvent(kind, pos, vp.mapToGlobal(pos), buttons, held,
                                               Qt.KeyboardModifier.NoModifier))

    # one move: pyqtgraph's scene drops moves that come less than 10 ms apart
    send(QEvent.Type.MouseButtonPress, start, buttons)
    send(QEvent.Type.MouseMove, start + QPointF(400, 0), buttons)
    send(QEvent.Type.MouseButtonRelease, start + QPointF(400, 0), Qt.MouseButton.NoButton)
    x0, x1 = d.view_range()
    assert x0 < since and x1 - x0 == pytest.approx(3600, rel=0.01)  # dragged back in time
    qtbot.waitUntil(lambda: "since" in (d.loaded().query or {}), timeout=10_000)
    assert d.loaded().since <= x0 and d.loaded().until >= x1
    d.flush()
    assert d.charts.curves()["rx"].getData()[0][0] < since  # older rows are drawn


def test_crosshair_reads_the_values_under_the_mouse(qtbot: Any, window: Any,
                                                   restored: dict) -> None:
    d = window.details
    d.show_around(restored["peak"], 600)
    qtbot.waitUntil(lambda: "since" in (d.loaded().query or {}), timeout=10_000)
    d.flush()
    vp = d.charts.bandwidth_plot.viewport()
    at = _pixel(window, restored["peak"] + 1)
    QApplication.sendEvent(vp, QMouseEvent(QEvent.Type.MouseMove, at, vp.mapToGlobal(at),
                                           Qt.MouseButton.NoButton, Qt.MouseButton.NoButton,
                                           Qt.KeyboardModifier.NoModifier))
    text = d.charts.crosshair.text()
    # it names the bucket under the mouse (the peak's second may sit in another minute)
    start, end = _bucket(text)
    assert start - 1 <= restored["peak"] + 1 <= end + 1
    assert "max 6.0 MB/s" in text and "rx " in text and "tx " in text
    assert "198 ms" in text  # the RTT's max in that 10 s bucket
    assert "saturated at times" in text
    # a quiet stretch reads quiet
    at = _pixel(window, restored["peak"] - 200)
    QApplication.sendEvent(vp, QMouseEvent(QEvent.Type.MouseMove, at, vp.mapToGlobal(at),
                                           Qt.MouseButton.NoButton, Qt.MouseButton.NoButton,
                                           Qt.KeyboardModifier.NoModifier))
    assert "rx 20.0 kB/s (max 20.0 kB/s)" in d.charts.crosshair.text()
    assert "saturated" not in d.charts.crosshair.text()


def test_show_around_centres_on_t_and_fetches_it(qtbot: Any, window: Any,
                                                 restored: dict) -> None:
    d = window.details
    t = restored["peak"]
    d.show_around(t, 900)
    x0, x1 = d.view_range()
    assert (x0 + x1) / 2 == pytest.approx(t) and x1 - x0 == pytest.approx(900)
    qtbot.waitUntil(lambda: "since" in (d.loaded().query or {}), timeout=10_000)
    d.flush()
    assert d.loaded().since <= x0 and d.loaded().until >= x1
    assert d.view_range() == pytest.approx((x0, x1))  # the answer does not move the view
    xs, ys = d.charts.rate_edges()["rx_max"].getData()
    assert np.nanmax(ys) == pytest.approx(PEAK_RX)
    assert x0 < xs[int(np.nanargmax(ys))] < x1
    # the default span
    d.show_around(t)
    x0, x1 = d.view_range()
    assert (x0 + x1) / 2 == pytest.approx(t) and x1 - x0 == pytest.approx(600)
