"""What every handler of the API (`routes_*`) shares: the `Services` protocol they are
written over (all the API may ask of the agent), how a handler reaches it
(`services(request)`: `create_app` puts it in the app's state), a request's JSON body
read within MAX_BODY, and the error answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse

from exotray.agent.history import store
from exotray.agent.http import captest
from exotray.core.events import EventLog
from exotray.core.settings import Settings

MAX_BODY = 64 * 1024


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
    def snapshot(self, local: bool = True) -> dict[str, Any]: ...
    def cluster(self, local: bool = True) -> dict[str, Any]: ...
    def interfaces(self) -> dict[str, Any]: ...
    def history(self, link_id: str | None, iface: str | None,
                seconds: float) -> dict | None: ...
    def reconfigure(self, new: Settings) -> None: ...
    def set_paused(self, paused: bool) -> None: ...
    async def measure(self, peer: str, interface: str | None, seconds: float,
                      streams: int) -> dict[str, Any]: ...


def services(request: Request) -> Services:
    """The agent the app answering `request` was made over (api.create_app)."""
    return request.app.state.services


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def json_body(request: Request, raw: bytearray | None = None) -> object:
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
