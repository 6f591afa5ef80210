"""`exotray demo` end to end, offscreen: three loopback agents, the window, a clean exit
that stops every agent it started."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import wait_for

NAMES = ("demo-a", "demo-b", "demo-c")


def test_demo_runs_and_cleans_up(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    p = subprocess.run([sys.executable, "-m", "exotray", "demo", "--seconds", "6"],
                       capture_output=True, text=True, timeout=60, env=env)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log
    assert log.count("listening on 127.0.0.1:") == 3
    assert log.count("exotray agent stopped") == 3
    assert "peer_up" in log and "Traceback" not in log
    # Three agents, one terminal: each agent's line says whose it is (issue 34 point 19).
    lines = log.splitlines()
    for name in NAMES:
        assert any(ln.startswith(f"[{name}] ") and f"({name}, id " in ln
                   and "listening on" in ln for ln in lines), log
        assert any(ln.startswith(f"[{name}] ") and "peer_up" in ln for ln in lines), log
    agents_lines = [ln for ln in lines if " exotray.agent" in ln]
    assert agents_lines and all(ln.startswith(tuple(f"[{n}] " for n in NAMES))
                                for ln in agents_lines), log
    # and their last lines come before the demo's own
    assert log.rindex("exotray agent stopped") < log.index("demo: stopped its agents")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_everything_the_demo_started(tmp_path, sig):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = tmp_path / "demo.log"
    with open(out, "wb") as f:
        p = subprocess.Popen([sys.executable, "-m", "exotray", "demo", "--seconds", "60"],
                             stdout=f, stderr=subprocess.STDOUT, env=env)
    try:
        started = wait_for(lambda: re.search(r"demo: agents .* \(pids (\d+), (\d+), (\d+)\), "
                                             r"their files in (\S+)", out.read_text())
                           if out.read_text().count("listening on 127.0.0.1:") == 3 else None,
                           30)
        assert started, out.read_text()
        pids = [int(started.group(i)) for i in (1, 2, 3)]
        files = Path(started.group(4))
        assert files.is_dir()
        p.send_signal(sig)
        assert p.wait(20) == 0, out.read_text()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
    log = out.read_text()
    assert log.count("exotray agent stopped") == 3, log
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    assert not files.exists()
    assert "Traceback" not in log
    # Library chatter (httpx logs every request at INFO) stays out of the terminal.
    assert "HTTP Request" not in log


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


#: runs the demo as the leader of a session whose controlling terminal is its stdin, as
#: a shell in a terminal window does
_IN_A_TERMINAL = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
                  "os.execv(sys.executable, [sys.executable, '-m', 'exotray', 'demo', "
                  "'--seconds', '60'])")


def test_closing_its_terminal_stops_everything_the_demo_started(tmp_path):
    """SIGHUP, from the kernel as the demo's terminal goes away, stops the three agents
    (in sessions of their own, so the hangup reaches the demo only) and removes its
    files, as SIGINT and SIGTERM do (issue 34 point 2)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    master, slave = os.openpty()
    p = subprocess.Popen([sys.executable, "-c", _IN_A_TERMINAL], stdin=slave, stdout=slave,
                         stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    seen = b""
    pids: list[int] = []
    files = None
    try:
        deadline = time.monotonic() + 30
        started = None
        while started is None and time.monotonic() < deadline and p.poll() is None:
            if select.select([master], [], [], 0.2)[0]:
                seen += os.read(master, 65536)
            text = seen.decode(errors="replace")
            if text.count("listening on 127.0.0.1:") == 3:
                started = re.search(r"demo: agents .* \(pids (\d+), (\d+), (\d+)\), "
                                    r"their files in (\S+)", text)
        assert started, seen.decode(errors="replace")
        pids = [int(started.group(i)) for i in (1, 2, 3)]
        files = Path(started.group(4))
        assert files.is_dir()
        os.close(master)  # the terminal window closes: the kernel hangs up its session
        master = -1
        p.wait(30)
        assert p.returncode != -signal.SIGHUP, "the demo died of the hangup"
        assert not [pid for pid in pids if _alive(pid)], "agents left running"
        assert not files.exists()
    finally:
        if master >= 0:
            os.close(master)
        if p.poll() is None:
            p.kill()
            p.wait(5)
        for pid in pids:  # what a failed run left: ours, by pid
            if _alive(pid):
                os.kill(pid, signal.SIGTERM)
        if files is not None and files.name.startswith("exotray-demo-"):
            shutil.rmtree(files, ignore_errors=True)
