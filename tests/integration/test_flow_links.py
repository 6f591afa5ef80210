"""Real agents on loopback (issue 30): two links through one carrier (`lo`), a heavy TCP
transfer to one peer's address and a light one to the other's. The links show their own
bytes apart while their carrier's rates stay the same; the numbers are in the snapshot,
the history, /metrics, and reach a follower through the stream."""

from __future__ import annotations

import random
import socket
import sys
import threading

import httpx
import pytest
from helpers import AgentProc, TcpServer, free_port, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="socket diagnostics are Linux's")

MB = 1_000_000


def _send(to: tuple[str, int], chunk: int, stop: threading.Event) -> None:
    """`chunk` bytes every 50 ms from 127.0.0.1, until `stop` or 60 s (bounded)."""
    with socket.create_connection(to, timeout=10, source_address=("127.0.0.1", 0)) as c:
        for _ in range(1200):
            if stop.wait(0.05):
                return
            c.sendall(b"x" * chunk)


@pytest.fixture
def cluster(tmp_path):
    net = f"127.{random.randrange(2, 250)}.{random.randrange(1, 250)}"
    pa, pb, pc = free_port(), free_port(), free_port()
    a = AgentProc(tmp_path, "a", pa, [f"{net}.2:{pb}", f"{net}.3:{pc}"], "--interval", "0.5")
    b = AgentProc(tmp_path, "b", pb, [pa], "--interval", "0.5", bind=f"{net}.2")
    c = AgentProc(tmp_path, "c", pc, [pa], "--interval", "0.5", bind=f"{net}.3")
    try:
        for x in (a, b, c):
            x.wait_ready()
        yield net, a, b
    finally:
        for x in (a, b, c):
            x.close()


def _links(agent: AgentProc) -> dict[str, dict]:
    return {lk["peer_address"]: lk for lk in agent.get("/v1/snapshot")["links"]}


def test_two_links_on_one_carrier_show_their_own_bytes(cluster):
    net, a, b = cluster
    heavy, light = TcpServer(f"{net}.2"), TcpServer(f"{net}.3")
    stop = threading.Event()
    senders = [threading.Thread(target=_send, args=(heavy.address, MB, stop)),
               threading.Thread(target=_send, args=(light.address, 100_000, stop))]
    for t in senders:
        t.start()
    try:
        def apart():
            lk = _links(a)
            h, li = lk[f"{net}.2"], lk[f"{net}.3"]
            ok = (h["flow_source"] == li["flow_source"] == "sockets"
                  and (h["flow_tx_bytes_per_s"] or 0) > 4 * MB)
            return (h, li) if ok else None
        found = wait_for(apart, 30)
        assert found, _links(a)
        h, li = found
        # the carrier's numbers are the same for both links; their own are not
        assert h["tx_bytes_per_s"] == li["tx_bytes_per_s"]
        assert h["flow_tx_bytes_per_s"] > 3 * li["flow_tx_bytes_per_s"] > 0
        assert h["flow_tx_bytes_per_s"] <= 1.1 * h["tx_bytes_per_s"]

        metrics = httpx.get(a.url + "/metrics", timeout=5, trust_env=False).text
        sent = [ln for ln in metrics.splitlines()
                if ln.startswith("exotray_link_flow_transmit_bytes_per_second{")]
        assert any(f'peer_address="{net}.2"' in ln for ln in sent), sent

        def in_history():
            rows = a.get("/v1/history", link=h["id"], seconds=60)
            return any((v or 0) > MB for v in rows.get("flow_tx_bytes_per_s") or [])
        assert wait_for(in_history, 10)

        def followed():  # b follows a: a's links as b's cluster view has them (streamed)
            for node in b.get("/v1/cluster")["nodes"]:
                for lk in node["links"] if node["node"]["name"] == "a" else ():
                    if lk["peer_address"] == f"{net}.2" and lk["flow_source"] == "sockets" \
                            and (lk["flow_tx_bytes_per_s"] or 0) > MB:
                        return True
            return False
        assert wait_for(followed, 15)
    finally:
        stop.set()
        for t in senders:
            t.join(15)
        heavy.close()
        light.close()

