"""Notifier fallback path (offscreen): no notification daemon -> tray balloons.

The one fake here is the desktop edge: a QSystemTrayIcon subclass that records showMessage
calls, since the offscreen platform has no tray to draw balloons in.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QSystemTrayIcon

from exotray.ui.notify import Notifier, detect_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "desktop"))

from harness import PrivateBus


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
    if shutil.which("dbus-daemon") is None:
        pytest.skip("dbus-daemon missing (apt: dbus)")
    from PySide6.QtDBus import QDBusConnection

    name = f"exotray-test-{tmp_path.name}"
    with PrivateBus(tmp_path) as address:
        conn = QDBusConnection.connectToBus(address, name)
        assert conn.isConnected()
        try:
            yield conn
        finally:
            QDBusConnection.disconnectFromBus(name)


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
    # the balloon only knows "clicked", so the last notification's key wins
    with qtbot.waitSignal(n.activated, timeout=1000) as blocker:
        tray.messageClicked.emit()
    assert blocker.args == ["R7"]
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
