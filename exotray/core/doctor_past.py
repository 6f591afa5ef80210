"""`exotray doctor`'s checks of what links did, now and in the last day's events:
`queueing`, `flapping` (core/doctor.py runs them; `loss` is core/doctor_loss.py)."""

from __future__ import annotations

import time
from typing import Any

from exotray.core import fmt
from exotray.core import queueing as q
from exotray.core.doctor_view import Check, Problem, View, found
from exotray.core.events import event_time


def _clock(t: float) -> str:
    return time.strftime("%H:%M", time.localtime(t))


def _span(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _episodes(v: View, raise_: str, clear: str, keep: Any = None,
              ) -> list[tuple[dict[str, Any], float, float | None]]:
    """(raise, its time, the time it ended or None) of the raises of the last day that
    `keep(event)` takes, by link (or interface)."""
    out: list[tuple[dict[str, Any], float, float | None]] = []
    open_: dict[Any, int] = {}
    for e in v.of(raise_, clear):
        k = e.get("link_id") or e.get("interface")
        t = event_time(e) or v.now
        if e["type"] == raise_:
            if keep is None or keep(e):
                open_[k] = len(out)
                out.append((e, t, None))
        elif k in open_:
            i = open_.pop(k)
            out[i] = (out[i][0], out[i][1], t)
    return out


def _who(v: View, e: dict[str, Any]) -> str:
    node = e.get("node") or v.own_name
    if e.get("link_id") is None and e.get("interface"):
        return f"{node}'s {e.get('local_label') or e['interface']} ({e['interface']})"
    via = e.get("local_label") or e.get("local_interface") or "?"
    return f"{node} → {e.get('peer_name') or e.get('peer_id') or '?'} via {via}"


def _when(v: View, t: float, end: float | None) -> str:
    if end is None:
        return f"since {_clock(t)} ({_span(v.now - t)}, still on)"
    return f"at {_clock(t)} for {_span(end - t)}"


def queueing(v: View) -> Check:
    problems: list[Problem] = []
    for node in v.live():
        for lk in node.get("links") or []:
            if lk.get("state") != "down" and (note := q.note(lk)):
                problems.append(Problem(
                    "warn", f"{v.where(node, lk)}: {note} now",
                    (v.name(node), v.peer_name(lk)), (lk["id"],)))
    for e, t, end in _episodes(v, "link_saturated", "link_cleared",
                               lambda e: e.get("cause") == "queueing"):
        qd = e.get("queue_delay_ms")
        problems.append(Problem(
            "fail" if end is None else "warn",
            f"{_who(v, e)} queued" + (f" (+{fmt.ms(qd)})" if qd is not None else "")
            + f" {_when(v, t, end)}", (e.get("node") or v.own_name,),
            (e["link_id"],) if e.get("link_id") else ()))
    for e, t, end in _episodes(v, "link_slower", "link_slower_cleared"):
        problems.append(Problem(
            "warn", f"{_who(v, e)}'s idle RTT rose from {fmt.ms(e.get('rtt_before_ms'))} to "
            f"{fmt.ms(e.get('rtt_now_ms'))} {_when(v, t, end)}",
            (e.get("node") or v.own_name,), (e["link_id"],) if e.get("link_id") else ()))
    return found("queueing", problems, "no queueing delay now or in the last 24 h",
                 "Find what else sends over these links at those times (a backup, a sync, "
                 "another job), or give them a faster path.")


def flapping(v: View) -> Check:
    problems: list[Problem] = []
    for e, t, end in _episodes(v, "link_flapping", "link_flapping_cleared"):
        n = e.get("changes")
        problems.append(Problem(
            "fail" if end is None else "warn",
            f"{_who(v, e)} flapped" + (f" ({n} changes)" if n else "")
            + f" {_when(v, t, end)}", (e.get("node") or v.own_name,),
            (e["link_id"],) if e.get("link_id") else (),
            "Replace or reseat the cable (a carrier that flaps is the cable, the port or the "
            "far end's power saving)." if e.get("link_id") is None else
            "Check the cable and both ends of this link."))
    return found("flapping", problems, "no link or port flapped in the last 24 h",
                 "Replace the cable.")
