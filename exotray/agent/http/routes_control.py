"""The API's local control (`/v1/control/settings`, `/v1/control/pause`): loopback
clients with the control token only (`deny`, checked before a body is read), changes
validated, applied and saved as control.py says. `/v1/control/measure` is the capacity
test's (routes_captest.py).
"""

from __future__ import annotations

import secrets

from starlette.requests import Request
from starlette.responses import JSONResponse

from exotray.agent.base.keys import ClusterKeyError
from exotray.agent.http import control
from exotray.agent.http.services import Services, error, json_body, services
from exotray.core.settings import SettingsError


def deny(request: Request) -> JSONResponse | None:
    """The refusal for a request that may not control the agent, None when it may."""
    if not control.is_loopback(request.client.host if request.client else None):
        return error(403, "control endpoints answer loopback clients only")
    header = request.headers.get("authorization", "")
    token = header.removeprefix("Bearer ").strip()
    agent = services(request)
    if not agent.control_token or not secrets.compare_digest(
        token.encode(), agent.control_token.encode()
    ):
        return error(401, "missing or wrong control token (see control_token in the "
                          "agent's state dir)")
    return None


def _settings_view(agent: Services) -> dict:
    return {
        "settings": control.editable(agent.settings),
        "paused": agent.paused,
        "config_file": str(agent.config_file) if agent.config_file else None,
    }


async def control_settings(request: Request) -> JSONResponse:
    if (denied := deny(request)) is not None:
        return denied
    agent = services(request)
    if request.method == "GET":
        return JSONResponse(_settings_view(agent))
    try:
        changes = await json_body(request)
        old = agent.settings
        new = control.validate_changes(old, changes)
    except (ValueError, SettingsError) as e:
        return error(400, str(e))
    try:
        agent.reconfigure(new)
    except ClusterKeyError as e:
        return error(400, str(e))
    if agent.config_file is not None:
        try:
            control.save(agent.config_file, new, old)  # only what changed
        except (OSError, SettingsError) as e:
            return error(500, f"settings applied but not saved: {e}")
    return JSONResponse(_settings_view(agent))


async def control_pause(request: Request) -> JSONResponse:
    if (denied := deny(request)) is not None:
        return denied
    try:
        body = await json_body(request)
    except ValueError as e:
        return error(400, str(e))
    if not isinstance(body, dict) or not isinstance(body.get("paused"), bool):
        return error(400, 'expected {"paused": true|false}')
    agent = services(request)
    agent.set_paused(body["paused"])
    return JSONResponse(_settings_view(agent))
