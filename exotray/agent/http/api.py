"""The agent's HTTP API (Starlette, served by uvicorn). JSON everywhere.

Everything is read-only except /v1/control/*, which answers only loopback clients that
present the control token (see agent/http/control.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from exotray.agent.base.keys import SIGNATURE_HEADER, ClusterKeyError, sign, signed_by
from exotray.agent.history import store
from exotray.agent.http import captest, control
from exotray.agent.http.guard import RequestGuard
from exotray.agent.share.cluster_view import SharedView
from exotray.core.events import EventLog
from exotray.core.settings import Settings, SettingsError

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger(__name__)

#: the longest range /v1/history answers (what history_days allows at most)
MAX_HISTORY_S = 3650 * 86400.0
#: a time given to /v1/history or /v1/events (unix seconds) is at most this
MAX_TIME = 2.0**40
#: events one /v1/events?since=… answer holds by default and at most
EVENTS_LIMIT, MAX_EVENTS_LIMIT = 1000, 10_000
#: how often a running capacity test checks that its client is still there
DISCONNECT_POLL_S = 0.2
MAX_BODY = 64 * 1024
#: request line + headers; uvicorn only bounds *incomplete* header data
MAX_HEAD = 16 * 1024


class HeadLimit:
    """Refuse requests whose headers and query string exceed MAX_HEAD (431)."""

    def __init__(self, app: object) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: object, send: object) -> None:
        if scope["type"] == "http":
            size = len(scope.get("query_string", b"")) + len(scope.get("raw_path") or b"")
            size += sum(len(k) + len(v) for k, v in scope.get("headers", []))
            if size > MAX_HEAD:
                await JSONResponse({"error": f"request headers over {MAX_HEAD} bytes"},
                                   status_code=431)(scope, receive, send)
                return
        await self.app(scope, receive, send)  # type: ignore[operator]


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


class Services(Protocol):
    """What the API needs of the agent, and all it may touch (runtime.Agent is one)."""

    node_id: str
    settings: Settings
    paused: bool
    config_file: Path | None
    control_token: str | None
    key: bytes | None
    events: EventLog
    captest: captest.CapacityTester | None
    store: store.HistoryStore

    def now(self) -> float: ...
    def snapshot(self) -> dict[str, Any]: ...
    def cluster(self, local: bool = True) -> dict[str, Any]: ...
    def interfaces(self) -> dict[str, Any]: ...
    def history(self, link_id: str | None, iface: str | None,
                seconds: float) -> dict | None: ...
    def reconfigure(self, new: Settings) -> None: ...
    def set_paused(self, paused: bool) -> None: ...
    async def measure(self, peer: str, interface: str | None, seconds: float,
                      streams: int) -> dict[str, Any]: ...


def lazy_registry(source: Any) -> Callable[[], CollectorRegistry]:
    """/metrics' registry for `source` (metrics.Source), made at the first scrape: an agent
    nobody scrapes never loads prometheus_client (docs/design.md, "Memory")."""
    def make() -> CollectorRegistry:
        from exotray.agent.http.metrics import registry_for
        return registry_for(source)
    return make


def create_app(agent: Services, registry: Callable[[], CollectorRegistry],
               sharing_routes: Sequence[BaseRoute] = ()) -> Starlette:
    """The API; `registry` makes /metrics' registry (at the first scrape: lazy_registry),
    `sharing_routes` are the sharing protocol's own endpoints (share/poll.py)."""
    made: list[CollectorRegistry] = []
    async def snapshot(request: Request) -> JSONResponse:
        resp = JSONResponse(agent.snapshot())
        if agent.key is not None:  # peers with the cluster key check this signature
            resp.headers[SIGNATURE_HEADER] = sign(agent.key, resp.body)
        return resp

    # its own clock: a cache of the HTTP layer, not a measurement (tests' agents may run
    # on a clock that stands still)
    views = SharedView(lambda local: agent.cluster(local=local), time.monotonic)

    async def cluster(request: Request) -> Response:
        return views.response(
            control.is_loopback(request.client.host if request.client else None))

    async def interfaces(request: Request) -> JSONResponse:
        return JSONResponse(agent.interfaces())

    async def history(request: Request) -> JSONResponse:
        link = request.query_params.get("link")
        iface = request.query_params.get("interface")
        if (link is None) == (iface is None):
            return _error(400, "give exactly one of ?link=ID or ?interface=NAME")
        now = agent.now()
        try:
            since, until = _range(request, now)
            points = int(_number(request, "points", store.POINTS, store.MIN_POINTS,
                                         store.MAX_POINTS))
        except ValueError as e:
            return _error(400, str(e))
        data = await agent.store.answer(
            link, iface, since, until, points, now, agent.settings.interval,
            lambda: agent.history(link, iface, max(0.0, now - since)))
        if data is None:
            return _error(404, f"no such {'link' if link is not None else 'interface'}")
        return JSONResponse(data)

    async def events(request: Request) -> JSONResponse:
        q = request.query_params
        try:
            after = int(_number(request, "after", 0, 0, 2**53))
            if "since" in q or "until" in q:
                since, until = _range(request, agent.now(), default_s=86400.0)
                limit = int(_number(request, "limit", EVENTS_LIMIT, 1, MAX_EVENTS_LIMIT))
                got = await agent.store.event_range(since, until, limit,
                                                    agent.events.after(0))
                return JSONResponse({"last_seq": agent.events.last_seq, **got})
        except ValueError as e:
            return _error(400, str(e))
        return JSONResponse(
            {"last_seq": agent.events.last_seq, "events": agent.events.after(after)}
        )

    def _deny(request: Request) -> JSONResponse | None:
        if not control.is_loopback(request.client.host if request.client else None):
            return _error(403, "control endpoints answer loopback clients only")
        header = request.headers.get("authorization", "")
        token = header.removeprefix("Bearer ").strip()
        if not agent.control_token or not secrets.compare_digest(
            token.encode(), agent.control_token.encode()
        ):
            return _error(401, "missing or wrong control token (see control_token in the "
                               "agent's state dir)")
        return None

    async def _json_body(request: Request, raw: bytearray | None = None) -> object:
        """The request's JSON body (at most MAX_BODY bytes); its bytes also go into `raw`
        when given (to check a signature over them)."""
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            raise ValueError(f"body over {MAX_BODY} bytes")
        body = bytearray() if raw is None else raw
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise ValueError(f"body over {MAX_BODY} bytes")
        try:
            return json.loads(body)
        except ValueError:
            raise ValueError("body is not JSON") from None

    def _settings_view() -> dict:
        return {
            "settings": control.editable(agent.settings),
            "paused": agent.paused,
            "config_file": str(agent.config_file) if agent.config_file else None,
        }

    async def control_settings(request: Request) -> JSONResponse:
        if (denied := _deny(request)) is not None:
            return denied
        if request.method == "GET":
            return JSONResponse(_settings_view())
        try:
            changes = await _json_body(request)
            new = control.validate_changes(agent.settings, changes)
        except (ValueError, SettingsError) as e:
            return _error(400, str(e))
        try:
            agent.reconfigure(new)
        except ClusterKeyError as e:
            return _error(400, str(e))
        if agent.config_file is not None:
            try:
                control.save(agent.config_file, new)
            except (OSError, SettingsError) as e:
                return _error(500, f"settings applied but not saved: {e}")
        return JSONResponse(_settings_view())

    async def control_pause(request: Request) -> JSONResponse:
        if (denied := _deny(request)) is not None:
            return denied
        try:
            body = await _json_body(request)
        except ValueError as e:
            return _error(400, str(e))
        if not isinstance(body, dict) or not isinstance(body.get("paused"), bool):
            return _error(400, 'expected {"paused": true|false}')
        agent.set_paused(body["paused"])
        return JSONResponse(_settings_view())

    async def prometheus(request: Request) -> Response:
        if not made:  # the first scrape imports prometheus_client: off the loop
            made.append(await asyncio.to_thread(registry))
        from exotray.agent.http import metrics  # (loaded by then)
        return Response(metrics.exposition(made[0]), media_type=metrics.CONTENT_TYPE)

    async def capacity_session(request: Request) -> JSONResponse:
        """Another agent asks for a capacity test (consent can be turned off)."""
        raw = bytearray()
        try:
            body = await _json_body(request, raw)
        except ValueError as e:
            return _error(400, str(e))
        if agent.key is not None and not signed_by(
                agent.key, bytes(raw), request.headers.get(SIGNATURE_HEADER, "")):
            return _error(403, "capacity tests need a request signed with the cluster key")
        if not isinstance(body, dict) or agent.captest is None or request.client is None:
            return _error(400, "expected {seconds, streams}")
        try:
            grant = await agent.captest.grant(request.client.host, body.get("seconds", 5),
                                              body.get("streams", 4))
        except PermissionError as e:
            return _error(403, str(e))
        except captest.Busy as e:
            return _error(409, str(e))
        except captest.RateLimited as e:
            return _error(429, str(e))
        except captest.PortUnavailable as e:
            return _error(503, str(e))
        except (TypeError, ValueError):
            return _error(400, "seconds and streams must be numbers")
        return JSONResponse(grant)

    async def capacity_finish(request: Request) -> JSONResponse:
        try:
            body = await _json_body(request)
        except ValueError as e:
            return _error(400, str(e))
        token = body.get("token") if isinstance(body, dict) else None
        result = agent.captest.finish(str(token)) if agent.captest else None
        if result is None:
            return _error(404, "no such capacity test")
        return JSONResponse(result)

    async def control_measure(request: Request) -> JSONResponse:
        if (denied := _deny(request)) is not None:
            return denied
        try:
            body = await _json_body(request)
            if not isinstance(body, dict) or not isinstance(body.get("peer"), str):
                raise ValueError('expected {"peer": NAME|ID|ADDRESS}')
            seconds = float(body.get("seconds", 5))
            streams = int(body.get("streams", 4))
        except (ValueError, TypeError) as e:
            return _error(400, str(e))
        lo, hi = captest.MIN_SECONDS, captest.MAX_SECONDS
        if not (math.isfinite(seconds) and lo <= seconds <= hi):
            return _error(400, f"seconds must be {lo:g}..{hi:g} (per direction), not {seconds:g}")
        if not captest.MIN_STREAMS <= streams <= captest.MAX_STREAMS:
            return _error(400, f"streams must be {captest.MIN_STREAMS}..{captest.MAX_STREAMS}, "
                               f"not {streams}")
        test = asyncio.create_task(agent.measure(body["peer"], body.get("interface"), seconds,
                                                 streams), name="measure")
        try:
            # The client may give up (Ctrl-C on `exotray measure`, the window closed):
            # then the test stops too, instead of blocking the next one for its duration.
            while not (await asyncio.wait({test}, timeout=DISCONNECT_POLL_S))[0]:
                if await request.is_disconnected():
                    log.info("the client asking for a capacity test went away; cancelling it")
                    test.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await test
                    return _error(499, "cancelled: the client went away")
        finally:
            test.cancel()  # a no-op when done; when this handler itself is cancelled, needed
        try:
            return JSONResponse(test.result())
        except LookupError as e:
            return _error(404, str(e))
        except captest.Busy as e:
            return _error(409, str(e))
        except PermissionError as e:
            return _error(403, str(e))
        except (OSError, TimeoutError, httpx.HTTPError) as e:
            return _error(502, f"capacity test failed: {e or type(e).__name__}")

    async def index(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "service": "exotray",
                "node": agent.node_id,
                "endpoints": ["/v1/snapshot", "/v1/cluster", "/v1/history", "/v1/events",
                              "/metrics"],
            }
        )

    return Starlette(
        middleware=[Middleware(HeadLimit), Middleware(RequestGuard)],
        routes=[
            Route("/", index),
            Route("/v1/snapshot", snapshot),
            Route("/v1/cluster", cluster),
            Route("/v1/interfaces", interfaces),
            Route("/v1/history", history),
            Route("/v1/events", events),
            Route("/metrics", prometheus),
            Route("/v1/control/settings", control_settings, methods=["GET", "PUT"]),
            Route("/v1/control/pause", control_pause, methods=["POST"]),
            Route("/v1/control/measure", control_measure, methods=["POST"]),
            Route("/v1/capacity/session", capacity_session, methods=["POST"]),
            Route("/v1/capacity/finish", capacity_finish, methods=["POST"]),
            *sharing_routes,
        ]
    )
