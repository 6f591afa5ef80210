"""A capacity test's own traffic is not its link's load (issue 34 points 7 and 8): it
raises no saturation on either end, even where a capacity set below it makes it look
like one; the test is an event of its own (`capacity_test`) with its interval; and a
result kept beside a user's capacity says that the setting stays in force."""

from __future__ import annotations

import subprocess
import sys

import httpx
from helpers import AgentProc, free_port, wait_for


def _events(x) -> list[dict]:
    return x.get("/v1/events")["events"]


def _lo_rate(x) -> float:
    (link,) = x.get("/v1/snapshot")["links"]
    return max(link["rx_bytes_per_s"] or 0, link["tx_bytes_per_s"] or 0)


def test_a_capacity_tests_traffic_raises_no_saturation_and_is_marked(tmp_path):
    pa, pb = free_port(), free_port()
    # 8 Mbit/s on lo: a loopback test (GB/s) is far above it for its whole 2 x 3 s
    a = AgentProc(tmp_path, "a", pa, [pb], "--capacity", "lo=8")
    b = AgentProc(tmp_path, "b", pb, [pa], "--capacity", "lo=8")
    try:
        for x in (a, b):
            x.wait_ready()
        assert wait_for(lambda: all(
            [lk["state"] for lk in x.get("/v1/snapshot")["links"]] == ["up"] for x in (a, b)),
            15)
        tok = (a.state / "control_token").read_text().strip()
        r = httpx.post(a.url + "/v1/control/measure", timeout=60, trust_env=False,
                       json={"peer": f"127.0.0.1:{pb}", "seconds": 3, "streams": 2},
                       headers={"authorization": f"Bearer {tok}"})
        assert r.status_code == 200, r.text
        result = r.json()
        assert result["capacity_of"] == "lo" and result["override_mbit"] == 8
        # both ends mark the test; wait past its traffic's stay in the rates
        for x, role in ((a, "initiator"), (b, "responder")):
            tested = wait_for(lambda x=x: [e for e in _events(x)
                                           if e["type"] == "capacity_test"], 10)
            assert tested and tested[0]["role"] == role and tested[0]["seconds"] >= 5
            assert tested[0]["local_interface"] == "lo" and tested[0]["started_at"]
        # A saturation would have been raised during the test (6 s of traffic, sustain
        # 3 s); wait until its bytes have left both ends' rates, then look.
        assert wait_for(lambda: all(_lo_rate(x) < 100_000 for x in (a, b)), 15)
        for x in (a, b):
            types = [e["type"] for e in _events(x)]
            assert "link_saturated" not in types, types
            lo = next(i for i in x.get("/v1/snapshot")["interfaces"] if i["name"] == "lo")
            assert lo["capacity_source"] == "override"  # the setting stays in force
        # the command says so too (point 7)
        p = subprocess.run([sys.executable, "-m", "exotray", "measure", f"127.0.0.1:{pb}",
                            "--seconds", "1", "--port", str(pa), "--state-dir", str(a.state)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert "kept for lo, but your setting for lo (1 MB/s) stays in force" in p.stdout, (
            p.stdout)
    finally:
        a.close()
        b.close()
