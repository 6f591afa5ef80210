"""Path-MTU probes between real agents on loopback (issue 31, point 4): frames of lo's
MTU, as far as a jumbo frame, reach the peer (`path_mtu`, `mtu_ok` true, no event), and
a peer that answers only plain probes, as agents before these did, leaves the link's
MTU unknown, never a mismatch."""

from __future__ import annotations

import socket
import threading
import time

from helpers import AgentProc, free_port, wait_for

from exotray.agent.probe.datagram import PROBE_LEN, REPLY, REQUEST, Probe, decode, encode
from exotray.core.pathmtu import SPREAD_S


def _link(a: AgentProc) -> dict | None:
    links = a.get("/v1/snapshot")["links"]
    return links[0] if links and links[0]["state"] == "up" else None


def test_two_agents_on_loopback_know_their_path_mtu(pair):
    a, b = pair
    # (a link's first check waits up to SPREAD_S: a node's checks are spread)
    got = wait_for(lambda: (lk := _link(a)) and lk["path_mtu"] and lk, SPREAD_S + 15)
    assert got, a.get("/v1/snapshot")["links"]
    assert got["path_mtu"] == 9216 and got["mtu_ok"] is True  # lo: 65536, checked to 9216
    counters = b.get("/v1/snapshot")["counters"]
    assert counters["mtu_requests_reflected"] >= 2  # the small one and the MTU's
    assert [e for e in a.get("/v1/events")["events"] if "mtu" in e["type"]] == []


class _OldReflector:
    """Answers 40-byte probes as an agent before MTU probes did; drops anything else."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.dropped = 0
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop:
            try:
                data, addr = self.sock.recvfrom(65535)
            except TimeoutError:
                continue
            if len(data) != PROBE_LEN:
                self.dropped += 1
                continue
            p = decode(data)
            if p.type == REQUEST:
                now = time.time_ns()
                self.sock.sendto(encode(Probe(REPLY, p.seq, p.t1, now, now)), addr)

    def close(self) -> None:
        self.stop = True
        self.thread.join(2)
        self.sock.close()


def test_a_peer_that_does_not_answer_mtu_probes_leaves_it_unknown(tmp_path):
    old = _OldReflector()
    a = AgentProc(tmp_path, "a", free_port(), [old.port], "--interval", "0.5")
    try:
        a.wait_ready()
        assert wait_for(lambda: _link(a), 10), a.log()
        assert wait_for(lambda: old.dropped >= 1, SPREAD_S + 10)  # asked, not answered
        time.sleep(2)
        lk = _link(a)
        assert lk is not None and lk["path_mtu"] is None and lk["mtu_ok"] is None
        assert [e for e in a.get("/v1/events")["events"] if "mtu" in e["type"]] == []
    finally:
        a.close()
        old.close()
