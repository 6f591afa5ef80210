"""`exotray doctor`'s `loss` check: probes a link loses now, and sustained loss in the last
24 h of this node's history (core/doctor.py runs it).

The history comes with the cluster view, under `LOSS_HISTORY` (what a reader of
`/v1/history` put there: cli/doctor_history.py): per link of this node its rows of the last
day, each the mean of the link's `loss` over the row's span (a bucket of the 10 s tier,
or a sample) and `loss_max`, its highest. `loss` is the share of the RTT window's probes
lost (10 s: at rest 10 probes, in question 40), so a bucket's mean is, at an even
probing rate, the share of the bucket's probes lost.

**Sustained**: rows in a row, each at `SUSTAINED_LOSS` (5 %) or more, spanning
`SUSTAINED_S` (60 s) or more. 5 % of a minute is 3 probes of a link at rest, more than a
window's one-off glitch (one probe lost counts 10 % for 10 s: 1.7 % of the minute), and
enough to halve a TCP stream's rate. A row whose state is "down" is an outage (`reachable`
and `flapping` speak of those), not loss: it ends an episode. A stretch that goes on at
the newest row is still on: it fails; one that ended warns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exotray.core import fmt
from exotray.core.doctor_past import _clock, _span
from exotray.core.doctor_view import PAST_S, Check, Problem, View, found

#: loss now (of the link's 10 s window: at rest 10 probes, in question 40) that warns,
#: and that fails: one or two probes lost at rest (10 %, 20 %) warn; 3 of 10 is no
#: accident. (Probes sent before a link came up are not loss: probe/prober.py on_reply.)
LOSS_WARN, LOSS_FAIL = 0.1, 0.3
#: sustained loss in the history: this share of probes or more, over this long or longer
SUSTAINED_LOSS, SUSTAINED_S = 0.05, 60.0
#: episodes named per link (the rest counted)
SHOWN = 3
#: how a link's last day is read for the check (`exotray doctor`, the tray app): the
#: day's minutes, and room for the newest stretch, which comes a row a sample from the
#: finer tier (so the buckets stay a minute wide); only the columns the check reads
HISTORY_POINTS = int(PAST_S / 60.0) + 1 + 200
HISTORY_COLUMNS = "loss,state"
#: what is kept of an answer
KEPT = ("tier", "step_s", "interval_s", "until", "t", "loss", "loss_max", "state")
#: links of this node whose day is read at most (a node with more: the rest said unread)
MAX_LINKS = 32


def own_link_ids(cluster: dict[str, Any]) -> list[str]:
    """The ids of the links of the view's first node (this node), in its order."""
    nodes = cluster.get("nodes") or []
    own = nodes[0] if nodes and isinstance(nodes[0], dict) else {}
    return [lk["id"] for lk in own.get("links") or [] if isinstance(lk.get("id"), str)]


def history_query(now: float) -> dict[str, Any]:
    """The parameters of /v1/history (besides `link`) that read a link's last day."""
    return {"since": f"{now - PAST_S:.3f}", "until": f"{now:.3f}",
            "points": HISTORY_POINTS, "columns": HISTORY_COLUMNS}


def kept(answer: Any) -> dict[str, Any] | None:
    """What the check reads of a /v1/history answer; None when it has no loss (an agent
    whose history keeps none)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("loss"), list):
        return None
    return {k: answer.get(k) for k in KEPT}


def reading(ids: list[str], links: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The loss check's reading (the view's LOSS_HISTORY) of this node's links `ids`, in
    their order, from the days read (`links`: id -> `kept` answer): a link without one is
    said unread (over MAX_LINKS, out of time, not answered, an agent whose history keeps
    no loss, or not read yet)."""
    return {"links": {i: links[i] for i in ids if i in links},
            "unread": [i for i in ids if i not in links]}


@dataclass(frozen=True)
class Episode:
    """A stretch of sustained loss: from `start` for `seconds`, `loss` its mean, `peak`
    the highest any row saw; `on`: it goes on at the newest row."""

    start: float
    seconds: float
    loss: float
    peak: float
    on: bool


def episodes(rows: dict[str, Any], now: float) -> list[Episode]:
    """The stretches of sustained loss in one link's history rows (`t`, `loss`, and where
    given `loss_max`, `state`, `step_s`, `interval_s`), oldest first. Whether the newest
    goes on is judged at the answer's `until` (when it was read: the tray reads a link's
    day every few minutes), not at `now`."""
    until = rows.get("until")
    if isinstance(until, int | float) and until < now:
        now = until
    t = rows.get("t") or []
    loss = rows.get("loss")
    if not t or not isinstance(loss, list) or len(loss) != len(t):
        return []
    peaks = rows.get("loss_max") if isinstance(rows.get("loss_max"), list) else loss
    state = rows.get("state") if isinstance(rows.get("state"), list) else [None] * len(t)
    step = max(float(rows.get("step_s") or 0.0), float(rows.get("interval_s") or 1.0))
    out: list[Episode] = []
    run: list[tuple[float, float, float, float]] = []  # (start, end, loss, peak) of rows

    def close(on: bool) -> None:
        if run and run[-1][1] - run[0][0] >= SUSTAINED_S:
            spans = [e - s for s, e, _, _ in run]
            mean = sum(w * x for w, (_, _, x, _) in zip(spans, run, strict=True)) / sum(spans)
            out.append(Episode(run[0][0], run[-1][1] - run[0][0], mean,
                               max(p for _, _, _, p in run), on))
        run.clear()

    for i, ti in enumerate(t):
        nxt = t[i + 1] if i + 1 < len(t) else None
        gap = nxt is not None and nxt - ti > 1.5 * step  # no rows: the agent was off
        end = min(ti + step, now) if nxt is None or gap else min(ti + step, nxt)
        x = loss[i]
        if x is None or x < SUSTAINED_LOSS or state[i] == "down":
            close(False)
            continue
        peak = peaks[i] if peaks[i] is not None else x
        if run and ti - run[-1][1] > 0.5 * step:
            close(False)
        run.append((ti, end, x, max(peak, x)))
        if gap:
            close(False)
    close(bool(t) and now - t[-1] <= 2 * step + 1.0)
    return out


def said(e: Episode, now: float) -> str:
    """"12 % of probes for 4 min at 03:12", or "… since 03:12 (4 min, still on)"."""
    if e.on:
        return (f"{fmt.percent(e.loss)} of probes since {_clock(e.start)} "
                f"({_span(now - e.start)}, still on)")
    return f"{fmt.percent(e.loss)} of probes for {_span(e.seconds)} at {_clock(e.start)}"


def loss(v: View) -> Check:
    problems: list[Problem] = []
    history = v.loss_history
    past = (history or {}).get("links") or {}
    own = v.own.get("node", {}).get("id") if v.own else None
    for node in v.live():
        mine = node["node"]["id"] == own
        for lk in node.get("links") or []:
            rows = past.get(lk.get("id")) if mine else None
            found_ = episodes(rows, v.now) if isinstance(rows, dict) else []
            on = next((e for e in found_ if e.on), None)
            gone = [e for e in found_ if not e.on]
            lost = lk.get("loss")
            who = (v.name(node), v.peer_name(lk))
            fix = (f"Check the cable, Wi-Fi signal or switch between {v.name(node)} and "
                   f"{v.peer_name(lk)}.")
            if lk.get("state") != "down" and lost is not None and lost >= LOSS_WARN:
                since = (f", {fmt.percent(on.loss)} since {_clock(on.start)} "
                         f"({_span(v.now - on.start)})" if on else "")
                problems.append(Problem(
                    "fail" if lost >= LOSS_FAIL or on else "warn",
                    f"{v.where(node, lk)} loses {fmt.percent(lost)} of probes now{since}",
                    who, (lk["id"],), fix))
            elif on is not None:
                problems.append(Problem("fail", f"{v.where(node, lk)} lost {said(on, v.now)}",
                                        who, (lk["id"],), fix))
            if gone:
                more = len(gone) - SHOWN
                problems.append(Problem(
                    "warn", f"{v.where(node, lk)} lost "
                    + ", ".join(said(e, v.now) for e in gone[-SHOWN:])
                    + (f" (and {more} more)" if more > 0 else ""), who, (lk["id"],), fix))
    if history is None:
        ok = "no link loses probes now (the last 24 h not read)"
    else:
        unread = len(history.get("unread") or [])
        ok = (f"no link loses probes now, none lost {fmt.percent(SUSTAINED_LOSS)} for "
              f"{_span(SUSTAINED_S)} or more in the last 24 h"
              + (f" ({unread} link{'s' if unread != 1 else ''}' history not read)"
                 if unread else ""))
    return found("loss", problems, ok, "Check the path.")
