"""macOS notifications (issue 35 point 2): each knows its link, and Qt's path never opens
the wrong one.

The edge that cannot be real here is Apple's: `FakeCenter` answers the calls
exotray.ui.tray.notify_macos makes of UNUserNotificationCenter (pyobjc selector names),
keeps what was delivered as Notification Center does (a request with a delivered one's
identifier replaces it), and calls its handlers from threads of its own, as the center
does. `FakeUN` stands in for the ``UserNotifications`` module's two classes. The
Notifier, its signals and the marshalling to the Qt main thread are real.
"""

from __future__ import annotations

import threading
import types

from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QSystemTrayIcon

from exotray.ui.tray import notify_macos
from exotray.ui.tray.notify import EVENTS_KEY, Notifier
from exotray.ui.tray.notify_macos import DEFAULT_ACTION, CenterNotifications


class RecordingTray(QSystemTrayIcon):
    def __init__(self) -> None:
        pix = QPixmap(16, 16)
        pix.fill()
        super().__init__(QIcon(pix))
        self.messages: list[tuple[str, str, int]] = []

    def showMessage(self, title, msg, icon=QSystemTrayIcon.MessageIcon.Information, msecs=10000):
        self.messages.append((title, msg, msecs))


class _Content:
    def __init__(self) -> None:
        self.fields: dict = {}

    @classmethod
    def alloc(cls):
        return cls()

    def init(self):
        return self

    def setTitle_(self, v):
        self.fields["title"] = v

    def setBody_(self, v):
        self.fields["body"] = v

    def setUserInfo_(self, v):
        self.fields["userInfo"] = dict(v)

    def userInfo(self):
        return self.fields["userInfo"]


class _Request:
    def __init__(self, ident, content) -> None:
        self._ident, self._content = ident, content

    @classmethod
    def requestWithIdentifier_content_trigger_(cls, ident, content, trigger):
        assert trigger is None  # now, not scheduled
        return cls(ident, content)

    def identifier(self):
        return self._ident

    def content(self):
        return self._content


FakeUN = types.SimpleNamespace(UNMutableNotificationContent=_Content,
                               UNNotificationRequest=_Request)


class _Response:
    def __init__(self, request, action=DEFAULT_ACTION) -> None:
        self._request, self._action = request, action

    def actionIdentifier(self):
        return self._action

    def notification(self):
        return types.SimpleNamespace(request=lambda: self._request)


def _elsewhere(fn, *args) -> None:
    """Call fn on another thread, as the center calls its handlers."""
    t = threading.Thread(target=fn, args=args)
    t.start()
    t.join(5)


class FakeCenter:
    def __init__(self, refuse: bool = False) -> None:
        self._delegate = None
        self.auth_requests: list = []
        self.delivered: dict[str, _Request] = {}  # identifier -> request, in post order
        self.refuse = refuse

    def setDelegate_(self, d):
        self._delegate = d

    def delegate(self):
        return self._delegate

    def requestAuthorizationWithOptions_completionHandler_(self, options, handler):
        self.auth_requests.append((options, handler))

    def answer(self, granted: bool) -> None:
        _elsewhere(self.auth_requests[-1][1], granted, None)

    def addNotificationRequest_withCompletionHandler_(self, request, handler):
        if self.refuse:
            _elsewhere(handler, "Notifications are not allowed for this application")
            return
        self.delivered.pop(request.identifier(), None)
        self.delivered[request.identifier()] = request
        _elsewhere(handler, None)

    def click(self, ident: str, action: str = DEFAULT_ACTION) -> None:
        request = self.delivered.pop(ident)  # a clicked one leaves Notification Center
        _elsewhere(self._delegate, _Response(request, action))


def _center_notifier(fake: FakeCenter, tray=None) -> Notifier:
    center = CenterNotifications(fake, FakeUN, delegate_factory=lambda handler: handler)
    n = Notifier(tray, backend="macos", center=center)
    center.setParent(n)
    return n


def test_clicking_the_older_of_two_notifications_opens_its_own_link(qtbot):
    fake = FakeCenter()
    n = _center_notifier(fake)
    assert len(fake.auth_requests) == 1  # asked once, when made
    assert fake.auth_requests[0][0] == notify_macos.AUTH_OPTIONS
    n.notify("Link saturated: a ⇄ b", "en2 at 97 %", key="L1")  # waits for the answer
    assert fake.delivered == {}
    fake.answer(True)
    qtbot.waitUntil(lambda: "L1" in fake.delivered, timeout=5000)
    n.notify("Link saturated: a ⇄ c", "en3 at 95 %", key="L2")
    assert list(fake.delivered) == ["L1", "L2"]
    assert fake.delivered["L1"].content().fields == {
        "title": "Link saturated: a ⇄ b", "body": "en2 at 97 %",
        "userInfo": {notify_macos.LINK: "L1"}}
    with qtbot.waitSignal(n.activated, timeout=5000) as blocker:
        fake.click("L1")  # the older one
    assert blocker.args == ["L1"]
    with qtbot.waitSignal(n.activated, timeout=5000) as blocker:
        fake.click("L2")
    assert blocker.args == ["L2"]
    assert len(fake.auth_requests) == 1
    n.close()


def test_a_keys_next_notification_replaces_its_delivered_one_no_key_is_new(qtbot):
    fake = FakeCenter()
    n = _center_notifier(fake)
    fake.answer(True)
    qtbot.waitUntil(lambda: n._center.state == "granted", timeout=5000)
    n.notify("Link saturated", "x", key="L1")
    n.notify("Link back to normal", "x", key="L1")
    n.notify("exotray agent stopped", "y")
    n.notify("exotray agent stopped", "z")
    assert len(fake.delivered) == 3
    assert fake.delivered["L1"].content().fields["title"] == "Link back to normal"
    keyless = [i for i in fake.delivered if i != "L1"]
    with qtbot.assertNotEmitted(n.activated, wait=100):
        fake.click(keyless[0])  # no link to open
    with qtbot.assertNotEmitted(n.activated, wait=100):
        fake.click("L1", action="com.apple.UNNotificationDismissActionIdentifier")
    n.close()


def test_denied_goes_to_qts_path_and_an_ambiguous_click_opens_the_timeline(qtbot):
    fake = FakeCenter()
    tray = RecordingTray()
    n = _center_notifier(fake, tray)
    n.notify("Link saturated", "a ⇄ b", key="L1")  # waiting for the answer
    fake.answer(False)
    qtbot.waitUntil(lambda: len(tray.messages) == 1, timeout=5000)
    assert tray.messages == [("Link saturated", "a ⇄ b", 0)]  # kept in Notification Center
    assert fake.delivered == {}
    with qtbot.waitSignal(n.activated, timeout=1000) as blocker:
        tray.messageClicked.emit()  # the only one: it is the latest
    assert blocker.args == ["L1"]
    n.notify("Link saturated", "a ⇄ c", key="L2")
    n.notify("Link saturated", "a ⇄ d", key="L3")
    assert fake.delivered == {} and len(tray.messages) == 3
    with qtbot.waitSignal(n.activated, timeout=1000) as blocker:
        tray.messageClicked.emit()  # L2 or L3: not known
    assert blocker.args == [EVENTS_KEY]
    with qtbot.waitSignal(n.activated, timeout=1000) as blocker:
        tray.messageClicked.emit()  # the other one: still not known which
    assert blocker.args == [EVENTS_KEY]
    n.notify("Link back to normal", "a ⇄ b", key="L1")  # none can be left but this one
    with qtbot.waitSignal(n.activated, timeout=1000) as blocker:
        tray.messageClicked.emit()
    assert blocker.args == ["L1"]
    n.close()


def test_a_refused_post_goes_to_qts_path_with_the_later_ones(qtbot):
    fake = FakeCenter()
    tray = RecordingTray()
    n = _center_notifier(fake, tray)
    fake.answer(True)
    qtbot.waitUntil(lambda: n._center.state == "granted", timeout=5000)
    fake.refuse = True  # turned off in System Settings since
    n.notify("Link saturated", "a ⇄ b", key="L1")
    qtbot.waitUntil(lambda: len(tray.messages) == 1, timeout=5000)
    n.notify("Link saturated", "a ⇄ c", key="L2")
    assert [m[1] for m in tray.messages] == ["a ⇄ b", "a ⇄ c"]
    n.close()


def test_without_a_bundle_or_the_framework_it_says_why_and_uses_qt(qtbot, monkeypatch):
    import sys

    assert notify_macos.open_center("linux")[0] is None
    monkeypatch.setitem(sys.modules, "UserNotifications", None)  # not installed
    found, why = notify_macos.open_center("darwin")
    assert found is None and "pyobjc-framework-UserNotifications" in why

    def no_center():
        raise AssertionError("asked for a center without a bundle identifier")

    bundle = types.SimpleNamespace(bundleIdentifier=lambda: None)
    monkeypatch.setitem(sys.modules, "UserNotifications", types.SimpleNamespace(
        UNUserNotificationCenter=types.SimpleNamespace(currentNotificationCenter=no_center)))
    monkeypatch.setitem(sys.modules, "Foundation", types.SimpleNamespace(
        NSBundle=types.SimpleNamespace(mainBundle=lambda: bundle)))
    found, why = notify_macos.open_center("darwin")
    assert found is None and "bundle identifier" in why
    tray = RecordingTray()
    n = Notifier(tray, backend="macos")
    n.notify("Link saturated", "a ⇄ b", key="L1")
    assert tray.messages == [("Link saturated", "a ⇄ b", 0)]
    n.close()


def test_user_notifications_is_a_macos_dependency():
    """`UserNotifications` is pyobjc-framework-UserNotifications (not in -Cocoa): without
    it every Mac would take Qt's path, whose clicks name no notification."""
    import tomllib
    from pathlib import Path

    from packaging.requirements import Requirement

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    reqs = [Requirement(r) for r in
            tomllib.loads(pyproject.read_text())["project"]["dependencies"]]
    (un,) = [r for r in reqs if r.name.lower() == "pyobjc-framework-usernotifications"]
    assert un.marker.evaluate({"sys_platform": "darwin"})
    assert not un.marker.evaluate({"sys_platform": "linux"})
