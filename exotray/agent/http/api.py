"""The agent's HTTP API (Starlette, served by uvicorn). JSON everywhere.

One module-level handler per path, each over the `Services` protocol (services.py) that
`create_app` puts in the app's state, grouped by resource: `routes_views` (what the agent
is now), `routes_history` (history and events), `routes_control` (local control),
`routes_captest` (the capacity test); `ROUTES` below is the whole table.

Everything is read-only except /v1/control/*, which answers only loopback clients that
present the control token (see agent/http/control.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from exotray.agent.http import routes_captest, routes_control, routes_history, routes_views
from exotray.agent.http.guard import RequestGuard
from exotray.agent.http.readers import Readers
from exotray.agent.http.services import Services
from exotray.agent.share.cluster_view import SharedView

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

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


def lazy_registry(source: Any) -> Callable[[], CollectorRegistry]:
    """/metrics' registry for `source` (metrics.Source), made at the first scrape: an agent
    nobody scrapes never loads prometheus_client (docs/design.md, "Memory")."""
    def make() -> CollectorRegistry:
        from exotray.agent.http.metrics import registry_for
        return registry_for(source)
    return make


ROUTES: list[BaseRoute] = [
    Route("/", routes_views.index),
    Route("/v1/snapshot", routes_views.snapshot),
    Route("/v1/cluster", routes_views.cluster),
    Route("/v1/interfaces", routes_views.interfaces),
    Route("/v1/history", routes_history.history),
    Route("/v1/events", routes_history.events),
    Route("/metrics", routes_views.prometheus),
    Route("/v1/control/settings", routes_control.control_settings, methods=["GET", "PUT"]),
    Route("/v1/control/pause", routes_control.control_pause, methods=["POST"]),
    Route("/v1/control/measure", routes_captest.control_measure, methods=["POST"]),
    Route("/v1/capacity/session", routes_captest.capacity_session, methods=["POST"]),
    Route("/v1/capacity/finish", routes_captest.capacity_finish, methods=["POST"]),
]


def create_app(agent: Services, registry: Callable[[], CollectorRegistry],
               sharing_routes: Sequence[BaseRoute] = ()) -> Starlette:
    """The API over `agent`; `registry` makes /metrics' registry (at the first scrape:
    lazy_registry), `sharing_routes` are the sharing protocol's own endpoints
    (share/poll.py), after ROUTES."""
    app = Starlette(middleware=[Middleware(HeadLimit), Middleware(RequestGuard)],
                    routes=[*ROUTES, *sharing_routes])
    app.state.services = agent
    # its own clock: a cache of the HTTP layer, not a measurement (tests' agents may run
    # on a clock that stands still)
    app.state.cluster_view = SharedView(lambda local: agent.cluster(local=local),
                                        time.monotonic)
    app.state.readers = Readers()  # who may read the past at once (http/readers.py)
    app.state.make_registry = registry
    app.state.registries = []  # /metrics' registry, once made (routes_views.prometheus)
    return app
