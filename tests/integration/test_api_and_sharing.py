"""The HTTP API's history and events endpoints, and what the agent does with a peer
that serves garbage instead of a snapshot."""

from __future__ import annotations

import http.server
import json
import statistics
import threading
from typing import ClassVar

import httpx
import pytest
from helpers import AgentProc, JsonHandler, free_port, wait_for


def test_history_fills_and_is_monotonic(pair):
    a, _ = pair
    link = wait_for(lambda: [lk for lk in a.get("/v1/snapshot")["links"]
                             if lk["state"] == "up"], 5)
    assert link
    link_id = link[0]["id"]
    hist = wait_for(lambda: (h := a.get("/v1/history", link=link_id, seconds=60))
                    and len(h["t"]) >= 4 and h, 5)
    assert hist, "history did not fill"
    assert hist["link"] == link_id and hist["interval_s"] == 0.5
    cols = ["t", "rtt_ms", "rtt_min_ms", "rtt_max_ms", "rx_bytes_per_s", "tx_bytes_per_s",
            "utilization", "state"]
    assert all(len(hist[c]) == len(hist["t"]) for c in cols)
    assert hist["t"] == sorted(hist["t"])
    steps = [b - a for a, b in zip(hist["t"], hist["t"][1:], strict=False)]
    # one row per interval: a late tick on a busy machine makes one step longer and the
    # next shorter, so the steps' median is the interval and every step is positive
    assert all(s > 0 for s in steps) and 0.4 < statistics.median(steps) < 0.6, steps
    assert hist["state"][-1] == "up" and hist["rtt_ms"][-1] > 0
    short = a.get("/v1/history", link=link_id, seconds=1)
    assert 1 <= len(short["t"]) <= 3
    iface = a.get("/v1/history", interface="lo", seconds=60)
    assert len(iface["t"]) >= 3 and set(iface) >= {"rx_bytes_per_s", "tx_bytes_per_s"}


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({}, 400),
        ({"link": "x", "interface": "lo"}, 400),
        ({"link": "nope"}, 404),
        ({"interface": "nope0"}, 404),
        ({"interface": "lo", "seconds": "abc"}, 400),
        ({"interface": "lo", "seconds": "nan"}, 400),
        ({"interface": "lo", "seconds": "999999999"}, 400),  # over 3650 days
        ({"interface": "lo", "since": "1", "seconds": "60"}, 400),
        ({"interface": "lo", "points": "5"}, 400),
    ],
)
def test_history_bad_requests(pair, params, status):
    a, _ = pair
    r = httpx.get(a.url + "/v1/history", params=params, trust_env=False)
    assert r.status_code == status
    assert "error" in r.json()


def test_events_after(pair):
    a, _ = pair
    evs = wait_for(lambda: a.get("/v1/events")["events"], 5)
    assert evs[0]["type"] == "peer_up" and evs[0]["seq"] == 1
    assert set(evs[0]) >= {"seq", "at", "type", "link_id", "peer_id", "utilization"}
    assert a.get("/v1/events", after=evs[-1]["seq"])["events"] == []
    assert httpx.get(a.url + "/v1/events?after=-1", trust_env=False).status_code == 400


class _Garbage(JsonHandler):
    bodies: ClassVar[list[bytes]] = [
        b"not json",
        b"[1, 2, 3]",
        json.dumps({"schema": 99}).encode(),
        json.dumps({"schema": 1, "node": {"id": "x", "name": "y", "version": "1"},
                    "interval_s": -1, "data_age_s": 0, "interfaces": [], "links": []}).encode(),
    ]
    served = 0

    def do_GET(self):
        body = self.bodies[_Garbage.served % len(self.bodies)]
        _Garbage.served += 1
        self.answer(body)


def test_bad_snapshots_are_dropped_logged_once_and_counted(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    port = server.server_address[1]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    # polling's refusals (the stand-in answers every path with a snapshot)
    a = AgentProc(tmp_path, "a", free_port(), [port], "--interval", "0.25",
                  "--sharing", "poll")
    try:
        a.wait_ready()
        counters = wait_for(lambda: (c := a.get("/v1/snapshot")["counters"])
                            and c["snapshots_rejected"] >= 8 and c, 10)
        assert counters, a.log()
        cluster = a.get("/v1/cluster")
        assert len(cluster["nodes"]) == 1  # none of it reached the cluster view
        assert cluster["peers"][0]["last_error"].startswith("bad snapshot")
        log = a.log()
        # One line per kind of problem, not one per fetch.
        for reason in ("not_json", "not_object", "schema_version", "invalid"):
            assert log.count(f"snapshot dropped ({reason}") == 1, log
        assert a.proc.poll() is None
    finally:
        a.close()
        server.shutdown()
        server.server_close()
