"""Notifier and tray icon against a real desktop: Xvfb, D-Bus session, dunst, trayer.

Qt runs in a subprocess (QT_QPA_PLATFORM=xcb on the Xvfb display), never in the pytest
process, which keeps its offscreen platform.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from harness import Desktop

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = "Link saturated"
BODY = "studio-1 ⇄ studio-2 …"

NOTIFY_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    from exotray.ui.tray.notify import Notifier

    app = QApplication(sys.argv)
    n = Notifier(app_name="exotray")
    print("BACKEND", n.backend, flush=True)
    n.activated.connect(lambda key: (print("ACTIVATED", key, flush=True), app.quit()))
    def go():
        print("NOTIFY_AT", repr(time.time()), flush=True)
        n.notify(sys.argv[1], sys.argv[2], key="L1", urgency="normal")
        print("NOTIFIED", repr(time.time()), flush=True)
    QTimer.singleShot(0, go)
    QTimer.singleShot(int(float(sys.argv[3]) * 1000), app.quit)
    app.exec()
    n.close()
    print("EXIT", flush=True)
    """
)

# Notifies on request: each stdin line "key<TAB>title<TAB>body" -> notify(), then "DONE <n>".
SEQUENCE_SCRIPT = textwrap.dedent(
    """
    import sys
    from PySide6.QtCore import QSocketNotifier
    from PySide6.QtWidgets import QApplication
    from exotray.ui.tray.notify import Notifier

    app = QApplication(sys.argv)
    n = Notifier(app_name="exotray")
    print("BACKEND", n.backend, flush=True)
    n.activated.connect(lambda key: print("ACTIVATED", key, flush=True))
    done = 0
    def line():
        global done
        text = sys.stdin.readline()
        if not text:
            app.quit()
            return
        key, title, body = text.rstrip("\\n").split("\\t")
        n.notify(title, body, key=key, urgency="normal")
        done += 1
        print("DONE", done, flush=True)
    sn = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    sn.activated.connect(line)
    app.exec()
    n.close()
    print("EXIT", flush=True)
    """
)

TRAY_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
    from PySide6.QtWidgets import QApplication, QSystemTrayIcon

    app = QApplication(sys.argv)
    app.setApplicationName("exotray-traytest")
    print("AVAILABLE", QSystemTrayIcon.isSystemTrayAvailable(), flush=True)
    pix = QPixmap(22, 22)
    pix.fill(QColor("#1e88e5"))
    p = QPainter(pix)
    p.fillRect(5, 5, 12, 12, QColor("#ffb300"))
    p.end()
    tray = QSystemTrayIcon(QIcon(pix))
    tray.setToolTip("exotray test")
    print("SHOW_AT", repr(time.monotonic()), flush=True)
    tray.show()
    for w in app.topLevelWidgets():
        print("TOPLEVEL", type(w).__name__, w.objectName(), flush=True)
    QTimer.singleShot(int(float(sys.argv[1]) * 1000), app.quit)
    app.exec()
    print("EXIT", flush=True)
    """
)


def _spawn(desktop: Desktop, script: str, *args: str, stdin: Any = None
           ) -> subprocess.Popen[str]:  # fmt: skip
    env = dict(desktop.env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["QT_QPA_PLATFORM"] = "xcb"
    env.pop("PYTEST_CURRENT_TEST", None)
    return subprocess.Popen(
        [sys.executable, "-u", "-c", script, *args], env=env, cwd=str(ROOT), stdin=stdin,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


class _Lines:
    """Non-blocking-ish reader for a child's stdout lines."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        import threading

        self.proc = proc
        self.lines: list[str] = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def find(self, prefix: str) -> str | None:
        return next((ln for ln in self.lines if ln.startswith(prefix)), None)

    def text(self) -> str:
        return "\n".join(self.lines)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def test_notify_over_dbus_and_click_through_dunst(tmp_path):
    with Desktop(tmp_path, notifications=True, monitor=True) as d:
        proc = _spawn(d, NOTIFY_SCRIPT, SUMMARY, BODY, "20")
        try:
            out = _Lines(proc)
            d.wait_for(lambda: out.find("NOTIFIED") or proc.poll() is not None,
                       timeout=20, what="the child to notify")  # fmt: skip
            assert out.find("BACKEND") == "BACKEND dbus", out.text()

            calls = d.wait_for(lambda: [c for c in d.notify_calls() if c.get("id")],
                               timeout=10, what="Notify call + reply in dbus-monitor")  # fmt: skip
            call = calls[-1]
            assert call["summary"] == SUMMARY
            assert call["body"] == BODY
            assert call["app_name"] == "exotray"
            # exactly the spec's signature (susssasa{sv}i); dunst rejects anything else
            assert call["types"] == ["string", "uint32", "string", "string", "string",
                                     "array", "dict", "int32"], call  # fmt: skip
            assert call["actions"] == ["default", "Open"]
            assert call["hints"] == {"urgency": 1}
            assert call["hint_types"] == {"urgency": "byte"}
            assert call["expire_timeout"] == -1
            notify_at = float(out.find("NOTIFY_AT").split()[1])
            latency = float(call["time"]) - notify_at
            blocked = float(out.find("NOTIFIED").split()[1]) - notify_at
            print(
                f"notify() -> Notify on the bus: {latency * 1000:.1f} ms; "
                f"notify() returned after {blocked * 1000:.1f} ms"
            )

            # dunst shows it; "dunstctl action 0" runs the default action of the first
            # displayed notification, which makes dunst emit ActionInvoked(id, "default").
            d.wait_for(lambda: d.run(["dunstctl", "count", "displayed"]).stdout.strip() == "1",
                       timeout=10, what="dunst to display the notification")  # fmt: skip
            d.screenshot(tmp_path / "notification.png")
            r = d.run(["dunstctl", "action", "0"])
            assert r.returncode == 0, r.stderr

            d.wait_for(lambda: out.find("ACTIVATED"), timeout=10,
                       what="activated signal in the child")  # fmt: skip
            assert out.find("ACTIVATED") == "ACTIVATED L1"
            sigs = d.signals("ActionInvoked")
            assert sigs and sigs[-1]["args"][0]["value"] == call["id"]
            assert sigs[-1]["args"][1]["value"] == "default"
            proc.wait(timeout=10)
            assert out.find("EXIT"), out.text()
        finally:
            _stop(proc)


def _dunst_count(d: Desktop, which: str) -> int:
    r = d.run(["dunstctl", "count", which])
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip())


def _settled_displayed(d: Desktop) -> int:
    """Bubbles on screen once dunst has moved every incoming notification out of waiting."""
    d.wait_for(lambda: _dunst_count(d, "waiting") == 0, timeout=10,
               what="dunst to display what it received")  # fmt: skip
    return _dunst_count(d, "displayed")


def test_cleared_replaces_saturated_bubble_and_links_are_independent(tmp_path):
    with Desktop(tmp_path, notifications=True, monitor=True) as d:
        proc = _spawn(d, SEQUENCE_SCRIPT, stdin=subprocess.PIPE)
        out = _Lines(proc)

        def send(key: str, title: str, body: str) -> dict[str, Any]:
            """notify() in the child; the Notify call and dunst's reply, from dbus-monitor."""
            assert proc.stdin is not None
            n = len(d.notify_calls())
            proc.stdin.write(f"{key}\t{title}\t{body}\n")
            proc.stdin.flush()
            calls = d.wait_for(lambda: [c for c in d.notify_calls()[n:] if c.get("id")],
                               timeout=10, what=f"Notify for {key} + reply")  # fmt: skip
            assert len(calls) == 1, calls
            return calls[0]

        try:
            d.wait_for(lambda: out.find("BACKEND") or proc.poll() is not None, timeout=20,
                       what="the child to start")  # fmt: skip
            assert out.find("BACKEND") == "BACKEND dbus", out.text()

            sat = send("L1", "Link saturated: a ⇄ b", "eth0 at 97 %")
            assert sat["replaces_id"] == 0
            assert sat["hints"] == {"urgency": 1} and sat["expire_timeout"] == -1
            d.wait_for(lambda: _dunst_count(d, "displayed") == 1, timeout=10,
                       what="dunst to display the saturation")  # fmt: skip

            clear = send("L1", "Link back to normal: a ⇄ b", "eth0 at 12 %")
            assert clear["replaces_id"] == sat["id"]  # the clear names the saturation bubble
            assert clear["id"] == sat["id"]
            assert _settled_displayed(d) == 1  # one bubble for the link, not two

            other = send("L2", "Link saturated: a ⇄ c", "eth1 at 95 %")
            assert other["replaces_id"] == 0 and other["id"] != sat["id"]
            assert _settled_displayed(d) == 2  # another link: its own bubble

            # a click on the replaced bubble is still the link's
            assert d.run(["dunstctl", "action", "0"]).returncode == 0  # the first bubble
            sigs = d.wait_for(lambda: out.find("ACTIVATED") and d.signals("ActionInvoked"),
                              timeout=10, what="ActionInvoked + activated")  # fmt: skip
            invoked = sigs[-1]["args"][0]["value"]
            expected = {sat["id"]: "L1", other["id"]: "L2"}[invoked]
            assert out.find("ACTIVATED") == f"ACTIVATED {expected}", out.text()

            # what was on screen: the clear and L2's saturation; the replaced one never was
            d.run(["dunstctl", "close-all"], check=True)
            d.wait_for(lambda: _dunst_count(d, "displayed") == 0, timeout=10,
                       what="dunst to close all")  # fmt: skip
            history = json.loads(d.run(["dunstctl", "history"], check=True).stdout)
            summaries = sorted(h["summary"]["data"] for h in history["data"][0])
            assert summaries == ["Link back to normal: a ⇄ b", "Link saturated: a ⇄ c"]

            proc.stdin.close()
            proc.wait(timeout=10)
            assert out.find("EXIT"), out.text()
        finally:
            _stop(proc)


def test_tray_icon_embeds_in_trayer(tmp_path):
    with Desktop(tmp_path, tray=True) as d:
        proc = _spawn(d, TRAY_SCRIPT, "20")
        try:
            out = _Lines(proc)
            d.wait_for(lambda: out.find("SHOW_AT") or proc.poll() is not None,
                       timeout=20, what="the child to show the icon")  # fmt: skip
            assert out.find("AVAILABLE") == "AVAILABLE True", out.text()
            show_at = float(out.find("SHOW_AT").split()[1])  # same CLOCK_MONOTONIC
            d.wait_for(lambda: d.tray_icon_embedded("exotray-traytest"), timeout=10,
                       interval=0.01, what="the icon inside trayer")  # fmt: skip
            print(f"tray.show() -> embedded seen: {(time.monotonic() - show_at) * 1000:.0f} ms")
            if Desktop.why_not_available(screenshot=True) is None:
                shot = d.screenshot(tmp_path / "tray.png")
                assert shot.stat().st_size > 0
        finally:
            _stop(proc)
