"""Notifier (offscreen): D-Bus against a scripted daemon, and the tray balloon fallback.

The fakes here are the desktop edges: a QSystemTrayIcon subclass that records showMessage
calls, since the offscreen platform has no tray to draw balloons in, and a scripted
org.freedesktop.Notifications (harness.FakeNotifications, GDBus in a subprocess) on a private
bus, handed to the Notifier through `connection=`. tests/desktop has the same against dunst.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QSystemTrayIcon

from exotray.ui.tray.notify import Notifier, detect_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "desktop"))

import system_tools
from harness import FakeNotifications, PrivateBus


class RecordingTray(QSystemTrayIcon):
    def __init__(self) -> None:
        pix = QPixmap(16, 16)
        pix.fill()
        super().__init__(QIcon(pix))
        self.messages: list[tuple[str, str, object, int]] = []

    def showMessage(self, title, msg, icon=QSystemTrayIcon.MessageIcon.Information, msecs=10000):
        self.messages.append((title, msg, icon, msecs))


@pytest.fixture
def empty_bus(tmp_path):
    system_tools.require("dbus-daemon")
    from PySide6.QtDBus import QDBusConnection

    name = f"exotray-test-{tmp_path.name}"
    with PrivateBus(tmp_path) as address:
        conn = QDBusConnection.connectToBus(address, name)
        assert conn.isConnected()
        try:
            yield conn
        finally:
            QDBusConnection.disconnectFromBus(name)


@pytest.fixture
def daemon_bus(tmp_path, request):
    """(connection, fake daemon) on a private bus; parametrize `mode` indirectly if needed."""
    reason = FakeNotifications.why_not_available()
    if reason:
        pytest.skip(reason)
    from PySide6.QtDBus import QDBusConnection

    mode = getattr(request, "param", "dunst")
    name = f"exotray-test-d-{tmp_path.name}"
    with PrivateBus(tmp_path) as address, FakeNotifications(address, mode) as fake:
        conn = QDBusConnection.connectToBus(address, name)
        assert conn.isConnected()
        try:
            yield conn, fake
        finally:
            QDBusConnection.disconnectFromBus(name)


def _sent(fake: FakeNotifications, n: int) -> list[dict]:
    """The first n Notify calls the daemon got (the call is synchronous; this waits only for
    our reader of its output)."""
    return fake.wait_for(lambda: fake.notifies()[:n] if len(fake.notifies()) >= n else None,
                         f"{n} Notify calls")  # fmt: skip


@pytest.fixture
def notifier(qapp, daemon_bus):
    conn, fake = daemon_bus
    n = Notifier(None, connection=conn)
    assert n.backend == "dbus"
    yield n, fake
    n.close()


def test_a_keys_notification_replaces_its_bubble_other_keys_are_independent(notifier):
    n, fake = notifier
    n.notify("Link saturated: a ⇄ b", "eth0 at 97 %", key="L1")
    n.notify("Link saturated: a ⇄ c", "eth1 at 95 %", key="L2")
    n.notify("Link back to normal: a ⇄ b", "eth0 at 12 %", key="L1")
    sat1, sat2, clear1 = _sent(fake, 3)
    assert sat1["replaces_id"] == 0 and sat2["replaces_id"] == 0
    assert sat2["id"] != sat1["id"]
    assert clear1["replaces_id"] == sat1["id"]  # the clear takes the saturation's place
    assert clear1["id"] == sat1["id"]
    assert fake.open_ids() == sorted([sat1["id"], sat2["id"]])  # one bubble per link
    for call in (sat1, sat2, clear1):
        assert call["signature"] == "(susssasa{sv}i)"
        assert call["hints"] == {"urgency": 1} and call["hint_types"] == {"urgency": "y"}
        assert call["expire_timeout"] == -1  # the daemon's default, never 0 = "never expire"
        assert call["actions"] == ["default", "Open"]


def test_click_after_a_replacement_activates_the_right_key(qtbot, notifier):
    n, fake = notifier
    n.notify("Link saturated", "x", key="L1")
    n.notify("Link saturated", "y", key="L2")
    n.notify("Link back to normal", "x", key="L1")
    first, other, replaced = _sent(fake, 3)
    assert replaced["replaces_id"] == first["id"]
    with qtbot.waitSignal(n.activated, timeout=5000) as blocker:
        fake.invoke(replaced["id"])
    assert blocker.args == ["L1"]
    with qtbot.waitSignal(n.activated, timeout=5000) as blocker:
        fake.invoke(other["id"])
    assert blocker.args == ["L2"]


def _round_trip(conn) -> None:
    """A call to the daemon on the Notifier's connection, then the queued events: every
    signal the daemon sent before has reached the Notifier afterwards (same-sender order)."""
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtDBus import QDBusMessage

    name = "org.freedesktop.Notifications"
    msg = QDBusMessage.createMethodCall(name, "/org/freedesktop/Notifications", name,
                                        "GetCapabilities")  # fmt: skip
    assert conn.call(msg).type() == QDBusMessage.MessageType.ReplyMessage
    QCoreApplication.sendPostedEvents()


def test_a_closed_bubble_is_forgotten_the_next_one_is_new(daemon_bus, notifier):
    conn, _ = daemon_bus
    n, fake = notifier
    n.notify("Link saturated", "x", key="L1")
    (first,) = _sent(fake, 1)
    fake.close_bubble(first["id"])  # dismissed or expired: NotificationClosed
    _round_trip(conn)
    n.notify("Link back to normal", "x", key="L1")
    _, second = _sent(fake, 2)
    assert second["replaces_id"] == 0
    n.notify("Link saturated", "x", key="L1")
    assert _sent(fake, 3)[2]["replaces_id"] == second["id"]


@pytest.mark.parametrize("daemon_bus", ["dunst", "new"], indirect=True)
def test_bubble_expiring_just_before_its_replacement(qtbot, daemon_bus, notifier):
    """The daemon closes the bubble just before a Notify that replaces it: its
    NotificationClosed reaches us before the reply. dunst then reuses the id for the new
    bubble, GNOME gives a new id; either way the new bubble is the key's and clickable."""
    n, fake = notifier
    n.notify("Link saturated", "x", key="L1")
    fake.expire_before_replace()
    n.notify("Link back to normal", "x", key="L1")
    first, second = _sent(fake, 2)
    assert second["replaces_id"] == first["id"]
    assert fake.open_ids() == [second["id"]]
    _round_trip(daemon_bus[0])  # any late signal is in: it must not make us forget the bubble
    with qtbot.waitSignal(n.activated, timeout=5000) as blocker:
        fake.invoke(second["id"])
    assert blocker.args == ["L1"]
    n.notify("Link saturated", "x", key="L1")
    assert _sent(fake, 3)[2]["replaces_id"] == second["id"]
    assert fake.open_ids() == [second["id"]]


def test_empty_key_is_clickable_but_never_replaces_and_no_key_has_no_action(qtbot, notifier):
    n, fake = notifier
    n.notify("Peer down", "a", key="")
    n.notify("Peer down", "b", key="")
    n.notify("Agent back", "c")
    a, b, c = _sent(fake, 3)
    assert a["replaces_id"] == b["replaces_id"] == c["replaces_id"] == 0
    assert len({a["id"], b["id"], c["id"]}) == 3
    assert c["actions"] == []
    with qtbot.waitSignal(n.activated, timeout=5000) as blocker:
        fake.invoke(a["id"])
    assert blocker.args == [""]
    with qtbot.assertNotEmitted(n.activated, wait=200):
        fake.invoke(c["id"])


def test_critical_is_still_available_to_callers_who_ask(notifier):
    n, fake = notifier
    n.notify("Agent stopped", "why", key="agent", urgency="critical")
    (call,) = _sent(fake, 1)
    assert call["hints"] == {"urgency": 2}
    assert call["expire_timeout"] == -1


def test_detects_tray_when_no_notification_service(qapp, empty_bus):
    assert detect_backend(empty_bus) == "tray"
    tray = RecordingTray()
    n = Notifier(tray, connection=empty_bus)
    assert n.backend == "tray"
    n.notify("Link saturated", "studio-1 ⇄ studio-2 …", key="L1")
    assert [m[:2] for m in tray.messages] == [("Link saturated", "studio-1 ⇄ studio-2 …")]
    n.close()


def test_tray_backend_shows_message_and_click_activates_key(qtbot):
    tray = RecordingTray()
    n = Notifier(tray, backend="tray")
    assert n.backend == "tray"
    n.notify("Link saturated", "studio-1 ⇄ studio-2 …", key="L1", urgency="critical")
    n.notify("RTT high", "studio-3", key="R7")
    assert [m[0] for m in tray.messages] == ["Link saturated", "RTT high"]
    assert tray.messages[0][2] == QSystemTrayIcon.MessageIcon.Critical
    assert tray.messages[1][2] == QSystemTrayIcon.MessageIcon.Information
    assert {m[3] for m in tray.messages} == {10_000}  # expires, whatever the urgency
    # the balloon only knows "clicked", so the last notification's key wins
    with qtbot.waitSignal(n.activated, timeout=1000) as blocker:
        tray.messageClicked.emit()
    assert blocker.args == ["R7"]
    n.close()


def test_tray_same_key_again_shows_the_new_message_and_click_gives_its_key(qtbot):
    """One balloon at a time: a key's next message replaces the one shown (so does any)."""
    tray = RecordingTray()
    n = Notifier(tray, backend="tray")
    n.notify("Link saturated", "x", key="L1")
    n.notify("Link back to normal", "x", key="L1")
    assert [m[0] for m in tray.messages] == ["Link saturated", "Link back to normal"]
    assert all(m[2] == QSystemTrayIcon.MessageIcon.Information for m in tray.messages)
    with qtbot.waitSignal(n.activated, timeout=1000) as blocker:
        tray.messageClicked.emit()
    assert blocker.args == ["L1"]
    n.close()


def test_click_without_key_emits_nothing(qtbot):
    tray = RecordingTray()
    n = Notifier(tray, backend="tray")
    n.notify("Agent back", "studio-2")
    with qtbot.assertNotEmitted(n.activated):
        tray.messageClicked.emit()
    n.close()


def test_never_raises_without_tray_or_after_close(qtbot, caplog):
    n = Notifier(None, backend="tray")
    n.notify("a", "b", key="k")
    n.notify("c", "d", key="k")
    assert sum("no notification service" in r.message for r in caplog.records) == 1
    tray = RecordingTray()
    m = Notifier(tray, backend="tray")
    m.close()
    m.notify("x", "y", key="k")
    assert tray.messages == []
    with qtbot.assertNotEmitted(m.activated):
        tray.messageClicked.emit()


def test_macos_path_is_qts_notification_center_and_keeps_them(qtbot, monkeypatch):
    """macOS without UNUserNotificationCenter (here: not macOS, so no pyobjc): Qt's
    showMessage (Notification Center, clicks come back as messageClicked) with 0 ms, which
    keeps the notification in Notification Center; any other value has Qt remove it after
    that long (qcocoasystemtrayicon.mm). One notification: its click is for its link
    (test_notify_macos.py has the rest)."""
    from exotray.ui.tray import notify

    monkeypatch.setattr(notify.sys, "platform", "darwin")
    assert notify.detect_backend() == "macos"
    tray = RecordingTray()
    n = Notifier(tray)
    assert n.backend == "macos"
    n.notify("Link saturated: studio-1 ⇄ studio-2", "Thunderbolt Bridge at 97 %", key="L1")
    assert tray.messages[-1][0].startswith("Link saturated") and tray.messages[-1][3] == 0
    with qtbot.waitSignal(n.activated, timeout=1000) as blocker:
        tray.messageClicked.emit()
    assert blocker.args == ["L1"]
    n.close()


# -- peers' names in bodies (issue 18, point 5) ---------------------------------------
LINK = '<a href="http://evil.example/">Click to update</a>'
MARKUP_CAPS = ("actions", "body", "body-hyperlinks", "body-markup")


@pytest.fixture
def daemon_with(qapp, tmp_path, request):
    """A Notifier on a private bus whose daemon advertises request.param capabilities."""
    reason = FakeNotifications.why_not_available()
    if reason:
        pytest.skip(reason)
    from PySide6.QtDBus import QDBusConnection

    name = f"exotray-test-caps-{tmp_path.name}"
    with PrivateBus(tmp_path) as address, \
            FakeNotifications(address, capabilities=request.param) as fake:
        conn = QDBusConnection.connectToBus(address, name)
        assert conn.isConnected()
        n = Notifier(None, connection=conn)
        assert n.backend == "dbus"
        try:
            yield n, fake
        finally:
            n.close()
            QDBusConnection.disconnectFromBus(name)


@pytest.mark.parametrize("daemon_with", [MARKUP_CAPS], indirect=True)
def test_a_peers_markup_reaches_a_markup_daemon_escaped(daemon_with):
    """dunst (body-markup, body-hyperlinks) showed the name as a link to evil.example."""
    from exotray.ui.tray import summary

    n, fake = daemon_with
    assert n.body_markup
    title, body = summary.notification(
        {"type": "peer_down", "peer_name": LINK, "node": "a & b <i>"}, "me")
    n.notify(title, body, key="")
    (call,) = _sent(fake, 1)
    assert call["body"] == ("a &amp; b &lt;i&gt; gets no answer from "
                            "&lt;a href=\"http://evil.example/\"&gt;Click to update&lt;/a&gt;")
    assert "<" not in call["body"] and ">" not in call["body"]
    assert call["summary"] == f"Peer down: {LINK}"  # plain text by the spec: as it is


@pytest.mark.parametrize("daemon_with", [("actions", "body")], indirect=True)
def test_a_plain_text_daemon_gets_the_body_as_it_is(daemon_with):
    """Without body-markup the daemon shows the body literally: entities would show."""
    n, fake = daemon_with
    assert not n.body_markup
    n.notify("Peer down", f"x gets no answer from {LINK} & co")
    (call,) = _sent(fake, 1)
    assert call["body"] == f"x gets no answer from {LINK} & co"
