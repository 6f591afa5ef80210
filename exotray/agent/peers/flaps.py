"""A peer that flaps: its state stays live, its up/down events are held (issue 33 point 9).

A peer answering probes for 0.8 s of every 4 s made 60 peer_up/peer_down events in two
minutes, some 42k a day, each stored for 30 days. After more than `FLAP_CHANGES`
changes of state within `FLAP_WINDOW_S` (base/limits.py) a peer is *held* for
`FLAP_HOLD_S`: of its events at most one of each state is said per hold; at the hold's
end its state is said if it differs from the last one said, and a peer that still flaps
is held again. The table's own state (`Peer.was_up`, its links, the cluster view) is
never held: only what is said of it. Pure: the clock is passed in.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from exotray.agent.base import limits as L

log = logging.getLogger(__name__)


def _recent() -> deque[float]:
    return deque(maxlen=L.FLAP_CHANGES + 1)


@dataclass
class Flaps:
    #: when its last changes of state were (the last FLAP_CHANGES + 1)
    changes: deque[float] = field(default_factory=_recent)
    #: held until then; None while its events are said as they come
    held_until: float | None = None
    #: the states said in this hold (True: up)
    said: set[bool] = field(default_factory=set)

    def flapping(self, now: float) -> bool:
        """More than FLAP_CHANGES changes within the last FLAP_WINDOW_S."""
        return (len(self.changes) > L.FLAP_CHANGES
                and now - self.changes[0] <= L.FLAP_WINDOW_S)

    def changed(self, now: float, last_said: bool, who: str) -> bool:
        """A change of state at `now`; True when a hold begins with it (logged: a line
        a hold). The state said last counts as said in the new hold: the change itself
        is then said, its reverse not."""
        self.changes.append(now)
        if self.held_until is None and self.flapping(now):
            self.held_until = now + L.FLAP_HOLD_S
            self.said = {last_said}
            log.info("peer %s changed state %d times within %.0f s: of its peer_up and "
                     "peer_down events one of each is said per %.0f s while it flaps", who,
                     len(self.changes), now - self.changes[0], L.FLAP_HOLD_S)
            return True
        return False

    def may_say(self, up: bool) -> bool:
        return self.held_until is None or up not in self.said

    def saying(self, up: bool) -> None:
        if self.held_until is not None:
            self.said.add(up)

    def over(self, now: float, who: str) -> bool | None:
        """None but at a hold's end; there: held again (True) if the peer still flaps,
        else released (False, logged). The caller then says the state if it is not the
        one said last; a new hold has said nothing yet."""
        if self.held_until is None or now < self.held_until:
            return None
        again = self.flapping(now)
        self.held_until = now + L.FLAP_HOLD_S if again else None
        self.said = set()
        if not again:
            log.info("peer %s no longer flaps: its up/down events are said as they come", who)
        return again
