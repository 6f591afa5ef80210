"""One tray app per user and agent (issue 34 point 14): a second `exotray` shows the
first one's window and exits 0, starting no second icon and no agent."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from PySide6.QtCore import QDir

from exotray.ui.tray.instance import SingleInstance, instance_name

ROOT = Path(__file__).resolve().parents[2]


def test_the_second_app_asks_the_first_to_show_itself(qtbot, tmp_path):
    name = instance_name(52999, tmp_path)
    first, second = SingleInstance(name), SingleInstance(name)
    try:
        assert first.claim()
        with qtbot.waitSignal(first.showRequested, timeout=5000):
            assert not second.claim()
    finally:
        first.release()
    third = SingleInstance(name)  # the first quit: the next app is the first again
    assert third.claim()
    third.release()


def test_another_agent_has_its_own_app(tmp_path):
    a = instance_name(52480, tmp_path / "a")
    assert a != instance_name(52480, tmp_path / "b") and a != instance_name(52481, tmp_path / "a")
    assert a == instance_name(52480, tmp_path / "a" / ".." / "a")


def test_a_crashed_apps_socket_is_taken_over(tmp_path):
    name = instance_name(52998, tmp_path)
    path = os.path.join(QDir.tempPath(), name)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)  # a socket file nobody listens on, as a killed app leaves it
    stale.close()
    try:
        inst = SingleInstance(name)
        assert inst.claim()
        inst.release()
    finally:
        if os.path.exists(path):
            os.unlink(path)


def test_a_second_exotray_process_exits_and_the_first_shows(tmp_path):
    """The real command: `exotray --port P --state-dir D` while an app holds that agent's
    name exits 0 at once, saying so, and the first app is asked to show its window."""
    port, state = 52997, tmp_path / "state"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from pathlib import Path
            from PySide6.QtCore import QTimer
            from PySide6.QtWidgets import QApplication
            from exotray.ui.tray.instance import SingleInstance, instance_name
            app = QApplication([])
            inst = SingleInstance(instance_name({port}, Path({str(state)!r})))
            assert inst.claim()
            inst.showRequested.connect(lambda: (print("shown", flush=True), app.quit()))
            print("ready", flush=True)
            QTimer.singleShot(30_000, app.quit)
            app.exec()
            inst.release()
            """)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    try:
        assert holder.stdout.readline().strip() == "ready"
        second = subprocess.run(
            [sys.executable, "-m", "exotray", "--no-mdns", "--port", str(port), "--state-dir",
             str(state)],  # (--no-mdns: were the check gone, its agent would announce nothing)
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
        assert second.returncode == 0, second.stderr
        assert "already running" in second.stderr
        assert "agent: starting" not in second.stderr
        assert holder.stdout.readline().strip() == "shown"
    finally:
        holder.kill()
        holder.wait(timeout=10)
