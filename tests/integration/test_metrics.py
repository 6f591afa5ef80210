"""GET /metrics: Prometheus text format from the official client, checked by the official
parser and, where installed, by `promtool check metrics`; a peer that renames itself
at every frame adds no series (issue 33 point 11)."""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
import time

import httpx
import pytest
from helpers import AgentProc, free_port, wait_for
from prometheus_client.parser import text_string_to_metric_families
from stream_frames import PEER_ID, delta, full, snapshot

from exotray.core.events import EVENT_TYPES


@pytest.fixture
def pair(tmp_path):
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "studio-1", pa, [pb], "--capacity", "lo=1000")
    b = AgentProc(tmp_path, "studio-2", pb, [pa])
    try:
        a.wait_ready()
        b.wait_ready()
        assert wait_for(lambda: [lk for lk in a.get("/v1/snapshot")["links"]
                                 if lk["state"] == "up" and lk["rtt_ms"]
                                 and lk["peer_name"] == "studio-2"], 5)
        yield a, b
    finally:
        a.close()
        b.close()


def _scrape(a) -> str:
    r = httpx.get(a.url + "/metrics", trust_env=False)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    return r.text


def test_metrics_parse_and_carry_the_link(pair):
    a, _ = pair
    # a queueing delay needs 4 replies within the last 2 s
    assert wait_for(lambda: a.get("/v1/snapshot")["links"][0]["queue_delay_ms"] is not None, 5)
    text = _scrape(a)
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert fams["exotray_build_info"].samples[0].labels["version"]
    rtt = fams["exotray_link_rtt_median_seconds"].samples[0]
    b_id = a.get("/v1/cluster")["nodes"][1]["node"]["id"]
    assert rtt.labels == {"node": "studio-1", "peer_id": b_id, "peer_address": "127.0.0.1",
                          "interface": "lo", "kind": "loopback"}
    (info,) = fams["exotray_peer_info"].samples
    assert info.labels == {"node": "studio-1", "peer_id": b_id, "peer_name": "studio-2"}
    assert 0 < rtt.value < 0.05  # seconds, not ms
    assert fams["exotray_link_up"].samples[0].value == 1.0
    assert fams["exotray_link_loss_ratio"].samples[0].value < 1
    assert fams["exotray_interface_receive_bytes"].type == "counter"
    # The idle loopback path: a baseline of well under a millisecond, little queueing.
    base = fams["exotray_link_rtt_baseline_seconds"].samples[0]
    assert base.labels == rtt.labels and 0 < base.value <= rtt.value
    queue = fams["exotray_link_queue_delay_seconds"].samples[0]
    assert 0 <= queue.value < 0.05
    lo_rx = [s for s in fams["exotray_interface_receive_bytes"].samples
             if s.labels["interface"] == "lo" and s.name.endswith("_total")]
    assert lo_rx and lo_rx[0].value > 0
    cap = [s for s in fams["exotray_interface_capacity_bytes_per_second"].samples
           if s.labels["interface"] == "lo"]
    assert cap[0].value == 125e6 and cap[0].labels["source"] == "override"
    events = {s.labels["type"]: s.value for s in fams["exotray_events"].samples
              if s.name.endswith("_total")}
    assert events["peer_up"] >= 1 and set(events) == set(EVENT_TYPES)
    # Counters only grow between scrapes.
    again = {f.name: f for f in text_string_to_metric_families(_scrape(a))}
    lo_rx2 = [s for s in again["exotray_interface_receive_bytes"].samples
              if s.labels["interface"] == "lo" and s.name.endswith("_total")]
    assert lo_rx2[0].value >= lo_rx[0].value


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool not installed (Debian package 'prometheus')")
def test_promtool_accepts_the_exposition(pair):
    a, _ = pair
    p = subprocess.run(["promtool", "check", "metrics"], input=_scrape(a), text=True,
                       capture_output=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == "" and p.stderr.strip() == "", p.stdout + p.stderr


class _Renamer(http.server.ThreadingHTTPServer):
    """A stand-in peer on loopback: /v1/stream is a full snapshot, then a delta every
    20 ms that renames it (evil-1, evil-2, ...), for at most 2000 frames."""

    daemon_threads = True

    def __init__(self) -> None:
        self.stop = threading.Event()
        super().__init__(("127.0.0.1", 0), _RenameHandler)


class _RenameHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        srv: _Renamer = self.server  # type: ignore[assignment]
        if not self.path.startswith("/v1/stream"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "application/x-exotray-stream")
        self.send_header("x-exotray-stream", "ab12")
        self.end_headers()
        try:
            self.wfile.write(full(snapshot(name="evil-0")))
            for i in range(1, 2000):
                if srv.stop.wait(0.02):
                    break
                node = {"id": PEER_ID, "name": f"evil-{i}", "version": "0"}
                self.wfile.write(delta({"age": 0.0, "top": {"node": node}}, seq=i + 1))
                self.wfile.flush()
        except OSError:
            pass

    def log_message(self, *args):
        pass


def _series(text: str) -> tuple[set, list]:
    """The link series (name and labels) of one scrape, and its exotray_peer_info
    samples."""
    fams = text_string_to_metric_families(text)
    samples = [s for f in fams for s in f.samples]
    links = {(s.name, tuple(sorted(s.labels.items()))) for s in samples
             if s.name.startswith("exotray_link_")}
    return links, [s for s in samples if s.name == "exotray_peer_info"]


def test_a_peer_renaming_itself_at_every_frame_adds_no_series(tmp_path):
    """Series are labelled by the peer's node id; its name is in exotray_peer_info alone,
    one series with the current name, and the renames are a log line a minute."""
    srv = _Renamer()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    a = AgentProc(tmp_path, "a", free_port(), [srv.server_address[1]], "--interval", "0.25",
                  "--sharing", "stream")
    started = time.monotonic()
    try:
        a.wait_ready()
        assert wait_for(lambda: _series(_scrape(a))[1], 10), a.log()
        scrapes, names = [], []
        for _ in range(8):
            # each scrape after the peer has renamed itself since the last one
            got = wait_for(lambda: (s := _series(_scrape(a))) and s[1]
                           and s[1][0].labels["peer_name"] not in names and s, 10)
            assert got, a.log()
            links, (info,) = got
            assert info.labels["peer_id"] == PEER_ID
            names.append(info.labels["peer_name"])
            scrapes.append(links)
        assert len(set(names)) == 8 and all(n.startswith("evil-") for n in names)
        assert scrapes[0] and all(s == scrapes[0] for s in scrapes), \
            [sorted(s ^ scrapes[0])[:4] for s in scrapes]
        assert {dict(labels)["peer_id"] for _, labels in scrapes[0]} == {PEER_ID}
        log = a.log()
        renames = log.count("renamed itself")
        assert 1 <= renames <= 1 + (time.monotonic() - started) // 60, log
        assert "Traceback" not in log
    finally:
        a.close()
        srv.stop.set()
        srv.shutdown()
        srv.server_close()
