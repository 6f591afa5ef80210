"""LinkDetails with the recorded /v1/history fixture: real widgets, offscreen."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyqtgraph")
pytest.importorskip("pytestqt")

import pyqtgraph as pg

from exotray.ui.link.view import MAX_POINTS, LinkDetails
from exotray.ui.style import theme

FIXTURES = Path(__file__).parent / "fixtures"
SHOTS = Path("/tmp/xt-shots")


@pytest.fixture
def history() -> dict[str, Any]:
    return json.loads((FIXTURES / "history.json").read_text())


@pytest.fixture
def link(history: dict[str, Any]) -> dict[str, Any]:
    cluster = json.loads((FIXTURES / "cluster.json").read_text())
    return next(lk for n in cluster["nodes"] for lk in n["links"] if lk["id"] == history["link"])


@pytest.fixture
def details(qtbot: Any, link: dict, history: dict) -> LinkDetails:
    w = LinkDetails()
    qtbot.addWidget(w)
    w.resize(1000, 520)
    w.show()
    qtbot.waitExposed(w)
    w.set_link(link, local_name="studio-1")
    w.set_history(history)
    w.flush()
    return w


def test_curves_have_the_history(details: LinkDetails, history: dict) -> None:
    n = len(history["t"])
    assert n == 32
    for name, curve in details.charts.curves().items():
        xs, ys = curve.getData()
        assert len(xs) == n, name
    xs, ys = details.charts.curves()["rtt"].getData()
    assert np.allclose(xs, history["t"])
    assert np.allclose(ys, history["rtt_ms"])
    assert np.allclose(details.charts.curves()["tx"].getData()[1], history["tx_bytes_per_s"])


def test_band_spans_min_to_max(details: LinkDetails, history: dict) -> None:
    band = details.charts.band()
    assert isinstance(band, pg.FillBetweenItem)
    assert band.scene() is details.charts.latency_plot.scene()
    assert not band.path().isEmpty()
    rect = band.path().boundingRect()
    assert rect.top() == pytest.approx(min(history["rtt_min_ms"]), rel=1e-6)
    assert rect.bottom() == pytest.approx(max(history["rtt_max_ms"]), rel=1e-6)


def test_capacity_and_threshold_lines(details: LinkDetails, link: dict) -> None:
    cap = link["capacity_bytes_per_s"]
    assert details.charts.capacity_line().isVisible()
    assert details.charts.capacity_line().value() == pytest.approx(cap)
    assert details.charts.threshold_line().value() == pytest.approx(0.9 * cap)
    assert details.charts.capacity_line().angle == 0
    assert "50 Mbit/s" in details.charts.capacity_line().label.toPlainText()
    details.set_threshold(0.8)
    assert details.charts.threshold_line().value() == pytest.approx(0.8 * cap)


def test_lines_hidden_when_capacity_unknown(details: LinkDetails, link: dict) -> None:
    details.set_link(dict(link, capacity_bytes_per_s=None, capacity_source="unknown",
                          utilization=None))
    assert not details.charts.capacity_line().isVisible()
    assert not details.charts.threshold_line().isVisible()
    assert details.numbers()["capacity"] == "unknown"
    assert details.numbers()["utilization"] == "–"


def test_range_switch_changes_visible_x_range(qtbot: Any, details: LinkDetails,
                                              history: dict) -> None:
    end = history["t"][-1]
    vb = details.charts.latency_plot.getPlotItem().getViewBox()
    assert details.range_seconds() == 60  # 31 s of history: the range that fits it
    (x0, x1), _ = vb.viewRange()
    assert x1 == pytest.approx(end) and x1 - x0 == pytest.approx(60)

    with qtbot.waitSignal(details.rangeChanged, timeout=1000) as blocker:
        qtbot.mouseClick(details.range_buttons()[600], pg.QtCore.Qt.MouseButton.LeftButton)
    assert blocker.args == [600]
    qtbot.waitUntil(lambda: vb.viewRange()[0][1] - vb.viewRange()[0][0] == pytest.approx(600),
                    timeout=1000)
    assert details.range_buttons()[600].isChecked()
    # the bandwidth chart follows (linked x)
    bx0, bx1 = details.charts.bandwidth_plot.getPlotItem().getViewBox().viewRange()[0]
    assert bx1 - bx0 == pytest.approx(600)

    details.set_range(3600)
    details.flush()
    (x0, x1), _ = vb.viewRange()
    assert x1 - x0 == pytest.approx(3600)
    with pytest.raises(ValueError):
        details.set_range(5)


def test_append_adds_a_point_and_caps(qtbot: Any, details: LinkDetails, history: dict) -> None:
    t = history["t"][-1] + 1.0
    row = {c: history[c][-1] for c in history if isinstance(history[c], list)}
    row.update(t=t, rtt_ms=42.0)
    details.append(row)
    qtbot.waitUntil(lambda: len(details.charts.curves()["rtt"].getData()[0]) == 33, timeout=1000)
    assert details.charts.curves()["rtt"].getData()[1][-1] == 42.0
    details.append(dict(row, rtt_ms=1.0))  # not newer: dropped
    details.flush()
    assert details.point_count() == 33
    # the buffer holds one hour at most
    for i in range(MAX_POINTS + 10):
        details.append(dict(row, t=t + 1 + i))
    details.flush()
    assert details.point_count() == MAX_POINTS
    assert len(details.charts.curves()["rx"].getData()[0]) == MAX_POINTS


def test_redraw_is_timer_driven_and_coalesced(qtbot: Any, details: LinkDetails,
                                              history: dict) -> None:
    qtbot.waitUntil(lambda: not details.redraw_timer().isActive(), timeout=1000)
    before = details.redraw_count
    row = {c: history[c][-1] for c in history if isinstance(history[c], list)}
    for i in range(20):
        details.append(dict(row, t=history["t"][-1] + 1 + i))
    assert details.redraw_count == before  # nothing drawn per sample
    assert details.redraw_timer().isActive()
    qtbot.waitUntil(lambda: details.point_count() == 52
                    and len(details.charts.curves()["rtt"].getData()[0]) == 52, timeout=1000)
    qtbot.waitUntil(lambda: not details.redraw_timer().isActive(), timeout=1000)
    assert details.redraw_count == before + 1


def test_numbers_panel(details: LinkDetails) -> None:
    n = details.numbers()
    assert n["title"] == "studio-1 → studio-2"
    assert n["state"] == "saturated"
    assert n["rtt_ms"] == "159 ms"
    assert n["rtt_min_ms"] == "60.0 ms"
    assert n["rtt_max_ms"] == "200 ms"
    assert n["rtt_p90_ms"] == "197 ms"
    assert n["jitter_ms"] == "6.4 ms"
    assert n["loss"] == "0 %"
    assert n["rx_bytes_per_s"] == "141 kB/s"
    assert n["tx_bytes_per_s"] == "6.3 MB/s"
    assert n["utilization"] == "101 %"
    assert n["utilization_detail"] == "tx 6.3 MB/s of 6.25 MB/s"
    assert n["capacity"] == "6.25 MB/s"
    assert n["capacity_detail"] == "(50 Mbit/s) · your setting"
    assert n["interface"] == "via Virtual (xt1a)"
    assert "xt1a" in n["note"] and "interface" in n["note"]


def test_no_link(qtbot: Any) -> None:
    w = LinkDetails()
    qtbot.addWidget(w)
    w.set_link(None)
    w.set_history({"t": [], "rtt_ms": []})
    w.flush()
    assert w.numbers()["title"] == "No link selected"
    assert all(len(c.getData()[0] if c.getData()[0] is not None else []) == 0
               for c in w.charts.curves().values())
    assert not w.charts.capacity_line().isVisible()


def test_gaps_stay_gaps(details: LinkDetails, history: dict) -> None:
    h = dict(history)
    h["rtt_ms"] = list(history["rtt_ms"])
    h["rtt_min_ms"] = list(history["rtt_min_ms"])
    h["rtt_ms"][5] = None
    h["rtt_min_ms"][6] = None
    details.set_history(h)
    details.flush()
    ys = details.charts.curves()["rtt"].getData()[1]
    assert np.isnan(ys[5])
    assert np.isnan(details.charts.curves()["rtt_max"].getData()[1][6])  # band gap on both sides


def test_axis_is_real_time(details: LinkDetails) -> None:
    for plot in (details.charts.latency_plot, details.charts.bandwidth_plot):
        assert isinstance(plot.getPlotItem().getAxis("bottom"), pg.DateAxisItem)
    assert details.charts.curves()["rtt"].opts["pen"].color() == pg.mkColor(theme.RTT_MEDIAN)


def test_screenshot(qtbot: Any, details: LinkDetails) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    details.set_range(60)
    details.flush()
    assert details.grab().save(str(SHOTS / "link_details.png"))


def _cut_labels(w: LinkDetails) -> list[str]:
    """Texts of visible panel labels that do not fit in the space they were given."""
    cut = []
    for label in w.number_labels():
        if not label.isVisible() or not label.text():
            continue
        room = label.contentsRect()
        if label.wordWrap():
            if room.height() + 1 < label.heightForWidth(label.width()):
                cut.append(label.text())
        elif room.width() < label.fontMetrics().horizontalAdvance(label.text()):
            cut.append(label.text())
    return cut


def test_capacity_is_rounded_and_never_cut(qtbot: Any, details: LinkDetails,
                                          link: dict) -> None:
    """Issue 17.13: a measured 6.6811 Gbit/s read "6.6811 Gbit/s (measu"."""
    details.set_link(dict(link, capacity_bytes_per_s=835_137_500.0,
                          capacity_source="measured", utilization=0.0076), "studio-1")
    qtbot.wait(20)
    n = details.numbers()
    assert n["capacity"] == "835 MB/s"
    assert n["capacity_detail"] == "(6.68 Gbit/s) · measured"
    assert "6.6811" not in " ".join(n.values())
    assert _cut_labels(details) == []
    assert "835 MB/s (6.68 Gbit/s)" in details.charts.capacity_line().label.toPlainText()
    # the narrowest the window lets the details be
    details.resize(details.minimumSizeHint().width(), 520)
    qtbot.wait(20)
    assert _cut_labels(details) == []


def test_one_unit_system_per_sentence(details: LinkDetails, link: dict) -> None:
    """Issue 17.13: "4.9 MB/s of 40 Mbit/s" mixed units in one sentence."""
    details.set_link(dict(link, rx_bytes_per_s=4.9e6, tx_bytes_per_s=1e5,
                          capacity_bytes_per_s=5e6, utilization=0.98))
    n = details.numbers()
    assert n["utilization_detail"] == "rx 4.9 MB/s of 5 MB/s"
    assert n["capacity"] == "5 MB/s"
    assert n["capacity_detail"].startswith("(40 Mbit/s)")
    for key in ("utilization_detail", "capacity", "utilization"):
        assert "bit/s" not in n[key], key


def test_result_stays_until_replaced_or_the_link_changes(details: LinkDetails,
                                                         link: dict) -> None:
    """Issue 17.10: a result line in the details survives the live updates."""
    assert details.numbers()["result"] == ""
    details.set_result("Exported 32 samples to /tmp/x.csv")
    for _ in range(3):  # the window passes the same link once a second
        details.set_link(dict(link, rtt_ms=1.0), "studio-1")
    assert details.numbers()["result"] == "Exported 32 samples to /tmp/x.csv"
    details.set_result("Measured 6.25 MB/s")
    assert details.numbers()["result"] == "Measured 6.25 MB/s"
    details.set_link(dict(link, id="another"), "studio-1")
    assert details.numbers()["result"] == ""


def _history_of(history: dict, seconds: float) -> dict:
    n = 40
    t0 = history["t"][-1] - seconds
    return {"t": [t0 + seconds * i / (n - 1) for i in range(n)], "rtt_ms": [1.0] * n}


@pytest.mark.parametrize(("seconds", "expected"), [
    (5, 60), (31, 60), (64, 60), (300, 600), (640, 600), (1200, 3600), (7200, 3600)])
def test_initial_range_fits_the_history(details: LinkDetails, history: dict,
                                        seconds: float, expected: int) -> None:
    """Issue 17.17: the charts opened on 10 min with a new link's data at the right edge."""
    details.set_history(_history_of(history, seconds))
    details.flush()
    assert details.range_seconds() == expected
    assert details.range_buttons()[expected].isChecked()


def test_a_new_links_minute_fills_the_chart(details: LinkDetails, history: dict) -> None:
    (x0, x1), _ = details.charts.latency_plot.getPlotItem().getViewBox().viewRange()
    span = history["t"][-1] - history["t"][0]
    assert span / (x1 - x0) > 0.5  # 31 s of data in a 1 min chart, not 10 min


def test_a_bridged_link_names_its_cable_and_whose_traffic(details: LinkDetails,
                                                          link: dict) -> None:
    ifaces = {"bridge0": {"name": "bridge0", "label": "Thunderbolt Bridge",
                          "kind": "thunderbolt", "members": ["en2", "en3"]},
              "en3": {"name": "en3", "label": "Thunderbolt 2", "kind": "thunderbolt",
                      "speed_mbit": 40000, "max_speed_mbit": 80000}}
    bridged = {**link, "local_interface": "bridge0", "local_label": "Thunderbolt Bridge",
               "member_interface": "en3", "capacity_source": "kind"}
    details.set_link(bridged, "studio-1", ifaces)
    assert details.numbers()["interface"] == \
        "via Thunderbolt Bridge (bridge0) via Thunderbolt 2 (en3) · 40 Gb/s of 80 Gb/s"
    assert details.numbers()["note"].startswith("Traffic shown is all traffic of en3, the cable")
    assert "negotiated Thunderbolt rate" in details.numbers()["capacity_detail"]
    # the cable not known: the bridge's totals, with no utilization (as the agent sends)
    details.set_link({**bridged, "member_interface": None, "utilization": None,
                      "capacity_bytes_per_s": None, "capacity_source": "unknown"},
                     "studio-1", ifaces)
    assert "total of bridge0" in details.numbers()["note"]


def test_long_ranges_ask_the_agent_and_coarse_rows_draw_min_max_bands(
        qtbot: Any, details: LinkDetails, history: dict) -> None:
    """Issue 15: 24 h · 7 d · 30 d are fetched (historyWanted), and a coarse tier's answer
    draws each rate's min–max as a band whose top keeps a short peak."""
    assert list(details.range_buttons()) == [60, 600, 3600, 86400, 604800, 2592000]
    with qtbot.waitSignal(details.historyWanted, timeout=1000) as asked:
        qtbot.mouseClick(details.range_buttons()[86400], pg.QtCore.Qt.MouseButton.LeftButton)
    assert asked.args == [{"seconds": 86400.0, "points": 2000}]
    assert not details.charts.rate_edges()["rx_max"].isVisible()  # full-resolution rows: no band
    end = history["t"][-1]
    n = 1440
    t = [end - 86400 + 60 * i for i in range(n)]
    rx_max = [1e4] * n
    rx_max[700] = 6e6  # a 3 s burst inside one minute
    details.set_history({"since": end - 86400, "until": end, "tier": "1m", "step_s": 60.0,
                         "interval_s": 1.0, "t": t, "rx_bytes_per_s": [1e4] * n,
                         "rx_bytes_per_s_min": [5e3] * n, "rx_bytes_per_s_max": rx_max})
    details.flush()
    assert details.range_seconds() == 86400 and details.following()
    assert details.view_range() == pytest.approx((end - 86400, end))
    edge = details.charts.rate_edges()["rx_max"]
    assert edge.isVisible() and max(edge.getData()[1]) == 6e6
    assert details.charts.bandwidth_plot.getPlotItem().getViewBox().viewRange()[1][1] >= 6e6
    # live samples do not land on minute rows; the short ranges fetch their hour again
    details.append({"t": end + 1, "rx_bytes_per_s": 1.0})
    assert details.point_count() == n
    # ...but a day that follows now is asked again once its newest minute is due
    with qtbot.waitSignal(details.historyWanted, timeout=1000) as asked:
        details.append({"t": end + 61, "rx_bytes_per_s": 1.0})
    assert asked.args == [{"seconds": 86400.0, "points": 2000}]
    with qtbot.waitSignal(details.historyWanted, timeout=1000) as asked:
        details.set_range(600)
    assert asked.args == [{"seconds": 3600, "points": 3600}]


def test_show_around_asks_for_what_it_shows(qtbot: Any, details: LinkDetails,
                                            history: dict) -> None:
    t = history["t"][0] - 7200  # two hours before what is loaded
    with qtbot.waitSignal(details.historyWanted, timeout=1000) as asked:
        details.show_around(t, 300)
    assert details.view_range() == pytest.approx((t - 150, t + 150))
    assert asked.args == [{"since": t - 300, "until": t + 300, "points": 2000}]
    assert not details.following()
    # the crosshair there says there is no data (yet)
    assert details.charts.crosshair.show_at(t).endswith("no data")


def test_release_unlinks_the_charts_before_they_go(qtbot: Any, details: LinkDetails,
                                                   history: dict) -> None:
    """Before the window goes (the app quits), the time-linked charts are unlinked and
    the redraw timer stopped: range changes queued between linked views, handled during
    teardown, crashed pyqtgraph once in CI."""
    lat, bw = (p.getPlotItem().getViewBox() for p in details.charts.plots())
    t0, t1 = history["t"][0], history["t"][-1]
    lat.setXRange(t0, t0 + 10, padding=0)
    assert bw.viewRange()[0] == pytest.approx([t0, t0 + 10], abs=0.5)  # linked
    details.release()
    assert not details._timer.isActive()
    details.set_history(history)  # a late answer after the release starts nothing
    assert not details._timer.isActive() and not details._settle.isActive()
    lat.setXRange(t0 + 5, t1, padding=0)
    qtbot.wait(10)
    assert bw.viewRange()[0] == pytest.approx([t0, t0 + 10], abs=0.5)  # no longer


def test_a_capacity_test_is_marked_and_does_not_rescale_the_traffic_axis(
        qtbot: Any, details: LinkDetails, history: dict, link: dict) -> None:
    """Issue 34 point 8: a capacity test's burst (here 1.4 GB/s for 4 s, against a
    50 Mbit/s link) is shaded as "capacity test", and the traffic axis stays fitted to
    the link's own traffic and capacity."""
    from exotray.core.events import iso

    t = history["t"]
    burst = dict(history, tx_bytes_per_s=[
        1.4e9 if t[10] <= x <= t[14] else v for x, v in zip(t, history["tx_bytes_per_s"],
                                                            strict=True)])
    details.set_history(burst)
    details.flush()
    bw = details.charts.bandwidth_plot.getPlotItem()
    assert bw.getViewBox().viewRange()[1][1] > 1e9  # unmarked, the burst sets the axis
    details.set_tests([{"type": "capacity_test", "started_at": iso(t[10] - 0.5),
                        "at": iso(t[14] + 0.5), "seconds": 5.0, "link_id": link["id"]}])
    details.flush()
    (region,) = details.charts.test_regions()
    assert region.getRegion() == pytest.approx((t[10] - 0.5, t[14] + 0.5), abs=0.01)
    top = bw.getViewBox().viewRange()[1][1]
    own = max(v for x, v in zip(t, history["tx_bytes_per_s"], strict=True)
              if not t[10] <= x <= t[14])
    assert top == pytest.approx(max(own, link["capacity_bytes_per_s"]) * 1.12, rel=0.01)
    details.set_tests([])
    details.flush()
    assert details.charts.test_regions() == []
