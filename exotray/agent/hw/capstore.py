"""Measured capacities that outlive the agent: `capacity.json` in the state dir.

One record per interface (a bridge member is an interface of its own):
``{"en3": {"mbit": 23000.0, "at": 1764720000.0, "speed_mbit": 40000.0}}`` — what the
capacity test measured through it, when (Unix time), and the interface's negotiated speed
then. A measurement stays valid until that speed changes (a new cable, a port that
renegotiated): then it describes another link and is dropped, saying so.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from exotray.agent.base.statedir import set_aside
from exotray.core import paths

log = logging.getLogger(__name__)

FILE = "capacity.json"
#: a file larger than this is not read (a record is under 100 bytes: this is thousands
#: of interfaces); it is set aside, as a file that is not JSON is
MAX_FILE_BYTES = 1 << 20
#: records kept (the newest measurements): a host has tens of interfaces, not thousands
MAX_RECORDS = 256
#: a record of an interface not seen for this long is dropped (a USB adapter long gone,
#: an old name); one seen is kept however old its measurement
FORGET_S = 30 * 86400.0
#: how often `seen` looks at which interfaces are there
SEEN_EVERY_S = 3600.0


@dataclass(frozen=True)
class Measured:
    mbit: float
    at: float  # Unix time
    speed_mbit: float | None  # the negotiated speed when it was measured
    seen: float | None = None  # when the interface was last there (Unix time)
    mac: str | None = None  # the interface's hardware address when it was measured


def _number(x: object) -> float | None:
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
    return float(x) if ok else None


class CapacityStore:
    def __init__(self, state_dir: Path | None) -> None:
        self.path = state_dir / FILE if state_dir is not None else None
        self.items: dict[str, Measured] = self._load()
        #: one writer thread, so saves land in order and the loop never waits on fsync
        self._writer: ThreadPoolExecutor | None = None
        self._seen_at = -1e18

    def _load(self) -> dict[str, Measured]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            if self.path.stat().st_size > MAX_FILE_BYTES:
                raise ValueError(f"over {MAX_FILE_BYTES >> 20} MiB")
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except OSError as e:
            log.warning("ignoring measured capacities in %s: %s", self.path, e)
            return {}
        except (ValueError, RecursionError) as e:  # (RecursionError: nested past the limit)
            self._set_aside(str(e)[:80] or type(e).__name__)
            return {}
        out, bad = {}, []
        for name, rec in data.items():
            rec = rec if isinstance(rec, dict) else {}
            mbit, at = _number(rec.get("mbit")), _number(rec.get("at"))
            if isinstance(name, str) and mbit and at:
                mac = rec.get("mac")
                out[name] = Measured(mbit, at, _number(rec.get("speed_mbit")),
                                     _number(rec.get("seen")),
                                     mac if isinstance(mac, str) and len(mac) <= 32 else None)
            else:
                bad.append(str(name)[:32])
        if bad:
            log.warning("ignoring malformed measured capacities in %s: %s", self.path,
                        ", ".join(bad[:8]) + (f" and {len(bad) - 8} more" if len(bad) > 8
                                              else ""))
        return _newest(out)

    def _set_aside(self, why: str) -> None:
        """A file that cannot be read is set aside (statedir.set_aside), with one log
        line, and the agent goes on without it (as with history.db): a bad file must not
        stop every start."""
        assert self.path is not None
        try:
            aside = set_aside(self.path, "unreadable", companions=())
        except OSError as e:
            log.warning("ignoring measured capacities in %s (%s); cannot set it aside: %s",
                        self.path, why, e.strerror or e)
            return
        log.warning("measured capacities in %s cannot be read (%s): set aside as %s; "
                    "measure again with exotray measure", self.path, why, aside.name)

    def put(self, name: str, mbit: float, at: float, speed_mbit: float | None,
            mac: str | None = None) -> None:
        self.items[name] = Measured(mbit, at, speed_mbit, at, mac)
        self.items = _newest(self.items)
        self._save()

    def valid(self, name: str, speed_mbit: float | None,
              mac: str | None = None) -> Measured | None:
        """The measurement of `name`, unless the interface has since negotiated another
        speed, or the name is another adapter's now (macOS numbers USB and Thunderbolt
        adapters `enX` by plug order: the hardware address tells them apart); then it is
        dropped, with one log line."""
        m = self.items.get(name)
        if m is None:
            return None
        if mac and m.mac and mac != m.mac:
            log.info("measured capacity of %s (%.0f Mbit/s) dropped: it was measured on "
                     "the adapter %s, and %s is now %s", name, m.mbit, m.mac, name, mac)
            del self.items[name]
            self._save()
            return None
        if speed_mbit and m.speed_mbit and abs(speed_mbit - m.speed_mbit) > 0.5:
            log.info("measured capacity of %s (%.0f Mbit/s) dropped: it was measured at a "
                     "link speed of %.0f Mbit/s, now %.0f", name, m.mbit, m.speed_mbit,
                     speed_mbit)
            del self.items[name]
            self._save()
            return None
        return m

    def seen(self, present: set[str], wall: float, force: bool = False) -> None:
        """The interfaces there now (at most once every SEEN_EVERY_S unless `force`):
        theirs are marked seen; a record of one not seen for FORGET_S is dropped, with one
        log line (issue 33 point 7: the file kept every name that ever was)."""
        if not self.items or (not force and wall - self._seen_at < SEEN_EVERY_S):
            return
        self._seen_at = wall
        changed = False
        for name, m in list(self.items.items()):
            if name in present:
                if m.seen is None or wall - m.seen >= SEEN_EVERY_S:
                    self.items[name] = Measured(m.mbit, m.at, m.speed_mbit, wall, m.mac)
                    changed = True
            elif wall - (m.seen or m.at) > FORGET_S:
                log.info("measured capacity of %s dropped: the interface has not been seen "
                         "for %.0f days", name, (wall - (m.seen or m.at)) / 86400)
                del self.items[name]
                changed = True
        if changed:
            self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        data = {n: {"mbit": m.mbit, "at": m.at, "speed_mbit": m.speed_mbit, "seen": m.seen,
                    **({"mac": m.mac} if m.mac else {})}
                for n, m in sorted(self.items.items())}
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._write(data)  # no loop (a test, a tool): write now
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="capstore")
        self._writer.submit(self._write, data)

    def flush(self) -> None:
        """Wait for the writes handed to the writer thread (the agent's stop)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None

    def _write(self, data: dict) -> None:
        assert self.path is not None
        try:
            paths.write_atomically(self.path, json.dumps(data, indent=1).encode(), mode=0o600)
        except OSError as e:
            log.warning("cannot keep the measured capacity in %s: %s", self.path,
                        e.strerror or e)


def _newest(items: dict[str, Measured]) -> dict[str, Measured]:
    """At most MAX_RECORDS records: the newest measurements."""
    if len(items) <= MAX_RECORDS:
        return items
    keep = sorted(items.items(), key=lambda kv: kv[1].at)[-MAX_RECORDS:]
    return dict(sorted(keep))
