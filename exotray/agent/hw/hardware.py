"""The hardware readers' answers, kept on the event loop and refreshed off it.

`Hardware` holds what hw/read.py last said of each interface (negotiated speed, maximum,
bridge/bond members) and which bridge member reaches each peer. Reads run in a worker
thread, one at a time: all interfaces when the interface list or an up/down state
changed, else every REFRESH_S (system_profiler takes seconds); bridge members every
MEMBER_REFRESH_S, sooner (MEMBER_RETRY_S) for a peer whose member is not known yet.
The loop only ever reads the cache.

Where the readers know no speed of a Thunderbolt port, a second source may: exo's
(`exo_speeds`, set by exo/watch.py from exo's /state); `get` then answers that speed with
`source` "exo". It never makes an event: only the readers' own answers do.

It also turns a drop in negotiated speed into `link_degraded` and its recovery into
`link_restored` (wired and Thunderbolt interfaces; Wi-Fi's rate moves all the time and is
never an event): degraded means below the port's maximum where the OS says it, else
below the best speed this interface has negotiated since the agent started.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from exotray.agent.hw.read import HwLink, HwReader
from exotray.core import paths

log = logging.getLogger(__name__)

REFRESH_S = 120.0
#: reads are never closer than this, however often interfaces come and go
MIN_GAP_S = 15.0
#: kinds the readers read: other interfaces coming and going (AirDrop's awdl0, VPN utuns,
#: container veths) do not make the hardware worth reading again
READ_KINDS = ("ethernet", "wifi", "thunderbolt")
MEMBER_REFRESH_S = 30.0
MEMBER_RETRY_S = 5.0
#: a (bridge, peer) nobody asked about for this long is forgotten
MEMBER_FORGET_S = 300.0
#: kinds whose speed changes are events
EVENT_KINDS = ("ethernet", "thunderbolt")

Emit = Callable[..., None]  # emit(type_, **fields)


def _read_kinds(kinds: Mapping[str, str]) -> dict[str, str]:
    return {n: k for n, k in kinds.items() if k in READ_KINDS}


class Hardware:
    def __init__(self, reader: HwReader, emit: Emit | None = None,
                 state_dir: Path | None = None) -> None:
        self.reader = reader
        self.emit = emit or (lambda type_, **fields: None)
        #: the degraded ports told of, kept across restarts (DEGRADED_FILE in the state
        #: dir): a TB5 Mac cabled to a TB4 one is told once per cable, not at every start
        self._told = _Told(state_dir / DEGRADED_FILE if state_dir is not None else None)
        #: the last answer per interface (absent: the OS said nothing, so unknown)
        self.links: dict[str, HwLink] = {}
        #: exo's negotiated speeds of this machine's Thunderbolt ports (Mbit/s by
        #: interface; exo/watch.py), used only where the readers know none
        self.exo_speeds: dict[str, float] = {}
        self.read_at: float | None = None
        self._due = True
        self._task: asyncio.Task | None = None
        self._kinds: dict[str, str] = {}
        self._labels: dict[str, str] = {}
        # bridge members: (bridge, peer ip) -> member, when asked and when resolved
        self._members: dict[tuple[str, str], str | None] = {}
        self._asked: dict[tuple[str, str], float] = {}
        self._resolved_at: dict[tuple[str, str], float] = {}
        self._member_task: asyncio.Task | None = None
        # speed events: the speed each interface is degraded at; the best seen
        self.degraded: dict[str, float] = {}
        self._best: dict[str, float] = {}
        self._failed: str | None = None

    # -- what the monitor asks ---------------------------------------------------------
    def get(self, name: str | None) -> HwLink | None:
        if not name:
            return None
        hw = self.links.get(name)
        if (self.exo_speeds and (hw is None or not hw.speed_mbit)
                and self._kinds.get(name) == "thunderbolt"):
            return self._with_exo(name, hw)
        return hw

    def _with_exo(self, name: str, hw: HwLink | None) -> HwLink | None:
        """`hw` with exo's speed, `source` "exo": the port's own, or a bridge's fastest
        member's where its members are known (as hw/read.py takes a bridge's speed: a
        link crosses one cable). Without one, `hw` as it is: unknown stays unknown."""
        speed = self.exo_speeds.get(name)
        if speed is None and hw is not None and hw.bridge and hw.members:
            speed = max((self.exo_speeds[m] for m in hw.members if m in self.exo_speeds),
                        default=None)
        if speed is None:
            return hw
        if hw is None:
            return HwLink(name, speed, source="exo")
        return dataclasses.replace(hw, speed_mbit=speed, source="exo")

    def member(self, bridge: str | None, peer_ip: str, now: float | None = None) -> str | None:
        """The member of `bridge` that reaches `peer_ip`, when known (None: not a bridge,
        or not found yet — the caller then uses the bridge's totals, saying so). With
        `now` (the sampling path) the pair is also kept on the list of pairs to resolve;
        without it (views) this is a pure read."""
        hw = self.get(bridge)
        if hw is None or not hw.bridge or not hw.members or bridge is None:
            return None
        key = (bridge, peer_ip)
        if now is not None:
            self._asked[key] = now
        found = self._members.get(key)
        return found if found in hw.members else None

    def changed(self, names: set[str] | None = None) -> None:
        """Interfaces `names` (None: any) appeared, vanished or went up/down: read again
        at the next tick, when one of them is of a kind the readers read (or a bridge)."""
        if names is None or any(self._kinds.get(n) in READ_KINDS or self.get(n) is not None
                                for n in names):
            self._due = True

    # -- the tick (on the loop) ----------------------------------------------------------
    def tick(self, now: float, kinds: Mapping[str, str], labels: Mapping[str, str],
             up: Mapping[str, bool]) -> None:
        self._collect(now, up)
        self._collect_members(now)
        if _read_kinds(kinds) != _read_kinds(self._kinds):
            # new interfaces of kinds the readers read, or kinds settled (macOS:
            # networksetup answered after the first read ran with kinds guessed from names)
            self._due = True
        running = self._task is not None and not self._task.done()
        since = now - self.read_at if self.read_at is not None else None
        if not running and (since is None or since >= REFRESH_S
                            or (self._due and since >= MIN_GAP_S)):
            self._due = False
            self._kinds, self._labels = dict(kinds), dict(labels)
            self._task = asyncio.get_running_loop().create_task(
                asyncio.to_thread(self.reader.links, dict(kinds)), name="hw-read")
        self._start_members(now)

    def _collect(self, now: float, up: Mapping[str, bool]) -> None:
        task = self._task
        if task is None or not task.done():
            return
        self._task = None
        self.read_at = now  # also after a failure: the next try waits its turn
        try:
            found = task.result()
        except Exception as e:  # a reader bug must not stop sampling; say it once
            why = f"{type(e).__name__}: {e}"
            if why != self._failed:
                log.warning("reading link speeds failed, keeping the last answer: %s", why)
                self._failed = why
            return
        self._failed = None
        self.links = found
        self._speed_events(found, up)

    def _speed_events(self, found: dict[str, HwLink], up: Mapping[str, bool]) -> None:
        for name, hw in found.items():
            if self._kinds.get(name) not in EVENT_KINDS or hw.members or hw.phy_rate:
                continue  # a bridge's or bond's members speak for themselves
            speed = hw.speed_mbit
            if not speed or not up.get(name, False):
                # down or unplugged: not a speed, and no longer degraded (no event: that
                # is a link going down, which the probes report; a cable plugged again is
                # told again)
                self.degraded.pop(name, None)
                self._told.put(name, None)
                continue
            first = name not in self._best
            best = self._best[name] = max(self._best.get(name, 0.0), speed)
            full = hw.full_mbit or best
            label = self._labels.get(name) or name
            if speed < full:
                if self.degraded.get(name) != speed:
                    # from: the speed it was seen at before (None: slow from the start)
                    before = self.degraded.get(name) or (None if first else best)
                    if not (first and self._told.get(name) == speed):  # (told before)
                        self.emit("link_degraded", interface=name, local_label=label,
                                  from_mbit=before, to_mbit=speed, max_mbit=hw.full_mbit)
                    self.degraded[name] = speed
                    self._told.put(name, speed)
            elif name in self.degraded or self._told.get(name) is not None:
                # (also a port told slow before a restart and found at full speed after)
                was = self.degraded.pop(name, None) or self._told.get(name)
                self.emit("link_restored", interface=name, local_label=label,
                          from_mbit=was, to_mbit=speed, max_mbit=hw.full_mbit)
                self._told.put(name, None)

    # -- bridge members (worker thread) -----------------------------------------------------
    def _start_members(self, now: float) -> None:
        task = self._member_task
        if task is not None and not task.done():
            return
        for key, at in list(self._asked.items()):
            if now - at > MEMBER_FORGET_S:
                for d in (self._asked, self._members, self._resolved_at):
                    d.pop(key, None)
        due = [key for key in self._asked
               if now - self._resolved_at.get(key, -1e9) >= (
                   MEMBER_REFRESH_S if self._members.get(key) else MEMBER_RETRY_S)]
        if not due:
            return
        for key in due:
            self._resolved_at[key] = now
        self._member_task = asyncio.get_running_loop().create_task(
            asyncio.to_thread(self._resolve, due), name="hw-members")

    def _resolve(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
        """A round's pairs: at once where the reader can (macOS: `arp -an`, `ndp -an`, each
        bridge's address cache once), else one by one."""
        batch = getattr(self.reader, "members_for_peers", None)
        if batch is not None:
            try:
                return batch(keys)
            except Exception as e:  # (then one by one: one odd entry must not stop all)
                log.debug("bridge members of a round: %s", e)
        out: dict[tuple[str, str], str | None] = {}
        for bridge, ip in keys:
            try:
                out[(bridge, ip)] = self.reader.member_for_peer(bridge, ip)
            except Exception as e:  # one odd neighbour entry must not stop the others
                log.debug("bridge member for %s on %s: %s", ip, bridge, e)
                out[(bridge, ip)] = None
        return out

    def _collect_members(self, now: float) -> None:
        task = self._member_task
        if task is None or not task.done():
            return
        self._member_task = None
        try:
            found: dict[Any, str | None] = task.result()
        except Exception as e:
            log.warning("finding bridge members failed: %s", e)
            return
        for key, member in found.items():
            if key in self._asked:
                old = self._members.get(key)
                if member is None and old is not None:
                    continue  # aged out of the FDB for a moment: keep the last known port
                self._members[key] = member

    async def stop(self) -> None:
        for task in (self._task, self._member_task):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)


#: the degraded ports told of, in the state dir: {"en2": 40000.0}
DEGRADED_FILE = "degraded.json"


class _Told:
    """Which ports a link_degraded was told of, at which speed, kept in a small file so
    that a restart does not tell the same slow cable again. A file that cannot be read
    counts as empty (the port is then told once more); one that cannot be written is
    logged once."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.items: dict[str, float] = {}
        self._warned = False
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.items = {str(k)[:64]: float(v) for k, v in list(data.items())[:256]
                              if isinstance(v, int | float) and not isinstance(v, bool)}
            except (OSError, ValueError, AttributeError, RecursionError):
                pass

    def get(self, name: str) -> float | None:
        return self.items.get(name)

    def put(self, name: str, speed: float | None) -> None:
        if self.items.get(name) == speed:
            return
        if speed is None:
            self.items.pop(name, None)
        else:
            self.items[name] = speed
        if self.path is None:
            return
        try:
            paths.write_atomically(self.path, json.dumps(self.items).encode(), mode=0o600)
        except OSError as e:
            if not self._warned:
                self._warned = True
                log.warning("cannot keep which ports were told slow in %s: %s", self.path,
                            e.strerror or e)
