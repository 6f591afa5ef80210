"""A throwaway Linux desktop for tests: Xvfb + private D-Bus session + trayer/dunst/dbus-monitor.

Usage::

    reason = Desktop.why_not_available(tray=True, notifications=True)
    with Desktop(tmp_path, tray=True, notifications=True, monitor=True) as d:
        subprocess.run([...], env=d.env)
        d.wait_for(lambda: d.notify_calls())

Everything is started by this class and stopped by PID in ``close()`` (also on errors while
starting). Nothing listens on TCP: Xvfb runs with ``-nolisten tcp`` and the bus is a unix
socket inside the given directory. The private bus has *no* service activation, so a Notify
call on a bus without dunst fails instead of auto-starting the system's notification daemon.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import system_tools

TRAYER_ARGS = [
    "--edge", "top", "--align", "right", "--widthtype", "pixel", "--width", "200",
    "--heighttype", "pixel", "--height", "32",
]  # fmt: skip

_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={dir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""

# Left click runs the default action (so a real click on the bubble works too); long timeout
# so the bubble is still there when a test acts on it.
_DUNSTRC = """[global]
    font = DejaVu Sans 9
    width = 300
    origin = top-right
    offset = 10x40
    mouse_left_click = do_action, close_current
    mouse_right_click = close_current
    show_indicators = no
[urgency_low]
    timeout = 60
[urgency_normal]
    timeout = 60
[urgency_critical]
    timeout = 0
"""

#: what each part runs (their Debian packages: tests/system_tools.py)
_TOOLS = ("Xvfb", "dbus-daemon", "dbus-send", "xwininfo")
_TRAY_TOOLS = ("trayer",)
_NOTIFY_TOOLS = ("dunst", "dunstctl")
_MONITOR_TOOLS = ("dbus-monitor",)
_SHOT_TOOLS = ("import",)


class DesktopError(RuntimeError):
    pass


class Desktop:
    """Context manager owning Xvfb, a private session bus and optional desktop helpers."""

    def __init__(
        self,
        workdir: str | os.PathLike[str] | None = None,
        *,
        tray: bool = False,
        notifications: bool = False,
        monitor: bool = False,
        screen: str = "1280x800x24",
        start_timeout: float = 10.0,
    ) -> None:
        self._own_tmp: tempfile.TemporaryDirectory[str] | None = None
        if workdir is None:
            self._own_tmp = tempfile.TemporaryDirectory(prefix="exotray-desktop-")
            workdir = self._own_tmp.name
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.want_tray = tray
        self.want_notifications = notifications
        self.want_monitor = monitor
        self.screen = screen
        self.start_timeout = start_timeout
        self.display: str | None = None
        self.bus_address: str | None = None
        self.env: dict[str, str] = {}
        self.monitor_log = self.dir / "dbus-monitor.log"
        self._procs: list[tuple[str, subprocess.Popen[Any]]] = []
        self._files: list[Any] = []
        #: the bus socket's directory: short, in /tmp (a unix socket's path has at most
        #: 107 bytes, and pytest's tmp_path under xdist is already ~90 long)
        self._bus_dir: str | None = None

    # ---------------------------------------------------------------- availability

    @staticmethod
    def why_not_available(
        *, tray: bool = True, notifications: bool = True, monitor: bool = True,
        screenshot: bool = False,
    ) -> str | None:  # fmt: skip
        """None when everything needed is installed, else a reason to skip."""
        if os.uname().sysname != "Linux":
            return "desktop tests need Linux (Xvfb, D-Bus)"
        tools = [*_TOOLS, *(_TRAY_TOOLS if tray else ()), *(_NOTIFY_TOOLS if notifications
                 else ()), *(_MONITOR_TOOLS if monitor else ()),
                 *(_SHOT_TOOLS if screenshot else ())]  # fmt: skip
        if (missing := system_tools.missing(*tools)) is not None:
            return f"the virtual desktop {missing}"
        # Qt's X11 plugin loads only with every xcb library it links (else Qt aborts)
        if (libs := system_tools.missing_libraries(system_tools.qt_xcb_plugin())):
            return f"Qt's X11 platform plugin {libs}"
        return None

    # ---------------------------------------------------------------- lifecycle

    def __enter__(self) -> Desktop:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        reason = self.why_not_available(
            tray=self.want_tray, notifications=self.want_notifications, monitor=self.want_monitor
        )
        if reason:
            raise DesktopError(reason)
        self._start_xvfb()
        self._start_bus()
        drop = ("WAYLAND_DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS")
        base = {k: v for k, v in os.environ.items() if k not in drop}
        base.update(
            DISPLAY=self.display or "",
            DBUS_SESSION_BUS_ADDRESS=self.bus_address or "",
            XDG_RUNTIME_DIR=str(self._runtime_dir()),
            XDG_SESSION_TYPE="x11",
            QT_QPA_PLATFORM="xcb",
            HOME=os.environ.get("HOME", str(self.dir)),
        )
        self.env = base
        if self.want_monitor:
            self._start_monitor()
        if self.want_tray:
            self._start_tray()
        if self.want_notifications:
            self._start_dunst()

    def close(self) -> None:
        """Stop every process we started, newest first, by PID."""
        for name, proc in reversed(self._procs):
            _stop(proc, name)
        self._procs.clear()
        for f in self._files:
            with contextlib.suppress(Exception):
                f.close()
        self._files.clear()
        if self._own_tmp is not None:
            with contextlib.suppress(Exception):
                self._own_tmp.cleanup()
            self._own_tmp = None
        if self._bus_dir is not None:
            shutil.rmtree(self._bus_dir, ignore_errors=True)
            self._bus_dir = None

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self._procs}

    # ---------------------------------------------------------------- starting pieces

    def _runtime_dir(self) -> Path:
        d = self.dir / "runtime"
        d.mkdir(mode=0o700, exist_ok=True)
        return d

    def _spawn(self, name: str, argv: list[str], **kw: Any) -> subprocess.Popen[Any]:
        if "stdout" not in kw or "stderr" not in kw:
            log = open(self.dir / f"{name}.log", "ab")  # noqa: SIM115 - closed in close()
            self._files.append(log)
            kw.setdefault("stdout", log)
            kw.setdefault("stderr", log)
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("env", self.env or None)
        proc = subprocess.Popen(argv, **kw)
        self._procs.append((name, proc))
        return proc

    def _start_xvfb(self) -> None:
        # -displayfd: Xvfb picks a free display number itself and writes it to the pipe
        # once it accepts connections (no race with other Xvfb instances).
        r, w = os.pipe()
        try:
            proc = self._spawn(
                "Xvfb",
                ["Xvfb", "-displayfd", str(w), "-screen", "0", self.screen, "-nolisten", "tcp",
                 "-nolisten", "local", "-noreset", "-ac"],
                pass_fds=(w,), env=None,
            )  # fmt: skip
            os.close(w)
            w = -1
            data = _read_line(r, self.start_timeout, proc, "Xvfb")
        finally:
            os.close(r)
            if w != -1:
                os.close(w)
        self.display = ":" + data.strip()

    def _start_bus(self) -> None:
        self._bus_dir = tempfile.mkdtemp(prefix="xtbus-")
        sockdir = Path(self._bus_dir)
        conf = self.dir / "session-bus.conf"
        conf.write_text(_BUS_CONFIG.format(dir=sockdir))
        proc = self._spawn(
            "dbus-daemon",
            ["dbus-daemon", f"--config-file={conf}", "--nofork", "--nopidfile",
             "--print-address=1"],
            stdout=subprocess.PIPE, env=None,
        )  # fmt: skip
        assert proc.stdout is not None
        line = _read_line(proc.stdout.fileno(), self.start_timeout, proc, "dbus-daemon")
        self.bus_address = line.strip()

    def _start_monitor(self) -> None:
        out = open(self.monitor_log, "wb")  # noqa: SIM115 - closed in close()
        self._files.append(out)
        self._spawn(
            "dbus-monitor",
            ["dbus-monitor", "--address", self.bus_address or "",
             "interface='org.freedesktop.Notifications'", "type='method_return'",
             "type='error'"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        # dbus-monitor prints the NameAcquired signal once it is registered as a monitor.
        self.wait_for(lambda: "NameAcquired" in self.monitor_text(), what="dbus-monitor to attach")

    def _start_tray(self) -> None:
        self._spawn("trayer", ["trayer", *TRAYER_ARGS])
        self.wait_for(lambda: self._selection_owner("_NET_SYSTEM_TRAY_S0"), what="trayer")

    def _start_dunst(self) -> None:
        rc = self.dir / "dunstrc"
        rc.write_text(_DUNSTRC)
        self._spawn("dunst", ["dunst", "-config", str(rc)])
        self.wait_for(
            lambda: self.service_registered("org.freedesktop.Notifications"),
            what="dunst to own org.freedesktop.Notifications",
        )

    # ---------------------------------------------------------------- helpers

    def wait_for(
        self, cond: Callable[[], Any], timeout: float | None = None, what: str = "condition",
        interval: float = 0.05,
    ) -> Any:  # fmt: skip
        deadline = time.monotonic() + (self.start_timeout if timeout is None else timeout)
        while True:
            value = cond()
            if value:
                return value
            for name, proc in self._procs:
                if proc.poll() is not None:
                    raise DesktopError(f"{name} exited ({proc.returncode}) waiting for {what}"
                                       f"; logs in {self.dir}")  # fmt: skip
            if time.monotonic() > deadline:
                raise DesktopError(f"timed out waiting for {what}; logs in {self.dir}")
            time.sleep(interval)

    def run(self, argv: list[str], timeout: float = 10.0, check: bool = False,
            **kw: Any) -> subprocess.CompletedProcess[str]:  # fmt: skip
        return subprocess.run(argv, env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=check, **kw)  # fmt: skip

    def service_registered(self, name: str) -> bool:
        r = self.run(
            ["dbus-send", "--bus=" + (self.bus_address or ""), "--print-reply",
             "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
             "org.freedesktop.DBus.NameHasOwner", f"string:{name}"],
        )  # fmt: skip
        return r.returncode == 0 and "boolean true" in r.stdout

    def _selection_owner(self, atom: str) -> bool:
        # xprop cannot query selection owners; xwininfo -root -tree lists trayer's window
        # only once it is mapped, which is after it owns the tray selection.
        return "trayer" in self.window_tree().lower() or "panel" in self.window_tree().lower()

    def window_tree(self) -> str:
        r = self.run(["xwininfo", "-root", "-tree"])
        return r.stdout

    def windows(self) -> list[dict[str, Any]]:
        """Parse ``xwininfo -root -tree`` into [{id, name, class, depth, parents: [...]}]."""
        out: list[dict[str, Any]] = []
        stack: list[tuple[int, dict[str, Any]]] = []
        pat = re.compile(r"^(\s*)(0x[0-9a-f]+) (\(has no name\)|\"(?:[^\"\\]|\\.)*\")"
                         r"(?:: \((.*?)\))?\s+(\d+)x(\d+)\+(-?\d+)\+(-?\d+)")  # fmt: skip
        for line in self.window_tree().splitlines():
            m = pat.match(line)
            if not m:
                continue
            indent = len(m.group(1))
            name = "" if m.group(3) == "(has no name)" else m.group(3)[1:-1]
            klass = re.findall(r"\"([^\"]*)\"", m.group(4) or "")
            while stack and stack[-1][0] >= indent:
                stack.pop()
            win = {
                "id": m.group(2), "name": name, "class": klass,
                "size": (int(m.group(5)), int(m.group(6))),
                "parents": [w for _, w in stack],
            }  # fmt: skip
            out.append(win)
            stack.append((indent, win))
        return out

    def tray_icon_embedded(self, window_name_substring: str) -> bool:
        """True when a window whose name or WM_CLASS contains the substring is a descendant
        of trayer's window (i.e. it was reparented into the XEmbed tray)."""
        needle = window_name_substring.lower()
        for win in self.windows():
            labels = [win["name"], *win["class"]]
            if not any(needle in s.lower() for s in labels):
                continue
            for parent in win["parents"]:
                plabels = [parent["name"], *parent["class"]]
                if any("trayer" in s.lower() or s.lower() == "panel" for s in plabels):
                    return True
        return False

    def screenshot(self, path: str | os.PathLike[str]) -> Path:
        path = Path(path)
        self.run(["import", "-window", "root", str(path)], check=True, timeout=30)
        return path

    # ---------------------------------------------------------------- dbus-monitor

    def monitor_text(self) -> str:
        try:
            return self.monitor_log.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def monitor_messages(self) -> list[dict[str, Any]]:
        return parse_monitor(self.monitor_text())

    def notify_calls(self) -> list[dict[str, Any]]:
        """Notify method calls seen on the bus, in order, as dicts with app_name, replaces_id,
        app_icon, summary, body, actions, hints, expire_timeout, types (dbus-monitor type
        names of the 8 arguments), time and, once the daemon replied, id."""
        msgs = self.monitor_messages()
        replies = {m["reply_serial"]: m for m in msgs
                   if m["kind"] in ("method return", "error") and "reply_serial" in m}  # fmt: skip
        calls = []
        for m in msgs:
            if m["kind"] != "method call" or m.get("member") != "Notify":
                continue
            args = m["args"]
            names = ["app_name", "replaces_id", "app_icon", "summary", "body", "actions",
                     "hints", "expire_timeout"]  # fmt: skip
            call = {n: (a["value"] if a else None)
                    for n, a in zip(names, args + [None] * 8, strict=False)}  # fmt: skip
            call["types"] = [a["type"] for a in args]
            hints = args[6] if len(args) > 6 else None
            call["hint_types"] = dict(hints.get("inner_types", {})) if hints else {}
            call["time"] = m.get("time")
            call["serial"] = m.get("serial")
            reply = replies.get(m.get("serial"))
            if reply and reply["kind"] == "error":
                call["error"] = reply.get("error_name")
            elif reply and reply["args"]:
                call["id"] = reply["args"][0]["value"]
            calls.append(call)
        return calls

    def signals(self, member: str) -> list[dict[str, Any]]:
        return [m for m in self.monitor_messages()
                if m["kind"] == "signal" and m.get("member") == member]  # fmt: skip


class PrivateBus:
    """Just a private, empty session bus (no Xvfb): ``with PrivateBus() as address: ...``."""

    def __init__(self, workdir: str | os.PathLike[str] | None = None) -> None:
        self._desk = Desktop(workdir)
        self.address: str | None = None

    def __enter__(self) -> str:
        if (missing := system_tools.missing("dbus-daemon")) is not None:
            raise DesktopError(missing)
        try:
            self._desk._start_bus()
        except BaseException:
            self._desk.close()
            raise
        self.address = self._desk.bus_address
        return self.address or ""

    def __exit__(self, *exc: object) -> None:
        self._desk.close()


# -------------------------------------------------------------------- fake notification daemon

_FAKE_DAEMON = r"""
import json, sys
from gi.repository import Gio, GLib

SERVICE = IFACE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
XML = '''<node><interface name="org.freedesktop.Notifications">
  <method name="Notify">
    <arg type="s" direction="in"/><arg type="u" direction="in"/><arg type="s" direction="in"/>
    <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="as" direction="in"/>
    <arg type="a{sv}" direction="in"/><arg type="i" direction="in"/>
    <arg type="u" direction="out"/>
  </method>
  <method name="CloseNotification"><arg type="u" direction="in"/></method>
  <method name="GetCapabilities"><arg type="as" direction="out"/></method>
  <signal name="ActionInvoked"><arg type="u"/><arg type="s"/></signal>
  <signal name="NotificationClosed"><arg type="u"/><arg type="u"/></signal>
</interface></node>'''

mode = sys.argv[2]  # "dunst": an unknown replaces_id is reused; "new": it gets a new id
capabilities = json.loads(sys.argv[3]) if len(sys.argv) > 3 else ["actions", "body"]
state = {"next": 1, "open": {}, "expire_before_replace": False}
loop = GLib.MainLoop()


def out(**kw):
    print(json.dumps(kw), flush=True)


def emit(member, fmt, args):
    conn.emit_signal(None, PATH, IFACE, member, GLib.Variant(fmt, args))


def close(nid, reason):
    if state["open"].pop(nid, None) is not None:
        emit("NotificationClosed", "(uu)", (nid, reason))
        out(event="closed", id=nid, reason=reason)


def on_call(_conn, _sender, _path, _iface, method, params, inv):
    if method == "Notify":
        app, rid, _icon, summary, body, actions, hints, expire = params.unpack()
        hint_types = {}
        hv = params.get_child_value(6)
        for i in range(hv.n_children()):
            entry = hv.get_child_value(i)
            hint_types[entry.get_child_value(0).get_string()] = (
                entry.get_child_value(1).get_variant().get_type_string())
        if rid and state["expire_before_replace"]:
            # the bubble expires just before the replacement: the signal precedes the reply
            state["expire_before_replace"] = False
            close(rid, 1)
        if rid and (rid in state["open"] or mode == "dunst"):
            nid = rid
        else:
            nid = state["next"]
        state["next"] = max(state["next"], nid + 1)
        state["open"][nid] = summary
        out(event="notify", app_name=app, replaces_id=rid, summary=summary, body=body,
            actions=actions, hints=hints, hint_types=hint_types, expire_timeout=expire,
            id=nid, signature=params.get_type_string())
        inv.return_value(GLib.Variant("(u)", (nid,)))
    elif method == "CloseNotification":
        close(params.unpack()[0], 3)
        inv.return_value(None)
    elif method == "GetCapabilities":
        inv.return_value(GLib.Variant("(as)", (capabilities,)))


def on_stdin(_fd, _cond):
    line = sys.stdin.readline()
    if not line:
        loop.quit()
        return False
    cmd = json.loads(line)
    if cmd["cmd"] == "close":
        close(cmd["id"], cmd.get("reason", 2))
    elif cmd["cmd"] == "invoke":
        emit("ActionInvoked", "(us)", (cmd["id"], cmd.get("action", "default")))
        out(event="invoked", id=cmd["id"])
    elif cmd["cmd"] == "expire_before_replace":
        state["expire_before_replace"] = True
    out(event="ack", cmd=cmd["cmd"], open=sorted(state["open"]))
    return True


conn = Gio.DBusConnection.new_for_address_sync(
    sys.argv[1], Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
    | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
conn.register_object(PATH, Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0], on_call, None, None)
Gio.bus_own_name_on_connection(conn, SERVICE, Gio.BusNameOwnerFlags.NONE,
                               lambda *a: out(event="ready"), lambda *a: loop.quit())
GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_IN | GLib.IO_HUP, on_stdin)
loop.run()
"""


class FakeNotifications:
    """A scripted org.freedesktop.Notifications on a bus (system python3 + GDBus, which checks
    Notify's signature as strictly as dunst). ``mode="dunst"`` reuses an unknown
    ``replaces_id`` like dunst; ``mode="new"`` gives a new id then, like GNOME Shell.

    ``events`` holds what it did, as dicts (event = ready | notify | closed | invoked | ack).
    ``close_bubble(id)`` / ``invoke(id)`` make it emit NotificationClosed / ActionInvoked;
    ``expire_before_replace()`` makes it close the bubble the next Notify replaces just before
    answering that Notify (so the signal reaches the client before the reply).
    ``capabilities`` is what GetCapabilities answers (e.g. add "body-markup", as dunst,
    GNOME and KDE do)."""

    PYTHON = "/usr/bin/python3"

    @classmethod
    def why_not_available(cls) -> str | None:
        if (missing := system_tools.missing("dbus-daemon")) is not None:
            return missing
        if not Path(cls.PYTHON).exists():
            return f"needs {cls.PYTHON} with GObject (Debian/Ubuntu: apt install python3-gi)"
        r = subprocess.run([cls.PYTHON, "-c", "from gi.repository import Gio"],
                           capture_output=True, check=False)  # fmt: skip
        return None if r.returncode == 0 else \
            "needs python3-gi (Debian/Ubuntu: apt install python3-gi)"

    def __init__(self, address: str, mode: str = "dunst", timeout: float = 10.0,
                 capabilities: tuple[str, ...] = ("actions", "body")) -> None:
        import threading

        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._proc = subprocess.Popen(
            [self.PYTHON, "-u", "-c", _FAKE_DAEMON, address, mode, json.dumps(capabilities)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            with contextlib.suppress(ValueError):
                self.events.append(json.loads(line))

    def __enter__(self) -> FakeNotifications:
        try:
            self.wait_for(lambda: self.of("ready"), "the fake daemon to own its name")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()  # EOF: the daemon quits by itself
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=3)
        _stop(self._proc, "fake notification daemon")

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in list(self.events) if e["event"] == kind]

    def notifies(self) -> list[dict[str, Any]]:
        return self.of("notify")

    def open_ids(self) -> list[int]:
        """Ids on "screen" as of the last command's ack (see ``command``)."""
        self.command("status")
        return self.of("ack")[-1]["open"]

    def wait_for(self, cond: Callable[[], Any], what: str,
                 pump: Callable[[float], Any] = time.sleep) -> Any:  # fmt: skip
        """Poll `cond` until true; `pump(0.01)` in between (e.g. to run a Qt event loop)."""
        deadline = time.monotonic() + self.timeout
        while True:
            value = cond()
            if value:
                return value
            if self._proc.poll() is not None:
                err = self._proc.stderr.read() if self._proc.stderr else ""
                raise DesktopError(f"fake daemon exited ({self._proc.returncode}): {err}")
            if time.monotonic() > deadline:
                raise DesktopError(f"timed out waiting for {what}; events: {self.events}")
            pump(0.01)

    def command(self, cmd: str, **kw: Any) -> None:
        """Send a command; returns once the daemon acknowledged it, i.e. it is done."""
        assert self._proc.stdin is not None
        n = len(self.of("ack"))
        self._proc.stdin.write(json.dumps({"cmd": cmd, **kw}) + "\n")
        self._proc.stdin.flush()
        self.wait_for(lambda: len(self.of("ack")) > n, f"the daemon to do {cmd}")

    def close_bubble(self, nid: int, reason: int = 2) -> None:
        self.command("close", id=nid, reason=reason)

    def invoke(self, nid: int, action: str = "default") -> None:
        self.command("invoke", id=nid, action=action)

    def expire_before_replace(self) -> None:
        self.command("expire_before_replace")


# -------------------------------------------------------------------- dbus-monitor parsing

_HEADER = re.compile(r"^(method call|method return|signal|error) (.*)$")
_SCALAR = re.compile(r"^(string|object path|signature|byte|boolean|int16|uint16|int32|uint32|"
                     r"int64|uint64|double|unix fd) (.*)$")  # fmt: skip


def parse_monitor(text: str) -> list[dict[str, Any]]:
    """Parse dbus-monitor's default (profile-less) output into messages."""
    msgs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    body: list[str] = []

    def finish() -> None:
        if cur is not None:
            cur["args"] = _parse_values(body, 0, len(body), 3)[0]
            msgs.append(cur)

    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            finish()
            body = []
            cur = {"kind": m.group(1)}
            for part in re.split(r"[ ;]+", m.group(2)):
                if "=" in part:
                    k, v = part.split("=", 1)
                    cur[k] = v
            continue
        if cur is not None:
            body.append(line)
    finish()
    return msgs


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _parse_values(lines: list[str], i: int, end: int, indent: int
                  ) -> tuple[list[dict[str, Any]], int]:  # fmt: skip
    """Parse values at exactly `indent` spaces; returns (values, next index)."""
    values: list[dict[str, Any]] = []
    while i < end:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        ind = _indent(line)
        if ind < indent:
            break
        stripped = line.strip()
        if stripped in (")", "]"):
            break
        v, i = _parse_one(lines, i, end, ind)
        values.append(v)
    return values, i


def _parse_one(lines: list[str], i: int, end: int, indent: int) -> tuple[dict[str, Any], int]:
    s = lines[i].strip()
    if s.startswith("variant"):
        rest = s[len("variant") :].strip()
        inner_lines = [" " * (indent + 3) + rest, *lines[i + 1 : end]]
        v, j = _parse_one(inner_lines, 0, len(inner_lines), indent + 3)
        return {"type": "variant", "value": v["value"], "inner": v["type"]}, i + j
    if s in ("array [", "struct {", "dict entry("):
        closer = {"array [": "]", "struct {": "}", "dict entry(": ")"}[s]
        items, j = _parse_values(lines, i + 1, end, indent + 3)
        # skip to the closer at our indent
        while j < end and not (lines[j].strip() == closer and _indent(lines[j]) == indent):
            j += 1
        kind = {"]": "array", "}": "struct", ")": "dict entry"}[closer]
        if kind == "dict entry":
            types = [it.get("inner", it["type"]) for it in items]
            return {"type": kind, "value": [it["value"] for it in items], "types": types}, j + 1
        if kind == "array" and items and all(it["type"] == "dict entry" for it in items):
            value: Any = {it["value"][0]: it["value"][1] for it in items}
            inner = {it["value"][0]: it["types"][1] for it in items}
            return {"type": "dict", "value": value, "inner_types": inner}, j + 1
        return {"type": kind, "value": [it["value"] for it in items]}, j + 1
    if s == "array [" or s == "array []" or s.startswith("array ["):
        return {"type": "array", "value": []}, i + 1
    m = _SCALAR.match(s)
    if not m:
        return {"type": "unknown", "value": s}, i + 1
    typ, raw = m.group(1), m.group(2)
    if typ in ("string", "object path", "signature"):
        # Strings may contain newlines; dbus-monitor prints them raw, so keep consuming
        # lines until the closing quote ends a line.
        text = raw
        j = i + 1
        while not (len(text) >= 2 and text.endswith('"')) and j < end:
            text += "\n" + lines[j]
            j += 1
        return {"type": typ, "value": text[1:-1]}, j
    if typ == "boolean":
        return {"type": typ, "value": raw == "true"}, i + 1
    if typ == "double":
        return {"type": typ, "value": float(raw)}, i + 1
    if typ == "byte":
        return {"type": typ, "value": int(raw, 0)}, i + 1
    try:
        return {"type": typ, "value": int(raw)}, i + 1
    except ValueError:
        return {"type": typ, "value": raw}, i + 1


# -------------------------------------------------------------------- process utilities


def _read_line(fd: int, timeout: float, proc: subprocess.Popen[Any], what: str) -> str:
    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise DesktopError(f"{what} did not start within {timeout}s")
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise DesktopError(f"{what} exited early (rc={proc.poll()})")
            buf += chunk
        elif proc.poll() is not None:
            raise DesktopError(f"{what} exited early (rc={proc.returncode})")
    return buf.split(b"\n", 1)[0].decode()


def _stop(proc: subprocess.Popen[Any], name: str, grace: float = 3.0) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace)
    for stream in (proc.stdout, proc.stderr, proc.stdin):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()
