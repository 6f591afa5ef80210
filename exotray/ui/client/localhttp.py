"""JSON over HTTP to the local agent, with the standard library only.

The tray app talks to one agent on loopback, in plain HTTP. httpx (with httpcore, h11,
idna, its CLI's click and pygments, and an SSL context with the CA bundle made for every
client) cost the tray process about 20 MiB of its RSS for that; http.client costs about
1.5 MiB. One connection, kept alive between requests and opened again when it fails.
Not thread-safe: one owner (the client's worker thread, or one check at a time).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
from typing import Any
from urllib.parse import urlencode

#: what a failed request raises: no connection, a timeout, a broken or foreign answer
Error = (OSError, http.client.HTTPException, ValueError)


class Response:
    def __init__(self, status: int, body: bytes) -> None:
        self.status_code = status
        self.content = body

    def json(self) -> Any:
        return json.loads(self.content)


class LocalHttp:
    def __init__(self, host: str, port: int, connect_timeout: float = 1.0,
                 timeout: float = 3.0) -> None:
        self.host, self.port = host, port
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        self._aborted = False

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def abort(self) -> None:
        """From another thread: make a request in flight fail now (its socket is shut
        down) instead of waiting for its timeout."""
        self._aborted = True
        conn = self._conn
        sock = conn.sock if conn is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> LocalHttp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, params: dict[str, Any] | None = None,
            timeout: float | None = None) -> Response:
        return self.request("GET", path, params=params, timeout=timeout)

    def request(self, method: str, path: str, json_body: Any = None,
                headers: dict[str, str] | None = None, timeout: float | None = None,
                params: dict[str, Any] | None = None) -> Response:
        """One request; raises one of `Error` when there is no usable answer."""
        if params:
            path = f"{path}?{urlencode(params)}"
        body = None
        hdrs = {"accept": "application/json", **(headers or {})}
        if json_body is not None:
            body = json.dumps(json_body).encode()
            hdrs["content-type"] = "application/json"
        reused = self._conn is not None
        try:
            return self._send(method, path, body, hdrs, timeout)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # A kept-alive connection the server closed meanwhile: once more, afresh.
            self.close()
            if not reused or self._aborted:
                raise
            return self._send(method, path, body, hdrs, timeout)
        except BaseException:
            self.close()
            raise

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str],
              timeout: float | None) -> Response:
        if self._aborted:
            raise ConnectionAbortedError("stopped")
        if self._conn is None:
            conn = http.client.HTTPConnection(self.host, self.port,
                                              timeout=self.connect_timeout)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conn = conn
        conn = self._conn
        conn.sock.settimeout(self.timeout if timeout is None else timeout)
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        if r.will_close:
            self.close()
        return Response(r.status, data)


def get_json(host: str, port: int, path: str, timeout: float) -> tuple[int, Any]:
    """One GET on a connection of its own: (status, decoded JSON body)."""
    with LocalHttp(host, port, connect_timeout=timeout, timeout=timeout) as h:
        r = h.get(path)
        return r.status_code, r.json()
