"""The limits a LAN host runs into (base/limits.py, issue 18), each on its own part: the peer
table, mDNS records, the cluster view, the request guard. No sockets; clocks passed in."""

from __future__ import annotations

import ipaddress

import pytest

from exotray import PROTO
from exotray.agent.base import limits as L
from exotray.agent.http.guard import RequestGuard, allowed_host
from exotray.agent.peers import links
from exotray.agent.peers.discovery import PeerRecord, parse_record
from exotray.agent.peers.table import Peer, PeerTable
from exotray.agent.share import views
from exotray.core.saturation import SaturationParams
from exotray.core.schema import parse_snapshot


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


def _table():
    clock = Clock()
    table = PeerTable(
        clock,
        lambda peer, target: links.new_link("me", peer, target, 1.0, SaturationParams()),
        down_after_s=2.5)
    return table, clock


def _rec(i: int, *addrs: str, port: int = 52480) -> PeerRecord:
    return PeerRecord(f"p{i}._exotray._tcp.local.", f"peer{i:08d}", f"p{i}", "0", 1, port,
                      addrs or (f"10.213.{i // 250}.{i % 250 + 1}",))


def test_the_table_holds_at_most_max_peers_and_counts_the_rest():
    table, _ = _table()
    for i in range(L.MAX_PEERS + 50):
        table.mdns_found(_rec(i))
    assert len(table.peers) == L.MAX_PEERS
    assert table.refused["peers"] == 50


def test_a_full_table_makes_room_for_a_newcomer_by_dropping_one_that_never_answered():
    table, clock = _table()
    for i in range(L.MAX_PEERS):
        table.mdns_found(_rec(i))
    answered = table.links[(f"10.213.0.{1 + 1}", 52480)]  # peer 1 answers its probes
    table.replied(answered, clock())
    clock.t += L.NEVER_UP_EVICT_S + 1
    table.mdns_found(_rec(998))
    assert "mdns:peer00000998" not in table.peers  # none has been probed yet
    for lk in table.links.values():
        lk.first_probe = clock()  # the probe tick
    clock.t += L.NEVER_UP_EVICT_S - 0.1
    table.mdns_found(_rec(999))
    assert "mdns:peer00000999" not in table.peers  # none has had its chance yet
    clock.t += 0.2
    table.mdns_found(_rec(999))
    assert "mdns:peer00000999" in table.peers and len(table.peers) == L.MAX_PEERS
    assert "mdns:peer00000000" not in table.peers  # the oldest that never answered went
    assert "mdns:peer00000001" in table.peers  # the one that answered stays


def test_a_peer_refused_for_want_of_room_gets_in_once_room_is_made():
    """zeroconf reports a record once: a real peer announced in a flood must not be lost."""
    table, clock = _table()
    for i in range(L.MAX_PEERS):
        table.mdns_found(_rec(i))
    table.mdns_found(_rec(999))  # all the others are too young to be replaced
    table.mdns_found(_rec(1000))
    assert list(table.waiting) == ["peer00000999", "peer00001000"]
    assert len(table.peers) == L.MAX_PEERS
    table.mdns_removed("peer00001000")  # a goodbye takes a waiting record away too
    for lk in table.links.values():
        lk.first_probe = clock()
    clock.t += L.NEVER_UP_EVICT_S
    table.prune(clock())
    assert "mdns:peer00000999" in table.peers and not table.waiting
    assert "mdns:peer00001000" not in table.peers


def test_peers_that_never_answered_are_forgotten_after_never_up_forget_s():
    table, clock = _table()
    for i in range(10):
        table.mdns_found(_rec(i))
    table.replied(table.links[("10.213.0.1", 52480)], clock())
    clock.t += L.NEVER_UP_FORGET_S + 1
    table.update_liveness(clock())
    table.prune(clock())
    assert list(table.peers) == ["mdns:peer00000000"]  # down now, but it once answered


def test_one_address_is_probed_for_at_most_a_few_mdns_peers():
    """100 services naming one bystander on 100 ports: a handful of links, not 100."""
    table, _ = _table()
    for i in range(100):
        table.mdns_found(_rec(i, "10.213.0.99", port=41000 + i))
    assert len(table.links) == L.MAX_MDNS_PEERS_PER_ADDRESS
    assert len(table.peers) == L.MAX_MDNS_PEERS_PER_ADDRESS
    assert table.refused["address_shared"] == 100 - L.MAX_MDNS_PEERS_PER_ADDRESS


def test_links_per_peer_are_capped_whatever_their_source():
    table, _ = _table()
    table.mdns_found(_rec(1, *(f"10.213.0.{i}" for i in range(1, 30))))
    assert len(table.links) == L.MAX_LINKS_PER_PEER


def test_an_mdns_address_is_not_fetched_from_before_it_answers_but_a_manual_one_is():
    table, clock = _table()

    def agree() -> None:  # reachable(): best_target for every peer, in one pass
        assert table.reachable() == {p.key for p in table.peers.values()
                                     if table.best_target(p, clock()) is not None}

    table.mdns_found(_rec(1, "10.213.0.7"))
    peer = table.by_id("peer00000001")
    assert table.best_target(peer, clock()) is None
    agree()
    table.replied(table.links[("10.213.0.7", 52480)], clock())
    assert table.best_target(peer, clock()) == ("10.213.0.7", 52480)
    agree()
    manual = table.add_manual("10.213.0.8", 52480)
    manual.manual_targets = [("10.213.0.8", 52480)]
    table.set_targets(manual)
    assert table.best_target(manual, clock()) == ("10.213.0.8", 52480)
    agree()
    assert table.reachable() == {peer.key, manual.key}
    # A goodbye empties a peer's addresses while its fetch waits: None, no IndexError.
    table.mdns_removed("peer00000001")
    assert table.best_target(peer, clock()) is None
    agree()


_TXT = {b"id": b"bbbbbbbbbbbb", b"name": b"b", b"version": b"0",
        b"proto": str(PROTO).encode()}


def test_a_record_with_a_hundred_addresses_gives_at_most_max_addresses_per_record():
    addrs = [f"10.213.0.{i}" for i in range(1, 101)]
    rec = parse_record("b._exotray._tcp.local.", 52480, _TXT, addrs, own_id="a",
                       own_service=None,
                       local_networks=[ipaddress.IPv4Network("10.213.0.0/24")])
    assert len(rec.addresses) == L.MAX_ADDRESSES_PER_RECORD


def test_addresses_off_the_subnets_given_are_not_taken():
    rec = parse_record("b._exotray._tcp.local.", 52480, _TXT,
                       ["10.213.0.5", "10.213.1.5", "192.0.2.1"], own_id="a", own_service=None,
                       local_networks=[ipaddress.IPv4Network("10.213.0.0/24")])
    assert rec.addresses == ("10.213.0.5",)


def _big_snapshot(n_links: int, n_ifaces: int) -> bytes:
    import json
    link = {"id": "x", "peer_id": "p", "peer_name": "p", "local_interface": "eth0",
            "local_label": None, "peer_address": "10.213.0.1", "peer_port": 1,
            "state": "up", "rtt_ms": None, "rtt_min_ms": None, "rtt_max_ms": None,
            "rtt_p90_ms": None, "rtt_last_ms": None, "jitter_ms": None, "loss": None,
            "rx_bytes_per_s": None, "tx_bytes_per_s": None, "capacity_bytes_per_s": None,
            "capacity_source": "unknown", "utilization": None}
    iface = {"name": "eth0", "kind": "ethernet", "label": "Ethernet", "up": True,
             "addresses": [], "rx_bytes_per_s": None, "tx_bytes_per_s": None,
             "capacity_bytes_per_s": None, "capacity_source": "unknown",
             "capacity_measured_at": None}
    return json.dumps({"schema": 1, "node": {"id": "bbbb", "name": "b", "version": "0"},
                       "interval_s": 1.0, "data_age_s": 0.0,
                       "interfaces": [{**iface, "name": f"e{i}"} for i in range(n_ifaces)],
                       "links": [{**link, "id": f"l{i}"} for i in range(n_links)]}).encode()


def test_the_cluster_view_shows_a_bounded_part_of_a_huge_peer_and_says_so():
    peer = Peer(key="k", host=None, port=1, id="bbbb", name="b")
    peer.snapshot = parse_snapshot(_big_snapshot(1024, 200), own_id="me")
    peer.snapshot_at = 0.0
    peer.last_error = "ConnectError: refused"
    own = {"data_age_s": 0.0}
    c = views.cluster(node_id="me", own=own, authenticated=False, peers=[peer], now=0.0,
                      discovery={}, local=False)
    node = c["nodes"][1]
    assert len(node["links"]) == L.MAX_CLUSTER_LINKS_PER_NODE
    assert len(node["interfaces"]) == L.MAX_CLUSTER_IFACES_PER_NODE
    assert node["truncated"] == 1024 - 64 + 200 - 32
    assert c["peers"][0]["last_error"] is None  # not for a client on the LAN
    local = views.cluster(node_id="me", own=own, authenticated=False, peers=[peer], now=0.0,
                          discovery={}, local=True)
    assert local["peers"][0]["last_error"] == "ConnectError: refused"


@pytest.mark.parametrize(("host", "ok"), [
    ("127.0.0.1:52480", True), ("10.213.0.5", True), ("[::1]:52480", True),
    ("localhost:52480", True), ("studio.local", True), ("STUDIO", True),
    ("evil.example:52480", False), ("evil.example", False), ("", False),
    ("127.0.0.1.nip.io", False),
])
def test_host_header(host, ok):
    assert allowed_host(host, {"localhost", "studio", "studio.local"}) is ok


def _scope(method="GET", **headers):
    return {"type": "http", "method": method,
            "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}


@pytest.mark.parametrize(("scope", "status"), [
    (_scope(host="10.213.0.5:52480"), None),
    (_scope(host="rebound.example:52480"), 421),
    (_scope(host="10.213.0.5:52480", origin="http://evil.example"), 403),
    (_scope(host="10.213.0.5:52480", origin="null"), 403),
    (_scope(host="127.0.0.1:52480", origin="http://127.0.0.1:52480"), None),
    (_scope("POST", host="10.213.0.5"), 415),
    (_scope("POST", host="10.213.0.5", content_type="text/plain"), 415),
    (_scope("POST", host="10.213.0.5", content_type="application/json; charset=utf-8"), None),
    (_scope("PUT", host="127.0.0.1", content_type="application/x-www-form-urlencoded"), 415),
])
def test_request_guard(scope, status):
    why = RequestGuard(None, names={"localhost"}).refusal(scope)
    assert (why[0] if why else None) == status


def test_a_flood_of_announcements_is_resolved_a_few_at_a_time_from_a_bounded_queue():
    import asyncio

    from zeroconf import ServiceStateChange

    from exotray.agent.peers.discovery import SERVICE_TYPE, Discovery

    async def run() -> None:
        d = Discovery(node_id="me", name="me", port=1, on_found=lambda r: None,
                      on_removed=lambda i: None, local_networks=list)
        release = asyncio.Event()
        started: list[str] = []

        async def resolve(name: str) -> None:
            started.append(name)
            try:
                await release.wait()
            finally:
                d._resolving.pop(name, None)
                d._pump()

        d._resolve = resolve  # the queue, not zeroconf, is under test
        d.on = {"eth0": object()}  # type: ignore[dict-item]
        n = 2000
        for i in range(n):
            d._on_change("eth0", None, SERVICE_TYPE, f"s{i}.{SERVICE_TYPE}",
                         ServiceStateChange.Added)
        await asyncio.sleep(0)
        assert len(d._resolving) == L.MAX_RESOLVING
        assert len(d._waiting["eth0"]) == L.MAX_RESOLVE_QUEUE
        assert d.ignored_counts["resolve_queue_full"] == n - L.MAX_RESOLVING - L.MAX_RESOLVE_QUEUE
        # a goodbye takes a waiting one out; the newest are the ones kept waiting
        d._on_change("eth0", None, SERVICE_TYPE, f"s{n - 1}.{SERVICE_TYPE}",
                     ServiceStateChange.Removed)
        assert f"s{n - 1}.{SERVICE_TYPE}" not in d._waiting["eth0"]
        release.set()
        for _ in range(5000):
            if not any(d._waiting.values()) and not d._resolving:
                break
            await asyncio.sleep(0)
        assert not any(d._waiting.values()) and not d._resolving
        assert len(started) == L.MAX_RESOLVING + L.MAX_RESOLVE_QUEUE - 1

    asyncio.run(run())


def test_probes_to_addresses_that_never_answered_are_budgeted_fairly():
    from exotray.agent.probe.prober import Prober

    table, clock = _table()
    for i in range(100):
        table.mdns_found(_rec(i))
    real = table.links[("10.213.0.1", 52480)]
    table.replied(real, clock())
    prober = Prober(table, None, None, clock)  # _to_probe needs only the table and clock
    seen: set = set()
    per_tick = []
    for _ in range(16):  # 4 s at 4 ticks a second
        chosen = prober._to_probe(clock())
        for lk in chosen:
            prober._last_sent[lk.target] = clock()
        assert real in chosen  # a link that answers is always probed
        never = [lk for lk in chosen if lk is not real]
        per_tick.append(len(never))
        seen |= {lk.target for lk in never}
        clock.t += 0.25
    assert sum(per_tick[1:]) <= L.UNANSWERED_PROBES_PER_S * 4  # the budget, after a burst
    assert len(seen) == 99  # and every one had its turn
