"""`exotray doctor` against real agents on loopback: its exit statuses (0 nothing fails,
1 a check fails, 2 a wrong option, 3 no agent), its JSON, and what the agent reports for
it (its history database's state)."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from helpers import AgentProc, JsonHandler, free_port, wait_for

from exotray.core import doctor


def run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "exotray", "doctor", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def checks(r: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    data = json.loads(r.stdout)
    assert list(data) == ["checks"]
    return {c["id"]: c for c in data["checks"]}


def test_no_agent_is_exit_3_and_a_wrong_option_exit_2():
    r = run("--port", str(free_port()))
    assert r.returncode == 3, r.stderr
    assert "no exotray agent answered" in r.stderr and "Traceback" not in r.stderr
    r = run("--bogus")
    assert r.returncode == 2 and "unrecognized arguments: --bogus" in r.stderr
    r = run("--active", "--yes", "--port", str(free_port()))
    assert r.returncode == 3 and "no exotray agent answered" in r.stderr


def _both_up(a: AgentProc) -> bool:
    snap = a.get("/v1/snapshot")
    return (len(a.get("/v1/cluster")["nodes"]) == 2 and bool(snap["links"])
            and all(lk["state"] == "up" and lk["loss"] == 0 for lk in snap["links"]))


def test_two_agents_that_see_each_other_pass(tmp_path):
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "a", pa, [pb])
    b = AgentProc(tmp_path, "b", pb, [pa], "--history-days", "0")
    try:
        a.wait_ready()
        b.wait_ready()
        assert wait_for(lambda: _both_up(a) and _both_up(b), 20), a.log()
        # a link's first seconds count the probes sent before its peer listened as lost
        # (docs/design.md, "Liveness"): judged once its 10 s window has turned over
        since = time.monotonic()
        assert wait_for(lambda: time.monotonic() - since > 11 and _both_up(a)
                        and _both_up(b), 30), a.log()
        r = run("--port", str(pa))
        assert r.returncode == 0, r.stdout + r.stderr
        out = r.stdout.splitlines()
        assert len(out) == len(doctor.IDS) + 1
        assert out[-1].endswith(f"of {len(doctor.IDS)} checks.")
        assert "\033[" not in r.stdout  # not a terminal: no colour
        r = run("--json", "--port", str(pa))
        assert r.returncode == 0
        got = checks(r)
        assert list(got) and set(got) == set(doctor.IDS)
        assert not [c for c in got.values() if c["status"] == "fail"]
        assert got["reachable"]["status"] == "pass"
        # a's database is written, b keeps no history: each agent says so
        assert got["history"]["status"] == "pass"
        assert got["history"]["summary"].startswith("written, 30 days kept")
        got = checks(run("--json", "--port", str(pb)))
        assert got["history"]["status"] == "warn" and "history is off" in got["history"]["summary"]
    finally:
        a.close()
        b.close()


def test_a_peer_that_answers_nothing_fails_reachable_exit_1(tmp_path):
    pa, nobody = free_port(), free_port()
    a = AgentProc(tmp_path, "a", pa, [nobody])
    try:
        a.wait_ready()
        assert wait_for(lambda: a.get("/v1/cluster")["peers"], 10)
        r = run("--port", str(pa))
        assert r.returncode == 1, r.stdout + r.stderr
        assert r.stdout.startswith("FAIL  reachable")
        got = checks(run("--json", "--port", str(pa)))
        assert got["reachable"]["status"] == "fail"
        assert f"127.0.0.1:{nobody}" in got["reachable"]["summary"]
        assert got["udp_probes"]["status"] == "pass"  # its HTTP does not answer either
    finally:
        a.close()


class _StandIn(JsonHandler):
    """An agent's stand-in with one link: `busy(path)` says whether to answer 503 (with
    Retry-After 0) this time; asked paths are counted."""

    asked: dict[str, int]

    def busy(self, path: str) -> bool:
        return False

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        self.asked[path] = self.asked.get(path, 0) + 1
        if self.busy(path):
            self.answer(b'{"error": "busy with other reads; try again in 1 s"}', 503,
                        {"retry-after": "0"})
        elif path == "/v1/cluster":
            link = {"id": "l1", "peer_id": "b", "peer_name": "b", "state": "up"}
            self.answer(json.dumps({"nodes": [{"node": {"id": "a", "name": "a"},
                                               "links": [link], "interfaces": []}]}).encode())
        else:
            self.answer(b'{"events": []}')


@contextmanager
def _serving(handler: type[_StandIn]) -> Iterator[int]:
    handler.asked = {}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


class _BusyOnce(_StandIn):
    def busy(self, path: str) -> bool:
        return sum(self.asked.values()) == 1  # (the first read)


def test_a_busy_agent_is_asked_again_after_its_retry_after_as_by_every_command():
    """Doctor read the agent its own way: a 503 from an agent busy with other reads was
    "no agent" (exit 3). It now waits for the Retry-After and asks again."""
    with _serving(_BusyOnce) as port:
        r = run("--json", "--port", str(port))
    assert r.returncode in (0, 1), r.stderr
    assert _BusyOnce.asked["/v1/cluster"] == 2 and "checks" in json.loads(r.stdout)


class _HistoryBusy(_StandIn):
    def busy(self, path: str) -> bool:
        return path == "/v1/history"


def test_a_link_whose_history_is_busy_is_said_unread_after_one_ask():
    """The loss check's day of each link is read within a second's budget: an agent busy
    with other history reads leaves that link unread, not waited for (Retry-After) twice
    more."""
    with _serving(_HistoryBusy) as port:
        r = run("--json", "--port", str(port))
    assert r.returncode in (0, 1), r.stderr
    assert _HistoryBusy.asked["/v1/history"] == 1
    assert "history not read" in checks(r)["loss"]["summary"]
