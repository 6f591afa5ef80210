"""The API's reads of the past: `/v1/history` (a link's or an interface's samples over a
range, from the SQLite history and the live rings) and `/v1/events` (after a sequence
number, or over a time range). The reads that go to the database take a reader's place
first (http/readers.py: LAN clients one at a time with fewer rows, loopback first).
"""

from __future__ import annotations

import math

from starlette.requests import Request
from starlette.responses import JSONResponse

from exotray.agent.history import store
from exotray.agent.http.control import is_loopback
from exotray.agent.http.readers import Busy, Readers
from exotray.agent.http.services import error, services
from exotray.core.history import IFACE_COLUMNS, LINK_COLUMNS

#: the longest range /v1/history answers (what history_days allows at most)
MAX_HISTORY_S = 3650 * 86400.0
#: a time given to /v1/history or /v1/events (unix seconds) is at most this
MAX_TIME = 2.0**40
#: events one /v1/events?since=… answer holds by default and at most
EVENTS_LIMIT, MAX_EVENTS_LIMIT = 1000, 10_000


def _number(request: Request, name: str, default: float, lo: float, hi: float) -> float:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {raw[:40]!r}") from None
    if not math.isfinite(value) or not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo:g} and {hi:g}")
    return value


def _range(request: Request, now: float, default_s: float = 600.0) -> tuple[float, float]:
    """(since, until) in unix seconds from ?since=&until= or ?seconds= (back from until,
    default now)."""
    q = request.query_params
    if "since" in q and "seconds" in q:
        raise ValueError("give since or seconds, not both")
    until = _number(request, "until", now, 0, MAX_TIME)
    if "since" in q:
        since = _number(request, "since", 0, 0, MAX_TIME)
    else:
        since = until - _number(request, "seconds", default_s, 1, MAX_HISTORY_S)
    if since > until:
        raise ValueError("since must not be after until")
    return since, until


def _columns(request: Request, known: tuple[str, ...]) -> tuple[str, ...] | None:
    """?columns=a,b: only these of the series' columns (t always), else all."""
    raw = request.query_params.get("columns")
    if raw is None:
        return None
    got = tuple(c for c in raw.split(",") if c)
    wrong = [c for c in got if c not in known[1:]]
    if wrong or not got:
        raise ValueError(f"columns: {(wrong[0] if wrong else raw)[:40]!r} is not one of "
                         f"{', '.join(known[1:])}")
    return got


def _local(request: Request) -> bool:
    return is_loopback(request.client.host if request.client else None)


def _busy(e: Busy) -> JSONResponse:
    return JSONResponse({"error": str(e)}, status_code=503,
                        headers={"retry-after": str(int(e.retry_s))})


def readers(request: Request) -> Readers:
    return request.app.state.readers


async def history(request: Request) -> JSONResponse:
    agent = services(request)
    link = request.query_params.get("link")
    iface = request.query_params.get("interface")
    if (link is None) == (iface is None):
        return error(400, "give exactly one of ?link=ID or ?interface=NAME")
    now = agent.now()
    try:
        since, until = _range(request, now)
        points = int(_number(request, "points", store.POINTS, store.MIN_POINTS,
                             store.MAX_POINTS))
        columns = _columns(request, LINK_COLUMNS if link is not None else IFACE_COLUMNS)
    except ValueError as e:
        return error(400, str(e))
    local = _local(request)
    points = Readers.points(local, points)
    try:
        async with readers(request).slot(local):
            data = await agent.store.answer(
                link, iface, since, until, points, now, agent.settings.interval,
                lambda: agent.history(link, iface, max(0.0, now - since)), columns)
    except Busy as e:
        return _busy(e)
    if data is None:
        return error(404, f"no such {'link' if link is not None else 'interface'}")
    return JSONResponse(data)


async def events(request: Request) -> JSONResponse:
    agent = services(request)
    q = request.query_params
    try:
        after = int(_number(request, "after", 0, 0, 2**53))
        if "since" in q or "until" in q:
            since, until = _range(request, agent.now(), default_s=86400.0)
            limit = int(_number(request, "limit", EVENTS_LIMIT, 1, MAX_EVENTS_LIMIT))
            local = _local(request)
            async with readers(request).slot(local):
                got = await agent.store.event_range(
                    since, until, Readers.points(local, limit), agent.events.after(0))
            return JSONResponse({"last_seq": agent.events.last_seq, **got})
    except ValueError as e:
        return error(400, str(e))
    except Busy as e:
        return _busy(e)
    return JSONResponse(
        {"last_seq": agent.events.last_seq, "events": agent.events.after(after)}
    )
