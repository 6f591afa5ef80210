"""Is exo's traffic to a peer on the wrong link? Pure: the caller gives each link's
facts, this says which `exo_slow_path` / `exo_slow_path_cleared` events are due.

A link carrying an exo instance is on the slow path when another link to the same peer
is up (not down, not saturated) and clearly better: both capacities known and the other
at least CLEARLY_MORE times as large, or, when either capacity is unknown, a faster kind
(Thunderbolt > Ethernet > Wi-Fi; other kinds are not compared). One event when that
starts, one when it ends (the link stops carrying the instance, the better link goes
down, or the used link becomes as good); nothing in between.
"""

from __future__ import annotations

from dataclasses import dataclass

#: how much more capacity counts as "clearly more"
CLEARLY_MORE = 1.5
KIND_RANK = {"thunderbolt": 3, "ethernet": 2, "wifi": 1}
#: below this utilization the better link is called idle in the notification
IDLE = 0.10


@dataclass(frozen=True)
class LinkFacts:
    id: str
    peer_key: str
    peer_name: str | None
    state: str
    kind: str | None
    label: str | None
    local_interface: str | None
    capacity: float | None
    utilization: float | None
    instances: tuple[dict, ...]  # wire form {"id", "model", "backend"}


def better(used: LinkFacts, other: LinkFacts) -> bool:
    if other.state != "up" or other.id == used.id or other.peer_key != used.peer_key:
        return False
    if used.capacity is not None and other.capacity is not None:
        return other.capacity >= CLEARLY_MORE * used.capacity
    a, b = KIND_RANK.get(used.kind or ""), KIND_RANK.get(other.kind or "")
    return a is not None and b is not None and b > a


def best_alternative(used: LinkFacts, links: list[LinkFacts]) -> LinkFacts | None:
    cands = [o for o in links if better(used, o)]
    if not cands:
        return None
    return max(cands, key=lambda o: (o.capacity or 0, KIND_RANK.get(o.kind or "", 0),
                                     -(o.utilization or 0)))


class SlowPaths:
    """The slow paths raised and not yet cleared: (link id, instance id) -> event fields."""

    def __init__(self) -> None:
        self.active: dict[tuple[str, str], dict] = {}

    def update(self, links: list[LinkFacts]) -> list[tuple[str, dict]]:
        """(event type, fields) for every change since the last call."""
        now: dict[tuple[str, str], dict] = {}
        for lk in links:
            for inst in lk.instances:
                alt = best_alternative(lk, links)
                if alt is None:
                    continue
                now[(lk.id, inst["id"])] = {
                    "link_id": lk.id,
                    "better_link_id": alt.id,
                    "instance": dict(inst),
                    "peer_id": lk.peer_key,
                    "peer_name": lk.peer_name or lk.peer_key,
                    "local_interface": lk.local_interface,
                    "local_label": lk.label,
                    "kind": lk.kind,
                    "better_interface": alt.local_interface,
                    "better_label": alt.label,
                    "better_kind": alt.kind,
                    "better_utilization": alt.utilization,
                    "better_idle": alt.utilization is not None and alt.utilization < IDLE,
                    "utilization": lk.utilization,
                }
        out: list[tuple[str, dict]] = []
        for key, fields in self.active.items():
            if key not in now:
                out.append(("exo_slow_path_cleared", fields))
        for key, fields in now.items():
            if key not in self.active:
                out.append(("exo_slow_path", fields))
        # keep the fields of the raise (the better link may change while it lasts)
        self.active = {k: self.active.get(k, v) for k, v in now.items()}
        return out

    def clear_all(self) -> list[tuple[str, dict]]:
        """exo went away: every slow path ends."""
        out = [("exo_slow_path_cleared", f) for f in self.active.values()]
        self.active = {}
        return out
