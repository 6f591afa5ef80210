"""`exotray demo` end to end, offscreen: three loopback agents, the window, a clean exit
that stops every agent it started."""

from __future__ import annotations

import os
import subprocess
import sys


def test_demo_runs_and_cleans_up(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    p = subprocess.run([sys.executable, "-m", "exotray", "demo", "--seconds", "6"],
                       capture_output=True, text=True, timeout=60, env=env)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log
    assert log.count("listening on 127.0.0.1:") == 3
    assert log.count("exotray agent stopped") == 3
    assert "peer_up" in log and "Traceback" not in log
