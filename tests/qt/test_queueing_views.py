"""Queueing delay on real widgets (offscreen): the link chart's baseline line and numbers,
the topology tooltip, the tray menu line, and the notification as the desktop's
notification daemon receives it (a scripted org.freedesktop.Notifications on a private
bus, as in test_notify.py)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyqtgraph")
pytest.importorskip("pytestqt")

from PySide6.QtGui import QColor

from exotray.ui.link.view import LinkDetails
from exotray.ui.style import theme
from exotray.ui.topology.view import TopologyView
from exotray.ui.tray import summary
from exotray.ui.tray.icon import Tray
from exotray.ui.tray.notify import Notifier

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "desktop"))

from harness import FakeNotifications, PrivateBus

FIXTURES = Path(__file__).parent / "fixtures"
SATURATED = "0386def512a998f6"  # studio-1 -> studio-2 over xt1a in cluster.json


@pytest.fixture
def queued_cluster() -> dict[str, Any]:
    """The recorded cluster, its saturated link now carrying a baseline and a queue."""
    c = json.loads((FIXTURES / "cluster.json").read_text())
    for node in c["nodes"]:
        for lk in node["links"]:
            lk.setdefault("rtt_baseline_ms", 0.06)
            lk.setdefault("queue_delay_ms", 0.01)
            if lk["id"] == SATURATED:
                lk.update(rtt_ms=171.2, rtt_baseline_ms=0.06, queue_delay_ms=170.4,
                          capacity_bytes_per_s=None, utilization=None)
    return c


def _history(n: int = 60) -> dict[str, Any]:
    t0 = 1_780_000_000.0
    t = [t0 + i for i in range(n)]
    loaded = [i >= n // 2 for i in range(n)]  # idle, then a queue of 170 ms
    return {
        "link": SATURATED, "interval_s": 1.0, "t": t,
        "rtt_ms": [170.5 if q else 0.07 for q in loaded],
        "rtt_min_ms": [120.0 if q else 0.05 for q in loaded],
        "rtt_max_ms": [200.0 if q else 0.1 for q in loaded],
        "rx_bytes_per_s": [1e5] * n, "tx_bytes_per_s": [6.2e6 if q else 1e3 for q in loaded],
        "utilization": [None] * n, "state": ["saturated" if q else "up" for q in loaded],
        "rtt_baseline_ms": [0.06] * n,
        "queue_delay_ms": [170.4 if q else 0.01 for q in loaded],
    }


def test_link_chart_draws_the_baseline_and_the_numbers_name_the_queue(qtbot, queued_cluster):
    link = next(lk for lk in queued_cluster["nodes"][0]["links"] if lk["id"] == SATURATED)
    w = LinkDetails()
    qtbot.addWidget(w)
    w.resize(1000, 520)
    w.show()
    qtbot.waitExposed(w)
    w.set_link(link, local_name="studio-1")
    hist = _history()
    w.set_history(hist)
    w.flush()
    xs, ys = w.charts.curves()["rtt_baseline"].getData()
    assert np.allclose(xs, hist["t"]) and np.allclose(ys, 0.06)
    assert "idle baseline" in w.charts.latency_plot.getPlotItem().titleLabel.text
    nums = w.numbers()
    assert nums["rtt_baseline_ms"] == "0.06 ms" and nums["queue_delay_ms"] == "+170 ms"
    # Drawn: the baseline's colour is on screen, along the bottom of the latency chart.
    # (Zoom to the idle minute's scale so the 0.06 ms line stands off the axis.)
    w.charts.latency_plot.getPlotItem().setYRange(0, 0.12, padding=0)
    img = w.charts.latency_plot.grab().toImage()
    want = QColor(theme.RTT_BASELINE)
    hits = sum(1 for x in range(0, img.width(), 2) for y in range(0, img.height(), 2)
               if _near(img.pixelColor(x, y), want))
    assert hits > 50, hits
    # A live sample from the snapshot keeps the line going.
    w.append({**{k: v[-1] for k, v in hist.items() if isinstance(v, list)},
              "t": hist["t"][-1] + 1, "rtt_baseline_ms": 0.05})
    w.flush()
    assert w.charts.curves()["rtt_baseline"].getData()[1][-1] == 0.05
    # Unknown stays unknown.
    w.set_link({**link, "queue_delay_ms": None, "rtt_baseline_ms": None})
    assert w.numbers()["queue_delay_ms"] == "–" and w.numbers()["rtt_baseline_ms"] == "–"


def _near(c: QColor, want: QColor, tol: int = 40) -> bool:
    return (abs(c.red() - want.red()) + abs(c.green() - want.green())
            + abs(c.blue() - want.blue())) < tol


def test_topology_tooltip_names_the_queue_when_it_matters(qtbot, queued_cluster):
    v = TopologyView()
    qtbot.addWidget(v)
    v.resize(1000, 650)
    v.show()
    qtbot.waitExposed(v)
    v.set_cluster(queued_cluster)
    tip = v.edge_tooltip(SATURATED)
    assert "· +170 ms queueing" in tip  # in the head, next to the state
    assert "+170 ms over a 0.06 ms idle RTT" in tip
    calm = copy.deepcopy(queued_cluster)
    for node in calm["nodes"]:
        for lk in node["links"]:
            if lk["id"] == SATURATED:
                lk.update(queue_delay_ms=0.3, state="up")
    v.set_cluster(calm)
    tip = v.edge_tooltip(SATURATED)
    assert "queueing</" not in tip and "· +" not in tip  # not worth naming in the head
    assert "+0.30 ms over a 0.06 ms idle RTT" in tip
    for node in calm["nodes"]:
        for lk in node["links"]:
            if lk["id"] == SATURATED:
                lk.update(queue_delay_ms=None)
    v.set_cluster(calm)
    assert "unknown (idle RTT 0.06 ms)" in v.edge_tooltip(SATURATED)


def test_tray_menu_line_names_the_queue(qtbot, queued_cluster):
    tray = Tray()
    tray.update(queued_cluster, "running")
    tray.menu.aboutToShow.emit()
    line = next(t for t in tray.menu_texts() if t.startswith("studio-2"))
    assert line == "studio-2 · Virtual · 171 ms · 6.3 MB/s · +170 ms queueing · saturated"


def test_the_notification_daemon_gets_the_queueing_sentence(qapp, tmp_path):
    reason = FakeNotifications.why_not_available()
    if reason:
        pytest.skip(reason)
    from PySide6.QtDBus import QDBusConnection

    ev = {"type": "link_saturated", "node": "studio-1", "peer_name": "studio-2",
          "local_label": "Ethernet", "local_interface": "en0", "link_id": "L1",
          "cause": "queueing", "queue_delay_ms": 170.4, "rtt_baseline_ms": 0.06,
          "utilization": None, "rx_bytes_per_s": 1e5, "tx_bytes_per_s": 6.2e6,
          "capacity_bytes_per_s": None}
    name = f"exotray-test-q-{tmp_path.name}"
    with PrivateBus(tmp_path) as address, FakeNotifications(address, "dunst") as fake:
        conn = QDBusConnection.connectToBus(address, name)
        try:
            n = Notifier(None, connection=conn)
            assert n.backend == "dbus"
            title, body = summary.notification(ev, "studio-1")
            n.notify(title, body, key="L1")
            sent = fake.wait_for(lambda: fake.notifies()[:1] or None, "1 Notify call")
            n.close()
        finally:
            QDBusConnection.disconnectFromBus(name)
    assert sent[0]["summary"] == "Link saturated: studio-1 ⇄ studio-2"
    assert sent[0]["body"] == "+170 ms queueing delay at 6.2 MB/s (capacity unknown) on Ethernet"
