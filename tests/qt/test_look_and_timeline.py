"""Issue 15, point 3: the events timeline (from a real agent's /v1/events; a click
selects the event's link), the units switch (every rate label), and the light and dark
palettes (a real window rendered offscreen in each, following the system's scheme).
Real widgets offscreen; the one stand-in is the desktop telling Qt its colour scheme."""

from __future__ import annotations

import gc
import tomllib
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import AgentProc, free_port
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QGraphicsObject

from exotray.core import fmt
from exotray.ui.app import App
from exotray.ui.client.poll import AgentClient
from exotray.ui.link.model import COLUMNS
from exotray.ui.link.view import LinkDetails
from exotray.ui.style import look, theme
from exotray.ui.tray import summary
from exotray.ui.tray.icon import Tray
from exotray.ui.window.dashboard import MainWindow
from exotray.ui.window.timeline import DEFAULT_SPAN_S, EVENT, event_time

SAT = "0386def512a998f6"  # studio-1 -> studio-2 over xt1a, saturated (cluster.json)
NOW = 1_796_300_000.0  # the injected clock: 2026-12-03


@pytest.fixture(autouse=True)
def plain_look(qapp: Any) -> Iterator[look.Look]:
    """Each test starts and ends light, in bytes/s, following the (silent) system."""
    lk = look.instance()
    lk.set_scheme("light")
    lk.set_units("bytes")
    yield lk
    QGuiApplication.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Unknown)
    lk.set_scheme(None)
    lk.set_units("bytes")
    lk.set_scheme("light")
    lk.set_scheme(None)


class HistoryClient:
    """The window's history calls, answered at once (the fixtures' recorded hour)."""

    def __init__(self, history: dict[str, Any]) -> None:
        self._history = history

    def history(self, link_id: str, seconds: int, done: Any) -> int:
        done(dict(self._history, link=link_id), None)
        return 1

    def history_query(self, link_id: str, query: dict, done: Any) -> int:
        return self.history(link_id, int(query.get("seconds", 0)), done)


@pytest.fixture
def window(qtbot: Any, cluster: dict, history: dict) -> MainWindow:
    w = MainWindow(HistoryClient(history), clock=lambda: NOW)  # type: ignore[arg-type]
    qtbot.addWidget(w)
    w.resize(1280, 820)
    w.show()
    qtbot.waitExposed(w)
    w.set_cluster(cluster)
    w.select_link(SAT)
    return w


# -- the events timeline ------------------------------------------------------------------

@pytest.fixture
def agents(tmp_path: Any) -> Iterator[tuple[AgentProc, AgentProc]]:
    """Two agents on loopback (mDNS off); a's loopback capacity is tiny, so its probes
    alone saturate its link to b within a second: real link_saturated events."""
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "studio-1", pa, [pb], "--capacity", "lo=0.001",
                  "--sustain", "0.5", "--interval", "0.25")
    b = AgentProc(tmp_path, "studio-2", pb, [pa], "--interval", "0.25")
    try:
        a.wait_ready(30)  # a loaded CI machine can take this long to start Python
        b.wait_ready(30)
        yield a, b
    finally:
        a.close()
        b.close()


def test_timeline_shows_a_real_agents_events_and_a_click_selects_the_link(qtbot, agents):
    a, _ = agents
    qtbot.waitUntil(lambda: any(e["type"] == "link_saturated"
                                for e in a.get("/v1/events")["events"]), timeout=15_000)
    client = AgentClient(a.port, a.state, interval=0.2)
    w = MainWindow(client)  # the real clock: the agent's events are from now
    qtbot.addWidget(w)
    client.clusterChanged.connect(w.set_cluster)
    client.start()
    try:
        w.resize(1280, 820)
        w.show()
        qtbot.waitExposed(w)
        qtbot.waitUntil(lambda: any("Link saturated" in r[1] for r in w.timeline.rows()),
                        timeout=10_000)
        since, until = w.timeline.span()
        assert until - since == DEFAULT_SPAN_S  # the charts show less: the default day
        rows = w.timeline.rows()
        # the peer's first up is "found", by its name (issue 34 point 11)
        assert any(r[1] == "Peer found: studio-2" for r in rows), rows
        row = next(i for i, r in enumerate(rows) if r[1].startswith("Link saturated: studio-1"))
        assert rows[row][2].startswith("Loopback at ")  # "Loopback at 20512 % (…)"
        index = w.timeline.index(row, 1)
        event = index.data(EVENT)
        assert w.link_id is None
        w.timeline.list.scrollTo(index)
        rect = w.timeline.list.visualRect(index)
        qtbot.mouseClick(w.timeline.list.viewport(), Qt.MouseButton.LeftButton,
                         pos=rect.center())
        assert w.link_id == event["link_id"]
        assert w.table.selected_link() == event["link_id"]
        assert w.topology.selected_link() == event["link_id"]
        assert not w.details.isHidden()
    finally:
        client.stop()


def test_a_window_its_stopped_client_held_is_freed_at_once_not_by_the_gc_mid_paint(
        qtbot, cluster, tmp_path):
    """The test above crashed (SIGSEGV in QPainter::restore under QGraphicsView::
    paintEvent) when pytest-qt painted its window after it returned: the stopped client
    kept the callbacks of its unanswered requests, which close over the window, so the
    window lived on in a cycle (window -> client -> callback -> window) that only the
    garbage collector broke, deleting the window's C++ object at an allocation inside
    the window's own event handling. Here the collector runs inside the chart's paint."""
    def shown_then_dropped() -> weakref.ref[MainWindow]:
        # (made with the collector off, like the window: all of the cycle is young, so
        # the first collection takes it)
        client = AgentClient(free_port(), tmp_path, interval=0.2)  # never started
        w = MainWindow(client)
        qtbot.addWidget(w)
        w.resize(1280, 820)
        w.show()
        qtbot.waitExposed(w)
        w.set_cluster(cluster)  # asks for the events
        w.show_link_at(SAT, NOW)  # asks for the link's history around NOW
        assert not w.details.isHidden()
        # the collector runs inside the chart's paint, where an allocation of
        # pyqtgraph's painting may start it
        w.details.charts.latency_plot.scene().addItem(_CollectsWhenPainted())
        client.stop()
        return weakref.ref(w)

    gc.collect()
    gc.disable()
    try:
        window = shown_then_dropped()
        alive = window() is not None
        if alive:  # (before the fix) paint its chart: SIGSEGV, the window deleted under it
            window().details.charts.latency_plot.grab()
    finally:
        gc.enable()
    assert not alive  # freed when its last reference went, not later by the collector


class _CollectsWhenPainted(QGraphicsObject):
    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, 4, 4)

    def paint(self, *_args: Any) -> None:
        gc.collect()


def test_timeline_says_a_saturation_was_not_notified(window):
    """Issue 34 point 10: the newest event is the saturation the map shows, said to be
    within the cooldown, not the previous "back to normal"."""
    base = {"link_id": SAT, "peer_name": "studio-2", "local_interface": "lo",
            "local_label": "Loopback", "utilization": 0.95}
    window.timeline.set_events([
        {**base, "seq": 1, "at": "2026-12-03T08:00:00Z", "type": "link_saturated",
         "notify": True},
        {**base, "seq": 2, "at": "2026-12-03T08:00:10Z", "type": "link_cleared",
         "utilization": 0.1, "notify": True},
        {**base, "seq": 3, "at": "2026-12-03T08:00:30Z", "type": "link_saturated",
         "notify": False},
    ], NOW - DEFAULT_SPAN_S, NOW)
    newest, cleared, first = window.timeline.rows()
    assert newest[1].startswith("Link saturated") and newest[2].endswith(
        "(not notified: within the cooldown)")
    assert "not notified" not in first[2] and "not notified" not in cleared[2]


def test_timeline_texts_are_plain_and_unknown_types_show(window, monkeypatch):
    shown: list[float] = []
    # LinkDetails.show_around comes with the charts' zoom (another branch): recorded here
    monkeypatch.setattr(LinkDetails, "show_around", lambda _self, t: shown.append(t),
                        raising=False)
    hostile = "<img src=/dev/zero> <b>x</b>"
    events = [
        {"seq": 1, "at": "2026-12-03T08:00:00Z", "type": "peer_down", "peer_name": hostile,
         "peer_id": "e407eae12b94"},
        {"seq": 2, "at": "2026-12-03T08:01:00Z", "type": "link_rerouted", "link_id": SAT,
         "note": hostile, "nested": {"ignored": True}},
        {"seq": 3, "at": "not a time", "type": "peer_up"},  # dropped, logged
    ]
    window.timeline.set_events(events, NOW - DEFAULT_SPAN_S, NOW)
    rows = window.timeline.rows()
    assert [r[1] for r in rows] == ["Link rerouted", f"Peer down: {hostile}"]
    assert rows[0][2] == f"link_id: {SAT}, note: {hostile}"
    tip = window.timeline.index(1, 1).data(Qt.ItemDataRole.ToolTipRole)
    assert "&lt;img" in tip and "<img" not in tip
    # the peer's event selects this node's link to that peer
    window.timeline.list.clicked.emit(window.timeline.index(1, 1))
    assert window.link_id == "8f432a8f84089cd4"
    assert window.table.selected_link() == "8f432a8f84089cd4"
    assert shown == [event_time(events[0])]  # the charts around the event
    # a live event joins in its place, once
    live = {"seq": 4, "at": "2026-12-03T08:02:00Z", "type": "link_cleared", "link_id": SAT,
            "peer_name": "studio-2"}
    window.timeline.add_events([live, live])
    rows = window.timeline.rows()
    assert len(rows) == 3 and rows[0][1] == "Link back to normal: studio-1 ⇄ studio-2"


# -- units ----------------------------------------------------------------------------------

def _labels(w: MainWindow, tray: Tray) -> dict[str, str]:
    r = w.table.link_ids().index(SAT)
    nums = w.details.numbers()
    axis = w.details.charts.bandwidth_plot.getPlotItem().getAxis("left")
    return {
        "badge": w.topology.badge_text(SAT),
        "tooltip": w.topology.edge_tooltip(SAT),
        "table rx": w.table.proxy.index(r, COLUMNS.index("Iface RX")).data(),
        "table capacity": w.table.proxy.index(r, COLUMNS.index("Capacity")).data(),
        "details tx": nums["tx_bytes_per_s"],
        "details utilization": nums["utilization_detail"],
        "capacity line": w.details.charts.capacity_line().label.format,
        "axis": axis.labelString(),
        "menu": next(t for t in tray.menu_texts() if t.startswith("studio-2")),
    }


def test_the_unit_switch_changes_every_label_at_once(qtbot, window, cluster, events):
    lk = look.instance()
    tray = Tray(window)  # lives as long as the window
    tray.update(cluster)
    tray.rebuild_menu()
    before = _labels(window, tray)
    assert before["badge"].startswith("6.3 MB/s · ")
    assert before["table rx"] == "141 kB/s" and before["table capacity"] == "6.25 MB/s"
    assert before["details tx"] == "6.3 MB/s"
    assert "B/s" in before["axis"] and "bit/s" not in before["axis"]
    with qtbot.waitSignal(lk.changed, timeout=1000):
        lk.set_units("bits")
    tray.rebuild_menu()  # as the menu is each time it opens
    after = _labels(window, tray)
    assert after["badge"].startswith("50.5 Mbit/s · ")
    assert after["table rx"] == "1.1 Mbit/s" and after["table capacity"] == "50 Mbit/s"
    assert after["details tx"] == "50.5 Mbit/s"
    assert after["details utilization"] == "tx 50.5 Mbit/s of 50 Mbit/s"
    assert after["capacity line"] == "capacity 50 Mbit/s (6.25 MB/s)"
    assert "Mbit/s" in after["menu"] and "bit/s" in after["axis"]
    assert "6.25 MB/s (50 Mbit/s)" in before["tooltip"]
    assert "50 Mbit/s (6.25 MB/s)" in after["tooltip"]
    for name, text in after.items():
        assert text != before[name], name
        rates = text.replace("(6.25 MB/s)", "")  # the other unit beside a capacity
        assert " MB/s" not in rates and "kB/s" not in rates, (name, text)
    _title, body = summary.notification(events[3], "studio-1")
    assert body == "Virtual at 105 % (52.6 Mbit/s of 50 Mbit/s)"


def test_units_chosen_in_preferences_are_saved_and_applied(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    cfg = tmp_path / "config.toml"
    cfg.write_text("")
    agent = AgentProc(tmp_path, "prefs", free_port(), [], "--config", str(cfg))
    app = None
    try:
        agent.wait_ready(30)
        app = App(port=agent.port, state_dir=agent.state, manage_agent=False, interval=0.2)
        app.start()
        qtbot.waitUntil(lambda: app.cluster is not None, timeout=10_000)
        app.open_window()
        app.open_preferences()
        dlg = app.prefs
        qtbot.waitUntil(lambda: "Saved in" in dlg.status.text(), timeout=5000)
        assert dlg.units.isEnabled()  # the agent has the setting
        assert dlg.units.currentData() == "bytes"
        dlg.units.setCurrentIndex(dlg.units.findData("bits"))
        with qtbot.waitSignal(dlg.saved, timeout=5000) as sig:
            dlg.save()
        assert sig.args[0]["units"] == "bits", sig.args
        assert fmt.units() == "bits"
        assert tomllib.loads(cfg.read_text())["units"] == "bits"
        axis = app.window.details.charts.bandwidth_plot.getPlotItem().getAxis("left")
        assert "bit/s" in axis.labelString()
    finally:
        if app is not None:
            app.client.stop()
            app.tray.hide()
            if app.window is not None:
                app.window.close()
            if app.prefs is not None:
                app.prefs.close()
        agent.close()


# -- light and dark ---------------------------------------------------------------------------

def _rendered(w: MainWindow) -> dict[str, QColor]:
    """Colours read from the window as it renders offscreen (QWidget.grab)."""
    QApplication.processEvents()  # Qt hands a new application palette to widgets so
    w.details.flush()
    topo = w.topology.grab().toImage()
    details = w.details.charts.latency_plot.grab().toImage()
    table = w.table.viewport().grab().toImage()
    cell = w.table.visualRect(w.table.proxy.index(0, 0))  # row 0: not an alternate row
    pal = w.summary.palette()
    return {
        "topology": topo.pixelColor(6, 6),
        "chart": details.pixelColor(details.width() - 3, 3),
        "table": table.pixelColor(cell.right() - 3, cell.center().y()),
        "text": pal.color(QPalette.ColorRole.WindowText),
        "window": pal.color(QPalette.ColorRole.Window),
        "table text": w.table.palette().color(QPalette.ColorRole.Text),
        "table base": w.table.palette().color(QPalette.ColorRole.Base),
    }


def _contrast(a: QColor, b: QColor) -> float:
    return theme.contrast(a.name(), b.name())


def test_light_and_dark_windows_render_with_contrast(qtbot, window):
    lk = look.instance()
    light = _rendered(window)
    assert light["topology"].name() == theme.LIGHT["BACKGROUND"]
    assert light["chart"].name() == theme.LIGHT["BACKGROUND"]
    with qtbot.waitSignal(lk.changed, timeout=1000):
        lk.set_scheme("dark")
    assert theme.scheme() == "dark"
    assert theme.DARK["BACKGROUND"] == theme.BACKGROUND
    dark = _rendered(window)
    assert dark["topology"].name() == theme.DARK["BACKGROUND"]
    assert dark["chart"].name() == theme.DARK["BACKGROUND"]
    assert theme.luminance(dark["table"].name()) < 0.1  # the table is dark too
    assert theme.luminance(light["table"].name()) > 0.7
    for shot in (light, dark):
        assert _contrast(shot["text"], shot["window"]) >= 4.5
        assert _contrast(shot["table text"], shot["table base"]) >= 4.5
    assert light["text"] != dark["text"] and light["window"] != dark["window"]
    # what the topology drew once (the selection's casing) and draws per update (badges)
    badge = window.topology.badge_item(SAT)
    assert badge.color == QColor(theme.DARK["TEXT"])
    assert window.topology.selection_halo().opts["pen"].color() == QColor(theme.DARK["SELECTION"])
    assert window.details.charts.curves()["rx"].opts["pen"].color() == QColor(theme.DARK["RX"])
    lk.set_scheme("light")
    assert _rendered(window)["topology"].name() == theme.LIGHT["BACKGROUND"]


def test_the_window_follows_the_systems_scheme_live(qtbot, window):
    lk = look.instance()
    lk.set_scheme(None)  # follow the system; offscreen, Qt says "Unknown": light
    assert theme.scheme() == "light"
    hints = QGuiApplication.styleHints()
    with qtbot.waitSignal(lk.changed, timeout=1000):
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)  # the desktop switched
    assert _rendered(window)["topology"].name() == theme.DARK["BACKGROUND"]
    with qtbot.waitSignal(lk.changed, timeout=1000):
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
    assert _rendered(window)["topology"].name() == theme.LIGHT["BACKGROUND"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_palette_contrast(scheme):
    p = theme.PALETTES[scheme]
    for name in ("TEXT", "TEXT_MUTED", "ACCENT_DARK"):
        assert theme.contrast(p[name], p["BACKGROUND"]) >= 4.5, name
    assert theme.contrast(p["PROBLEM_TEXT"], p["PROBLEM_BACKGROUND"]) >= 4.5
    if scheme == "dark":  # every line and series stands out from the dark background
        for name in ("LINK_CALM", "LINK_BUSY", "LINK_HOT", "LINK_UNKNOWN", "LINK_DOWN",
                     "RTT_MEDIAN", "RTT_BASELINE", "RX", "TX", "CAPACITY", "SELECTION", "EXO"):
            assert theme.contrast(p[name], p["BACKGROUND"]) >= 3, name



def test_the_timeline_says_a_cluster_getting_slower_in_words():
    """Issue 31 point 5: each new event is a sentence in the timeline, not its type."""
    from exotray.ui.window.timeline import KIND_COLORS, describe

    base = {"peer_name": "studio-2", "local_label": "Thunderbolt Bridge", "link_id": "l1",
            "local_interface": "bridge0"}
    for kind, more in [("link_down", {"fallback_link_id": "l2", "fallback_label": "Wi-Fi"}),
                       ("link_up", {}), ("link_slower", {"rtt_before_ms": 0.4,
                                                         "rtt_now_ms": 30.4}),
                       ("link_slower_cleared", {}), ("link_flapping", {"changes": 3}),
                       ("link_flapping_cleared", {}),
                       ("mtu_mismatch", {"mtu": 9000, "path_mtu": 1500}),
                       ("mtu_mismatch_cleared", {"mtu": 9000})]:
        what, details = describe({**base, "type": kind, **more}, "studio-1")
        assert "_" not in what and "studio-2" in details, (kind, what, details)
        assert kind in KIND_COLORS
