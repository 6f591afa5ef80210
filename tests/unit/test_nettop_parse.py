"""macOS per-connection byte counters: exotray/agent/hw/nettop.py on recorded `nettop`
output (tests/fixtures/macos/README.md, "Per-connection bytes", says where each came
from). Pure text: runs anywhere, no nettop is started."""

from __future__ import annotations

import socket
from pathlib import Path

from exotray.agent.hw import nettop
from exotray.agent.hw.nettop import Endpoint

FIX = Path(__file__).parent.parent / "fixtures" / "macos"
#: `nettop -m tcp -p 0 -L 1 -n -t loopback` (OrbStack): header, kernel_task, its connection
ORBSTACK = (FIX / "nettop_m_tcp_p0_L1_n_loopback_orbstack.txt").read_text()
#: `nettop -L 0` (SANS ISC diary 30160): firefox and its connection, no header shown
ISC = (FIX / "nettop_L0_firefox_isc-diary30160.txt").read_text()
#: `nettop -x -L 0 -s 1 -J interface,state,bytes_in,bytes_out` (agentmon): 2.5 samples
AGENTMON = (FIX / "nettop_x_L0_s1_J_agentmon_pty.txt").read_text()


def _v4(text: str) -> bytes:
    return socket.inet_pton(socket.AF_INET, text)


def test_default_columns_one_sample_one_connection():
    (sample,) = nettop.parse(ORBSTACK)
    (f,) = sample
    assert (f.process, f.pid, f.proto) == ("kernel_task", 0, "tcp4")
    assert f.local == Endpoint("127.0.0.1", 57970)
    assert f.remote == Endpoint("127.0.0.1", 57969)
    assert (f.interface, f.state) == ("lo0", "Established")
    assert (f.bytes_in, f.bytes_out) == (322736, 229260)
    assert f.at == 18 * 3600 + 21 * 60 + 35.556534  # (its own `time`, not its process row's)


def test_a_time_of_day_or_nothing():
    assert nettop.clock("00:00:00.000001") == 0.000001
    assert nettop.clock("23:59:59.5") == 86399.5
    for bad in (None, "", "12:49", "25:00:00.0", "12:60:00.0", "a:b:c"):
        assert nettop.clock(bad) is None
    # -J without `time`: no time
    assert all(f.at is None for f in nettop.parse(AGENTMON)[0])


def test_rows_without_a_header_need_the_commands_header():
    assert nettop.parse(ISC) == []  # (no header: not a sample)
    header = ORBSTACK.splitlines()[0]  # the default columns, as `nettop -L` prints them
    assert len(ISC.splitlines()[1].split(",")) == len(header.split(","))
    (sample,) = nettop.parse(ISC, header=header)
    (f,) = sample
    assert (f.process, f.pid, f.interface, f.state) == ("firefox", 5356, "en7", "Established")
    assert f.local == Endpoint("192.168.254.212", 52429)
    # without -n the remote is a name: kept as printed, but it is not an address
    assert f.remote == Endpoint("55.65.117.34.bc.googleusercontent.com", 443)
    assert (f.bytes_in, f.bytes_out) == (5427, 1386)
    assert nettop.packed(f.local) == _v4("192.168.254.212")
    assert nettop.packed(f.remote) is None
    assert list(nettop.conns(sample)) == []


def test_a_stream_of_samples_joined_midway():
    samples = nettop.parse(AGENTMON)
    assert [len(s) for s in samples] == [12, 3, 0]  # the last sample cut short
    # the connection row before the first header belongs to no sample
    assert all(f.local != Endpoint("192.0.2.118", 50000) for s in samples for f in s)
    # a pty ends its lines with \r\n
    assert nettop.parse(AGENTMON.replace("\n", "\r\n")) == samples


def test_connections_follow_their_process_row():
    first = nettop.parse(AGENTMON)[0]
    owners = {(f.process, f.pid) for f in first}
    assert owners == {("launchd", 1), ("apsd", 404), ("mDNSResponder", 450),
                      ("dnsmasq", 586), ("cloudd", 659), ("claude", 22602), ("node", 35091)}
    assert [f.name for f in first if f.pid == 22602] == [
        "tcp4 192.0.2.118:52933<->203.0.113.10:443",
        "tcp4 192.0.2.118:54987<->host.example.com:443"]


def test_process_names_with_spaces_dots_and_parentheses():
    names = [line.split(",")[0] for line in AGENTMON.splitlines()
             if "<->" not in line and not line.startswith(",")]
    got = {nettop.split_process(n) for n in names}
    assert {("Google Chrome H", 1272), ("com.docker.back", 13476),
            ("Codex (Service)", 2409), ("launchd", 1)} <= got


def test_ipv6_endpoints_put_the_port_after_a_dot():
    first = nettop.parse(AGENTMON)[0]
    (quic,) = [f for f in first if f.proto == "quic6"]
    assert quic.local == Endpoint("2001:db8:1540::4ad7", 60979)
    assert quic.remote == Endpoint("2001:db8:a41:880::13", 443)
    assert (quic.state, quic.bytes_in, quic.bytes_out) == (None, 5878, 6788)
    dns = [f for f in first if f.pid == 586]
    assert {f.local for f in dns} == {Endpoint("fe80::1%lo0", 53)}
    assert nettop.packed(dns[0].local) == socket.inet_pton(socket.AF_INET6, "fe80::1")


def test_listening_and_wildcard_rows_have_no_counts_or_addresses():
    first = nettop.parse(AGENTMON)[0]
    listen = [f for f in first if f.state == "Listen"]
    assert len(listen) == 4
    assert all(f.bytes_in is None and f.bytes_out is None for f in listen)
    assert all(f.remote == Endpoint(None, None) for f in listen)
    (v4,) = [f for f in listen if f.name == "tcp4 *:5900<->*:*"]
    assert (v4.local, v4.interface) == (Endpoint(None, 5900), None)


def test_tcp_connections_as_the_flow_reader_takes_them():
    first, second, _ = nettop.parse(AGENTMON)
    c1, c2 = list(nettop.conns(first)), list(nettop.conns(second))
    # numeric TCP only: not the listeners, UDP, QUIC, nor a remote given as a name
    assert [(c.remote, c.rx, c.tx) for c in c1] == [
        (_v4("198.51.100.11"), 3177530, 7189392), (_v4("203.0.113.10"), 12483, 6976)]
    assert [(c.remote, c.rx, c.tx) for c in c2] == [
        (_v4("198.51.100.11"), 3177600, 7189500), (_v4("203.0.113.10"), 12483, 6976),
        (_v4("203.0.113.10"), 272924, 631936)]
    assert all(c.local == _v4("192.0.2.118") for c in c1 + c2)
    # a connection keeps its number from one sample to the next; two connections differ
    assert [c.cookie for c in c1] == [c.cookie for c in c2[:2]]
    assert len({c.cookie for c in c2}) == 3
    # the loopback one is numeric only with -n (`localhost` here)
    assert not any(c.local == _v4("127.0.0.1") for c in c1)
