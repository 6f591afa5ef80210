"""macOS: where hw/flows.py's FlowBytes reads each connection's bytes — one `nettop`
process in logging mode, kept while a shared carrier carries traffic (issue 30).

`nettop -m tcp -L 0 -s 1 -x -n` prints a sample of every TCP connection's counters each
second until stopped (nettop(1); the columns are its defaults, as recorded in
tests/fixtures/macos: `time,,interface,state,bytes_in,bytes_out,...`). It writes to a
pseudo-terminal, not a pipe: through a pipe the C library would hold its output back in
4 KiB lumps (agentmon, whose recording is among the fixtures, runs it under a pty too).

Each read takes what nettop printed since, without waiting. A sample is whole once the
next one's header has come, so the counters are those of the last whole sample, up to a
second old; `sampled_at` is when nettop read them (its rows' `time`, made continuous
across midnight), so that a link's rate is its bytes over nettop's interval, not over
whichever tick happened to see the sample. A read that finds no new sample leaves
`sampled_at` as it was.

A connection is kept with its last counters for as long as nettop runs: a sample may
leave out rows that did not change (the recorded stream does), so a connection missing
from one is not taken for closed. What a connection carried after the last sample that
showed it and before it closed is not counted: nettop says nothing when one closes
(packaging/macos/CHECKLIST.md). No table is walked here (`opens()` is None): each read
is a parse of one sample.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import subprocess
import termios
import time
from collections.abc import Callable, Sequence

from exotray.agent.hw import nettop, sockdiag

log = logging.getLogger("exotray.agent.hw.monitor")

COMMAND = ("nettop", "-m", "tcp", "-L", "0", "-s", "1", "-x", "-n")
#: a nettop that printed no whole sample for this long is stuck: reading fails (OSError)
SILENT_S = 10.0
#: connections remembered; beyond, the ones whose counters moved least recently go
MAX_CONNECTIONS = 4096
#: text held while waiting for a header (a sample is a few hundred lines at most)
MAX_PENDING = 1 << 20
_DAY = 86400.0
#: nettop's times moving this much more than our clock did are its clock set on, not time
JUMP_S = 5.0


def _controlling_terminal() -> None:
    """(In the child, after setsid: its stdout, the terminal, becomes its controlling one.)"""
    fcntl.ioctl(1, termios.TIOCSCTTY, 0)


class NettopSource:
    """The reader FlowBytes takes on macOS: the same calls as sockdiag.SockDiag."""

    #: the snapshot's `flow_source` of what it reads (core/schema.FLOW_SOURCES)
    NAME = "nettop"

    def __init__(self, command: Sequence[str] = COMMAND,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.command = tuple(command)
        self._clock = clock
        self._proc: subprocess.Popen | None = None
        self._fd: int | None = None
        self._pending = ""  # text since the last whole sample's end
        self._conns: dict[int, sockdiag.Conn] = {}  # cookie -> its last counters
        self._wanted: frozenset[bytes] = frozenset()  # the remotes last asked for
        #: when nettop read the counters last taken (its clock, seconds), None before
        self.sampled_at: float | None = None
        self._heard_at = 0.0  # our clock: when a whole sample last came
        self._stamped = 0.0  # our clock: when `sampled_at` last moved
        self._raw = 0.0  # nettop's time of that sample (seconds since its midnight)
        self.overflows = 0  # (the reader's interface: nothing overflows here)

    @property
    def is_open(self) -> bool:
        return self._proc is not None

    def open(self) -> None:
        """OSError when nettop cannot be started."""
        if self._proc is not None:
            return
        master, slave = os.openpty()
        try:
            # the terminal is nettop's controlling one, in a session of its own: when our
            # side closes — close(), or the agent killed outright — the kernel hangs it up
            # and nettop gets SIGHUP (else, writing with printf, it would run on for ever)
            self._proc = subprocess.Popen(
                self.command, stdin=subprocess.DEVNULL, stdout=slave,
                stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                preexec_fn=_controlling_terminal)
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        self._fd, self._heard_at = master, self._clock()

    def close(self) -> None:
        proc, fd, self._proc, self._fd = self._proc, self._fd, None, None
        if fd is not None:
            os.close(fd)  # (first: its hangup ends nettop, which cannot then block on it)
        if proc is not None and proc.poll() is None:
            proc.terminate()  # (our own child, by its Popen)
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._pending, self._conns = "", {}
        self.sampled_at = None

    def opens(self) -> int | None:
        return None  # (no table to walk: every read is the same parse)

    def destroyed(self, wanted: frozenset[bytes] | None = None) -> list[sockdiag.Conn]:
        return []  # (nettop has no closing message)

    def lookup(self, keys: Sequence[bytes]) -> list[sockdiag.Conn]:
        return []  # (never called: opens() is None)

    def connections(self, wanted: frozenset[bytes] | None = None) -> list[sockdiag.Conn]:
        """The connections (to `wanted` remote addresses) with their counters in the last
        whole sample that showed them. OSError when nettop has exited or gone silent."""
        if wanted is not None:
            self._wanted = wanted
        self._take(self._drain())
        return [c for c in self._conns.values() if wanted is None or c.remote in wanted]

    def _drain(self) -> str:
        fd, proc = self._fd, self._proc
        if fd is None or proc is None:
            raise OSError(errno.EBADF, "nettop is not running")
        chunks: list[bytes] = []
        while True:
            try:
                b = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError as e:  # EIO: the terminal's other side closed, nettop is gone
                if e.errno != errno.EIO:
                    raise
                b = b""
            if not b:
                break
            chunks.append(b)
        if not chunks and proc.poll() is not None:
            raise OSError(errno.ECHILD, f"nettop exited ({proc.returncode})")
        return b"".join(chunks).decode("utf-8", "replace")

    def _take(self, text: str) -> None:
        """Add the samples `text` completes; keep the rest for the next read."""
        pending = self._pending + text
        lines = pending.split("\n")
        # the last header among the whole lines: what comes before it is whole samples
        cut = None
        at = 0
        for line in lines[:-1]:
            if nettop.columns(line) is not None:
                cut = at
            at += len(line) + 1
        if not cut:  # (none, or only the sample under way: nothing new is whole)
            if len(pending) > MAX_PENDING:
                log.warning("nettop printed %d bytes without a header: dropped", len(pending))
                pending = ""
            self._pending = pending
            if self._clock() - self._heard_at > SILENT_S:
                raise OSError(errno.ETIMEDOUT, f"nettop printed no sample for {SILENT_S:g} s")
            return
        whole, self._pending = pending[:cut], pending[cut:]
        samples = nettop.parse(whole)
        self._heard_at = self._clock()
        for sample in samples:
            for c in nettop.conns(sample):
                self._conns.pop(c.cookie, None)  # (re-inserted: the newest last)
                self._conns[c.cookie] = c
            self._stamp(sample)
        if len(self._conns) > MAX_CONNECTIONS:
            # down to 3/4 of the bound (a walk now and then, not at every sample): the
            # least recently moved go, those to links' peers last. FlowBytes counts from a
            # connection's last counters here (nettop says nothing when one closes), and
            # forgets one missing for an hour: one idle longer, forgotten by both and
            # seen again, would be counted whole again
            over = len(self._conns) - MAX_CONNECTIONS * 3 // 4
            gone = [k for k, c in self._conns.items() if c.remote not in self._wanted]
            if len(gone) < over:
                gone += [k for k, c in self._conns.items() if c.remote in self._wanted]
            for cookie in gone[:over]:
                del self._conns[cookie]

    def _stamp(self, sample: list[nettop.Flow]) -> None:
        """`sampled_at` from the sample's rows: on by what nettop's times moved since the
        last sample (across midnight too), unless that is no step forward or far more
        than our own clock moved (its local clock set back or on: daylight saving, a time
        zone, NTP), then by our own clock's step; a sample without a timed row (no TCP
        connection at all) likewise."""
        now = self._clock()
        times = [f.at for f in sample if f.at is not None]
        raw = max(times) if times else None
        if self.sampled_at is None:
            if raw is not None:
                self.sampled_at, self._raw, self._stamped = raw, raw, now
            return
        ours = max(0.0, now - self._stamped)
        if raw is None:
            step = ours
        else:
            step = raw - self._raw
            if step < -_DAY / 2:
                step += _DAY  # (past midnight)
            if step <= 0 or step > ours + JUMP_S:
                step = ours if step != 0 else 0.0
            self._raw = raw
        if step > 0:
            self.sampled_at += step
            self._stamped = now
