"""The probe datagram: a fixed 40-byte format, and its HMAC tag with a cluster key.

    magic "xtP" + version 1 | type (1 request, 2 reply; 3, 4: path MTU, probe/mtu.py) |
    flags | reserved
    seq (u64) | t1: sender's send time | t2: reflector's receive time | t3: reflector's
    send time   (signed 64-bit nanoseconds of CLOCK_REALTIME)

And the control messages around it: IP_PKTINFO, which sends a datagram out of one
interface or says which one it arrived on, and the kernel's receive timestamp. Pure
encoding and decoding; the socket is probe/udp.py.
"""

from __future__ import annotations

import hashlib
import hmac
import socket
import struct
import sys
from dataclasses import dataclass

MAGIC = b"xtP\x01"
REQUEST = 1
REPLY = 2
#: a request padded to a frame size, and its answer (probe/mtu.py)
MTU_REQUEST = 3
MTU_REPLY = 4
_FMT = struct.Struct("!4sBBHQqqq")
PROBE_LEN = _FMT.size  # 40
#: with a cluster key, each probe carries a truncated HMAC-SHA256 of its 40 bytes
TAG_LEN = 16


@dataclass(frozen=True)
class Probe:
    type: int
    seq: int
    t1: int
    t2: int
    t3: int


class ProbeError(ValueError):
    pass


def tag(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()[:TAG_LEN]


def seal(key: bytes | None, body: bytes) -> bytes:
    return body + tag(key, body) if key else body


def unseal(key: bytes | None, data: bytes) -> bytes:
    """The probe body of a datagram, checking its tag when a key is set."""
    if not key:
        return data
    if len(data) != PROBE_LEN + TAG_LEN:
        raise ProbeError("size")
    body, got = data[:PROBE_LEN], data[PROBE_LEN:]
    if not hmac.compare_digest(got, tag(key, body)):
        raise ProbeError("auth")
    return body


def encode(p: Probe) -> bytes:
    return _FMT.pack(MAGIC, p.type, 0, 0, p.seq, p.t1, p.t2, p.t3)


def decode(data: bytes) -> Probe:
    """Parse a datagram; raise ProbeError(reason) for anything that is not a probe."""
    if len(data) != PROBE_LEN:
        raise ProbeError("size")
    magic, type_, _flags, _res, seq, t1, t2, t3 = _FMT.unpack(data)
    if magic != MAGIC:
        raise ProbeError("magic")
    if type_ not in (REQUEST, REPLY, MTU_REQUEST, MTU_REPLY):
        raise ProbeError("type")
    return Probe(type_, seq, t1, t2, t3)


# Choosing the outgoing interface per datagram (issue 16.3): sendmsg with an IP_PKTINFO
# control message, struct in_pktinfo {int ipi_ifindex; struct in_addr ipi_spec_dst;
# struct in_addr ipi_addr} (12 bytes, the same layout on both kernels). Linux numbers it
# 8; xnu 26 (IP_PKTINFO, also IP_RECVPKTINFO), honoured on UDP sendmsg by
# udp_check_pktinfo, where a non-zero ipi_ifindex takes precedence over ipi_spec_dst.
# Received datagrams carry the same message (after setsockopt IP_PKTINFO / IP_RECVPKTINFO
# = 1): the interface a probe arrived on, so the reflector can answer through it.
IP_PKTINFO_LINUX = 8
IP_PKTINFO_DARWIN = 26
_PKTINFO = struct.Struct("=I4s4s")


def ip_pktinfo_type(platform: str = sys.platform) -> int | None:
    if platform.startswith("linux"):
        return IP_PKTINFO_LINUX
    if platform == "darwin":
        return IP_PKTINFO_DARWIN
    return None


def pktinfo_cmsg(ifindex: int, spec_dst: str = "0.0.0.0",
                 platform: str = sys.platform) -> tuple[int, int, bytes]:
    """The (level, type, data) control message that sends a datagram out of interface
    `ifindex` (from `spec_dst`, when not 0.0.0.0 and the kernel uses it)."""
    type_ = ip_pktinfo_type(platform)
    if type_ is None:
        raise OSError(f"no IP_PKTINFO on {platform}")
    data = _PKTINFO.pack(ifindex, socket.inet_aton(spec_dst), b"\0\0\0\0")
    return (socket.IPPROTO_IP, type_, data)


def parse_pktinfo(anc: list[tuple[int, int, bytes]],
                  platform: str = sys.platform) -> tuple[int, str] | None:
    """(interface index, local address) of a received datagram's IP_PKTINFO, or None."""
    type_ = ip_pktinfo_type(platform)
    for level, t, cdata in anc:
        if level == socket.IPPROTO_IP and t == type_ and len(cdata) >= _PKTINFO.size:
            ifindex, spec_dst, addr = _PKTINFO.unpack(cdata[:_PKTINFO.size])
            # Linux fills ipi_spec_dst (the local address the datagram was sent to); xnu
            # fills only ipi_addr (the header's destination), which is the same thing.
            return ifindex, socket.inet_ntoa(spec_dst if spec_dst != bytes(4) else addr)
    return None


# Kernel receive timestamps. The option that asks for them and the type of the control
# message that carries them are the same number on Linux (SO_TIMESTAMPNS = SCM_TIMESTAMPNS
# = 35, a struct timespec), but not on macOS: SO_TIMESTAMP is 0x400 and the message comes
# as SCM_TIMESTAMP = 0x02 (xnu bsd/sys/socket.h), a struct timeval. Match the type.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; Python lacks the constant
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
SO_TIMESTAMP_DARWIN = 0x0400
SCM_TIMESTAMP_DARWIN = 0x02
#: SOL_SOCKET as each kernel numbers it (Linux 1, xnu 0xffff)
SOL_SOCKET_LINUX = 1
SOL_SOCKET_DARWIN = 0xFFFF


def kernel_rx_ns(anc: list[tuple[int, int, bytes]], mode: str,
                 sol_socket: int | None = None) -> int | None:
    """The kernel's receive time (ns of CLOCK_REALTIME) in recvmsg's control messages, or
    None. mode "ns": Linux SCM_TIMESTAMPNS (struct timespec: two 64-bit fields); "us":
    macOS SCM_TIMESTAMP (struct timeval: 64-bit seconds, 32-bit microseconds, padding)."""
    level_want = socket.SOL_SOCKET if sol_socket is None else sol_socket
    for level, type_, cdata in anc:
        if level != level_want:
            continue
        try:
            if mode == "ns" and type_ == SCM_TIMESTAMPNS and len(cdata) >= 16:
                sec, nsec = struct.unpack("qq", cdata[:16])
                return sec * 1_000_000_000 + nsec
            if mode == "us" and type_ == SCM_TIMESTAMP_DARWIN and len(cdata) >= 12:
                sec, usec = struct.unpack("qi", cdata[:12])
                return sec * 1_000_000_000 + usec * 1000
        except struct.error:
            pass
    return None
