"""The tray app against a real agent on loopback: events become notifications, a click
opens the window on that link, Pause reaches the agent."""

from __future__ import annotations

import pytest
from helpers import AgentProc, free_port, wait_for

from exotray.ui.app import App


@pytest.fixture
def agents(tmp_path):
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "studio-1", pa, [pb])
    b = AgentProc(tmp_path, "studio-2", pb, [pa])
    try:
        a.wait_ready()
        b.wait_ready()
        yield a, b
    finally:
        a.close()
        b.close()


@pytest.fixture
def app(qtbot, agents):
    a, _ = agents
    app = App(port=a.port, state_dir=a.state, manage_agent=False, interval=0.2)
    sent: list[tuple[str, str, str]] = []
    # The one fake: the desktop's notification daemon (tests/desktop has the real one).
    app.notifier.notify = lambda title, body, key="", urgency="normal": sent.append(
        (title, body, key))
    app.sent = sent
    app.start()
    qtbot.waitUntil(lambda: app.cluster is not None and len(app.cluster["nodes"]) == 2,
                    timeout=10_000)
    yield app
    app.client.stop()
    app.tray.hide()
    if app.window is not None:
        app.window.close()


def _own_link(app):
    return app.cluster["nodes"][0]["links"][0]


def test_events_become_notifications(qtbot, app):
    link = _own_link(app)
    app.sent.clear()  # e.g. the real peer_up of the agents starting
    ev = {"seq": 9, "type": "link_saturated", "link_id": link["id"], "peer_id": link["peer_id"],
          "peer_name": "studio-2", "local_interface": "lo", "local_label": "Loopback",
          "utilization": 0.97, "rx_bytes_per_s": 1.0, "tx_bytes_per_s": 2.42e6,
          "capacity_bytes_per_s": 2.5e6}
    app._events([ev])
    assert app.sent == [("Link saturated: studio-1 ⇄ studio-2",
                         "Loopback at 97 % (2.4 MB/s of 2.5 MB/s)", link["id"])]
    app.settings["notify_peers"] = False
    app._events([{"seq": 10, "type": "peer_down", "peer_name": "studio-2"}])
    assert len(app.sent) == 1
    app.settings["notify_peers"] = True
    app._events([{"seq": 11, "type": "peer_down", "peer_name": "studio-2"}])
    assert app.sent[-1][0] == "Peer down: studio-2"


def test_a_saturation_within_the_cooldown_is_recorded_not_notified(qtbot, app):
    """Issue 34 point 10: the agent records a raise within the link's cooldown (the map
    shows it red) with `notify: false`; the tray stays quiet for it and for its clear."""
    link = _own_link(app)
    app.sent.clear()
    ev = {"seq": 30, "type": "link_saturated", "link_id": link["id"],
          "peer_id": link["peer_id"], "peer_name": "studio-2", "local_interface": "lo",
          "local_label": "Loopback", "utilization": 0.97, "notify": False}
    app._events([ev, {**ev, "seq": 31, "type": "link_cleared", "utilization": 0.1}])
    assert app.sent == []
    app._events([{**ev, "seq": 32, "notify": True}])
    assert [s[0] for s in app.sent] == ["Link saturated: studio-1 ⇄ studio-2"]


def test_a_speed_drop_is_one_bubble_per_port(qtbot, app):
    app.sent.clear()
    ev = {"seq": 20, "type": "link_degraded", "node": "studio-1", "interface": "en4",
          "local_label": "Thunderbolt 3", "from_mbit": 80000, "to_mbit": 40000,
          "max_mbit": 80000, "link_id": None, "peer_id": None}
    app._events([ev, {**ev, "seq": 21, "type": "link_restored", "to_mbit": 80000}])
    assert [(t, key) for t, _body, key in app.sent] == [
        ("Link slower than it can be: studio-1", "iface:en4"),
        ("Link back to full speed: studio-1", "iface:en4")]


def test_real_peer_down_reaches_the_notifier(qtbot, app, agents):
    a, b = agents
    # Up first (a probe answered), or there is no "down" to report: having b's snapshot
    # (the app fixture waits for that) does not mean a probe has come back yet.
    assert wait_for(lambda: any(lk["state"] != "down"
                                for lk in a.get("/v1/snapshot")["links"]), 10)
    b.kill()
    # down after 2.5 s without replies, seen at the app's next poll (generous under load)
    try:
        qtbot.waitUntil(lambda: any(s[0] == "Peer down: studio-2" for s in app.sent),
                        timeout=15_000)
    except Exception as e:
        raise AssertionError(f"notifications: {app.sent}; agent events: "
                             f"{a.get('/v1/events')['events']}") from e


def test_notification_click_opens_window_on_that_link(qtbot, app):
    link = _own_link(app)
    app.notifier.activated.emit(link["id"])
    assert app.window is not None and app.window.isVisible()
    assert app.window.link_id == link["id"]
    assert app.window.table.selected_link() == link["id"]
    qtbot.waitUntil(lambda: app.window._history_for == link["id"], timeout=5000)
    # Closing the window does not quit the app: the tray stays.
    app.window.close()
    assert app.tray.icon is not None


def test_pause_from_the_tray_reaches_the_agent(qtbot, app, agents):
    a, _ = agents
    app.tray.pauseToggled.emit(True)
    assert wait_for(lambda: a.get("/v1/snapshot")["paused"], 5)
    app.tray.pauseToggled.emit(False)
    assert wait_for(lambda: not a.get("/v1/snapshot")["paused"], 5)


def test_export_button_writes_the_links_history(qtbot, app, tmp_path):
    link = _own_link(app)
    app.open_window(link["id"])
    w = app.window
    assert w.export_action.isEnabled()
    out = tmp_path / "h.csv"
    w.export_history(str(out))
    # The result stays in the link's details (the status bar's summary would cover it).
    qtbot.waitUntil(lambda: out.exists() and "Exported" in w.details.numbers()["result"],
                    timeout=5000)
    assert out.read_text().splitlines()[0].startswith("time_utc,unix_time_s,rtt_median_ms")


def test_measure_capacity_button(qtbot, app, agents):
    # Both ends up first: the far agent grants a capacity test only to an address whose
    # link answers its own probes (http/captest.py), and b may not have heard a yet.
    for agent in agents:
        assert wait_for(lambda ag=agent: any(lk["state"] != "down"
                                             for lk in ag.get("/v1/snapshot")["links"]), 10)
    link = _own_link(app)
    app.open_window(link["id"])
    w = app.window
    assert w.measure_action.isEnabled()
    w.measure_capacity(seconds=1.0)
    qtbot.waitUntil(lambda: "now its capacity" in w.details.numbers()["result"],
                    timeout=15_000)
    assert "bit/s up" in w.details.numbers()["result"]
    qtbot.wait(1500)  # a few cluster updates later, the result is still there
    assert "now its capacity" in w.details.numbers()["result"]


def test_quit_lets_the_window_charts_go_safely(qtbot, app, monkeypatch):
    """Quit releases the open window's charts (unlinked, no redraw timer) before the
    event loop ends, so nothing queued between them runs while they are destroyed."""
    from PySide6.QtWidgets import QApplication
    quits = []
    monkeypatch.setattr(QApplication, "quit", staticmethod(lambda: quits.append(1)))
    app.open_window(_own_link(app)["id"])
    released = []
    monkeypatch.setattr(app.window.details.charts, "release",
                        lambda: released.append(1))
    app.quit()
    assert released == [1] and quits == [1]
    assert not app.window.details._timer.isActive()
