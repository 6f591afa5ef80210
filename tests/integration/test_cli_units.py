"""The command line shows rates, speeds and capacities in one unit system, the user's
(issue 34 point 18): `--units`, else `units` in the config file the tray app's
Preferences write, else bytes. Real agent, real `exotray` processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from helpers import AgentProc, free_port, wait_for

BYTES = re.compile(r"\d [kMGT]?B/s")
BITS = re.compile(r"\d [kMGT]?bit/s")
SALES = re.compile(r"\d [MG]b/s")  # "10 Gb/s": a third spelling, once mixed in


def _run(*args: str, config_home) -> str:
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home)}
    r = subprocess.run([sys.executable, "-m", "exotray", *args], capture_output=True,
                       text=True, timeout=20, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_interfaces_and_status_follow_the_users_units(tmp_path):
    peer = free_port()
    a = AgentProc(tmp_path, "units", free_port(), [peer], "--capacity", "lo=10000")
    try:
        a.wait_ready()
        assert wait_for(lambda: any(i["name"] == "lo" and i.get("rx_bytes_per_s") is not None
                                    for i in a.get("/v1/interfaces")["interfaces"]), 10)
        port = str(a.port)
        preferred = tmp_path / "preferred"
        (preferred / "exotray").mkdir(parents=True)
        (preferred / "exotray" / "config.toml").write_text('units = "bits"\n')
        nothing = tmp_path / "nothing"  # no config file: bytes

        text = _run("interfaces", "--port", port, config_home=preferred)
        assert "10 Gbit/s (override)" in text, text
        assert BITS.search(text.split("lo ", 1)[1]) and not BYTES.search(text), text
        text = _run("status", "--port", port, config_home=preferred)
        assert not BYTES.search(text), text

        for text in (_run("interfaces", "--port", port, "--units", "bytes",
                          config_home=preferred),
                     _run("interfaces", "--port", port, config_home=nothing)):
            assert "1.25 GB/s (override)" in text, text
            assert not BITS.search(text) and not SALES.search(text), text
        text = _run("status", "--port", port, "--units", "bits", config_home=nothing)
        assert not BYTES.search(text), text
    finally:
        a.close()
