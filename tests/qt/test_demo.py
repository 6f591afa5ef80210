"""`exotray demo` end to end, offscreen: three loopback agents, the window, a clean exit
that stops every agent it started."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import wait_for


def test_demo_runs_and_cleans_up(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    p = subprocess.run([sys.executable, "-m", "exotray", "demo", "--seconds", "6"],
                       capture_output=True, text=True, timeout=60, env=env)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log
    assert log.count("listening on 127.0.0.1:") == 3
    assert log.count("exotray agent stopped") == 3
    assert "peer_up" in log and "Traceback" not in log


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
