"""Stream sharing between real agents: a hostile stream is refused frame by frame and
resynchronised, a cluster key refuses unsigned and replayed frames, a subscriber that
never reads delays nobody, poll and stream agents see each other's full view, and a
change reaches the other node within one interval + 0.5 s."""

from __future__ import annotations

import http.server
import re
import socket
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import psutil
import pytest
from helpers import AgentProc, free_port, wait_for
from stream_frames import delta, full, snapshot

from exotray.agent.base import limits as L
from exotray.agent.share import wire as W

KEY = b"correct horse battery staple 42"


class _StreamPeer(http.server.ThreadingHTTPServer):
    """A peer of the test's own: each connection to /v1/stream gets the next script."""

    daemon_threads = True

    def __init__(self, scripts: list[tuple[str, object]]) -> None:
        self.scripts = scripts
        self.served: list[str] = []
        self.served_at: list[float] = []
        self.hold = 0.3  # how long a connection stays open after its script
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def do_GET(self):
        srv: _StreamPeer = self.server  # type: ignore[assignment]
        url = urlsplit(self.path)
        if url.path != "/v1/stream":
            self.send_error(404)
            return
        nonce = parse_qs(url.query).get("nonce", [""])[0]
        name, script = srv.scripts[len(srv.served) % len(srv.scripts)]
        srv.served.append(name)
        srv.served_at.append(time.monotonic())
        self.send_response(200)
        self.send_header("content-type", "application/x-exotray-stream")
        self.send_header("x-exotray-stream", "ab12")
        self.end_headers()
        data = script(nonce) if callable(script) else script
        try:
            self.wfile.write(data)
            self.wfile.flush()
            time.sleep(srv.hold)
        except OSError:
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def stream_peer():
    servers: list[_StreamPeer] = []

    def start(scripts):
        srv = _StreamPeer(scripts)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _rejections(a: AgentProc) -> dict[str, float]:
    text = httpx.get(a.url + "/metrics", timeout=2.0, trust_env=False).text
    return {m[0]: float(m[1]) for m in
            re.findall(r'exotray_snapshots_rejected_total\{[^}]*reason="(\w+)"\} (\S+)', text)}


BAD = [
    ("truncated", full()[:-20]),
    ("unknown_link", full() + delta({"age": 0, "links": {"set": {"nope": {"rtt_ms": 9.99}}}})),
    ("delta_before_full", delta({"age": 0}, seq=1)),
    ("too_large", W.header(W.FULL, 1, W.MAX_FRAME + 1, None) + b"{" * 1000),
    ("not_json", full() + delta({"age": 0})[:-9] + b"not json!"),
    ("bad_frame", b"HELLO THERE\n"),
]


def test_a_stream_at_rest_is_kept_between_heartbeats_and_a_dead_one_is_left(
        tmp_path, stream_peer):
    """A producer at rest sends a frame only every HEARTBEAT intervals: the follower must
    not take that silence for a dead connection — only two heartbeats missed."""
    snap = snapshot()
    snap["interval_s"] = 0.25
    srv = stream_peer([("silent", full(snap))])
    srv.hold = 8.0  # the connection stays open, and says nothing after its full snapshot
    a = AgentProc(tmp_path, "a", free_port(), [srv.server_address[1]], "--interval", "0.25",
                  "--sharing", "stream")
    try:
        a.wait_ready()
        assert wait_for(lambda: _node(a.get("/v1/cluster"), "evil"), 10), a.log()
        assert wait_for(lambda: len(srv.served) >= 2, 15), a.log()
        kept = srv.served_at[1] - srv.served_at[0]
        # (HEARTBEAT + 2) intervals + 1 s of silence, then the next connection
        assert kept >= (W.HEARTBEAT + 2) * 0.25 + 1.0 - 0.1, kept
        assert a.proc.poll() is None and "Traceback" not in a.log()
    finally:
        a.close()


def test_a_hostile_stream_is_refused_counted_logged_and_resynchronised(tmp_path, stream_peer):
    srv = stream_peer(BAD)
    a = AgentProc(tmp_path, "a", free_port(), [srv.server_address[1]], "--interval", "0.25",
                  "--sharing", "stream")
    try:
        a.wait_ready()
        want = {name for name, _ in BAD}
        got = wait_for(lambda: (r := _rejections(a)) and want <= set(r) and r, 30)
        assert got, (_rejections(a), srv.served, a.log())
        assert len(srv.served) >= len(BAD)  # a new connection (and full snapshot) each time
        log = a.log()
        for reason in want:
            assert log.count(f"stream frame dropped ({reason}") == 1, log
        cluster = a.get("/v1/cluster")
        peer = cluster["peers"][0]
        assert peer["sharing"] == "stream"
        for node in cluster["nodes"][1:]:  # only what valid frames said
            assert all(lk["rtt_ms"] != 9.99 for lk in node["links"])
        assert a.get("/v1/snapshot")["counters"]["snapshots_rejected"] >= len(BAD)
        assert a.proc.poll() is None and "Traceback" not in log
    finally:
        a.close()


def test_with_a_key_unsigned_replayed_and_foreign_frames_are_refused(tmp_path, stream_peer):
    sid = "ab12"

    def replayed(nonce: str) -> bytes:
        d = delta({"age": 0.1}, key=KEY, stream_id=sid, nonce=nonce)
        return full(key=KEY, stream_id=sid, nonce=nonce) + d + d

    def foreign(nonce: str) -> bytes:  # recorded from another subscriber's stream
        return full(key=KEY, stream_id=sid, nonce="0" * 32)

    srv = stream_peer([("unsigned", full()), ("replayed", replayed), ("foreign", foreign)])
    (tmp_path / "key").write_bytes(KEY)
    (tmp_path / "key").chmod(0o600)
    a = AgentProc(tmp_path, "a", free_port(), [srv.server_address[1]], "--interval", "0.25",
                  "--sharing", "stream", "--key-file", str(tmp_path / "key"))
    try:
        a.wait_ready()
        done = wait_for(lambda: len(srv.served) >= 4
                        and _rejections(a).get("bad_sequence", 0) >= 1, 20)
        assert done, (srv.served, a.log())
        counters = a.get("/v1/snapshot")["counters"]
        assert counters["snapshots_unauthenticated"] >= 2  # the unsigned and the foreign
        assert "stream frame without a valid cluster-key signature" in a.log()
        assert "Traceback" not in a.log()
    finally:
        a.close()


@pytest.fixture
def streaming_pair(tmp_path):
    p1, p2 = free_port(), free_port()
    # their own config files: a settings change is saved there, never in the user's
    (tmp_path / "a.toml").write_text("")
    (tmp_path / "b.toml").write_text("")
    a = AgentProc(tmp_path, "a", p1, [p2], "--interval", "0.5", "--sharing", "stream",
                  "--config", str(tmp_path / "a.toml"))
    b = AgentProc(tmp_path, "b", p2, [p1], "--interval", "0.5", "--sharing", "stream",
                  "--config", str(tmp_path / "b.toml"))
    try:
        a.wait_ready()
        b.wait_ready()
        yield a, b
    finally:
        a.close()
        b.close()


def _node(cluster: dict, name: str) -> dict | None:
    return next((n for n in cluster["nodes"] if n["node"]["name"] == name), None)


def test_a_change_reaches_the_other_node_within_an_interval(streaming_pair):
    a, b = streaming_pair
    assert wait_for(lambda: _node(a.get("/v1/cluster"), "b"), 10), a.log()
    token = (b.state / "control_token").read_text().strip()

    def lo_capacity(snap: dict | None) -> float | None:
        lo = [i for i in (snap or {}).get("interfaces", []) if i["name"] == "lo"]
        return lo[0]["capacity_bytes_per_s"] if lo else None

    for mbit in (1000, 2000, 3000):
        r = httpx.put(b.url + "/v1/control/settings", json={"capacity": {"lo": mbit}},
                      headers={"authorization": f"Bearer {token}"}, trust_env=False)
        assert r.status_code == 200, r.text
        want = mbit * 125_000
        assert wait_for(lambda w=want: lo_capacity(b.get("/v1/snapshot")) == w, 5, every=0.02)
        # from the moment b itself shows it: in a's cluster view within interval + 0.5 s
        seen = wait_for(lambda w=want: lo_capacity(_node(a.get("/v1/cluster"), "b")) == w,
                        0.5 + 0.5, every=0.02)
        assert seen, f"{mbit} Mbit/s on b did not reach a within 1 s"
    cluster = a.get("/v1/cluster")
    assert cluster["sharing"] == "stream" and cluster["peers"][0]["sharing"] == "stream"
    if sys.platform.startswith("linux"):  # (b's frames waited for a's ticks: stream_hold)
        assert a.get("/v1/snapshot")["counters"]["stream_sockets_held"] == 1
    assert 0 <= _node(cluster, "b")["age_s"] < W.HEARTBEAT * 0.5 + 1.0
    # one probe's RTT stays with local clients: b shows its own, a's view of b has none
    assert wait_for(lambda: any(lk["rtt_last_ms"] is not None
                                for lk in b.get("/v1/snapshot")["links"]), 5)
    assert all(lk["rtt_last_ms"] is None for lk in _node(a.get("/v1/cluster"), "b")["links"])


def test_a_subscriber_that_never_reads_delays_nobody(streaming_pair):
    a, _b = streaming_pair
    assert wait_for(lambda: _node(a.get("/v1/cluster"), "b"), 10)
    proc = psutil.Process(a.proc.pid)
    rss0 = proc.memory_info().rss
    socks = []
    try:
        for _ in range(5):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            s.connect(("127.0.0.1", a.port))
            s.sendall(b"GET /v1/stream?v=" + W.VERSION.encode() + b"&nonce=" + b"1" * 32
                      + b" HTTP/1.1\r\nhost: x\r\n\r\n")
            socks.append(s)  # and never read
        published = ("stream_frames_built", "stream_deltas_waiting")
        c0 = a.get("/v1/snapshot")["counters"]
        t0 = time.monotonic()
        worst = 0.0
        while time.monotonic() - t0 < 4.0:
            t = time.monotonic()
            a.get("/v1/cluster")
            worst = max(worst, time.monotonic() - t)
            time.sleep(0.1)
        counters = a.get("/v1/snapshot")["counters"]
        elapsed = time.monotonic() - t0
        assert worst < 1.0
        # the producer kept its schedule: a frame sent or held every 0.5 s interval
        assert sum(counters[k] - c0[k] for k in published) >= int(elapsed / 0.5) - 2, counters
        assert counters["stream_subscribers"] >= 1
        assert proc.memory_info().rss - rss0 < 20 * 2**20
        # and b's stream to a kept coming: its data no older than a heartbeat
        assert (_node(a.get("/v1/cluster"), "b") or {}).get("age_s", 99) \
            < W.HEARTBEAT * 0.5 + 1.0
    finally:
        for s in socks:
            s.close()


def test_poll_and_stream_agents_see_each_others_full_view(tmp_path):
    p1, p2 = free_port(), free_port()
    a = AgentProc(tmp_path, "a", p1, [p2], "--interval", "0.5", "--sharing", "poll")
    b = AgentProc(tmp_path, "b", p2, [p1], "--interval", "0.5", "--sharing", "stream")
    try:
        a.wait_ready()
        b.wait_ready()

        def full_view(me: AgentProc, other: AgentProc, name: str):
            node = _node(me.get("/v1/cluster"), name)
            own = other.get("/v1/snapshot")
            return node and len(node["links"]) == len(own["links"]) == 1 \
                and node["links"][0]["state"] == "up" \
                and len(node["interfaces"]) == len(own["interfaces"]) and node

        assert wait_for(lambda: full_view(a, b, "b"), 10), a.log()
        assert wait_for(lambda: full_view(b, a, "a"), 10), b.log()
        peers = b.get("/v1/cluster")["peers"]
        assert peers[0]["sharing"] == "poll"  # b says a speaks the previous protocol
        assert "has no /v1/stream" in b.log()
        status = httpx.get(b.url + "/v1/cluster", trust_env=False).json()
        from exotray.core.status import diagnostics
        assert any("previous sharing protocol" in n for n in diagnostics(status))
    finally:
        a.close()
        b.close()



def _reconnect_waits(tmp_path, peer_port: int) -> list[float]:
    """The first 4 waits between connections of an agent (interval 0.2 s) following the
    peer at `peer_port` (its `sleep` seam records them)."""
    import asyncio

    from exotray.agent.runtime import Agent
    from exotray.core.settings import Settings

    async def main() -> list[float]:
        agent = Agent(Settings(name="a", bind="127.0.0.1", port=free_port(), mdns=False,
                               interval=0.2, peers=(f"127.0.0.1:{peer_port}",),
                               state_dir=str(tmp_path / "a")))
        waits: list[float] = []
        done = asyncio.Event()

        async def sleep(seconds: float) -> None:
            waits.append(seconds)
            if len(waits) >= 4:
                done.set()
            await asyncio.sleep(0.01)

        agent.sharing.sleep = sleep  # type: ignore[attr-defined]
        await agent.start()
        try:
            await asyncio.wait_for(done.wait(), 10)
        finally:
            await agent.stop()
        return waits[:4]

    return asyncio.run(main())


def test_a_peer_not_taking_connections_is_tried_every_interval_not_ever_later(tmp_path):
    """A peer whose port takes no connection (starting, restarting) is tried again once
    per interval, as polling would fetch it: its stream is followed within an interval of
    it coming back."""
    assert _reconnect_waits(tmp_path, free_port()) == [0.2] * 4  # nothing listens there


def test_a_peer_sending_what_we_refuse_waits_longer_each_time(tmp_path, stream_peer):
    srv = stream_peer([("bad_frame", b"HELLO THERE\n")])
    assert _reconnect_waits(tmp_path, srv.server_address[1]) == [0.2, 0.4, 0.8, 1.6]


def _flood(nonce: str, deltas: int = 3000) -> bytes:
    """A full snapshot of 1024 links, then one-field deltas with no pause between them."""
    out = [full(snapshot(links=1024))]
    for i in range(deltas):
        out.append(delta({"age": 0, "links": {"set": {"b-a-5": {"rtt_ms": 0.05 + i % 50 / 100}}}},
                         seq=2 + i))
    return b"".join(out)


def test_a_peer_flooding_frames_is_cut_and_followed_again_after_a_back_off(
        tmp_path, stream_peer):
    """Issue 33 point 8: 10,000 deltas a second from one peer took its victim to half a
    core. A stream is cut at the frame over its budget (MAX_STREAM_FRAMES_PER_S, bursts of
    STREAM_FRAMES_BURST), counted as `too_fast`, logged once, and followed again after the
    back-off of refused streams; what came before the cut is kept."""
    flood = _flood("")
    srv = stream_peer([("flood", lambda nonce: flood)])
    srv.hold = 2.0
    a = AgentProc(tmp_path, "a", free_port(), [srv.server_address[1]], "--interval", "0.25",
                  "--sharing", "stream")
    try:
        a.wait_ready()
        assert wait_for(lambda: _rejections(a).get("too_fast", 0) >= 3, 40), (
            _rejections(a), srv.served, a.log())
        counters = a.get("/v1/snapshot")["counters"]
        served = len(srv.served)
        # each connection brought a burst's worth at most, not its 3001 frames
        assert counters["stream_frames_in"] <= served * (L.STREAM_FRAMES_BURST + 5), (
            counters["stream_frames_in"], served)
        gaps = [b - a_ for a_, b in zip(srv.served_at, srv.served_at[1:], strict=False)]
        assert min(gaps[1:]) >= 0.25, gaps  # backing off, not reconnecting at once
        assert _node(a.get("/v1/cluster"), "evil") is not None  # its state before the cut
        assert a.log().count("stream frame dropped (too_fast") == 1
        assert a.proc.poll() is None and "Traceback" not in a.log()
    finally:
        a.close()
