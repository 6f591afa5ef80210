"""The agent's HTTP API (Starlette, served by uvicorn). Read-only; JSON everywhere."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

if TYPE_CHECKING:
    from exotray.agent.runtime import Agent

MAX_HISTORY_S = 3600.0


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


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


def create_app(agent: Agent) -> Starlette:
    async def snapshot(request: Request) -> JSONResponse:
        return JSONResponse(agent.snapshot())

    async def cluster(request: Request) -> JSONResponse:
        return JSONResponse(agent.cluster())

    async def history(request: Request) -> JSONResponse:
        link = request.query_params.get("link")
        iface = request.query_params.get("interface")
        if (link is None) == (iface is None):
            return _error(400, "give exactly one of ?link=ID or ?interface=NAME")
        try:
            seconds = _number(request, "seconds", 600, 1, MAX_HISTORY_S)
        except ValueError as e:
            return _error(400, str(e))
        data = agent.history(link, iface, seconds)
        if data is None:
            return _error(404, f"no such {'link' if link is not None else 'interface'}")
        return JSONResponse(data)

    async def events(request: Request) -> JSONResponse:
        try:
            after = int(_number(request, "after", 0, 0, 2**53))
        except ValueError as e:
            return _error(400, str(e))
        return JSONResponse(
            {"last_seq": agent.events.last_seq, "events": agent.events.after(after)}
        )

    async def index(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "service": "exotray",
                "node": agent.node_id,
                "endpoints": ["/v1/snapshot", "/v1/cluster", "/v1/history", "/v1/events"],
            }
        )

    return Starlette(
        routes=[
            Route("/", index),
            Route("/v1/snapshot", snapshot),
            Route("/v1/cluster", cluster),
            Route("/v1/history", history),
            Route("/v1/events", events),
        ]
    )
