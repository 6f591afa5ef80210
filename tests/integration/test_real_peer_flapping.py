"""A real peer that flaps (issue 33 point 9): two agents on loopback, the peer stopped
(SIGSTOP) until its link is down and continued until it is up again, eight times. The
other agent's link state follows every change; its peer_up/peer_down events stop at
the change that began the hold."""

from __future__ import annotations

import os
import signal

from helpers import AgentProc, free_port, wait_for

from exotray.agent.base import limits as L

CYCLES = 8


def test_a_peer_flapping_for_real_is_held_while_its_state_stays_live(tmp_path):
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "studio-1", pa, [pb], "--interval", "0.25")
    b = AgentProc(tmp_path, "studio-2", pb, [pa], "--interval", "0.25")

    def link_state() -> str | None:
        links = [lk for lk in a.get("/v1/snapshot")["links"] if lk["peer_port"] == pb]
        return links[0]["state"] if links else None

    def peer_events() -> list[dict]:
        return [e for e in a.get("/v1/events")["events"]
                if e["type"] in ("peer_up", "peer_down")]

    try:
        a.wait_ready()
        b.wait_ready()
        assert wait_for(lambda: link_state() == "up" and peer_events(), 10), a.log()
        for _ in range(CYCLES):  # down and up again: 2 changes each
            os.kill(b.proc.pid, signal.SIGSTOP)
            try:
                assert wait_for(lambda: link_state() == "down", 10), a.log()
            finally:
                os.kill(b.proc.pid, signal.SIGCONT)
            assert wait_for(lambda: link_state() == "up", 10), a.log()
        said = [e["type"] for e in peer_events()]
        # 1 + 2 x 8 changes; the first FLAP_CHANGES said, and the one that began the hold
        assert said == ["peer_up", "peer_down"] * (L.FLAP_CHANGES // 2) + ["peer_up"], said
        log = a.log()
        assert log.count(f"changed state {L.FLAP_CHANGES + 1} times") == 1, log
        assert "Traceback" not in log
    finally:
        if b.proc.poll() is None:
            os.kill(b.proc.pid, signal.SIGCONT)
        a.close()
        b.close()
