"""GET /metrics: Prometheus text format from the official client, checked by the official
parser and, where installed, by `promtool check metrics`."""

from __future__ import annotations

import shutil
import subprocess

import httpx
import pytest
from helpers import AgentProc, free_port, wait_for
from prometheus_client.parser import text_string_to_metric_families

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
    assert rtt.labels == {"node": "studio-1", "peer": "studio-2", "peer_address": "127.0.0.1",
                          "interface": "lo", "kind": "loopback"}
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
