"""mDNS per interface (issue 18): a record is taken only with addresses on the subnets of
the interface it came in on, a peer heard on several interfaces is one peer, and the
sockets of an interface's zeroconf are tied to it (real sockets; nothing is sent off
this machine: datagrams go to 127.0.0.1)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from types import SimpleNamespace
from typing import ClassVar

import pytest
from zeroconf import ServiceStateChange

from exotray.agent.peers import discovery as D
from exotray.agent.peers import mdns_sockets as M

NETS = {"10.213.200.1": "10.213.200.0/24", "10.213.201.1": "10.213.201.0/24"}
IFACES = {"10.213.200.1": "xthA", "10.213.201.1": "xthB"}
TXT = {b"id": b"peer00000001", b"name": b"studio-2", b"version": b"0", b"proto": b"1"}
SVC = f"studio-2-peer00000001.{D.SERVICE_TYPE}"


class FakeInfo:
    """What zeroconf's cache of one interface's instance says of a service."""

    answers: ClassVar[dict[tuple[object, str], list[str]]] = {}

    def __init__(self, type_: str, name: str) -> None:
        self.name, self.port, self.properties = name, 52480, TXT
        self._addrs: list[str] = []

    async def async_request(self, zc, timeout_ms) -> bool:
        self._addrs = self.answers[(zc, self.name)]
        return True

    def parsed_addresses(self, version=None) -> list[str]:
        return self._addrs


def _discovery(found: list, removed: list, untied: str | None = None) -> D.Discovery:
    d = D.Discovery(node_id="me0000000000", name="me", port=52480, on_found=found.append,
                    on_removed=removed.append,
                    local_networks=lambda addrs: [ipaddress.IPv4Network(NETS[a])
                                                  for a in addrs],
                    interface_of=IFACES.get)
    for addr, name in IFACES.items():
        d.on[name] = D.OnIface(name, (addr,), SimpleNamespace(zeroconf=name), untied=untied)
    d.addresses = tuple(IFACES)
    return d


async def _heard(d: D.Discovery, iface: str, addresses: list[str]) -> None:
    FakeInfo.answers[(iface, SVC)] = addresses
    d._on_change(iface, None, D.SERVICE_TYPE, SVC, ServiceStateChange.Added)
    while d._resolving or any(d._waiting.values()):
        await asyncio.sleep(0)


@pytest.fixture(autouse=True)
def _fake_info(monkeypatch):
    monkeypatch.setattr(D, "AsyncServiceInfo", FakeInfo)


def test_addresses_only_on_the_subnet_of_the_interface_the_record_came_in_on():
    async def main():
        found, removed = [], []
        d = _discovery(found, removed)
        # heard on LAN A, naming an address on LAN B (where we also are): not taken
        await _heard(d, "xthA", ["10.213.201.77"])
        assert found == []
        assert [(i.reason, i.service) for i in d.ignored] == [("no_address", SVC)]
        assert "heard on xthA" in d.ignored[0].detail
        # the same record heard on LAN B: taken
        await _heard(d, "xthB", ["10.213.201.77"])
        assert [r.addresses for r in found] == [("10.213.201.77",)]
        # both addresses heard on A: A's is kept, B's is not
        await _heard(d, "xthA", ["10.213.200.7", "10.213.201.66"])
        assert found[-1].addresses == ("10.213.200.7", "10.213.201.77")

    asyncio.run(main())


def test_a_peer_heard_on_two_interfaces_is_one_peer_until_it_leaves_both():
    async def main():
        found, removed = [], []
        d = _discovery(found, removed)
        await _heard(d, "xthA", ["10.213.200.7", "10.213.201.7"])
        await _heard(d, "xthB", ["10.213.200.7", "10.213.201.7"])
        assert [r.addresses for r in found] == [("10.213.200.7",),
                                                ("10.213.200.7", "10.213.201.7")]
        assert {r.id for r in found} == {"peer00000001"}
        d._on_change("xthA", None, D.SERVICE_TYPE, SVC, ServiceStateChange.Removed)
        assert found[-1].addresses == ("10.213.201.7",) and removed == []
        d._on_change("xthB", None, D.SERVICE_TYPE, SVC, ServiceStateChange.Removed)
        assert removed == ["peer00000001"]

    asyncio.run(main())


def test_sockets_not_tied_to_their_interface_fall_back_to_all_mdns_subnets_and_say_so():
    async def main():
        found, removed = [], []
        d = _discovery(found, removed, untied="cannot bind its sockets to xthA: EPERM")
        await _heard(d, "xthA", ["10.213.201.77"])
        assert [r.addresses for r in found] == [("10.213.201.77",)]
        d._say_problems()
        assert "cannot tell which interface a record came in on" in d.problem

    asyncio.run(main())


def test_addresses_are_grouped_by_the_interface_holding_them():
    where = {"10.0.0.1": "eth0", "10.0.0.2": "eth0", "192.168.1.5": "wlan0"}
    assert M.group_by_interface(["192.168.1.5", "10.0.0.2", "10.0.0.1", "172.16.0.9"],
                                where.get) == {"eth0": ("10.0.0.1", "10.0.0.2"),
                                               "wlan0": ("192.168.1.5",),
                                               "172.16.0.9": ("172.16.0.9",)}


def _udp(addr: str) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 0))
    return s


def _zc(*socks: socket.socket) -> SimpleNamespace:
    return SimpleNamespace(engine=SimpleNamespace(_listen_socket=socks[0],
                                                  _respond_sockets=list(socks[1:]),
                                                  readers=[], senders=[]))


@pytest.mark.skipif(not hasattr(socket, "SO_BINDTODEVICE"), reason="Linux only")
def test_tied_sockets_hear_only_their_interface_and_lose_what_came_before():
    other = next((n for _, n in socket.if_nameindex() if n != "lo"), None)
    if other is None:
        pytest.skip("no interface besides lo")
    on_lo, on_other = _udp("0.0.0.0"), _udp("0.0.0.0")
    sender = _udp("127.0.0.1")
    try:
        sender.sendto(b"before", ("127.0.0.1", on_lo.getsockname()[1]))
        assert M.tie(_zc(on_lo), "lo") is None
        assert M.tie(_zc(on_other), other) is None
        got = on_lo.getsockopt(socket.SOL_SOCKET, M.SO_BINDTODEVICE, 16)
        assert got.rstrip(b"\0") == b"lo"
        assert on_lo.getsockopt(socket.IPPROTO_IP, M.IP_MULTICAST_ALL) == 0
        on_lo.settimeout(0.5)
        on_other.settimeout(0.05)
        sender.sendto(b"after", ("127.0.0.1", on_lo.getsockname()[1]))
        sender.sendto(b"after", ("127.0.0.1", on_other.getsockname()[1]))
        assert on_lo.recv(100) == b"after"  # "before" was dropped by tie()
        with pytest.raises(TimeoutError):
            on_other.recv(100)  # came in on lo, not on its interface
    finally:
        for s in (on_lo, on_other, sender):
            s.close()


def test_tie_says_why_it_could_not():
    s = _udp("0.0.0.0")
    try:
        assert M.tie(_zc(s), None) == "no interface has this address"
        assert M.tie(SimpleNamespace(), "lo") == "python-zeroconf's sockets were not found"
        assert M.tie(_zc(s), "lo", platform="win32") == "not done on win32"
        if hasattr(socket, "SO_BINDTODEVICE"):
            assert M.tie(_zc(s), "xthnosuch0").startswith(
                "cannot bind its sockets to xthnosuch0: No such device")
    finally:
        s.close()


def test_a_flood_on_one_lan_does_not_hold_up_discovery_on_another():
    async def main():
        found, removed = [], []
        d = _discovery(found, removed)
        started: list[tuple[str, str]] = []
        release = asyncio.Event()

        async def resolve(job):
            started.append(job)
            try:
                await release.wait()
            finally:
                d._resolving.pop(job, None)
                d._pump()

        d._resolve = resolve
        for i in range(2000):  # LAN A's flood fills its queue
            d._on_change("xthA", None, D.SERVICE_TYPE, f"f{i}.{D.SERVICE_TYPE}",
                         ServiceStateChange.Added)
        d._on_change("xthB", None, D.SERVICE_TYPE, SVC, ServiceStateChange.Added)
        await asyncio.sleep(0)
        release.set()
        while ("xthB", SVC) not in started and len(started) < 2100:
            await asyncio.sleep(0)
        # among the first few resolved, not behind LAN A's 1024 waiting services
        assert started.index(("xthB", SVC)) <= 8 + 2, started.index(("xthB", SVC))
        assert len(d._waiting["xthA"]) <= 1024

    asyncio.run(main())
