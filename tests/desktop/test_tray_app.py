"""The real `exotray` tray app on a real desktop: Xvfb, an XEmbed tray (trayer), a D-Bus
session with a notification daemon (dunst) and dbus-monitor. It attaches to a real agent
on loopback (mDNS off); a loopback stream saturates that agent's link, and the app's
notification must reach the daemon as a Notify call."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from harness import Desktop
from helpers import AgentProc, free_port, wait_for

from exotray.ui.demo import PacedStream


def test_tray_icon_embedded_and_saturation_notifies(tmp_path):
    pa, pb = free_port(), free_port()
    # 2 Mbit/s of "capacity" on loopback: 270 kB/s saturates it (a capacity given with
    # --capacity is no bound on what is counted: only a port's own speed is, docs/agent.md).
    a = AgentProc(tmp_path, "studio-1", pa, [pb], "--capacity", "lo=2", "--sustain", "2")
    b = AgentProc(tmp_path, "studio-2", pb, [pa])
    app = None
    try:
        a.wait_ready()
        b.wait_ready()
        assert wait_for(lambda: [lk for lk in a.get("/v1/snapshot")["links"]
                                 if lk["state"] == "up"], 5)
        with Desktop(tmp_path / "desktop", tray=True, notifications=True, monitor=True) as d:
            launched = time.monotonic()
            app = subprocess.Popen(
                [sys.executable, "-m", "exotray", "--port", str(pa), "--no-mdns",
                 "--state-dir", str(a.state)],
                env={**d.env, "QT_QPA_PLATFORM": "xcb"},
                stdout=open(tmp_path / "app.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
            )
            assert wait_for(lambda: d.tray_icon_embedded("exotray"), 15, every=0.05), (
                d.window_tree() + (tmp_path / "app.log").read_text())
            to_icon = time.monotonic() - launched
            time.sleep(2.0)  # the app has attached and polls the agent
            stream = PacedStream(270_000, on_s=8.0, off_s=60.0)  # bounded UDP on loopback
            stream.start()
            try:
                calls = wait_for(lambda: [c for c in d.notify_calls()
                                          if c.get("summary", "").startswith("Link saturated")],
                                 12, every=0.1)
            finally:
                stream.stop_event.set()
                stream.join(5)
            log = (tmp_path / "app.log").read_text()
            assert calls, f"no Notify call:\n{d.monitor_text()[-3000:]}\n{log}"
            call = calls[0]
            assert call["summary"] == "Link saturated: studio-1 ⇄ studio-2"
            assert "Loopback at" in call["body"] and "of 250 kB/s" in call["body"]
            d.screenshot(tmp_path / "desktop.png")
            app.send_signal(signal.SIGTERM)
            assert app.wait(10) == 0
            # The app attached to an agent it did not start: that agent keeps running.
            assert a.proc.poll() is None
            print(f"\nlaunch to tray icon embedded: {to_icon:.2f} s; "
                  f"Notify: {call['summary']!r} / {call['body']!r}")
    finally:
        if app is not None and app.poll() is None:
            app.kill()
            app.wait(5)
        a.close()
        b.close()


def test_icon_goes_to_a_tray_that_appears_after_the_app(tmp_path):
    """At login the app may start before the panel: with no tray at start it opens the
    window, and once a tray appears (trayer, XEmbed) the icon is embedded in it."""
    port = free_port()
    a = AgentProc(tmp_path, "studio-1", port, [])
    app = None
    try:
        a.wait_ready()
        with Desktop(tmp_path / "desktop", tray=False, notifications=False) as d:
            app = subprocess.Popen(
                [sys.executable, "-m", "exotray", "--port", str(port), "--no-mdns",
                 "--state-dir", str(a.state)],
                env={**d.env, "QT_QPA_PLATFORM": "xcb"},
                stdout=open(tmp_path / "app.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
            )
            assert wait_for(lambda: "no system tray is available" in
                            (tmp_path / "app.log").read_text(), 15), \
                (tmp_path / "app.log").read_text()
            d._start_tray()  # the panel comes up after the app
            assert wait_for(lambda: "a system tray appeared" in
                            (tmp_path / "app.log").read_text(), 15)
            assert wait_for(lambda: d.tray_icon_embedded("exotray"), 15, every=0.1), (
                d.window_tree() + (tmp_path / "app.log").read_text())
            app.send_signal(signal.SIGTERM)
            assert app.wait(10) == 0
    finally:
        if app is not None and app.poll() is None:
            app.kill()
            app.wait(5)
        a.close()
