"""The API's side of the capacity test (captest.py): `/v1/control/measure` asks a peer
for one (local control: routes_control.deny first) and waits for it while its client is
there; `/v1/capacity/session` and `/v1/capacity/finish` are a peer's asking this agent
for one (signed with the cluster key when there is one) and its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse

from exotray.agent.base.keys import SIGNATURE_HEADER, signed_by
from exotray.agent.http import captest
from exotray.agent.http.routes_control import deny
from exotray.agent.http.services import error, json_body, services

# (the handlers were api.py's: their log lines keep its name)
log = logging.getLogger("exotray.agent.http.api")

#: how often a running capacity test checks that its client is still there
DISCONNECT_POLL_S = 0.2


async def control_measure(request: Request) -> JSONResponse:
    if (denied := deny(request)) is not None:
        return denied
    try:
        body = await json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("peer"), str):
            raise ValueError('expected {"peer": NAME|ID|ADDRESS}')
        seconds = float(body.get("seconds", 5))
        streams = int(body.get("streams", 4))
    except (ValueError, TypeError) as e:
        return error(400, str(e))
    lo, hi = captest.MIN_SECONDS, captest.MAX_SECONDS
    if not (math.isfinite(seconds) and lo <= seconds <= hi):
        return error(400, f"seconds must be {lo:g}..{hi:g} (per direction), not {seconds:g}")
    if not captest.MIN_STREAMS <= streams <= captest.MAX_STREAMS:
        return error(400, f"streams must be {captest.MIN_STREAMS}..{captest.MAX_STREAMS}, "
                          f"not {streams}")
    test = asyncio.create_task(services(request).measure(
        body["peer"], body.get("interface"), seconds, streams), name="measure")
    try:
        # The client may give up (Ctrl-C on `exotray measure`, the window closed):
        # then the test stops too, instead of blocking the next one for its duration.
        while not (await asyncio.wait({test}, timeout=DISCONNECT_POLL_S))[0]:
            if await request.is_disconnected():
                log.info("the client asking for a capacity test went away; cancelling it")
                test.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await test
                return error(499, "cancelled: the client went away")
    finally:
        test.cancel()  # a no-op when done; when this handler itself is cancelled, needed
    try:
        return JSONResponse(test.result())
    except LookupError as e:
        return error(404, str(e))
    except captest.Busy as e:
        return error(409, str(e))
    except PermissionError as e:
        return error(403, str(e))
    except (OSError, TimeoutError, httpx.HTTPError) as e:
        return error(502, f"capacity test failed: {e or type(e).__name__}")


async def capacity_session(request: Request) -> JSONResponse:
    """Another agent asks for a capacity test (consent can be turned off)."""
    agent = services(request)
    raw = bytearray()
    try:
        body = await json_body(request, raw)
    except ValueError as e:
        return error(400, str(e))
    if agent.key is not None and not signed_by(
            agent.key, bytes(raw), request.headers.get(SIGNATURE_HEADER, "")):
        return error(403, "capacity tests need a request signed with the cluster key")
    if not isinstance(body, dict) or agent.captest is None or request.client is None:
        return error(400, "expected {seconds, streams}")
    try:
        grant = await agent.captest.grant(request.client.host, body.get("seconds", 5),
                                          body.get("streams", 4))
    except PermissionError as e:
        return error(403, str(e))
    except captest.Busy as e:
        return error(409, str(e))
    except captest.RateLimited as e:
        return error(429, str(e))
    except captest.PortUnavailable as e:
        return error(503, str(e))
    except (TypeError, ValueError):
        return error(400, "seconds and streams must be numbers")
    return JSONResponse(grant)


async def capacity_finish(request: Request) -> JSONResponse:
    try:
        body = await json_body(request)
    except ValueError as e:
        return error(400, str(e))
    token = body.get("token") if isinstance(body, dict) else None
    agent = services(request)
    result = agent.captest.finish(str(token)) if agent.captest else None
    if result is None:
        return error(404, "no such capacity test")
    return JSONResponse(result)
