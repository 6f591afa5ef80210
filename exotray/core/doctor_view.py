"""What `exotray doctor`'s checks share: a check's result (`Check`), and the cluster view,
the last day's events and this node's platform read once for all of them (`View`).

Pure: the clock is `now`, passed in. A fact that is not in the view is not guessed: a
check with nothing to judge passes and says "unknown".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exotray.core.events import event_time
from exotray.core.topology import node_condition

STATUSES = ("fail", "warn", "pass")

#: the events a doctor reads: the last day's (seconds)
PAST_S = 86400.0
#: where a reader puts this node's links' loss of the last day in the cluster view
#: (`{"links": {link id: rows of /v1/history}, "unread": [link ids]}`: core/doctor_loss.py)
LOSS_HISTORY = "doctor_loss_history"
#: traffic that counts as traffic: below it queueing cannot raise saturation and the
#: agents' own probes and streams stay (docs/design.md, "Pacing"), bytes/s
BUSY_BYTES_PER_S = 125_000.0
#: kinds from the fastest to the slowest, for links whose capacity is not known
KIND_RANK = {"thunderbolt": 5, "ethernet": 4, "wifi": 2, "vpn": 1, "other": 1,
             "virtual": 1, "loopback": 0}
#: a link is clearly faster than another at this ratio of capacities (as exo_slow_path)
FASTER_BY = 1.5


@dataclass(frozen=True)
class Check:
    """One check's result: its `id` (part of the contract), `status` ("pass", "warn",
    "fail"), what it found and what to do, in a sentence each, and the names of the
    nodes and the ids of the links it is about."""

    id: str
    status: str
    summary: str
    fix: str = ""
    nodes: tuple[str, ...] = ()
    links: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "summary": self.summary,
                "fix": self.fix, "nodes": list(self.nodes), "links": list(self.links)}


def passed(check_id: str, summary: str) -> Check:
    return Check(check_id, "pass", summary)


def found(check_id: str, problems: list[Problem], ok: str, fix: str) -> Check:
    """A check from its problems (each a warn or a fail): the worst status, their words
    joined, every node and link named once; `ok` when there is none."""
    if not problems:
        return passed(check_id, ok)
    worst = "fail" if any(p.status == "fail" for p in problems) else "warn"
    ordered = sorted(problems, key=lambda p: p.status != "fail")
    fixes = list(dict.fromkeys(p.fix for p in ordered if p.fix)) or [fix]
    return Check(check_id, worst, "; ".join(p.text for p in ordered) + ".",
                 " ".join(f.rstrip(".") + "." for f in fixes[:3]),
                 tuple(dict.fromkeys(n for p in ordered for n in p.nodes)),
                 tuple(dict.fromkeys(lk for p in ordered for lk in p.links)))


@dataclass(frozen=True)
class Problem:
    status: str
    text: str
    nodes: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    fix: str = ""


def rate_of(link: dict[str, Any]) -> float:
    """The larger direction of what a link's carrier moves now (bytes/s, 0 unknown)."""
    return max(link.get("rx_bytes_per_s") or 0.0, link.get("tx_bytes_per_s") or 0.0)


class View:
    """The cluster view as the checks read it. `events`: this node's events (any order);
    only those of the last PAST_S before `now` are kept, oldest first. `platform`: this
    node's `sys.platform`, None when not known."""

    def __init__(self, cluster: dict[str, Any], events: list[dict[str, Any]], now: float,
                 platform: str | None = None) -> None:
        self.cluster = cluster
        self.now = now
        self.platform = platform
        given = [n for n in cluster.get("nodes") or [] if isinstance(n, dict)]
        #: the nodes that say who they are (the rest are not judged)
        self.nodes = [n for n in given if isinstance(n.get("node"), dict)
                      and isinstance(n["node"].get("id"), str)
                      and isinstance(n["node"].get("name"), str)]
        self.own: dict[str, Any] = given[0] if given and given[0] in self.nodes else {}
        self.names = {n["node"]["id"]: n["node"]["name"] for n in self.nodes}
        self.by_id = {n["node"]["id"]: n for n in self.nodes}
        timed = [(t, e) for e in events if (t := event_time(e)) is not None
                 and now - PAST_S <= t <= now + 60]
        self.events = [e for _, e in sorted(timed, key=lambda te: te[0])]
        self.peers = [p for p in cluster.get("peers") or [] if isinstance(p, dict)]
        got = cluster.get(LOSS_HISTORY)
        #: this node's links' loss of the last day (None: not read)
        self.loss_history: dict[str, Any] | None = got if isinstance(got, dict) else None

    # -- nodes and links ---------------------------------------------------------------
    def name(self, node: dict[str, Any]) -> str:
        return node["node"]["name"]

    @property
    def own_name(self) -> str:
        return self.name(self.own) if self.own else "this node"

    def live(self) -> list[dict[str, Any]]:
        """The nodes measuring now (not stale, not paused): their links are their state."""
        return [n for n in self.nodes if node_condition(n) is None]

    def peer_name(self, link: dict[str, Any]) -> str:
        return (link.get("peer_name") or self.names.get(link.get("peer_id") or "")
                or link.get("peer_address") or "?")

    def iface(self, node: dict[str, Any], name: str | None) -> dict[str, Any] | None:
        if not name:
            return None
        return next((i for i in node.get("interfaces") or [] if i.get("name") == name), None)

    def carrier(self, node: dict[str, Any], link: dict[str, Any]) -> dict[str, Any] | None:
        """The interface that carries a link: its bridge member when known, else its own."""
        return (self.iface(node, link.get("member_interface"))
                or self.iface(node, link.get("local_interface")))

    def kind(self, node: dict[str, Any], link: dict[str, Any]) -> str | None:
        it = self.carrier(node, link)
        return it.get("kind") if it else None

    def via(self, link: dict[str, Any]) -> str:
        """A link's interface as the user knows it: "Thunderbolt Bridge (bridge0)"."""
        name, label = link.get("local_interface"), link.get("local_label")
        if not name:
            return "?"
        return f"{label} ({name})" if label and label != name else name

    def where(self, node: dict[str, Any], link: dict[str, Any]) -> str:
        """"studio-1 → studio-2 via Thunderbolt Bridge (bridge0)"."""
        return f"{self.name(node)} → {self.peer_name(link)} via {self.via(link)}"

    def peer_node(self, link: dict[str, Any]) -> dict[str, Any] | None:
        return self.by_id.get(link.get("peer_id") or "")

    def fresh(self, node: dict[str, Any]) -> bool:
        """Whether a peer's snapshot arrives now: reachable, and no older than a stream
        that is alive may be silent ((HEARTBEAT + 2) intervals + 1 s)."""
        interval = node.get("interval_s") or 1.0
        return bool(node.get("reachable")) and (node.get("age_s") or 0.0) <= 7 * interval + 1

    # -- events ------------------------------------------------------------------------
    def of(self, *types: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") in types]

    def active(self, raise_: str, clear: str, key: str = "link_id") -> list[dict[str, Any]]:
        """The raises of `raise_` not followed by their `clear` (by `key`): still on."""
        on: dict[Any, dict[str, Any]] = {}
        for e in self.of(raise_, clear):
            k = e.get(key) or e.get("interface")
            if e["type"] == raise_:
                on[k] = e
            else:
                on.pop(k, None)
        return list(on.values())
