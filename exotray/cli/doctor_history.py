"""What `exotray doctor` reads of this node's history for its `loss` check: each of its
links' last 24 h from `/v1/history` (`columns=loss,state`), in 1 min buckets (the
database's 10 s tier, each bucket's mean and max; core/doctor_loss.py judges them).

Bounded: one read per link, at most MAX_LINKS links, and none begun after BUDGET_S
seconds of reading; a link not read, or an agent whose history keeps no loss, is named
in `unread` and the check says so. A reading is kept for REUSE_S (a doctor that reads the
view again, as `--active` does, does not read the day again).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from exotray.core import doctor_loss
from exotray.core.doctor_view import LOSS_HISTORY

#: links of this node read at most (a node with more: the rest are said unread)
MAX_LINKS = doctor_loss.MAX_LINKS
#: no read begins after this many seconds of reading (exotray doctor's target is 2 s)
BUDGET_S = 1.0
def read(get: Callable[..., Any], cluster: dict[str, Any], now: float,
         clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """`{"links": {link id: rows}, "unread": [link ids]}` of this node's (the view's first
    node) links. `get(**params)`: the answer of /v1/history to those parameters; any
    error it raises leaves that link unread."""
    ids = doctor_loss.own_link_ids(cluster)
    links: dict[str, dict[str, Any]] = {}
    start = clock()
    for lid in ids[:MAX_LINKS]:
        if clock() - start > BUDGET_S:
            break
        try:
            got = doctor_loss.kept(get(link=lid, **doctor_loss.history_query(now)))
        except Exception:  # no answer for this link: said unread, not fatal
            got = None
        if got is not None:
            links[lid] = got
    return doctor_loss.reading(ids, links)


def attach(cluster: dict[str, Any], now: float, get: Callable[..., Any],
           reading: dict[str, Any] | None = None) -> None:
    """Put `read`'s answer where the checks look for it (core/doctor_view.LOSS_HISTORY),
    or `reading`, one already made (doctor --active's second look, seconds later)."""
    cluster[LOSS_HISTORY] = reading if reading is not None else read(get, cluster, now)
