"""How long the window takes to show 30 days of one link (issue 15's figure), and 24 h,
7 d and the live hour for comparison.

What it measures
    A real agent on loopback (mDNS off, its one peer absent) whose history database
    holds 30 days of one link as 30 days of sampling at 1 s leave it (history_db.py's
    `fill`: 6 h of samples, 48 h of 10 s rows, 30 days of 1 min rows, values that move),
    the real AgentClient and MainWindow, offscreen. For each range, --runs times (each
    after going back to another range, so that each one fetches): from the range's
    click (`LinkDetails.set_range`, what the button calls) to

    * answer: the answer handed to the details (the request through the client's worker
      thread, the agent's query in its history thread, JSON both ways);
    * drawn: set_history + redraw (setData) + a forced repaint (`widget.grab()`), not
      counting up to one 20 Hz frame the redraw timer would wait.

    Median and max, in milliseconds. Runs under the lab lock:
        flock /tmp/exotray-bench.lock .venv/bin/python bench/gui_history.py [--runs 5]

Output: a Markdown table on stdout and bench/results/gui_history.json. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _harness import free_port, get_json, machine_info, machine_line, md_table, write_json
from history_db import DAY, fill

from exotray.agent.history.db import HistoryDB
from exotray.agent.peers.links import link_id
from exotray.core.history import LINK_COLUMNS

NODE_ID = "be9c4000f00d"
RANGES = ((3600, "1 h"), (86400, "24 h"), (7 * 86400, "7 d"), (30 * 86400, "30 d"))


def make_state(state: Path, peer_port: int) -> str:
    """A state dir whose database holds 30 days of the link to 127.0.0.1:peer_port."""
    state.mkdir(mode=0o700)
    (state / "node_id").write_text(f"{NODE_ID}\n")
    lid = link_id(NODE_ID, ("127.0.0.1", peer_port))
    now = time.time()
    db = HistoryDB(state / "history.db", 30 * DAY)
    db.conn.execute("BEGIN")
    rows = fill(db, "link", lid, now, 1.0, 30.0, seed=1)
    db.conn.execute("COMMIT")
    # one interval's write, as the agent's: it sets the roll-up marks the queries use
    last = (now + 1, 0.3, 0.2, 0.5, 1e6, 2e5, 0.01, "up", 0.2, 0.1, None, None, 0.0)
    db.write(now + 1, [("link", lid, LINK_COLUMNS, last)], [])
    db.close()
    print(f"database: {rows} rows of link {lid}", file=sys.stderr)
    return lid


def wait(app: Any, pred: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise SystemExit("gave up waiting (agent or window stuck)")
        app.processEvents()
        time.sleep(0.001)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    from PySide6.QtWidgets import QApplication

    from exotray.ui.client.poll import AgentClient
    from exotray.ui.link.chart_data import follow_query
    from exotray.ui.window.dashboard import MainWindow

    tmp = Path(tempfile.mkdtemp(prefix="exotray-guihist-"))
    taken: set[int] = set()
    port, peer_port = free_port(taken), free_port(taken)
    state = tmp / "state"
    lid = make_state(state, peer_port)
    log = open(tmp / "agent.log", "wb")  # noqa: SIM115
    agent = subprocess.Popen(
        [sys.executable, "-m", "exotray", "agent", "--name", "bench", "--bind", "127.0.0.1",
         "--port", str(port), "--no-mdns", "--state-dir", str(state),
         "--peer", f"127.0.0.1:{peer_port}"], stdout=log, stderr=subprocess.STDOUT)
    app = QApplication.instance() or QApplication([])
    client = None
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                get_json(f"http://127.0.0.1:{port}/v1/snapshot")
                break
            except Exception:
                if time.monotonic() > deadline or agent.poll() is not None:
                    raise SystemExit((tmp / "agent.log").read_text()) from None
                time.sleep(0.1)
        client = AgentClient(port, state, interval=1.0)
        w = MainWindow(client)
        client.clusterChanged.connect(w.set_cluster)
        w.resize(1280, 820)
        w.show()
        client.start()
        wait(app, lambda: w._link(lid) is not None, 30)
        w.select_link(lid)
        wait(app, lambda: w._history_for == lid, 30)
        d = w.details

        marks: dict[str, float] = {}
        original = d.set_history

        def set_history(hist: dict[str, Any]) -> None:
            marks["answer"] = time.perf_counter()
            original(hist)
            d.flush()
            d.grab()
            marks["drawn"] = time.perf_counter()

        d.set_history = set_history  # type: ignore[method-assign]
        results: dict[str, Any] = {"machine": machine_info(), "runs": args.runs, "ranges": {}}
        rows = []
        for seconds, label in RANGES:
            answer, drawn, points, tier = [], [], 0, ""
            for _ in range(args.runs):
                # from a range that does not share this one's answer: each click fetches
                other = follow_query(86400 if seconds <= 3600 else 600)
                d.set_range(int(other["seconds"]) if seconds <= 3600 else 600)
                wait(app, lambda o=other: d.loaded().query == o, 30)
                marks.clear()
                t0 = time.perf_counter()
                d.set_range(seconds)
                wait(app, lambda: "drawn" in marks, 60)
                answer.append((marks["answer"] - t0) * 1000)
                drawn.append((marks["drawn"] - t0) * 1000)
                points = d.point_count()
                tier = f"{d.loaded().step_s:g} s rows" if d.loaded().coarse else "every sample"
            results["ranges"][label] = {"answer_ms": answer, "drawn_ms": drawn,
                                        "points": points, "rows": tier}
            rows.append([label, str(points), tier,
                         f"{statistics.median(answer):.0f} (max {max(answer):.0f})",
                         f"{statistics.median(drawn):.0f} (max {max(drawn):.0f})"])
        print(md_table(["range", "points", "rows", "click → answer ms",
                        "click → drawn ms"], rows))
        print()
        print(machine_line(results["machine"]))
        print(f"median (max) of {args.runs} clicks; window 1280x820 offscreen raster")
        path = write_json("gui_history", results)
        print(f"wrote {path}", file=sys.stderr)
    finally:
        if client is not None:
            client.stop()
        agent.terminate()
        try:
            agent.wait(10)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait(5)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
