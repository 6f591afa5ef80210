"""`exotray export` and `exotray prometheus-sd` against real agents on loopback."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest
from helpers import AgentProc, free_port, wait_for


@pytest.fixture
def pair(tmp_path):
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "studio-1", pa, [pb], "--interval", "0.5")
    b = AgentProc(tmp_path, "studio-2", pb, [pa], "--interval", "0.5")
    try:
        a.wait_ready()
        b.wait_ready()
        assert wait_for(lambda: len(a.get("/v1/cluster")["nodes"]) == 2, 5)
        assert wait_for(lambda: len(a.get("/v1/history", interface="lo", seconds=60)["t"]) >= 4,
                        5)
        yield a, b
    finally:
        a.close()
        b.close()


def _run(*args):
    return subprocess.run([sys.executable, "-m", "exotray", *args], capture_output=True,
                          text=True, timeout=30)


def test_export_csv_and_json(pair, tmp_path):
    a, _ = pair
    p = _run("export", "studio-2", "--since", "1m", "--port", str(a.port))
    assert p.returncode == 0, p.stderr
    table = list(csv.reader(io.StringIO(p.stdout)))
    assert table[0][:3] == ["time_utc", "unix_time_s", "rtt_median_ms"]
    assert len(table) >= 3 and table[-1][table[0].index("state")] == "up"
    out = tmp_path / "link.json"
    p = _run("export", "127.0.0.1", "--since", "60", "-o", str(out), "--port", str(a.port))
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert data["units"]["rx_bytes_per_s"] == "bytes/s" and data["rows"]
    assert data["about"]["peer_name"] == "studio-2"


def test_export_errors_are_clear(pair):
    a, _ = pair
    p = _run("export", "nobody", "--port", str(a.port))
    assert p.returncode == 1 and "matches no link" in p.stderr and "studio-2" in p.stderr
    p = _run("export", "studio-2", "--since", "4000d", "--port", str(a.port))
    assert p.returncode == 2 and "3650 d" in p.stderr
    p = _run("export", "studio-2", "--port", "9")
    assert p.returncode == 1 and "no exotray agent answered" in p.stderr


def test_prometheus_sd_lists_every_agent(pair, tmp_path):
    a, b = pair
    out = tmp_path / "exotray.json"
    p = _run("prometheus-sd", "--once", "-o", str(out), "--port", str(a.port))
    assert p.returncode == 0, p.stderr
    groups = json.loads(out.read_text())
    assert [g["labels"]["exotray_node"] for g in groups] == ["studio-1", "studio-2"]
    assert groups[0]["targets"] == [f"127.0.0.1:{a.port}"]
    assert groups[1]["targets"] == [f"127.0.0.1:{b.port}"]
