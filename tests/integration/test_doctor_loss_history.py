"""`exotray doctor`'s `loss` check reads the last 24 h of each link's loss from a real
agent on loopback (mDNS off): its database holds a stretch of loss three hours ago,
written through the database's own code, and the check warns with when and how long."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
from helpers import AgentProc, free_port, wait_for

from exotray.agent.history.db import HistoryDB
from exotray.agent.peers.links import link_id
from exotray.core.history import LINK_COLUMNS

NODE_ID = "e4b0a7ed0032"


def _row(t: float, loss: float) -> tuple:
    values = dict.fromkeys(LINK_COLUMNS, None)
    values.update(t=t, rtt_ms=0.2, rtt_min_ms=0.1, rtt_max_ms=0.3, state="up", loss=loss)
    return tuple(values[c] for c in LINK_COLUMNS)


def test_a_past_stretch_of_loss_in_the_agents_history_warns(tmp_path):
    pa, pb = free_port(), free_port()
    state = tmp_path / "state-a"
    state.mkdir(mode=0o700)
    (state / "node_id").write_text(f"{NODE_ID}\n")
    lid = link_id(NODE_ID, ("127.0.0.1", pb))
    now = time.time()
    start = (now - 3 * 3600) // 60 * 60
    # 20 minutes of 1 s samples: lossless, but 4 of them at 12 % lost
    db = HistoryDB(state / "history.db", 30 * 86400.0)
    db.write(now - 60, [("link", lid, LINK_COLUMNS,
                         _row(start + i, 0.12 if 600 <= i < 840 else 0.0))
                        for i in range(1200)], [])
    db.close()
    a = AgentProc(tmp_path, "a", pa, [pb])
    b = AgentProc(tmp_path, "b", pb, [pa], "--history-days", "0")
    try:
        a.wait_ready()
        b.wait_ready()
        # up, and b's name known (until then the link is named by its address)
        assert wait_for(lambda: any(lk["id"] == lid and lk["state"] == "up"
                                    and lk["peer_name"] == "b"
                                    for lk in a.get("/v1/snapshot")["links"]), 20), a.log()
        hist = a.get("/v1/history", link=lid, since=f"{start:.3f}",
                     until=f"{start + 1200:.3f}", points=5000)
        assert max(v for v in hist["loss"] if v is not None) == 0.12
        # what the doctor asks for: only its columns, from the database and (b keeps
        # no history) from the ring alike
        hist = a.get("/v1/history", link=lid, seconds=86400, columns="loss,state")
        assert {k for k, v in hist.items() if isinstance(v, list)} == {
            "t", "loss", "loss_min", "loss_max", "state"}
        blink = b.get("/v1/snapshot")["links"][0]["id"]
        hist = b.get("/v1/history", link=blink, seconds=60, columns="loss")
        assert hist["tier"] == "memory" and hist["loss"]
        assert {k for k, v in hist.items() if isinstance(v, list)} == {
            "t", "loss", "loss_min", "loss_max"}
        r = httpx.get(f"{a.url}/v1/history", params={"link": lid, "columns": "loss,bogus"},
                      timeout=5, trust_env=False)
        assert r.status_code == 400 and "'bogus' is not one of" in r.json()["error"]
        # a link's first seconds count the probes sent before its peer listened as lost
        # (docs/design.md, "Liveness"): asked again until that has left its 10 s window
        got: list[dict] = []

        def doctor() -> bool:
            r = subprocess.run([sys.executable, "-m", "exotray", "doctor", "--json",
                                "--port", str(pa)], capture_output=True, text=True,
                               timeout=30, env={**os.environ, "NO_COLOR": "1"})
            assert r.returncode in (0, 1), r.stderr
            got.append(next(c for c in json.loads(r.stdout)["checks"] if c["id"] == "loss"))
            return "now" not in got[-1]["summary"]

        assert wait_for(doctor, 30, every=0.5), got
        loss = got[-1]
    finally:
        a.close()
        b.close()
    at = time.strftime("%H:%M", time.localtime(start + 600))
    assert loss["status"] == "warn", loss
    assert loss["summary"] == f"a → b via Loopback (lo) lost 12 % of probes for 4 min at {at}."
    assert loss["links"] == [lid] and loss["nodes"] == ["a", "b"]
