"""Which interface reaches an on-link peer (issue 16.3), and the bytes that choose the
outgoing interface per datagram. No sockets: interface tables in, decisions out."""

from __future__ import annotations

import socket
import struct

import pytest

from exotray.agent.base.bound_http import bind_options
from exotray.agent.hw import onlink
from exotray.agent.hw.sampler import NicInfo
from exotray.agent.probe import udp as P


def nic(name: str, *nets: str, up: bool = True, loopback: bool = False) -> NicInfo:
    networks = tuple((n.split("/")[0], int(n.split("/")[1])) for n in nets)
    return NicInfo(name=name, up=up, speed_mbit=None,
                   addresses=tuple(a for a, _ in networks), networks=networks,
                   loopback=loopback)


def table(*nics: NicInfo) -> dict[str, NicInfo]:
    return {n.name: n for n in nics}


LO = nic("lo0", "127.0.0.1/8", loopback=True)
# A Mac: Wi-Fi on a home LAN, the Thunderbolt Bridge self-assigned 169.254/16.
MAC = table(LO, nic("en0", "192.168.1.20/24"), nic("bridge0", "169.254.12.7/16"))
# A Mac whose Wi-Fi also holds a link-local address (no DHCP answer there).
MAC_BOTH = table(LO, nic("en0", "169.254.200.1/16"), nic("bridge0", "169.254.12.7/16"))
# Linux: two interfaces configured in the same subnet.
LINUX_TWO = table(nic("lo", "127.0.0.1/8", loopback=True),
                  nic("eth0", "10.213.1.1/16"), nic("eth1", "10.213.2.1/16"))


def attribute(peer: str, nics: dict[str, NicInfo], routed: str | None) -> onlink.Path:
    path = onlink.Path()
    path.update(onlink.candidates(peer, nics), routed)
    return path


@pytest.mark.parametrize(
    ("nics", "peer", "routed", "cands", "interface", "searching"),
    [
        # a 169.254 peer, only bridge0 in 169.254/16, while the route says en0
        pytest.param(MAC, "169.254.40.2", "en0", ["bridge0"], "bridge0", False,
                     id="link-local-only-bridge0-route-says-en0"),
        # exactly one on-link interface, and the route agrees
        pytest.param(MAC, "192.168.1.30", "en0", ["en0"], "en0", False, id="one-agrees"),
        # several: unknown until a probe through one of them is answered
        pytest.param(MAC_BOTH, "169.254.40.2", "en0", ["bridge0", "en0"], None, True,
                     id="two-link-local"),
        pytest.param(LINUX_TWO, "10.213.2.3", "eth0", ["eth0", "eth1"], None, True,
                     id="two-same-subnet"),
        # none: a routed peer, the route lookup decides
        pytest.param(MAC, "8.8.8.8", "en0", [], "en0", False, id="routed"),
        pytest.param(MAC, "10.0.0.5", None, [], None, False, id="no-route"),
    ],
)
def test_candidate_choice(nics, peer, routed, cands, interface, searching):
    assert onlink.candidates(peer, nics) == cands
    path = attribute(peer, nics, routed)
    assert path.interface == interface
    assert path.searching is searching
    assert path.onlink is bool(cands)


def test_down_loopback_own_and_host_routes_are_not_candidates():
    nics = table(nic("en0", "192.168.1.20/24", up=False), nic("lo", "127.0.0.1/8",
                 loopback=True), nic("utun3", "100.64.0.2/32"), nic("en1", "10.0.0.1/24"))
    assert onlink.candidates("192.168.1.30", nics) == []     # en0 is down
    assert onlink.candidates("127.0.0.2", nics) == []        # loopback: the routes decide
    assert onlink.candidates("100.64.0.2", nics) == []       # our own address
    assert onlink.candidates("100.64.0.9", nics) == []       # a /32 has nothing on-link
    assert onlink.candidates("10.0.0.1", nics) == []         # our own address again
    assert onlink.candidates("fe80::1", nics) == []          # IPv4 only
    assert onlink.candidates("10.0.0.77", nics) == ["en1"]


def test_search_tries_the_routed_interface_first_then_pins_the_one_that_answers():
    path = attribute("10.213.2.3", LINUX_TWO, "eth0")
    assert path.candidates == ("eth0", "eth1")
    sent = []
    for t in range(7):
        via = path.via()
        path.sent(float(t), via)
        sent.append(via)
    assert sent == ["eth0"] * 3 + ["eth1"] * 3 + ["eth0"]
    assert path.interface is None              # unknown until someone answers
    assert path.replied(1.0) == "eth0"         # the route table was right after all


def test_a_reply_pins_the_interface_its_probe_left_through():
    path = attribute("10.213.2.3", LINUX_TWO, "eth0")
    for t in range(5):
        path.sent(float(t), path.via())
    assert path.replied(99.0) is None          # no such probe: nothing learnt
    assert path.replied(3.0) == "eth1"         # the 4th probe left through eth1
    assert (path.pinned, path.interface, path.searching) == ("eth1", "eth1", False)
    assert [path.via() for _ in range(5)] == ["eth1"] * 5
    assert path.replied(0.0) is None           # late answers change nothing any more


def test_a_late_reply_from_an_earlier_candidate_still_pins_that_one():
    path = attribute("169.254.40.2", MAC_BOTH, "en0")
    assert path.candidates == ("en0", "bridge0")
    for t in range(5):
        path.sent(float(t), path.via())
    assert path.replied(4.0) == "bridge0"


def test_recheck_keeps_the_old_answer_shown_and_tries_it_first():
    path = attribute("10.213.2.3", LINUX_TWO, "eth0")
    for t in range(4):
        path.sent(float(t), path.via())
    path.replied(3.0)
    path.recheck()  # the link went down, or addresses changed
    assert path.searching and path.interface == "eth1"
    assert path.candidates[0] == "eth1"
    path.sent(10.0, path.via())
    assert path.replied(10.0) is None and not path.searching  # same answer, no news
    assert path.interface == "eth1"


def test_candidates_changing_restarts_or_settles_the_choice():
    path = attribute("10.213.2.3", LINUX_TWO, "eth0")
    assert not path.update(["eth1", "eth0"], "eth0")  # same set: nothing to do
    assert path.update(["eth1"], "eth0")               # eth0 lost its address
    assert (path.interface, path.searching, path.via()) == ("eth1", False, "eth1")
    assert path.update([], "eth0")                     # no longer on-link: routed
    assert (path.interface, path.via(), path.onlink) == ("eth0", None, False)
    one = attribute("169.254.40.2", MAC, "en0")
    one.recheck()                                       # one candidate: nothing to search
    assert (one.searching, one.interface) == (False, "bridge0")


def test_other_traffic_is_bound_only_where_the_routes_cannot_be_trusted():
    assert attribute("169.254.40.2", MAC, "en0").overrides_route        # route says en0
    assert not attribute("192.168.1.30", MAC, "en0").overrides_route    # route agrees
    assert not attribute("8.8.8.8", MAC, "en0").overrides_route         # routed peer
    assert attribute("10.213.2.3", LINUX_TWO, "eth0").overrides_route   # ambiguous


def test_reflector_answers_on_link_requesters_through_their_interface():
    assert onlink.reply_through("169.254.40.2", "bridge0", MAC)
    assert not onlink.reply_through("169.254.40.2", "en0", MAC)    # not on-link on en0
    assert not onlink.reply_through("8.8.8.8", "en0", MAC)          # routed requester
    assert not onlink.reply_through("127.0.0.1", "lo0", MAC)        # loopback: as today
    assert not onlink.reply_through("169.254.40.2", None, MAC)      # index unknown


# -- the bytes ----------------------------------------------------------------------
def test_in_pktinfo_linux():
    level, type_, data = P.pktinfo_cmsg(7, platform="linux")
    assert (level, type_) == (socket.IPPROTO_IP, 8) == (0, P.IP_PKTINFO_LINUX)
    assert data == struct.pack("=i", 7) + b"\0\0\0\0" + b"\0\0\0\0"
    assert len(data) == 12
    _, _, data = P.pktinfo_cmsg(3, "10.213.2.1", platform="linux")
    assert data == struct.pack("=i", 3) + bytes([10, 213, 2, 1]) + b"\0\0\0\0"


def test_in_pktinfo_macos():
    level, type_, data = P.pktinfo_cmsg(14, "169.254.12.7", platform="darwin")
    assert (level, type_) == (0, 26)  # IPPROTO_IP, IP_PKTINFO in xnu netinet/in.h
    # struct in_pktinfo {unsigned int ipi_ifindex; in_addr ipi_spec_dst; in_addr ipi_addr}
    assert data == struct.pack("=I", 14) + bytes([169, 254, 12, 7]) + b"\0\0\0\0"
    with pytest.raises(OSError):
        P.pktinfo_cmsg(1, platform="win32")


def test_received_pktinfo_is_parsed_for_the_running_platform():
    data = struct.pack("=I", 5) + bytes([10, 213, 2, 1]) + bytes([10, 213, 2, 1])
    assert P.parse_pktinfo([(0, 8, data)], platform="linux") == (5, "10.213.2.1")
    assert P.parse_pktinfo([(0, 26, data)], platform="darwin") == (5, "10.213.2.1")
    assert P.parse_pktinfo([(0, 26, data)], platform="linux") is None
    assert P.parse_pktinfo([(1, 35, b"x" * 16), (0, 8, data[:8])], platform="linux") is None


def test_fetch_socket_options():
    assert bind_options("bridge0", 14, platform="linux") == [(1, 25, b"bridge0\0")]
    assert bind_options("bridge0", 14, platform="darwin") == [(0, 25, 14)]  # IP_BOUND_IF
    assert bind_options("x", 1, platform="win32") == []


def test_received_pktinfo_on_macos_has_only_ipi_addr():
    """xnu fills ipi_addr (the header's destination) and leaves ipi_spec_dst zero: the
    reply must still leave from the address the request was sent to."""
    data = struct.pack("=I", 7) + b"\0\0\0\0" + bytes([169, 254, 12, 7])
    assert P.parse_pktinfo([(0, 26, data)], platform="darwin") == (7, "169.254.12.7")
