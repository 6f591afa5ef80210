"""Issue 33, point 2: LAN hosts asking for 30 days of history at 50,000 points, 16 at a
time from each of 4 addresses, while the node's own user reads 10 minutes and exports an
hour. Before the bound, such reads kept the agent at a full core, took its memory from
44 to 147 MiB, made a local 10-minute read take 50 s, and `exotray export` said that no
agent answered."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from netlab import SETTLE_S, Agents, Lab

from exotray.agent.base import limits as L
from exotray.agent.history.db import open_or_replace

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from history_db import fill

PORT = 52480
DAY = 86400.0

#: 16 readers from each source address, reading 30 days at 50,000 points until `secs`
#: have passed; prints the answers' codes and the most rows one had
LAN_READERS = r"""
import collections, json, sys, threading, time
import httpx
sources, url, link, secs = sys.argv[1].split(","), sys.argv[2], sys.argv[3], float(sys.argv[4])
codes, most, lock = collections.Counter(), [0], threading.Lock()
end = time.monotonic() + secs
def reader(src):
    t = httpx.HTTPTransport(local_address=src)
    with httpx.Client(transport=t, timeout=30, trust_env=False) as c:
        while time.monotonic() < end:
            try:
                r = c.get(url, params={"link": link, "seconds": 30 * 86400, "points": 50000})
            except httpx.HTTPError:
                with lock: codes["error"] += 1
                continue
            with lock:
                codes[r.status_code] += 1
                if r.status_code == 200:
                    most[0] = max(most[0], len(r.json()["t"]))
threads = [threading.Thread(target=reader, args=(s,)) for s in sources for _ in range(16)]
for th in threads: th.start()
for th in threads: th.join()
print(json.dumps({"codes": codes, "most_rows": most[0]}))
"""

#: the local user's 10-minute reads, one after another for `secs`: the slowest, and codes
LOCAL_READS = r"""
import json, sys, time
import httpx
url, link, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
codes, slowest, end = [], 0.0, time.monotonic() + secs
with httpx.Client(timeout=60, trust_env=False) as c:
    while time.monotonic() < end:
        t = time.monotonic()
        codes.append(c.get(url, params={"link": link, "seconds": 600}).status_code)
        slowest = max(slowest, time.monotonic() - t)
        time.sleep(0.5)
print(json.dumps({"codes": codes, "slowest_s": slowest}))
"""


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def test_lan_history_readers_are_bounded_and_the_local_user_goes_first(tmp_path):
    with Lab(2) as lab:
        h1, h2 = lab.hosts
        sources = [f"10.213.{lab.net}.{100 + i}" for i in range(4)]
        for a in sources:
            h2.exec("ip", "addr", "add", f"{a}/24", "dev", h2.veth)
        agents = Agents(lab, tmp_path)
        try:
            def start():
                a = agents.start(h1, name="h1", mdns=False, peers=[f"{h2.addr}:{PORT}"])
                a.wait_ready()
                return a

            a1 = start()
            link = a1.get("/v1/snapshot")["links"][0]["id"]
            a1.close()  # 30 days of this link's history, as the tiers keep them
            db = open_or_replace(a1.state / "history.db", 30 * DAY)
            rows = fill(db, "link", link, time.time(), 1.0, 30, seed=7)
            db.conn.commit()
            db.close()
            a1 = start()
            rss0 = _rss_mib(a1.proc.pid)
            url = f"http://{h1.addr}:{PORT}/v1/history"
            secs = 20.0
            lan = h2.popen(sys.executable, "-c", LAN_READERS, ",".join(sources), url, link,
                           str(secs), stdout=-1, text=True)
            time.sleep(3)
            local = h1.popen(sys.executable, "-c", LOCAL_READS,
                             f"http://127.0.0.1:{PORT}/v1/history", link, "10",
                             stdout=-1, text=True)
            export = h1.exec(sys.executable, "-m", "exotray", "export", link, "--since", "1h",
                             "--port", str(PORT), "-o", str(tmp_path / "hour.csv"),
                             check=False, timeout=60)
            mine = json.loads(local.communicate(timeout=60)[0])
            theirs = json.loads(lan.communicate(timeout=secs + 60)[0])
            rss1 = _rss_mib(a1.proc.pid)
        finally:
            agents.close()
        print(f"\n{rows} rows filled; LAN: {theirs['codes']}, at most {theirs['most_rows']} "
              f"rows an answer; local: {len(mine['codes'])} reads, slowest "
              f"{mine['slowest_s']:.2f} s; RSS {rss0:.1f} -> {rss1:.1f} MiB")
        codes = {int(k) if k.isdigit() else k: n for k, n in theirs["codes"].items()}
        assert set(codes) <= {200, 503}, codes
        assert codes.get(200, 0) >= 1 and codes.get(503, 0) > codes[200]
        assert 0 < theirs["most_rows"] <= L.MAX_LAN_HISTORY_POINTS
        assert set(mine["codes"]) == {200}
        assert mine["slowest_s"] < SETTLE_S
        assert (tmp_path / "hour.csv").read_text().count("\n") > 100, export
