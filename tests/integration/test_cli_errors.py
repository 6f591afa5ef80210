"""The command line as a new user meets it: wrong input and missing pieces end with one
clear line and a documented exit status, never a traceback or a Qt abort."""

from __future__ import annotations

import os
import subprocess
import sys

from exotray.core.settings import EXIT_CONFIG


def run(*args: str, env: dict[str, str] | None = None,
        timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exotray", *args], capture_output=True,
                          text=True, timeout=timeout, env=env or dict(os.environ))


def test_tray_without_a_display_says_so_and_exits_2():
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    for cmd in ([], ["demo"]):
        r = run(*cmd, env=env)
        assert r.returncode == 2, r.stderr
        assert "no display" in r.stderr and "exotray agent" in r.stderr
        assert "Traceback" not in r.stderr and "Reinstalling" not in r.stderr


def test_config_error_has_its_own_exit_status(tmp_path):
    bad = tmp_path / "config.toml"
    bad.write_text("port = [unclosed\n")
    r = run("agent", "--no-mdns", "--bind", "127.0.0.1", "--config", str(bad),
            "--state-dir", str(tmp_path / "state"))
    assert r.returncode == EXIT_CONFIG
    assert "not valid TOML" in r.stderr and str(bad) in r.stderr
    assert "Traceback" not in r.stderr
