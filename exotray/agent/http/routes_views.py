"""The API's reads of the agent as it is now: `/` (what this is), `/v1/snapshot` (this
node, signed with the cluster key when there is one), `/v1/cluster` (the cluster view,
rendered once for the requests of a moment: share/cluster_view.py), `/v1/interfaces`
and `/metrics` (Prometheus text, its registry made at the first scrape).
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from exotray.agent.base.keys import SIGNATURE_HEADER, sign
from exotray.agent.http import control
from exotray.agent.http.services import services


async def index(request: Request) -> JSONResponse:
    return JSONResponse(
        {
            "service": "exotray",
            "node": services(request).node_id,
            "endpoints": ["/v1/snapshot", "/v1/cluster", "/v1/history", "/v1/events",
                          "/metrics"],
        }
    )


async def snapshot(request: Request) -> JSONResponse:
    agent = services(request)
    # a client on the LAN does not get the local exo node's details (issue 33 point 4)
    resp = JSONResponse(agent.snapshot(
        control.is_loopback(request.client.host if request.client else None)))
    if agent.key is not None:  # peers with the cluster key check this signature
        resp.headers[SIGNATURE_HEADER] = sign(agent.key, resp.body)
    return resp


async def cluster(request: Request) -> Response:
    return request.app.state.cluster_view.response(
        control.is_loopback(request.client.host if request.client else None))


async def interfaces(request: Request) -> JSONResponse:
    return JSONResponse(services(request).interfaces())


async def prometheus(request: Request) -> Response:
    made = request.app.state.registries  # empty until the first scrape, then its registry
    if not made:  # the first scrape imports prometheus_client: off the loop
        made.append(await asyncio.to_thread(request.app.state.make_registry))
    from exotray.agent.http import metrics  # (loaded by then)
    return Response(metrics.exposition(made[0]), media_type=metrics.CONTENT_TYPE)
