"""Build the Linux bundle with packaging/linux/build.sh and run it (slow: about a minute).

Skipped unless PyInstaller is installed (pip install -e '.[package]'); set
EXOTRAY_SKIP_BUNDLE=1 to skip it anyway. The frozen agent runs with mDNS off on loopback.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from helpers import free_port

import exotray
from exotray.ui.tray import summary

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux bundle"),
    pytest.mark.skipif(os.environ.get("EXOTRAY_SKIP_BUNDLE") == "1",
                       reason="EXOTRAY_SKIP_BUNDLE=1"),
    pytest.mark.skipif(importlib.util.find_spec("PyInstaller") is None,
                       reason="PyInstaller is not installed (pip install -e '.[package]')"),
    pytest.mark.needs("objdump", "Qt"),  # PyInstaller reads libraries' dependencies with
                                         # objdump; the bundle's self-test draws with Qt
]


@pytest.mark.timeout(900)
def test_linux_bundle_builds_and_runs(tmp_path):
    dist, work = tmp_path / "dist", tmp_path / "work"
    env = {**os.environ, "PYTHON": sys.executable,
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "st"),
           "QT_QPA_PLATFORM": "offscreen"}
    env.pop("EXOTRAY_BUNDLE_SELFTEST", None)
    r = subprocess.run([str(ROOT / "packaging" / "linux" / "build.sh"), "--dist", str(dist),
                        "--work", str(work), "--no-tarball"],
                       capture_output=True, text=True, timeout=840, env=env)
    assert r.returncode == 0, r.stderr[-4000:]
    exe = dist / "exotray" / "exotray"

    got = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                         env=env)
    assert got.stdout.strip() == f"exotray {exotray.__version__}"

    # Every icon loads from the bundle (the launcher's self-test renders them offscreen).
    st = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                        env={**env, "EXOTRAY_BUNDLE_SELFTEST": "1"})
    assert st.returncode == 0, st.stdout + st.stderr
    # the app icon, and every tray state plain and as a macOS template
    assert st.stdout.count("ok ") == 1 + 2 * len(summary.HEALTH) and str(dist) in st.stdout

    # The frozen agent: loopback only, mDNS off, answers, stops cleanly on SIGTERM.
    port = free_port()
    agent = subprocess.Popen(
        [str(exe), "agent", "--no-mdns", "--bind", "127.0.0.1", "--port", str(port),
         "--state-dir", str(tmp_path / "state")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        snap = None
        deadline = time.monotonic() + 20
        while snap is None and time.monotonic() < deadline and agent.poll() is None:
            try:
                resp = httpx.get(f"http://127.0.0.1:{port}/v1/snapshot", timeout=1,
                                 trust_env=False)
                snap = resp.json() if resp.status_code == 200 else None
            except httpx.HTTPError:
                time.sleep(0.1)
        assert snap is not None, "the frozen agent never answered /v1/snapshot"
        assert snap["schema"] == 1 and snap["node"]["version"] == exotray.__version__
        status = subprocess.run([str(exe), "status", "--port", str(port)],
                                capture_output=True, text=True, timeout=30, env=env)
        assert status.returncode == 0 and "mDNS is off" in status.stdout, status.stderr
        time.sleep(max(0.0, 5 - (time.monotonic() - (deadline - 20))))
        assert agent.poll() is None, "the frozen agent died"
        agent.send_signal(signal.SIGTERM)
        _, err = agent.communicate(timeout=15)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()
    assert agent.returncode == 0, err[-3000:]
    assert "exotray agent stopped" in err
    assert (tmp_path / "state" / "node_id").exists()
