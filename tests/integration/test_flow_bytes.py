"""Each link's own TCP bytes from the kernel's connection counters (issue 30, hw/flows.py,
hw/sockdiag.py): real connections on loopback, read with real netlink sockets."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import TcpServer as Server
from helpers import until

from exotray.agent.hw import sockdiag
from exotray.agent.hw.flows import FlowBytes, FlowLink, Flows

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="socket diagnostics are Linux's")

MB = 1_000_000
LOCAL = "127.0.0.1"


def _peer_addresses(n: int) -> list[str]:
    """Loopback addresses no other test uses (all of 127/8 is ours on Linux)."""
    base = random.Random().randrange(2, 250)
    return [f"127.{base}.{random.randrange(1, 250)}.{i + 1}" for i in range(n)]


def _upload(to: tuple[str, int], n: int) -> None:
    """`n` bytes on a connection of its own, closed once the server has them all."""
    with socket.create_connection(to, timeout=10, source_address=(LOCAL, 0)) as c:
        c.sendall(b"x" * n)
        c.shutdown(socket.SHUT_WR)
        while c.recv(1 << 16):
            pass


def _download(frm: tuple[str, int]) -> int:
    got = 0
    with socket.create_connection(frm, timeout=10, source_address=(LOCAL, 0)) as c:
        c.shutdown(socket.SHUT_WR)
        while (b := c.recv(1 << 16)):
            got += len(b)
    return got


def _read(reader: FlowBytes, wanted: set[bytes], pair: tuple[bytes, bytes], i: int) -> int:
    reader.read(frozenset(wanted), 0.0)
    return reader.totals.get(pair, [0, 0])[i]


@pytest.fixture
def servers():
    made: list[Server] = []

    def make(address: str, send: int = 0) -> Server:
        made.append(Server(address, send))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_connections_that_closed_between_reads_are_counted(servers):
    """20 uploads of 1 MB to one peer and 20 downloads of 1 MB from another, each on its
    own connection opened and closed between two reads: within 5 %."""
    up_addr, down_addr = _peer_addresses(2)
    up, down = servers(up_addr), servers(down_addr, send=MB)
    me, a, b = (sockdiag.pack_address(x) for x in (LOCAL, up_addr, down_addr))
    reader = FlowBytes()
    try:
        reader.read(frozenset({a, b}), 0.0)  # (where the counting starts)
        for _ in range(20):
            _upload(up.address, MB)
            assert _download(down.address) == MB
        assert up.received == 20 * MB
        # the kernel sends a destroy message from a work queue, a moment after the close:
        # a late one is counted at the next read
        until(lambda: _read(reader, {a, b}, (me, a), 1) >= 0.95 * 20 * MB
               and _read(reader, {a, b}, (me, b), 0) >= 0.95 * 20 * MB)
        tx = reader.totals[(me, a)][1]
        rx = reader.totals[(me, b)][0]
        assert abs(tx - 20 * MB) <= 0.05 * 20 * MB, tx
        assert abs(rx - 20 * MB) <= 0.05 * 20 * MB, rx
        assert reader.totals[(me, a)][0] < 0.01 * MB  # (what came back: FINs and no data)
    finally:
        reader.close()


def test_an_open_connection_is_counted_at_each_read_and_its_past_is_not(servers):
    """A connection that carried 2 MB before its address was wanted adds nothing then;
    what it carries after, read by read, is counted once."""
    (addr,) = _peer_addresses(1)
    srv = servers(addr)
    reader = FlowBytes()
    key = (sockdiag.pack_address(LOCAL), sockdiag.pack_address(addr))
    c = socket.create_connection(srv.address, timeout=10, source_address=(LOCAL, 0))
    try:
        c.sendall(b"x" * (2 * MB))
        until(lambda: srv.received == 2 * MB)  # (all of it acknowledged: its past)
        reader.read(frozenset({key[1]}), 0.0)
        assert key not in reader.totals
        sent = 0
        for _ in range(3):
            c.sendall(b"x" * MB)
            sent += MB
            reader.read(frozenset({key[1]}), 0.0)
        c.close()  # (its last bytes in flight: the destroy message has them)
        srv.close()
        until(lambda: _read(reader, {key[1]}, key, 1) >= 0.95 * sent)
        assert abs(reader.totals[key][1] - sent) <= 0.05 * sent
    finally:
        c.close()
        reader.close()


def _links(lo: str, peers: list[str]) -> list[FlowLink]:
    return [FlowLink(f"link-{i}", lo, (LOCAL,), p) for i, p in enumerate(peers)]


def test_flows_give_each_link_of_a_shared_carrier_its_own_rate(servers):
    """Two links through one carrier: each link's rate is its own bytes over the time
    between two reads (the clock is the caller's), not the other's."""
    a, b = _peer_addresses(2)
    sa, sb = servers(a), servers(b)
    flows, witness = Flows(), FlowBytes()
    links = _links("lo", [a, b])
    me, pa, pb = (sockdiag.pack_address(x) for x in (LOCAL, a, b))
    try:
        flows.tick(100.0, links, lambda _: True)   # counting starts
        witness.read(frozenset({pa, pb}), 0.0)
        assert flows.rates == {}
        flows.tick(101.0, links, lambda _: True)   # first interval: nothing sent
        assert flows.rate("link-0").tx_bytes_per_s < 0.01 * MB
        assert flows.source("link-0") == "sockets"
        for _ in range(4):
            _upload(sa.address, MB)
        _upload(sb.address, MB)
        # the destroy messages, sent to every listener at once, have come to a second
        # reader: they wait for the next tick's in the first one's socket
        until(lambda: _read(witness, {pa, pb}, (me, pa), 1) >= 4 * MB
               and _read(witness, {pa, pb}, (me, pb), 1) >= MB)
        flows.tick(103.0, links, lambda _: True)   # 2 s later
        assert abs(flows.rate("link-0").tx_bytes_per_s - 2 * MB) <= 0.05 * 2 * MB
        assert abs(flows.rate("link-1").tx_bytes_per_s - MB / 2) <= 0.05 * MB / 2
        assert flows.rate("link-0").dt == 2.0
    finally:
        flows.stop()
        witness.close()


def test_nothing_is_read_without_a_shared_carrier_that_carries_traffic():
    """One link on a carrier, or a quiet carrier: no socket opened, no rate; a carrier
    quiet for longer than the hold closes them again."""
    a, b = _peer_addresses(2)
    flows = Flows()
    source = flows.reader.source
    try:
        flows.tick(0.0, _links("lo", [a]), lambda _: True)
        assert not source.is_open and flows.rates == {}
        flows.tick(1.0, _links("lo", [a, b]), lambda _: False)
        assert not source.is_open
        flows.tick(2.0, _links("lo", [a, b]), lambda _: True)
        assert source.is_open
        flows.tick(3.0, _links("lo", [a, b]), lambda _: False)  # within the hold
        assert source.is_open and flows.source("link-1") == "sockets"
        flows.tick(40.0, _links("lo", [a, b]), lambda _: False)
        assert not source.is_open and flows.rates == {} and flows.source("link-1") is None
    finally:
        flows.stop()


@pytest.mark.parametrize("text, packed", [
    ("10.213.0.2", bytes([10, 213, 0, 2])),
    ("::ffff:10.213.0.2", bytes([10, 213, 0, 2])),
    ("fe80::1%en0", socket.inet_pton(socket.AF_INET6, "fe80::1")),
    ("not an address", None),
])
def test_addresses_are_packed_as_the_kernel_gives_them(text, packed):
    assert sockdiag.pack_address(text) == packed


@pytest.mark.skipif(not socket.has_dualstack_ipv6(), reason="no IPv6 on this host")
def test_an_ipv4_peer_of_a_dual_stack_listener_is_counted():
    """A server on `::` (iperf3's default, many others') takes an IPv4 peer's connection as
    an IPv6 socket with an IPv4-mapped address: its bytes are that peer's, though every
    wanted address is IPv4 (an IPv4-only dump would never see them)."""
    (peer,) = _peer_addresses(1)
    srv = socket.create_server(("::", 0), family=socket.AF_INET6, dualstack_ipv6=True)
    port = srv.getsockname()[1]
    me, pa = sockdiag.pack_address(LOCAL), sockdiag.pack_address(peer)
    reader = FlowBytes()
    c = socket.create_connection((LOCAL, port), timeout=10, source_address=(peer, 0))
    s, _ = srv.accept()
    try:
        reader.read(frozenset({pa}), 0.0)  # (where the counting starts)
        c.sendall(b"x" * (2 * MB))
        got = 0
        s.settimeout(10)
        while got < 2 * MB:
            got += len(s.recv(1 << 16))
        reader.read(frozenset({pa}), 0.0)
        assert abs(reader.totals[(me, pa)][0] - 2 * MB) <= 0.05 * 2 * MB
    finally:
        for x in (c, s, srv):
            x.close()
        reader.close()


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "linux"


def test_the_namespaces_tcp_opens_are_read_from_its_counters():
    """ActiveOpens + PassiveOpens - AttemptFails of a recorded /proc/net/snmp; None
    without them."""
    text = (FIXTURES / "proc_net_snmp.txt").read_text()
    assert sockdiag.tcp_opens(text) == 268026 + 122564 - 101704
    assert sockdiag.tcp_opens("Ip: Forwarding\nIp: 2\n") is None
    assert sockdiag.tcp_opens("Tcp: ActiveOpens\nTcp: many\n") is None


def test_a_known_connection_is_found_again_by_its_key(servers):
    """A lookup by the key a dump gave finds the same connection with its counters now;
    once it is closed, it finds none (TIME_WAIT holds no counters; its destroy message
    has the last ones)."""
    (addr,) = _peer_addresses(1)
    srv = servers(addr)
    pa = sockdiag.pack_address(addr)
    diag = sockdiag.SockDiag()
    diag.open()
    c = socket.create_connection(srv.address, timeout=10, source_address=(LOCAL, 0))
    try:
        (conn,) = diag.connections(frozenset({pa}))
        c.sendall(b"x" * MB)
        until(lambda: srv.received == MB)
        (again,) = diag.lookup([conn.key])
        assert (again.cookie, again.local, again.remote) == (conn.cookie, conn.local, pa)
        assert abs(again.tx - conn.tx - MB) <= 0.01 * MB
        many = diag.lookup([conn.key] * 300)  # (more than one write's worth)
        assert len(many) == 300 and {m.cookie for m in many} == {conn.cookie}
        c.close()
        until(lambda: not diag.lookup([conn.key]))
    finally:
        c.close()
        diag.close()


_NETNS_TOOLS = ("unshare", "ip")


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace of its own needs root")
@pytest.mark.skipif(not all(shutil.which(t) for t in _NETNS_TOOLS),
                    reason="needs unshare (Debian package util-linux) and ip (iproute2)")
def test_reads_walk_the_table_only_after_a_connection_opened():
    """In a namespace of its own (no other test's connections): a read walks the kernel's
    table only when a connection was established since the last walk (and once more
    after), or REWALK_S after the last walk; else it looks the known ones up. A refused
    connect() is not a connection. Every byte is counted either way, a new connection's
    from its first one."""
    out = subprocess.run(
        ["unshare", "--net", "sh", "-c",
         f"ip link set lo up && exec {sys.executable} {__file__} --in-own-namespace"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[1]), *sys.path])})
    assert out.returncode == 0, out.stderr
    steps = json.loads(out.stdout)
    # (dumps, lookups, MB sent to the peer as counted) after each step
    assert steps["first read"][:2] == [1, 0]
    assert steps["second read: once more"][:2] == [2, 0]
    assert steps["1 MB on the open connection"][:2] == [2, 1]
    assert abs(steps["1 MB on the open connection"][2] - 1) <= 0.01
    assert steps["a new connection carried 2 MB"][:2] == [3, 1]
    assert abs(steps["a new connection carried 2 MB"][2] - 3) <= 0.01
    assert steps["next read: once more"][:2] == [4, 1]
    assert steps["1 MB on each, both looked up"][:2] == [4, 2]
    assert abs(steps["1 MB on each, both looked up"][2] - 5) <= 0.01
    assert steps["a connect() refused"][:2] == [4, 3]
    assert steps["30 s on: walked again"][:2] == [5, 3]


def _in_own_namespace() -> None:
    """The scenario of the test above, run by it in a namespace where only it connects."""
    srv = Server("127.0.0.2")
    me, pa = sockdiag.pack_address(LOCAL), sockdiag.pack_address("127.0.0.2")
    reader, steps = FlowBytes(), {}

    def step(name: str, now: float = 0.0) -> None:
        reader.read(frozenset({pa}), now)
        sent = reader.totals.get((me, pa), [0, 0])[1] / MB
        steps[name] = [reader.dumps, reader.lookups, round(sent, 3)]

    def send(c: socket.socket, n: int) -> None:
        was = srv.received
        c.sendall(b"x" * n)
        until(lambda: srv.received == was + n)

    c1 = socket.create_connection(srv.address, timeout=10, source_address=(LOCAL, 0))
    step("first read")
    step("second read: once more")
    send(c1, MB)
    step("1 MB on the open connection")
    c2 = socket.create_connection(srv.address, timeout=10, source_address=(LOCAL, 0))
    send(c2, 2 * MB)
    step("a new connection carried 2 MB")
    step("next read: once more")
    send(c1, MB)
    send(c2, MB)
    step("1 MB on each, both looked up")
    with socket.socket() as refused:  # (nobody listens there: not established)
        assert refused.connect_ex(("127.0.0.3", 9)) != 0
    step("a connect() refused")
    step("30 s on: walked again", now=30.0)
    print(json.dumps(steps))
    for x in (c1, c2):
        x.close()
    srv.close()
    reader.close()


if __name__ == "__main__" and sys.argv[1:] == ["--in-own-namespace"]:
    _in_own_namespace()


def test_closing_messages_lost_to_a_full_buffer_are_logged(servers, monkeypatch, caplog):
    """The kernel's closing messages wait in a buffer until the next read; when more
    connections close between two reads than it holds, their last bytes are lost: said
    in the log, once and then at most once a minute with a count, not silently."""
    monkeypatch.setattr(sockdiag, "DESTROY_RCVBUF", 1)  # (the kernel's least: ~2 KiB)
    caplog.set_level("WARNING", "exotray.agent.hw.monitor")
    a, b = _peer_addresses(2)
    sa = servers(a)
    servers(b)
    flows = Flows()
    links = _links("lo", [a, b])
    try:
        flows.tick(0.0, links, lambda _: True)
        for _ in range(40):
            _upload(sa.address, 1000)
        until(lambda: flows.tick(1.0, links, lambda _: True)
               or flows.reader.source.overflows > 0)
        assert caplog.text.count("overflowed") == 1
        assert "not counted" in caplog.text
        lost = flows.reader.source.overflows

        def more(now: float) -> bool:  # (more overflows, read at `now`)
            for _ in range(40):
                _upload(sa.address, 1000)
            flows.tick(now, links, lambda _: True)
            return flows.reader.source.overflows > lost

        until(lambda: more(2.0))  # within the minute: not said again
        assert caplog.text.count("overflowed") == 1
        lost = flows.reader.source.overflows
        until(lambda: more(100.0))  # a minute on: said again, with the count between
        assert caplog.text.count("overflowed") == 2 and "more since last report" in caplog.text
    finally:
        flows.stop()


def test_a_connection_reset_and_closed_long_after_is_not_counted_twice():
    """Reset by its peer, a connection leaves the kernel's table at once, but its socket
    (and its destroy message) waits for its owner's close(): closed long after, the
    message is that of a connection already counted, not a new one."""
    import struct

    (addr,) = _peer_addresses(1)
    srv = socket.create_server((addr, 0))
    me, pa = sockdiag.pack_address(LOCAL), sockdiag.pack_address(addr)
    c = socket.create_connection(srv.getsockname(), timeout=10, source_address=(LOCAL, 0))
    s, _ = srv.accept()
    reader = FlowBytes()
    try:
        reader.read(frozenset({pa}), 0.0)  # (where the counting starts)
        s.sendall(b"x" * MB)
        got = 0
        while got < MB:
            got += len(c.recv(1 << 20))
        until(lambda: _read(reader, {pa}, (me, pa), 0) == MB)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # (a reset: c's connection leaves the table, its socket stays open)
        for now in (2.0, 30.0, 100.0):
            reader.read(frozenset({pa}), now)
        c.close()  # ... until its owner closes it, 100 s on
        for now in (101.0, 102.0):
            threading.Event().wait(0.1)
            reader.read(frozenset({pa}), now)
        assert reader.totals[(me, pa)][0] == MB
    finally:
        for x in (c, s, srv):
            x.close()
        reader.close()


def test_a_lookup_answered_gone_or_stale_is_no_connection_and_another_error_fails():
    """ENOENT (gone), and ESTALE (a kernel before 4.5: the cookie no longer matches), are
    answers with no connection; any other error is the reader's failure."""
    import errno
    import struct

    def error(code: int) -> bytes:
        body = struct.pack("=i", -code) + bytes(16)  # (the error, then the request's header)
        return sockdiag._HDR.pack(16 + len(body), sockdiag.NLMSG_ERROR, 0, 1, 0) + body

    assert sockdiag.parse_replies(error(errno.ENOENT) + error(errno.ESTALE)) == ([], 2)
    with pytest.raises(OSError, match="EPERM"):
        sockdiag.parse_replies(error(errno.EPERM))


def test_a_remote_no_longer_wanted_is_forgotten_with_its_connections(servers):
    """A peer whose carrier is no longer read leaves nothing behind: its connections are
    not carried, read after read, for the hour a missing one is kept."""
    a, b = _peer_addresses(2)
    sb = servers(b)
    pa, pb = sockdiag.pack_address(a), sockdiag.pack_address(b)
    c = socket.create_connection(sb.address, timeout=10, source_address=(LOCAL, 0))
    reader = FlowBytes()
    try:
        reader.read(frozenset({pa, pb}), 0.0)
        assert any(x.remote == pb for x in reader._seen.values())
        reader.read(frozenset({pa}), 1.0)
        assert not any(x.remote == pb for x in reader._seen.values())
        assert not reader._missing
    finally:
        c.close()
        reader.close()


def test_the_kernel_fills_in_only_the_wanted_peers_connections(servers):
    """The dump's filter runs in the kernel: another peer's connection, open at the same
    time, is not in the answer at all (read without the Python-side filter)."""
    a, b = _peer_addresses(2)
    sa, sb = servers(a), servers(b)
    pa, pb = sockdiag.pack_address(a), sockdiag.pack_address(b)
    ca = socket.create_connection(sa.address, timeout=10, source_address=(LOCAL, 0))
    cb = socket.create_connection(sb.address, timeout=10, source_address=(LOCAL, 0))
    diag = sockdiag.SockDiag()
    diag.open()
    try:
        diag._dump.send(sockdiag.dump_request(None, 1, frozenset({pa})))
        buf, got = bytearray(1 << 16), []
        while True:
            n = diag._dump.recv_into(buf)
            conns, done = sockdiag.parse(memoryview(buf)[:n])  # (no `wanted`: all it says)
            got += conns
            if done:
                break
        assert {c.remote for c in got} == {pa}
        assert [c.remote for c in diag.connections(frozenset({pb}))] == [pb]  # (it is open)
    finally:
        for x in (ca, cb):
            x.close()
        diag.close()
