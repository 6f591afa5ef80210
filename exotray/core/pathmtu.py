"""Whether frames as large as a link's interface MTU reach its peer (issue 31, point 4).

Jumbo frames set on the Macs (MTU 9000) but not on the switch between them: small packets
pass, full-size ones vanish and TCP stalls, while every probe answers. So each link also
sends, now and then, a probe padded to its interface's MTU with "don't fragment" (the
wire is agent/probe/mtu.py); `MtuWatch` decides what to send and what the answers mean:

1. first a small padded probe (SMALL bytes): its answer says the peer's agent answers
   padded probes at all. An agent before this one never does: its links stay unknown
   (`path_mtu` null), never "mismatch";
2. then one of the interface's MTU: answered, `path_mtu` is the MTU and `mtu_ok` true;
   unanswered TRIES times (TRY_GAP_S apart) while the link's small probes are answered
   (the caller counts a result only while the link is up), `mtu_ok` is false and the
   standard FALLBACK (1500) is tried, when below the MTU, for `path_mtu`;
3. checked again every RECHECK_S once known, every RETRY_S while not, and from step 1
   as soon as the link's interface or its MTU changes. A check is the MTU-sized probe,
   its tries TRY_GAP_S apart while unanswered, and the fallback's: at most one check a
   minute per link.

At rest this is one MTU-sized datagram per link every RECHECK_S: 9000 bytes every 30
minutes, 5 bytes a second. Pure: times are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the frame that asks whether the peer answers padded probes at all: 28 bytes of
#: headers and 57 of payload, what an older agent reads of a datagram (a probe and its
#: tag, and one byte more), so that it sees no truncated datagram (it would take it for
#: a crowded socket) but a malformed one, dropped without a word
SMALL = 85
#: the frame size tried when the interface's MTU does not pass (Ethernet's standard)
FALLBACK = 1500
TRIES = 3
TRY_GAP_S = 2.0
RETRY_S = 60.0
RECHECK_S = 1800.0

#: the largest frame checked: jumbo frames' (loopback and virtual interfaces say 65536;
#: a datagram that large is no question of a cable, and seven of them arriving together
#: fill a probe socket's receive buffer)
MAX_FRAME = 9216

#: the first checks of a node's links are spread over this long (`spread_s`)
SPREAD_S = 20.0

#: what `result` may return: the link's MTU stopped passing / passes again
MISMATCH = "mismatch"
CLEARED = "cleared"


@dataclass
class MtuWatch:
    #: the frames the link's interface sends (its MTU), and which interface
    mtu: int | None = None
    interface: str | None = None
    #: bytes that reached the peer (None: unknown), and whether the MTU's did
    path_mtu: int | None = None
    ok: bool | None = None
    #: "small" | "full" | "fallback": the step; tries of this step unanswered
    step: str = "small"
    tries: int = 0
    next_at: float = 0.0
    #: a probe of this size is out
    waiting: int | None = None
    #: an mtu_mismatch was said and not cleared
    said_mismatch: bool = False
    #: how long after a change the first check waits: links' checks spread over
    #: SPREAD_S, so that a node's peers do not all send it a jumbo frame at one tick
    spread_s: float = 0.0

    def due(self, now: float, interface: str | None, mtu: int | None) -> int | None:
        """The size of the probe to send now, if one is due (it is then awaited)."""
        if mtu is None or mtu < SMALL or interface is None:
            return None
        mtu = min(mtu, MAX_FRAME)
        if (interface, mtu) != (self.interface, self.mtu):
            self.interface, self.mtu = interface, mtu
            self.step, self.tries, self.waiting = "small", 0, None
            self.next_at = now + self.spread_s
            self.path_mtu = self.ok = None  # (a mismatch said stays said until it passes)
        if self.waiting is not None or now < self.next_at:
            return None
        self.waiting = {"small": SMALL, "full": mtu, "fallback": FALLBACK}[self.step]
        return self.waiting

    def lost(self) -> None:
        """The probe out was not sent or does not count (the link's small probes were not
        answered either): the tries start again at the next chance."""
        self.waiting = None
        self.tries = 0

    def result(self, now: float, size: int, answered: bool) -> str | None:
        """The answer (or its absence) to the probe of `size`; MISMATCH when the MTU is
        found not to pass (after the fallback's try), CLEARED when it passes again."""
        if size != self.waiting or self.mtu is None:
            return None
        self.waiting = None
        if self.step == "small":
            if answered:
                self.step, self.tries, self.next_at = "full", 0, now
            else:
                self.next_at = now + RETRY_S  # an older agent: unknown, asked again later
            return None
        if self.step == "full":
            if answered:
                self.ok, self.path_mtu = True, self.mtu
                self.tries, self.next_at = 0, now + RECHECK_S
                if self.said_mismatch:
                    self.said_mismatch = False
                    return CLEARED
                return None
            self.tries += 1
            if self.tries < TRIES:
                self.next_at = now + TRY_GAP_S
                return None
            if self.mtu > FALLBACK:
                self.step, self.next_at = "fallback", now
                return None
            return self._mismatch(now, None)
        # the fallback's answer names what reaches the peer
        return self._mismatch(now, FALLBACK if answered else None)

    def _mismatch(self, now: float, reaches: int | None) -> str | None:
        self.ok, self.path_mtu = False, reaches
        self.step, self.tries, self.next_at = "full", 0, now + RETRY_S
        if self.said_mismatch:
            return None
        self.said_mismatch = True
        return MISMATCH
