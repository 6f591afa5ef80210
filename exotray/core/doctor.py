"""`exotray doctor`: why is the cluster slow? Checks over the cluster view, this node's
events of the last 24 h, its links' loss of the last 24 h (`cluster[LOSS_HISTORY]`, where a
reader put it: core/doctor_loss.py) and what the agent says of this node, each a pure function
(the command line and the window's Health view run the same ones).

Each check says pass, warn or fail, which nodes and links, and what to do. A fact the
view does not have is not guessed: the check passes and its summary says "unknown".
The checks' ids are part of the contract (DESIGN.md; docs/reference.md lists them).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from exotray.core import doctor_links as links
from exotray.core import doctor_loss
from exotray.core import doctor_nodes as nodes
from exotray.core import doctor_past as past
from exotray.core.doctor_view import LOSS_HISTORY, PAST_S, STATUSES, Check, View

__all__ = ["CHECKS", "IDS", "LOSS_HISTORY", "PAST_S", "Check", "exit_status", "failing", "run"]

CHECKS: tuple[tuple[str, Callable[[View], Check]], ...] = (
    ("reachable", links.reachable),
    ("udp_probes", links.udp_probes),
    ("fastest_link", links.fastest_link),
    ("link_speed", links.link_speed),
    ("mtu", links.mtu),
    ("loss", doctor_loss.loss),
    ("queueing", past.queueing),
    ("flapping", past.flapping),
    ("capacity_unknown", links.capacity_unknown),
    ("versions", nodes.versions),
    ("rdma", nodes.rdma),
    ("tb_bridge", nodes.tb_bridge),
    ("local_network", nodes.local_network),
    ("wifi_awdl", nodes.wifi_awdl),
    ("history", nodes.history),
)
IDS = tuple(i for i, _ in CHECKS)


def run(cluster: dict[str, Any], events: list[dict[str, Any]], now: float,
        platform: str | None = sys.platform) -> list[Check]:
    """Every check, problems first (fails, then warnings), each group in IDS order.
    `events`: this node's events (those of the last 24 h before `now` count);
    `platform`: this node's (`sys.platform`; None when the agent is elsewhere)."""
    view = View(cluster, events, now, platform)
    out = []
    for check_id, fn in CHECKS:
        try:
            out.append(fn(view))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            # a view this check cannot read (an agent of another version): said, not fatal
            out.append(Check(check_id, "warn", f"could not be checked ({type(e).__name__}: "
                             f"{e}).", "Run the same exotray version on every node."))
    return sorted(out, key=lambda c: STATUSES.index(c.status))


def failing(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.status == "fail"]


def exit_status(checks: list[Check]) -> int:
    """0 when nothing fails, 1 when something does."""
    return 1 if failing(checks) else 0
