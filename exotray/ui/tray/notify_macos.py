"""macOS notifications that know which link they are for: UNUserNotificationCenter.

Qt's ``QSystemTrayIcon.showMessage`` posts to Notification Center, which keeps a
notification until the user clears it when posted with ``msecs = 0``; but its click comes
back as ``messageClicked``, which names no notification, so a click on an older one
cannot be told from a click on the latest (qtbase ``qcocoasystemtrayicon.mm``). Here each
notification is a ``UNNotificationRequest`` whose ``userInfo`` carries its link's key, and
our delegate's ``userNotificationCenter:didReceiveNotificationResponse:…`` reads it back
from the clicked one (Apple, UserNotifications: "Handling notifications and
notification-related actions"). The request's identifier is the key: a request with the
identifier of a delivered notification replaces it (``addNotificationRequest:``), so a
link's "back to normal" takes the place of its "saturated", as on D-Bus.

- Authorization (alert and sound) is asked once, when this object is made; what is
  posted before the answer waits for it (at most ``MAX_WAITING``). Denied, or a post
  refused later (the user turned notifications off), and ``unavailable`` tells the
  notifier, which goes back to Qt's path (see `notify`).
- The center calls our handlers on threads of its own: they only emit Qt signals, which
  are delivered on the Qt main thread (queued connections).
- UNUserNotificationCenter needs a bundled app with a bundle identifier
  (``io.exotray.app``): from a plain ``python -m exotray`` ``currentNotificationCenter``
  raises (NSInternalInconsistencyException, "bundleProxyForCurrentProcess is nil"), so
  `open_center` checks ``NSBundle.mainBundle().bundleIdentifier()`` first and says why not.

Needs ``pyobjc-framework-UserNotifications`` (a darwin-only dependency). Everything Apple's
is reached through `center` and `un` (the ``UserNotifications`` module), so the routing is
tested on Linux with stand-ins for both (tests/qt/test_notify_macos.py).
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal

log = logging.getLogger(__name__)

#: UNAuthorizationOptionSound | UNAuthorizationOptionAlert (UNUserNotificationCenter.h)
AUTH_OPTIONS = (1 << 1) | (1 << 2)
#: UNNotificationPresentationOptionList | UNNotificationPresentationOptionBanner: shown
#: even while the app is frontmost (the dashboard window has the focus)
PRESENT_OPTIONS = (1 << 3) | (1 << 4)
DEFAULT_ACTION = "com.apple.UNNotificationDefaultActionIdentifier"  # a click on its body
LINK = "exotray.key"  # the userInfo entry that carries the notification's key
MAX_WAITING = 32  # notifications kept while authorization is asked (the newest)


def open_center(platform: str = sys.platform) -> tuple[tuple[Any, Any] | None, str]:
    """``((center, UserNotifications module), "")``, or ``(None, why not)``."""
    if platform != "darwin":
        return None, "not macOS"
    try:
        import UserNotifications as un  # pyobjc-framework-UserNotifications
        from Foundation import NSBundle
    except ImportError:
        return None, "pyobjc-framework-UserNotifications is not installed"
    try:
        if not NSBundle.mainBundle().bundleIdentifier():
            return None, ("not started from exotray.app: Notification Center needs a "
                          "bundle identifier")
        return (un.UNUserNotificationCenter.currentNotificationCenter(), un), ""
    except Exception as e:  # raised from Objective-C: no bundle proxy and the like
        return None, f"UNUserNotificationCenter is not available: {e}"


_delegate_class: Any = None


def objc_delegate(on_response: Callable[[Any], None]) -> Any:
    """A ``UNUserNotificationCenterDelegate`` that hands each response to `on_response`
    (on the center's thread) and has banners shown while exotray is frontmost."""
    global _delegate_class
    if _delegate_class is None:
        import objc
        import UserNotifications  # noqa: F401  (registers the protocol and its blocks)
        from Foundation import NSObject

        class ExotrayNotificationDelegate(
                NSObject, protocols=[objc.protocolNamed("UNUserNotificationCenterDelegate")]):
            def userNotificationCenter_didReceiveNotificationResponse_withCompletionHandler_(
                    self, center, response, done):
                try:
                    self.on_response(response)
                finally:
                    done()

            def userNotificationCenter_willPresentNotification_withCompletionHandler_(
                    self, center, notification, done):
                done(PRESENT_OPTIONS)

        _delegate_class = ExotrayNotificationDelegate
    delegate = _delegate_class.alloc().init()
    delegate.on_response = on_response
    return delegate


class QtPathClicks:
    """Which link a click on the Qt path is for. ``messageClicked`` names no notification
    (qtbase qcocoasystemtrayicon.mm: the delegate's ``didActivateNotification:`` removes
    the clicked one and emits it bare), notifications posted with ``msecs`` 0 stay in
    Notification Center, and Qt has no call to remove delivered ones before posting. So
    the click is the latest's only while it is the one notification posted since none
    could be left: `clicked` says so; otherwise the notifier opens the events timeline,
    where all of them are. One cleared without a click is still counted (Notification
    Center does not tell Qt): the timeline then opens where the link could have."""

    def __init__(self) -> None:
        self.left = 0  # posted and not clicked: may still be in Notification Center
        self.since_empty = 0  # posted since `left` was last 0

    def posted(self) -> None:
        self.left += 1
        self.since_empty += 1

    def clicked(self) -> bool:
        """A click came: True when it can only be for the latest notification."""
        latest = self.since_empty == 1
        self.left = max(0, self.left - 1)
        if self.left == 0:
            self.since_empty = 0
        return latest


class CenterNotifications(QObject):
    """Posts to UNUserNotificationCenter; `clicked(key)` on the Qt main thread."""

    clicked = Signal(str)
    #: authorization denied or a post refused: why (the notifier falls back)
    unavailable = Signal(str)
    _answered = Signal(bool, str)
    _responded = Signal(str)
    _refused = Signal(str, list)

    def __init__(self, center: Any, un: Any, parent: QObject | None = None, *,
                 delegate_factory: Callable[[Callable[[Any], None]], Any] = objc_delegate,
                 ) -> None:  # fmt: skip
        super().__init__(parent)
        self._center = center
        self._un = un
        self.state = "asking"  # then "granted" or "denied"
        #: posted before authorization was answered, or refused: for the notifier to
        #: show another way once `unavailable` is told
        self.waiting: list[tuple[str, str, str | None]] = []
        self._serial = itertools.count(1)
        queued = Qt.ConnectionType.QueuedConnection
        self._answered.connect(self._on_answer, queued)
        self._responded.connect(self._on_response, queued)
        self._refused.connect(self._on_refused, queued)
        # the center keeps its delegate weakly: ours lives as long as this object
        self._delegate = delegate_factory(self._response_arrived)
        center.setDelegate_(self._delegate)
        center.requestAuthorizationWithOptions_completionHandler_(AUTH_OPTIONS,
                                                                  self._authorized)

    def post(self, title: str, body: str, key: str | None) -> bool:
        """Post (or keep it until authorization is answered); False once denied."""
        if self.state == "denied":
            return False
        if self.state == "asking":
            self.waiting = [*self.waiting, (title, body, key)][-MAX_WAITING:]
            return True
        content = self._un.UNMutableNotificationContent.alloc().init()
        content.setTitle_(title)
        content.setBody_(body)
        content.setUserInfo_({LINK: key or ""})
        # a key's identifier replaces its delivered notification; no key: a new one
        ident = key or f"exotray-{next(self._serial)}"
        request = self._un.UNNotificationRequest.requestWithIdentifier_content_trigger_(
            ident, content, None)
        self._center.addNotificationRequest_withCompletionHandler_(
            request, lambda error: self._added(error, title, body, key))
        return True

    def close(self) -> None:
        self.waiting = []
        self.state = "denied"
        if getattr(self._center, "delegate", lambda: None)() is self._delegate:
            self._center.setDelegate_(None)

    # -- the center's threads: signals only ----------------------------------------------
    def _authorized(self, granted: bool, error: Any) -> None:
        self._answered.emit(bool(granted), "" if error is None else str(error))

    def _added(self, error: Any, title: str, body: str, key: str | None) -> None:
        if error is not None:
            self._refused.emit(str(error), [title, body, key])

    def _response_arrived(self, response: Any) -> None:
        try:
            if str(response.actionIdentifier()) != DEFAULT_ACTION:
                return  # dismissed, or an action we never offered
            info = response.notification().request().content().userInfo() or {}
            self._responded.emit(str(info.get(LINK) or ""))
        except Exception as e:  # an odd response must not raise into the center
            log.debug("notification response not read: %s", e)

    # -- the Qt main thread ------------------------------------------------------------
    def _on_answer(self, granted: bool, error: str) -> None:
        if self.state != "asking":
            return
        self.state = "granted" if granted else "denied"
        if granted:
            waiting, self.waiting = self.waiting, []
            for title, body, key in waiting:
                self.post(title, body, key)
        else:  # (self.waiting stays for the notifier's other path)
            self.unavailable.emit(f"notifications not authorized{': ' + error if error else ''}")

    def _on_response(self, key: str) -> None:
        if key:
            self.clicked.emit(key)

    def _on_refused(self, error: str, refused: list) -> None:
        """Posting failed (notifications turned off since): the refused one waits for
        the notifier's other path, as later ones go there."""
        self.waiting.append((refused[0], refused[1], refused[2]))
        self.state = "denied"
        self.unavailable.emit(f"Notification Center refused a notification: {error}")
