"""/v1/cluster rendered once for all the requests of a moment, and sent in pieces (issue 18).

The largest cluster view the agent serves is about 5 MB (128 peers, 64 links and 32
interfaces each). Rendered for each request and written whole, every client that asked
and did not read kept a copy of it in the agent until the send timeout (256 LAN
connections: 1.3 GB, again every 10 s), and every request cost a rendering of its own.
Here one rendering serves all requests within `ttl` seconds of it, and is sent in
PIECE-byte pieces, each written only when the previous ones have left the agent's
buffer (uvicorn waits for the transport to drain before it writes): a client that does
not read holds one piece and the transport's buffer, never a copy of the view, and is
cut off by the send timeout as before (http/guard.py). Renderings still being sent to slow
readers stay in memory until they are cut off: at most MAX_VIEWS_HELD of them; beyond
that a new request gets the latest one even if older than `ttl` (under such an attack
the view lags by a few seconds, rather than the agent's memory growing with it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import StreamingResponse

from exotray.agent.base.limits import MAX_VIEWS_HELD

PIECE = 64 * 1024
#: how long one rendering serves new requests (the tray polls every second; the numbers
#: in a view change once an interval)
TTL_S = 0.25


def render(content: Any) -> bytes:
    """As starlette's JSONResponse renders."""
    return json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None,
                      separators=(",", ":")).encode("utf-8")


async def pieces(body: bytes, size: int = PIECE) -> AsyncIterator[memoryview]:
    view = memoryview(body)
    for i in range(0, len(view), size):
        yield view[i:i + size]


class SharedView:
    """`response(key)`: the view `make(key)` renders, shared for TTL_S seconds per key."""

    def __init__(self, make: Callable[[Any], Any], clock: Callable[[], float],
                 ttl: float = TTL_S) -> None:
        self._make = make
        self._clock = clock
        self._ttl = ttl
        self._cache: dict[Any, tuple[float, bytes]] = {}
        self._sending: dict[int, int] = {}  # id of a rendering -> responses sending it
        self.renders = 0

    def held(self) -> int:
        """Renderings in memory: cached, or still being sent."""
        return len(set(self._sending) | {id(b) for _, b in self._cache.values()})

    def body(self, key: Any) -> bytes:
        now = self._clock()
        hit = self._cache.get(key)
        if hit is not None and (0 <= now - hit[0] < self._ttl
                                or self.held() >= MAX_VIEWS_HELD):
            return hit[1]
        body = render(self._make(key))
        self.renders += 1
        self._cache[key] = (now, body)
        return body

    def response(self, key: Any) -> StreamingResponse:
        body = self.body(key)
        return StreamingResponse(self._send(body), media_type="application/json",
                                 headers={"content-length": str(len(body))})

    async def _send(self, body: bytes) -> AsyncIterator[memoryview]:
        k = id(body)
        self._sending[k] = self._sending.get(k, 0) + 1
        try:
            async for piece in pieces(body):
                yield piece
        finally:
            self._sending[k] -= 1
            if not self._sending[k]:
                del self._sending[k]
