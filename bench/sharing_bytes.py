"""Sharing cost, polling against streaming, in the same run: CPU per agent and sharing
bytes per peer per second in an idle full mesh of P loopback agents.

What it measures
    For each P in --peers (default "2,8,16") and each protocol (poll, then stream) it
    starts P agents on 127.0.0.1 (--no-mdns), each listing the P - 1 others as peers (a
    full mesh: every agent shares with every other), waits until every agent's
    /v1/cluster holds all P nodes, lets it settle (--settle, default 3 s), then for
    --seconds (default 20) measures:

    * CPU % of one core per agent (user + system time delta / wall time): mean and max
      over the P agents;
    * sharing bytes received per peer per second (the receiving side, idle):
      - stream: the agents' own counter `stream_bytes_in` (frame headers + bodies) plus
        ~7 B of HTTP chunk framing per frame (`stream_frames_in`), summed over all
        agents / (P x (P - 1)) / wall time;
      - poll: what one fetch moves — a peer's /v1/snapshot body plus its response
        headers plus ~120 B of request — once per interval (the agent fetches every
        peer's snapshot once per interval);
    * stream only: frames built per second per agent (one per interval) and subscriber
      drops (should be 0);
    * freshness: after the window, --changes times (10) agent n2 gets a new capacity for
      "lo" through its control API (`PUT /v1/control/settings`, a random 0.2–1.2 s
      apart, so changes fall anywhere in the interval; values of 3 significant digits in
      B/s, so the stream's display resolution shows them exactly); the time from n2's own
      /v1/snapshot showing it (it applies settings on its next sample) until n1's
      /v1/cluster shows it for n2 (each read every 10 ms): median and max. The freshness
      target is one interval + 0.5 s.

    * RSS of each agent at the end of the window (P - 1 peers each): median and max;
    * with --fields (stream rows): which fields n1's deltas carried during the window —
      n1's own /v1/stream followed by the bench (a P-th subscriber), each field set on a
      record counted, with the bytes it took (`"name":value,`), per second.

    --protocols picks the rows' protocols (default "poll,stream").

    Everything stays on 127.0.0.1. It measures and prints; it asserts nothing. The P
    agents share this machine's CPUs (and with anything else running on it).

How to run (from the repository root)
    python bench/sharing_bytes.py                      # P = 2, 8, 16; ~4 min
    python bench/sharing_bytes.py --peers 4 --seconds 10
    python bench/sharing_bytes.py --peers 16 --protocols stream --fields

Output: a Markdown table on stdout and bench/results/sharing_bytes.json.
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import statistics
import sys
import threading
import time
import urllib.request
from collections import Counter

import psutil
from _harness import (
    AgentGroup,
    get_json,
    http_get,
    machine_info,
    machine_line,
    md_table,
    write_json,
)

REQUEST_BYTES = 120  # GET line + host, user-agent, accept headers of one poll
CHUNK_FRAMING = 7  # "<hex size>\r\n" ... "\r\n" around each streamed frame


def _cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def _complete(group: AgentGroup, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(group.agents)
    while pending:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(pending)} agents do not see all {n} nodes after "
                               f"{timeout} s\n" + pending[0].log_tail())
        for a in list(pending):
            try:
                if len(get_json(a.base + "/v1/cluster")["nodes"]) == n:
                    pending.remove(a)
            except OSError:
                pass
        time.sleep(0.2)


def _put_json(url: str, obj: dict, token: str) -> None:
    if not url.startswith("http://127.0.0.1:"):
        raise ValueError(f"refusing non-loopback URL {url!r}")
    req = urllib.request.Request(url, data=json.dumps(obj).encode(), method="PUT",
                                 headers={"content-type": "application/json",
                                          "authorization": f"Bearer {token}"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=5) as resp:
        resp.read()


def _lo_capacity(node: dict | None) -> float | None:
    lo = [i for i in (node or {}).get("interfaces", []) if i["name"] == "lo"]
    return lo[0]["capacity_bytes_per_s"] if lo else None


def freshness(group: AgentGroup, changes: int, seed: int) -> list[float]:
    """Seconds from a change on n2 to its appearance in n1's /v1/cluster, per change."""
    src, dst = group.agents[1], group.agents[0]
    token = (group.root / src.name / "control_token").read_text().strip()
    rnd = random.Random(seed)
    out = []
    for i in range(changes):
        time.sleep(rnd.uniform(0.2, 1.2))
        mbit = 2000 + 400 * i  # 250, 300, 350 ... MB/s
        _put_json(src.base + "/v1/control/settings", {"capacity": {"lo": mbit}}, token)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and \
                _lo_capacity(src.snapshot()) != mbit * 125_000:
            time.sleep(0.01)
        t0 = time.monotonic()
        deadline = t0 + 10.0
        while time.monotonic() < deadline:  # bounded: a change not seen in 10 s is 10 s
            nodes = get_json(dst.base + "/v1/cluster")["nodes"]
            node = next((x for x in nodes if x["node"]["name"] == src.name), None)
            if _lo_capacity(node) == mbit * 125_000:
                break
            time.sleep(0.01)
        out.append(time.monotonic() - t0)
    return out


class FieldTally(threading.Thread):
    """Follows one agent's /v1/stream until `stop`, counting what its deltas set."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.stop = threading.Event()
        self.count: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self.frames = 0
        self.body_bytes = 0
        self.error = ""

    def run(self) -> None:
        from exotray.agent.share import wire as W  # the interpreter's exotray (PYTHONPATH)
        if not self.base.startswith("http://127.0.0.1:"):
            raise ValueError(f"refusing non-loopback URL {self.base!r}")
        url = f"{self.base}/v1/stream?nonce={secrets.token_hex(16)}&v={W.VERSION}"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        reader = W.FrameReader()
        try:
            with opener.open(url, timeout=5) as resp:
                while not self.stop.is_set():
                    chunk = resp.read1(65536)
                    if not chunk:
                        break
                    for kind, _seq, _sig, body, _size in reader.feed(chunk):
                        if kind == W.DELTA:
                            self._tally(json.loads(body))
        except OSError as e:
            self.error = str(e)

    def _tally(self, d: dict) -> None:
        self.frames += 1
        for part in ("links", "interfaces"):
            for fields in d.get(part, {}).get("set", {}).values():
                for f, v in fields.items():
                    self.count[f"{part}.{f}"] += 1
                    self.bytes[f"{part}.{f}"] += len(json.dumps({f: v}, separators=(",", ":")))
            for rec in d.get(part, {}).get("add", []):
                self.count[f"{part}.add"] += 1
                self.bytes[f"{part}.add"] += len(json.dumps(rec, separators=(",", ":")))


def run_row(n: int, protocol: str, args: argparse.Namespace) -> dict:
    group = AgentGroup(python=args.python, interval=args.interval,
                       extra_args=("--sharing", protocol))
    try:
        ports = [group.reserve() for _ in range(n)]
        for i, port in enumerate(ports):
            group.start(f"n{i + 1}", port, [p for p in ports if p != port])
        group.wait_ready(timeout=args.start_timeout)
        _complete(group, n, args.start_timeout)
        time.sleep(args.settle)
        procs = [psutil.Process(a.proc.pid) for a in group.agents]
        c0 = [a.snapshot()["counters"] for a in group.agents]
        tally = FieldTally(group.agents[0].base) if args.fields and protocol == "stream" \
            else None
        if tally is not None:
            tally.start()
            time.sleep(1.5)  # past its full snapshot
            tally.count.clear(), tally.bytes.clear()
        cpu0 = [_cpu_s(p) for p in procs]
        t0 = time.monotonic()
        time.sleep(args.seconds)
        wall = time.monotonic() - t0
        cpu1 = [_cpu_s(p) for p in procs]
        rss = [p.memory_info().rss / 2**20 for p in procs]
        if tally is not None:
            tally.stop.set()
        snaps = [a.snapshot() for a in group.agents]
        c1 = [s["counters"] for s in snaps]
        cpu = [100.0 * (b - a) / wall for a, b in zip(cpu0, cpu1, strict=True)]

        def total(key: str) -> int:
            return sum(x.get(key, 0) - y.get(key, 0) for x, y in zip(c1, c0, strict=True))

        pairs = n * (n - 1)
        interval = float(snaps[0]["interval_s"])
        bodies, heads = [], []
        for a in group.agents:
            body, head = http_get(a.base + "/v1/snapshot")
            bodies.append(len(body))
            heads.append(head)
        fresh = freshness(group, args.changes, seed=n) if args.changes else []
        row = {
            "peers": n, "protocol": protocol, "seconds": round(wall, 2),
            "freshness_s": [round(x, 3) for x in fresh],
            "freshness_median_s": statistics.median(fresh) if fresh else None,
            "freshness_max_s": max(fresh) if fresh else None,
            "interval_s": interval,
            "cpu_pct_mean": statistics.fmean(cpu), "cpu_pct_max": max(cpu),
            "cpu_pct_each": [round(x, 2) for x in cpu],
            "rss_mib_median": statistics.median(rss), "rss_mib_max": max(rss),
            "snapshot_body_bytes": statistics.median(bodies),
            "snapshot_header_bytes": statistics.median(heads),
            "fetch_errors": total("fetch_errors"),
            "snapshots_rejected": total("snapshots_rejected"),
        }
        if protocol == "stream":
            frames = total("stream_frames_in")
            row.update({
                "stream_bytes_in": total("stream_bytes_in"), "stream_frames_in": frames,
                "bytes_per_peer_per_s": (total("stream_bytes_in") + CHUNK_FRAMING * frames)
                / pairs / wall,
                "frames_built_per_agent_per_s": total("stream_frames_built") / n / wall,
                "subscribers_dropped": total("stream_subscribers_dropped"),
                "reconnects": total("stream_reconnects"),
            })
            if tally is not None:
                row["fields_per_s"] = {f: {"count": c / wall, "bytes": tally.bytes[f] / wall}
                                       for f, c in tally.count.most_common()}
                row["fields_error"] = tally.error
        else:
            row["bytes_per_peer_per_s"] = (statistics.median(bodies) + statistics.median(heads)
                                           + REQUEST_BYTES) / interval
        return row
    finally:
        group.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers", default="2,8,16", help="agents in the mesh, one row each")
    ap.add_argument("--seconds", type=float, default=20.0, help="measurement window (20)")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after all see all (3)")
    ap.add_argument("--interval", type=float, default=None, help="agents' interval (1)")
    ap.add_argument("--start-timeout", type=float, default=40.0)
    ap.add_argument("--changes", type=int, default=10,
                    help="changes timed for freshness per row (10; 0: none)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--name", default="sharing_bytes")
    ap.add_argument("--protocols", default="poll,stream", help="rows' protocols (poll,stream)")
    ap.add_argument("--fields", action="store_true",
                    help="stream rows: tally which fields n1's deltas carry")
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.peers.split(",") if x.strip()]
    if not counts or any(c < 2 or c > 64 for c in counts):
        ap.error("--peers: each count must be 2..64")
    rows = []
    for n in counts:
        for protocol in [x for x in args.protocols.split(",") if x]:
            print(f"[sharing_bytes] P={n} {protocol} ...", file=sys.stderr)
            rows.append(run_row(n, protocol, args))
    headers = ["P", "sharing", "CPU % mean (1 core)", "CPU % max", "B/s per peer (idle)",
               "snapshot B", "change seen, median / max s", "errors", "dropped subs",
               "RSS MiB med / max"]
    table = [[r["peers"], r["protocol"], f"{r['cpu_pct_mean']:.2f}", f"{r['cpu_pct_max']:.2f}",
              f"{r['bytes_per_peer_per_s']:.0f}", f"{r['snapshot_body_bytes']:.0f}",
              (f"{r['freshness_median_s']:.2f} / {r['freshness_max_s']:.2f}"
               if r["freshness_median_s"] is not None else "–"),
              r["fetch_errors"] + r["snapshots_rejected"],
              r.get("subscribers_dropped", "–"),
              f"{r['rss_mib_median']:.1f} / {r['rss_mib_max']:.1f}"] for r in rows]
    info = machine_info()
    print(f"## exotray sharing: poll vs stream, full mesh of P loopback agents, idle "
          f"({args.seconds:g} s window)\n")
    print(machine_line(info) + "\n")
    print(md_table(headers, table))
    print("\nB/s per peer: bytes one agent receives from one peer per second. Poll: one "
          "/v1/snapshot (body + response headers + ~120 B request) per interval. Stream: "
          "the agents' stream_bytes_in counter + ~7 B chunk framing per frame. Change "
          f"seen: {args.changes} capacity changes on n2, from n2's own snapshot showing "
          "it to n1's /v1/cluster showing it (each read every 10 ms).")
    for r in rows:
        if r.get("fields_per_s"):
            print(f"\nP={r['peers']}: fields in n1's deltas, per second "
                  f"(count, bytes): " + ", ".join(
                      f"{f} {v['count']:.2f} / {v['bytes']:.0f} B"
                      for f, v in list(r["fields_per_s"].items())[:10]))
    path = write_json(args.name, {"benchmark": "sharing_bytes", "machine": info,
                                  "params": vars(args), "rows": rows})
    print(f"\nJSON: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
