"""What keeps the tray app's memory down (issue 15): it talks to its agent with the
standard library over one kept-alive connection, and PySide6's reads of every imported
module's source are not kept. Real sockets on loopback; a real import."""

from __future__ import annotations

import http.server
import importlib
import json
import linecache
import sys
import threading
from typing import ClassVar

import PySide6.QtCore  # noqa: F401  (the check below is PySide6's)
import pytest
from helpers import JsonHandler

from exotray.ui import lean
from exotray.ui.client.localhttp import Error, LocalHttp


class _Counting(JsonHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    connections: ClassVar[set[int]] = set()
    close_after_reply = False

    def do_GET(self):
        _Counting.connections.add(id(self.connection))
        self.answer(json.dumps({"path": self.path}).encode())
        if _Counting.close_after_reply:  # a server that drops idle connections
            self.close_connection = True

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        self.answer(json.dumps({"got": json.loads(body),
                                "auth": self.headers.get("authorization")}).encode(), 201)


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    _Counting.connections = set()
    _Counting.close_after_reply = False
    yield srv
    srv.shutdown()
    srv.server_close()


def test_one_connection_kept_alive_and_opened_again_when_dropped(server):
    port = server.server_address[1]
    with LocalHttp("127.0.0.1", port) as h:
        for i in range(5):
            r = h.get("/v1/events", params={"after": i})
            assert r.status_code == 200 and r.json() == {"path": f"/v1/events?after={i}"}
        assert len(_Counting.connections) == 1
        r = h.request("POST", "/v1/control/pause", json_body={"paused": True},
                      headers={"authorization": "Bearer t"})
        assert r.status_code == 201 and r.json() == {"got": {"paused": True},
                                                     "auth": "Bearer t"}
        _Counting.close_after_reply = True
        assert h.get("/a").status_code == 200
        assert h.get("/b").json() == {"path": "/b"}  # a fresh connection, transparently


def test_no_agent_is_an_error_not_a_hang(server):
    port = server.server_address[1]
    server.shutdown()
    server.server_close()
    with LocalHttp("127.0.0.1", port) as h, pytest.raises(Error):
        h.get("/v1/cluster")


def test_module_sources_read_by_pyside_are_not_kept(tmp_path, monkeypatch):
    if not lean.forget_module_sources():
        pytest.skip("this PySide6 does not read imported modules' sources")
    (tmp_path / "xt_lean_probe.py").write_text("VALUE = 1\n" + "# padding\n" * 2000)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("xt_lean_probe")
    try:
        assert module.VALUE == 1
        assert module.__file__ not in linecache.cache
        assert lean.forget_module_sources()  # a second call changes nothing
    finally:
        sys.modules.pop("xt_lean_probe", None)


def test_stopping_the_client_cuts_a_request_in_flight_short(qtbot, tmp_path):
    """Quit while a request waits on an agent that does not answer (a capacity test
    takes seconds): stop() does not wait for the request's timeout."""
    import socket

    from exotray.ui.client.poll import AgentClient

    silent = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    client = AgentClient(silent.getsockname()[1], tmp_path, interval=60)
    errors = []
    try:
        client.start()
        client.request("GET", "/v1/slow", done=lambda r, e: errors.append(e), timeout=60)
        qtbot.waitUntil(lambda: client._http is not None and client._http._conn is not None,
                        timeout=5000)
        thread = client._thread
        client.stop()  # joins for at most 5 s; the request's timeout is 60 s
        assert not thread.is_alive()
    finally:
        silent.close()
