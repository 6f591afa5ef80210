"""A real agent whose state dir is a small tmpfs that fills up (issue 33 point 10), on
loopback with mDNS off. The tmpfs is mounted in a mount namespace of its own, held by a
sleeping process: only the agent (started through nsenter) sees it, the test reaches it
through /proc/HOLDER/root, and it goes when they end. Needs root.

(d) started on a full disk, the agent opens its database once there is room, without a
restart; (b) the events raised meanwhile are stored; (c) during a full disk /v1/history
has every sample, the database's rows then the ring's; (a) when space returns the
samples of the full period are written (and rolled up), none missing."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import system_tools
from helpers import AgentProc, free_port, wait_for

INTERVAL = 0.5


class Tmpfs:
    """A tmpfs of `size` on `path`, in a private mount namespace held by `sleep`."""

    def __init__(self, path: Path, size: str) -> None:
        path.mkdir(mode=0o700)
        self.holder = subprocess.Popen(["unshare", "-m", "--propagation", "private",
                                        "sleep", "600"])
        pid = self.holder.pid
        ours = os.readlink("/proc/self/ns/mnt")
        if not wait_for(lambda: os.readlink(f"/proc/{pid}/ns/mnt") != ours, 5):
            self.close()
            raise AssertionError("unshare made no mount namespace")
        self.enter = ["nsenter", "-t", str(pid), "-m", f"--wd={os.getcwd()}", "--"]
        subprocess.run([*self.enter, "mount", "-t", "tmpfs", "-o", f"size={size},mode=0700",
                        "tmpfs", str(path)], check=True, timeout=10)
        self.mountpoint = path
        self.path = Path(f"/proc/{pid}/root") / path.relative_to("/")

    def fill(self) -> None:
        """Write until the tmpfs has no byte left."""
        fd = os.open(self.path / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for chunk in (1 << 20, 4096, 1):
                with contextlib.suppress(OSError):
                    while True:
                        os.write(fd, b"\0" * chunk)
            try:
                os.write(fd, b"\0")
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
            else:
                raise AssertionError("the tmpfs is not full")
        finally:
            os.close(fd)

    def free(self) -> None:
        (self.path / "filler").unlink()

    def close(self) -> None:
        self.holder.kill()
        self.holder.wait(10)


def _link(agent: AgentProc, state: str | None = None) -> dict | None:
    links = agent.get("/v1/snapshot")["links"]
    return links[0] if links and (state is None or links[0]["state"] == state) else None


#: reads the database inside the namespace (SQLite resolves /proc/PID/root to "/", ours)
READ = """
import contextlib, json, os, sqlite3, sys
path, link_id = sys.argv[1:]
out = {"raw": [], "tens": [], "events": []}
if os.path.exists(path):
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as c:
        sid = c.execute("SELECT id FROM series WHERE kind='link' AND name=?",
                        (link_id,)).fetchone()
        if sid is not None:
            out["raw"] = [r[0] / 1000 for r in c.execute(
                "SELECT t FROM link_raw WHERE series=? ORDER BY t", sid)]
            out["tens"] = [(r[0] / 1000, r[1]) for r in c.execute(
                "SELECT t, n FROM link_10s WHERE series=?", sid)]
        out["events"] = [{"type": r[0], "at": r[1]} for r in c.execute(
            "SELECT type, at FROM events ORDER BY at")]
print(json.dumps(out))
"""


def _stored(disk: Tmpfs, link_id: str) -> tuple[list[float], dict[float, int], list[dict]]:
    """The file's raw sample times of the link, its 10 s buckets (time: rows) and events."""
    p = subprocess.run([*disk.enter, sys.executable, "-c", READ, str(disk.mountpoint /
                        "history.db"), link_id], capture_output=True, text=True, timeout=20)
    if p.returncode:
        raise OSError(p.stderr[-500:])  # (wait_for tries again)
    got = json.loads(p.stdout)
    return got["raw"], dict(got["tens"]), got["events"]


def _holes(times: list[float], start: float, end: float) -> list[tuple[float, float]]:
    """Gaps of more than 1.5 intervals between samples within [start, end]."""
    ts = [t for t in times if start <= t <= end]
    if not ts:
        return [(start, end)]
    return [(a, b) for a, b in zip([start, *ts], [*ts, end], strict=True)
            if b - a > 1.5 * INTERVAL + 0.05]


def test_a_full_disk_keeps_rows_and_events_until_space_returns(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounts a tmpfs to fill: needs root")
    system_tools.require("unshare", "nsenter", "mount")
    pa, pb = free_port(), free_port()
    disk = Tmpfs(tmp_path / "state-studio-1", "16m")
    agents: list[AgentProc] = []

    def start_a() -> AgentProc:
        a = AgentProc(tmp_path, "studio-1", pa, [pb], "--interval", str(INTERVAL),
                      wrap=disk.enter)
        agents.append(a)
        a.wait_ready()
        return a

    try:
        b = AgentProc(tmp_path, "studio-2", pb, [pa], "--interval", str(INTERVAL))
        agents.append(b)
        b.wait_ready()
        # a first run makes its node id, token and database, then stops
        a = start_a()
        lid = wait_for(lambda: _link(a, "up"), 15)["id"]
        assert wait_for(lambda: len(_stored(disk, lid)[0]) >= 4, 15), a.log()
        a.close()

        # (d) started on a full disk: memory only, said once; opened once there is room
        disk.fill()
        a = start_a()
        assert wait_for(lambda: _link(a, "up"), 15), a.log()  # a peer_up, unstored
        hist = a.get("/v1/history", link=lid, seconds=60)
        assert hist["tier"] == "memory" and "cannot use history database" in a.log()
        first = hist["t"][0]  # this run's first sample
        disk.free()
        assert wait_for(lambda: "opened: writing what was kept" in a.log(), 30), a.log()
        stored = wait_for(lambda: (got := _stored(disk, lid))[0] and got[0][-1] > first + 5
                          and not _holes(got[0], first, got[0][-1]) and got, 20)
        assert stored, (first, _stored(disk, lid)[0][-5:], a.log())
        assert any(e["type"] == "peer_up" and e["at"] >= first - 1 for e in stored[2])

        # a full disk while running: (c) reads have every sample, from the ring
        disk.fill()
        assert wait_for(lambda: "cannot write history database" in a.log(), 10), a.log()
        full_at = a.get("/v1/history", link=lid, seconds=5)["t"][-1]
        b.kill(signal.SIGKILL)  # (b) a peer_down during the full period
        assert wait_for(lambda: _link(a, "down"), 15), a.log()
        wait_for(lambda: time.time() > full_at + 21, 30)  # the disk stays full 20 s
        during = a.get("/v1/history", link=lid, seconds=120)
        assert during["tier"] == "raw", during["tier"]  # the database's rows, then the ring's
        assert not _holes(during["t"], first, full_at + 20), during["t"]
        assert during["state"][-1] == "down"
        events = a.get("/v1/events", since=first - 1, until=during["t"][-1] + 5)["events"]
        assert "peer_down" in [e["type"] for e in events]
        assert all(t <= full_at for t in _stored(disk, lid)[0]), "the full disk took writes"

        # (a) space returns: the full period's samples and the event go in, rolled up
        disk.free()
        end = during["t"][-1]
        stored = wait_for(lambda: (got := _stored(disk, lid))[0] and got[0][-1] > end
                          and not _holes(got[0], first, end) and got, 20)
        assert stored, (full_at, end, _stored(disk, lid)[0][-5:], a.log())
        raw, tens, events = stored
        assert any(e["type"] == "peer_down" for e in events)
        # every 10 s bucket of this run up to the end of the full period, from all its rows
        whole = [10.0 * k for k in range(int(first // 10) + 1, int(end // 10))]
        assert any(t >= full_at for t in whole)
        counts = {t: (tens.get(t), sum(t <= r < t + 10 for r in raw)) for t in whole}
        assert all(n == m for n, m in counts.values()), counts
        log = a.log()
        assert log.count("cannot use history database") == 1
        assert log.count("cannot write history database") == 1  # then throttled
        print(f"full for {end - full_at:.1f} s; {len(raw)} rows stored")
    finally:
        for agent in agents:
            agent.close()
        disk.close()
