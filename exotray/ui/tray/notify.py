"""Desktop notifications: freedesktop D-Bus on Linux, Notification Center on macOS, tray
balloon otherwise.

macOS: each notification goes to UNUserNotificationCenter with its key in ``userInfo``
(`notify_macos`), so a click on any of them, the latest or an older one still in
Notification Center, opens that notification's own link. Where that center cannot be
used (pyobjc-framework-UserNotifications missing, no bundle identifier as from a plain
``python -m exotray``, notifications not authorized) Qt's ``QSystemTrayIcon.showMessage``
posts, with ``msecs`` 0 so that Notification Center keeps it; its click names no
notification and Qt cannot remove delivered ones before posting, so a click opens the
latest's link only when no other can be there, else the events timeline (`EVENTS_KEY`;
`notify_macos.QtPathClicks` says why).

Linux: ``QSystemTrayIcon.showMessage`` does not go through D-Bus while the icon lives in an
XEmbed tray, so we call ``org.freedesktop.Notifications.Notify`` ourselves and listen for
``ActionInvoked`` to learn about clicks.

PySide6 QtDBus cannot express the argument types Notify needs through the usual
``QDBusMessage.setArguments``: a Python int becomes ``int32`` (never ``uint32``), an empty list
becomes ``av`` (not ``as``), ``QDBusVariant(1)`` inside a dict becomes a variant *of a variant*,
``QDBusArgument << int`` writes ``uint16`` and no Python value converts to a ``byte``. GDBus
based daemons (dunst, GNOME) check the signature ``(susssasa{sv}i)`` strictly and reject the
call. So the call goes through Qt's own typed meta-call path instead:

* a ``QDBusInterface`` metaobject for the interface is built once from our own introspection
  XML (annotated so ``a{sv}`` maps to ``QVariantMap``; Qt caches interface metaobjects per
  interface name, so the proxy to the real daemon reuses it), then
* ``QMetaObject.invokeMethod(iface, "Notify", Q_ARG("uint", 0), ...)`` marshals C++-typed
  arguments, and the hints map is built in C++ memory from a ``QDataStream`` so that
  ``urgency`` is a real ``QVariant(uchar)`` -> ``variant byte``.

That call blocks for at most ``DBUS_TIMEOUT_MS`` (a local round trip takes ~10 ms).

One bubble per key: a notification with a (non-empty) ``key`` replaces the one still on screen
for that key. On D-Bus the daemon's id for the key's last notification goes out as
``replaces_id`` (forgotten on ``NotificationClosed``), so a link's "cleared" takes the place of
its "saturated" bubble; different keys are independent (on macOS a key is the request's
identifier, which replaces a delivered one the same way). The tray balloon shows one
message at a time, so a click is for the last one and opens its link. Every backend uses
the daemon's default expiry (``EXPIRE_DEFAULT``), never "until dismissed".

Bodies carry peers' names, which other hosts choose. A daemon that advertises
``body-markup`` (dunst, GNOME, KDE) renders the body as markup, and with
``body-hyperlinks`` a ``<a href>`` as a link: for those the body's ``&``, ``<`` and ``>``
go out as entities (the spec's escaping), so a name shows as typed. The summary is plain
text by the spec. Qt's tray balloon shows both as plain text.
"""

from __future__ import annotations

import contextlib
import html
import logging
import sys
from collections import OrderedDict

from PySide6.QtCore import (
    Q_ARG,
    Q_RETURN_ARG,
    ClassInfo,
    QByteArray,
    QCoreApplication,
    QDataStream,
    QEvent,
    QGenericArgumentHolder,
    QIODevice,
    QMetaObject,
    QMetaType,
    QObject,
    Qt,
    Signal,
    Slot,
)
from PySide6.QtWidgets import QSystemTrayIcon

from exotray.ui.tray import notify_macos
from exotray.ui.tray.notify_macos import CenterNotifications

log = logging.getLogger(__name__)

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
IFACE = "org.freedesktop.Notifications"
DBUS_TIMEOUT_MS = 1500
URGENCY = {"low": 0, "normal": 1, "critical": 2}
EXPIRE_DEFAULT = -1  # Notify's expire_timeout: the daemon's default; 0 would mean "never"
TRAY_MESSAGE_MS = 10_000
#: macOS: 0 keeps the notification in Notification Center (any other value removes it
#: after that many ms)
MACOS_MESSAGE_MS = 0
#: what `activated` carries when a click on macOS's fallback path may be for any of several
#: notifications: the app opens the events timeline
EVENTS_KEY = "events:timeline"
MAX_TRACKED_IDS = 256  # ids we remember for clicks if a daemon never says they closed
_SEED_PATH = "/org/exotray/NotificationsIntrospection"
_TYPED_NOTIFY = b"Notify(QString,uint,QString,QString,QString,QStringList,QVariantMap,int)"

_INTROSPECTION = f"""  <interface name="{IFACE}">
    <method name="Notify">
      <arg name="app_name" type="s" direction="in"/>
      <arg name="replaces_id" type="u" direction="in"/>
      <arg name="app_icon" type="s" direction="in"/>
      <arg name="summary" type="s" direction="in"/>
      <arg name="body" type="s" direction="in"/>
      <arg name="actions" type="as" direction="in"/>
      <arg name="hints" type="a{{sv}}" direction="in"/>
      <annotation name="org.qtproject.QtDBus.QtTypeName.In6" value="QVariantMap"/>
      <arg name="expire_timeout" type="i" direction="in"/>
      <arg name="id" type="u" direction="out"/>
    </method>
    <method name="CloseNotification">
      <arg name="id" type="u" direction="in"/>
    </method>
    <signal name="ActionInvoked">
      <arg name="id" type="u"/>
      <arg name="action_key" type="s"/>
    </signal>
    <signal name="NotificationClosed">
      <arg name="id" type="u"/>
      <arg name="reason" type="u"/>
    </signal>
  </interface>
"""


@ClassInfo({"D-Bus Interface": IFACE, "D-Bus Introspection": _INTROSPECTION})
class _IntrospectionSeed(QObject):
    """Exported on our own connection only so Qt can read typed introspection from it."""


def _dbus():
    from PySide6 import QtDBus  # imported lazily: QtDBus is absent on some platforms

    return QtDBus


def detect_backend(connection=None) -> str:
    """Return "dbus" when a notification daemon is on the session bus, "macos" on macOS
    (Notification Center: `notify_macos`, else Qt's path), else "tray". `connection` (a
    QDBusConnection) defaults to the session bus."""
    if sys.platform == "darwin":
        return "macos"
    try:
        qtdbus = _dbus()
        bus = connection if connection is not None else qtdbus.QDBusConnection.sessionBus()
        if not bus.isConnected():
            return "tray"
        reply = bus.interface().isServiceRegistered(SERVICE)
        return "dbus" if reply.isValid() and bool(reply.value()) else "tray"
    except Exception:  # no QtDBus, no bus: fall back quietly
        return "tray"


def _hints_holder(urgency: int) -> QGenericArgumentHolder:
    """A QVariantMap {"urgency": QVariant(uchar)} built in C++ memory (see module doc)."""
    buf = QByteArray()
    out = QDataStream(buf, QIODevice.OpenModeFlag.WriteOnly)
    out.setVersion(QDataStream.Version.Qt_6_0)
    out.writeUInt32(1)  # map size
    out.writeQString("urgency")
    out.writeUInt32(QMetaType.Type.UChar.value)  # QVariant: type id, is-null flag, value
    out.writeInt8(0)
    out.writeUInt8(urgency)
    mt = QMetaType(QMetaType.Type.QVariantMap)
    ptr = mt.create()
    src = QDataStream(buf)
    src.setVersion(QDataStream.Version.Qt_6_0)
    if not mt.load(src, ptr):
        mt.destroy(ptr)
        raise RuntimeError("could not build the hints map")
    return QGenericArgumentHolder(mt, ptr)  # the holder owns and destroys ptr


class Notifier(QObject):
    """Shows notifications; emits `activated(key)` when the user clicks one."""

    activated = Signal(str)

    def __init__(
        self,
        tray: QSystemTrayIcon | None = None,
        app_name: str = "exotray",
        parent: QObject | None = None,
        *,
        backend: str | None = None,
        connection=None,
        center: CenterNotifications | None = None,
    ) -> None:
        super().__init__(parent)
        self.app_name = app_name
        self._tray = tray
        self._conn = connection
        self._iface = None
        self._seed: QObject | None = None
        self._keys: OrderedDict[int, str] = OrderedDict()  # daemon id -> key (for clicks)
        self._ids: dict[str, int] = {}  # key -> id of its bubble still on screen
        self._last_key: str | None = None
        self._logged: set[str] = set()
        self._closed = False
        #: the daemon renders the body as markup (its capabilities say "body-markup")
        self.body_markup = True
        self.backend: str = backend or detect_backend(connection)
        if self.backend == "dbus" and not self._setup_dbus():
            self.backend = "tray"
        self._qt_clicks = notify_macos.QtPathClicks()  # macOS through Qt
        self._center: CenterNotifications | None = None
        if self.backend == "macos":
            self._center = center if center is not None else self._open_center()
            if self._center is not None:
                self._center.clicked.connect(self.activated)
                self._center.unavailable.connect(self._center_unavailable)
        if tray is not None:
            tray.messageClicked.connect(self._on_message_clicked)

    # ------------------------------------------------------------------ public

    def notify(self, title: str, body: str, key: str | None = None,
               urgency: str = "normal") -> None:  # fmt: skip
        """Show a notification. Never raises; each kind of failure is logged once.

        With a non-empty `key`, it replaces the notification of the same key still on screen
        and a click emits `activated(key)`; ``key=""`` is clickable but never replaces.
        "critical" is for callers that want a bubble the daemon may keep until dismissed."""
        if self._closed:
            return
        try:
            if self.backend == "dbus" and self._notify_dbus(title, body, key, urgency):
                return
            if self.backend == "macos":
                if self._center is None or not self._center.post(title, body, key):
                    self._notify_tray(title, body, key, urgency, msecs=MACOS_MESSAGE_MS)
                return
            self._notify_tray(title, body, key, urgency)
        except Exception as exc:
            self._log_once("notify", "notification failed: %s", exc)

    def set_tray(self, tray: QSystemTrayIcon | None) -> None:
        """Use another tray icon for the fallback balloon (the app made a new one)."""
        if self._tray is not None:
            with contextlib.suppress(RuntimeError, TypeError):
                self._tray.messageClicked.disconnect(self._on_message_clicked)
        self._tray = tray
        if tray is not None:
            tray.messageClicked.connect(self._on_message_clicked)

    def close(self) -> None:
        """Stop listening for clicks and forget pending notifications."""
        if self._closed:
            return
        self._closed = True
        if self._iface is not None:
            bus = self._bus()
            for member, slot in (("ActionInvoked", "_on_action_invoked(QDBusMessage)"),
                                 ("NotificationClosed", "_on_closed(QDBusMessage)")):  # fmt: skip
                with contextlib.suppress(Exception):
                    bus.disconnect(SERVICE, PATH, IFACE, member, self, f"1{slot}")
            self._iface = None
        if self._tray is not None:
            with contextlib.suppress(RuntimeError, TypeError):
                self._tray.messageClicked.disconnect(self._on_message_clicked)
        if self._center is not None:
            self._center.close()
            self._center = None
        self._keys.clear()
        self._ids.clear()
        self._last_key = None

    # ------------------------------------------------------------------ macOS

    def _open_center(self) -> CenterNotifications | None:
        found, why = notify_macos.open_center()
        if found is None:
            log.info("macOS notifications through Qt: %s", why)
        return CenterNotifications(*found, parent=self) if found else None

    def _center_unavailable(self, why: str) -> None:
        """Denied or refused: Qt's path from now on, for what waited too."""
        self._log_once("center", "macOS notifications through Qt from now on: %s", why)
        if self._center is not None:  # (its post() says False from now on)
            waiting, self._center.waiting = self._center.waiting, []
            for title, body, key in waiting:
                self._notify_tray(title, body, key, "normal", msecs=MACOS_MESSAGE_MS)

    # ------------------------------------------------------------------ D-Bus

    def _bus(self):
        return self._conn if self._conn is not None else _dbus().QDBusConnection.sessionBus()

    def _setup_dbus(self) -> bool:
        try:
            qtdbus = _dbus()
            bus = self._bus()
            # Seed Qt's per-interface metaobject cache with typed introspection (see module doc).
            self._seed = _IntrospectionSeed(self)
            bus.registerObject(_SEED_PATH, self._seed,
                               qtdbus.QDBusConnection.RegisterOption.ExportAllContents)  # fmt: skip
            qtdbus.QDBusInterface(bus.baseService(), _SEED_PATH, IFACE, bus)
            iface = qtdbus.QDBusInterface(SERVICE, PATH, IFACE, bus, self)
            mo = iface.metaObject()
            sigs = {mo.method(i).methodSignature().data() for i in range(mo.methodCount())}
            if _TYPED_NOTIFY not in sigs:
                self._log_once("dbus-types", "D-Bus Notify has no typed signature (%s); "
                               "using tray balloons", sorted(sigs))  # fmt: skip
                return False
            iface.setTimeout(DBUS_TIMEOUT_MS)
            self.body_markup = self._renders_markup(bus)
            ok = bus.connect(SERVICE, PATH, IFACE, "ActionInvoked", self,
                             "1_on_action_invoked(QDBusMessage)")  # fmt: skip
            bus.connect(SERVICE, PATH, IFACE, "NotificationClosed", self,
                        "1_on_closed(QDBusMessage)")  # fmt: skip
            if not ok:
                self._log_once("dbus-signal", "cannot listen for ActionInvoked; clicks ignored")
            self._iface = iface
            return True
        except Exception as exc:
            self._log_once("dbus-setup", "D-Bus notifications unavailable: %s", exc)
            return False

    def _renders_markup(self, bus) -> bool:
        """Whether the daemon renders bodies as markup: True unless its capabilities say
        otherwise (unknown: escaped, so that a peer's name never becomes a link)."""
        qtdbus = _dbus()
        msg = qtdbus.QDBusMessage.createMethodCall(SERVICE, PATH, IFACE, "GetCapabilities")
        reply = bus.call(msg, qtdbus.QDBus.CallMode.Block, DBUS_TIMEOUT_MS)
        args = reply.arguments()
        if reply.type() != qtdbus.QDBusMessage.MessageType.ReplyMessage or not args:
            self._log_once("dbus-caps", "GetCapabilities failed (%s); escaping bodies",
                           reply.errorMessage())  # fmt: skip
            return True
        return "body-markup" in [str(c) for c in args[0]]

    def _notify_dbus(self, title: str, body: str, key: str | None, urgency: str) -> bool:
        if self._iface is None:
            return False
        if self.body_markup:
            body = html.escape(body, quote=False)
        actions = ["default", "Open"] if key is not None else []
        # NotificationClosed signals already received are queued for us: handle them first,
        # so we do not name a bubble that is gone (harmless anyway: dunst reuses the id,
        # GNOME gives a new one).
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)
        replaces = self._ids.get(key, 0) if key else 0
        nid = self._call_notify(replaces, title, body, actions, URGENCY.get(urgency, 1))
        # A NotificationClosed the daemon sent before its reply (e.g. the bubble we are
        # replacing expired meanwhile) was queued for us during the call: handle it now,
        # while it still means the old bubble. Dunst gives the new bubble that same id, and
        # the late signal would otherwise make us forget the new one.
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)
        if nid is None:
            return False
        if replaces and nid != replaces:  # the daemon made a new bubble, the old one is gone
            self._forget(replaces)
        if key is not None:
            self._keys[nid] = key
            self._keys.move_to_end(nid)
            while len(self._keys) > MAX_TRACKED_IDS:
                self._forget(next(iter(self._keys)))
        if key:
            self._ids[key] = nid
        return True

    def _call_notify(self, replaces_id: int, title: str, body: str, actions: list[str],
                     urgency: int) -> int | None:  # fmt: skip
        """org.freedesktop.Notifications.Notify; the daemon's id, or None (logged once)."""
        try:
            nid = QMetaObject.invokeMethod(
                self._iface, "Notify", Qt.ConnectionType.DirectConnection, Q_RETURN_ARG("uint"),
                Q_ARG(str, self.app_name), Q_ARG("uint", replaces_id), Q_ARG(str, ""),
                Q_ARG(str, title), Q_ARG(str, body), Q_ARG("QStringList", actions),
                _hints_holder(urgency), Q_ARG(int, EXPIRE_DEFAULT),
            )  # fmt: skip
        except RuntimeError as exc:
            self._log_once("dbus-call", "Notify call failed: %s", exc)
            return None
        err = self._iface.lastError()
        if err.isValid() or not nid:
            self._log_once("dbus-call", "Notify call failed: %s %s", err.name(), err.message())
            return None
        return int(nid)

    def _forget(self, nid: int) -> None:
        key = self._keys.pop(nid, None)
        if key is not None and self._ids.get(key) == nid:
            del self._ids[key]

    @Slot("QDBusMessage")
    def _on_action_invoked(self, msg) -> None:
        try:
            nid, _action = msg.arguments()[:2]
        except (TypeError, ValueError):
            return
        key = self._keys.get(int(nid))
        if key is not None:
            self.activated.emit(key)

    @Slot("QDBusMessage")
    def _on_closed(self, msg) -> None:
        with contextlib.suppress(TypeError, ValueError, IndexError):
            self._forget(int(msg.arguments()[0]))

    # ------------------------------------------------------------------ tray fallback

    def _notify_tray(self, title: str, body: str, key: str | None, urgency: str,
                     msecs: int = TRAY_MESSAGE_MS) -> None:
        if self._tray is None:
            self._log_once("no-tray", "no notification service and no tray icon: %s", title)
            return
        icon = (QSystemTrayIcon.MessageIcon.Critical if urgency == "critical"
                else QSystemTrayIcon.MessageIcon.Information)  # fmt: skip
        # One balloon at a time: showMessage replaces the previous one, so a key's new
        # message replaces its old one too (and so does any other key's); a click is for
        # the message on screen, i.e. the last one. Not on macOS: see the module doc.
        self._last_key = key
        if self.backend == "macos":
            self._qt_clicks.posted()
        self._tray.showMessage(title, body, icon, msecs)

    def _on_message_clicked(self) -> None:
        if self.backend == "macos" and not self._qt_clicks.clicked():
            self.activated.emit(EVENTS_KEY)  # which one was clicked is not known
            return
        if self._last_key is not None:
            self.activated.emit(self._last_key)

    def _log_once(self, kind: str, fmt: str, *args: object) -> None:
        if kind not in self._logged:
            self._logged.add(kind)
            log.warning(fmt, *args)
