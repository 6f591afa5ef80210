"""The soak's sampler (tests/lab/soak.py): an agent's slow or failing snapshot read is
retried, then that round is skipped (None) — it never ends the run — and an agent that
exited is reported, not read. Real HTTP on loopback and a real child process."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))

import soak
from helpers import JsonHandler

SNAP = {"counters": {"asyncio_tasks": 9}, "links": [{"state": "up"}, {"state": "down"}]}


@pytest.fixture
def child():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        yield p
    finally:
        p.kill()
        p.wait(5)


def _server(answers: list[int]):
    """A loopback server answering /v1/snapshot with the next status of `answers`."""

    class H(JsonHandler):
        def do_GET(self) -> None:
            status = answers.pop(0) if answers else 200
            self.answer(json.dumps(SNAP).encode() if status == 200 else b"{}", status)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _agent(url: str, proc, tmp_path: Path):
    return SimpleNamespace(name="n1", url=url, proc=proc, events_path=tmp_path / "ev")


def test_a_failed_read_is_retried(tmp_path, child):
    srv = _server([500, 503])
    logs: list[str] = []
    try:
        row = soak.sample(_agent(f"http://127.0.0.1:{srv.server_port}", child, tmp_path),
                          logs.append)
    finally:
        srv.shutdown()
        srv.server_close()
    assert row["alive"] and row["tasks"] == 9 and row["links_up"] == 1
    assert row["rss_mib"] > 0 and row["threads"] >= 1
    assert len(logs) == 2 and "1/3" in logs[0] and "2/3" in logs[1]


def test_an_agent_that_never_answers_is_skipped_not_fatal(tmp_path, child):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # bound, not listening: every connect is refused
    try:
        logs: list[str] = []
        row = soak.sample(_agent(f"http://127.0.0.1:{s.getsockname()[1]}", child,
                                 tmp_path), logs.append)
    finally:
        s.close()
    assert row["alive"] and row["tasks"] is None and row["links_up"] is None
    assert row["rss_mib"] > 0  # /proc is still read
    assert len(logs) == soak.SNAPSHOT_TRIES


def test_an_exited_agent_is_reported(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(10)
    logs: list[str] = []
    row = soak.sample(_agent("http://127.0.0.1:9", p, tmp_path), logs.append)
    assert row["alive"] is False and row["rss_mib"] is None
    assert "exited" in logs[0]
