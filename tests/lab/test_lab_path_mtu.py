"""Issue 31, point 4, on the virtual LAN: two hosts with MTU 9000 joined by a bridge
whose ports take 1500-byte frames (jumbo frames on the Macs, not on the switch): small
probes pass and 9000-byte frames vanish, so `mtu_ok` turns false with `path_mtu` 1500 and
one `mtu_mismatch`; the switch set to 9000, it clears. Two agents started with everything
at 9000 know `path_mtu` 9000 and raise nothing. Times are printed."""

from __future__ import annotations

import time

from helpers import wait_for
from netlab import SETTLE_S, Agents, Lab

from exotray.core import pathmtu


def _mtu(lab: Lab, size: int, switch: bool = True, hosts: bool = True) -> None:
    for i, h in enumerate(lab.hosts, 1):
        if hosts:
            h.exec("ip", "link", "set", h.veth, "mtu", str(size))
        if switch:
            lab.bridge_exec("ip", "link", "set", f"xt{lab.tag}{i}b", "mtu", str(size))


def _events(agent) -> list[dict]:
    return [e for e in agent.get("/v1/events")["events"] if e["type"].startswith("mtu_")]


def _link(agent) -> dict | None:
    links = [lk for lk in agent.get("/v1/snapshot")["links"] if lk["state"] == "up"]
    return links[0] if links else None


def test_jumbo_frames_through_a_1500_switch_and_end_to_end(tmp_path):
    with Lab(2, monitor=True) as lab:
        h1, h2 = lab.hosts
        _mtu(lab, 9000, switch=False)  # the hosts at 9000, the switch's ports at 1500
        agents = Agents(lab, tmp_path)
        try:
            t0 = time.monotonic()
            a1 = agents.start(h1, "--interval", "0.5", name="h1")
            agents.start(h2, "--interval", "0.5", name="h2")
            a1.wait_ready()
            assert wait_for(lambda: _events(a1), 120), (_link(a1), a1.log())
            found = time.monotonic() - t0
            (ev,) = _events(a1)
            assert ev["type"] == "mtu_mismatch" and ev["peer_name"] == "h2"
            assert (ev["mtu"], ev["path_mtu"]) == (9000, 1500)
            lk = _link(a1)
            assert (lk["path_mtu"], lk["mtu_ok"]) == (1500, False)

            _mtu(lab, 9000, hosts=False)  # the switch fixed
            t1 = time.monotonic()
            assert wait_for(lambda: len(_events(a1)) == 2, pathmtu.RETRY_S + SETTLE_S), \
                a1.log()
            cleared = time.monotonic() - t1
            assert _events(a1)[1]["type"] == "mtu_mismatch_cleared"
            assert (_link(a1)["path_mtu"], _link(a1)["mtu_ok"]) == (9000, True)
            print(f"\nmtu_mismatch {found:.1f} s after start (9000 -> 1500), cleared "
                  f"{cleared:.1f} s after the switch took 9000")
        finally:
            agents.close()

        agents = Agents(lab, tmp_path / "again")
        (tmp_path / "again").mkdir()
        try:
            b1 = agents.start(h1, "--interval", "0.5", name="h1b")
            agents.start(h2, "--interval", "0.5", name="h2b")
            b1.wait_ready()
            got = wait_for(lambda: (lk := _link(b1)) and lk["path_mtu"] and lk, 30)
            assert got and (got["path_mtu"], got["mtu_ok"]) == (9000, True), _link(b1)
            time.sleep(3)
            assert _events(b1) == []
        finally:
            agents.close()
