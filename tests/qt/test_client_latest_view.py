"""The tray's client keeps only the latest cluster view for a GUI that is busy (issue 18
finding 4): a real HTTP server on loopback serves numbered views quickly, the GUI thread
is kept busy, and when it is free it gets one view, the newest, not a backlog."""

from __future__ import annotations

import http.server
import json
import threading
import time

from helpers import JsonHandler

from exotray.ui.client.poll import AgentClient


class _Views(JsonHandler):
    served = 0

    def do_GET(self):
        if self.path.startswith("/v1/cluster"):
            _Views.served += 1
            body = json.dumps({"n": _Views.served, "nodes": [], "peers": []}).encode()
        else:
            body = json.dumps({"last_seq": 0, "events": []}).encode()
        self.answer(body)


def test_a_busy_gui_gets_the_latest_view_not_a_backlog(qtbot, tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Views)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = AgentClient(server.server_address[1], tmp_path, interval=0.01)
    got: list[int] = []
    client.clusterChanged.connect(lambda view: got.append(view["n"]))
    try:
        client.start()
        qtbot.waitUntil(lambda: len(got) > 0, timeout=5000)
        # The GUI thread draws for a while without looking at its event queue...
        served_before = _Views.served
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            time.sleep(0.01)
        last_served = _Views.served
        assert last_served - served_before > 10  # the worker kept fetching meanwhile
        before = len(got)
        qtbot.wait(20)  # ...then takes what waits for it
        handed = got[before:]
        assert 1 <= len(handed) <= 3, handed  # one (or a fresh one or two), not dozens
        assert handed[0] >= last_served - 1  # and the newest there was
        assert client.views_skipped >= last_served - served_before - 3
    finally:
        client.stop()
        server.shutdown()
        server.server_close()


def test_the_gui_gets_as_long_to_itself_between_views_as_the_last_view_took(qtbot, tmp_path):
    """A view that kept the GUI thread 0.5 s (on the client's clock): the next one is
    handed out only 0.5 s after it was done, and it is the latest by then."""
    client = AgentClient(1, tmp_path)  # not started: views are published by hand
    now = [100.0]
    client.clock = lambda: now[0]
    got: list[int] = []

    def show(view):
        got.append(view["n"])
        now[0] += 0.5  # drawing it took 0.5 s

    client.clusterChanged.connect(show)
    client._publish({"n": 1})
    assert got == [1]
    client._publish({"n": 2})  # the GUI's turn: it waits
    client._publish({"n": 3})
    qtbot.wait(50)
    assert got == [1]
    now[0] += 0.5
    qtbot.waitUntil(lambda: got == [1, 3], timeout=3000)  # then only the latest
