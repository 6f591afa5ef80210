"""Linux: the byte counters of TCP connections, from the kernel's socket diagnostics
(NETLINK_SOCK_DIAG, INET_DIAG with `tcp_info`: `tcpi_bytes_received`, `tcpi_bytes_acked`),
IPv4 and IPv6, without root.

Two netlink sockets: one dumps the connections that are open (or asks for known ones by
their 4-tuple and cookie, a hash lookup each: `lookup`); the other is subscribed to
the kernel's "TCP socket destroyed" groups, whose messages carry the connection's last
`tcp_info`, so the bytes of a connection that opened and closed between two reads are
still counted (hw/flows.py does the sums). The destroy messages wait in that socket's
buffer until the next read: no wake-up of their own.

Why not pyroute2's DiagSocket: it decodes every attribute of every socket in Python — 18
ms and +41 MiB a read of 200 connections on the development machine, against ~1 ms here
(`bench/flow_cost.py`). Only the fields used are read, with `struct`.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
#: inet_diag's first request (struct inet_diag_req): the kernel dumps TCP sockets of every
#: family in one walk of its connection table (net/ipv4/inet_diag.c,
#: inet_diag_dump_compat: sdiag_family = AF_UNSPEC), as `ss` asks for both
TCPDIAG_GETSOCK = 18
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
INET_DIAG_INFO = 2
INET_DIAG_REQ_BYTECODE = 1
#: inet_diag's filter ops (linux/inet_diag.h)
_BC_JMP, _BC_D_COND = 1, 8
#: the kernel's multicast groups for destroyed TCP sockets (linux/sock_diag.h):
#: SKNLGRP_INET_TCP_DESTROY (1) and SKNLGRP_INET6_TCP_DESTROY (3), as a bind() mask
DESTROY_GROUPS = (1 << 0) | (1 << 2)
#: the states dumped: those that hold a full socket with tcp_info (not LISTEN, SYN_RECV,
#: TIME_WAIT — the last is a mini-socket, its bytes were counted at the destroy message)
_STATES = sum(1 << s for s in (1, 2, 4, 5, 7, 8, 9, 11))
_HDR = struct.Struct("=IHHII")
_MSG_LEN = 72  # struct inet_diag_msg
_ID_LEN = 48  # its struct inet_diag_sockid, at byte 4: ports, addresses, interface, cookie
_ATTR = struct.Struct("=HH")
#: tcpi_bytes_acked and tcpi_bytes_received, at byte 120 of struct tcp_info (Linux 4.1+)
_BYTES = struct.Struct("=QQ")
_BYTES_AT = 120
_V4_MAPPED = b"\0" * 10 + b"\xff\xff"
#: the errors of a dump of a family the kernel cannot dump
_NO_FAMILY = (errno.ENOENT, errno.EINVAL, errno.EAFNOSUPPORT, errno.EOPNOTSUPP)
#: the destroy socket's buffer: a message is ~0.5 KiB of buffer; what overflows is lost
#: and counted (SockDiag.overflows)
DESTROY_RCVBUF = 1 << 20
#: the dump socket's buffer, where a batch of lookups' answers waits (LOOKUP_BATCH)
DIAG_RCVBUF = 1 << 20
#: lookup requests sent in one write: their answers wait in the socket's buffer until
#: read, each charged ~1.25 KiB of it (166 fit the default 208 KiB, kernel 6.18), and one
#: that does not fit fails the read (ENOBUFS); the buffer is asked to be DIAG_RCVBUF
LOOKUP_BATCH = 64
#: the namespace's TCP counters (tcp_opens)
SNMP = "/proc/net/snmp"


class Conn(NamedTuple):
    """One TCP connection's counters: addresses packed (4 bytes for IPv4, IPv4-mapped
    IPv6 too; 16 for IPv6), bytes received and bytes the peer acknowledged; `key`, what
    asks the kernel for this connection again (its family and inet_diag_sockid, as the
    kernel gave them: lookup_request)."""

    cookie: int
    local: bytes
    remote: bytes
    rx: int
    tx: int
    key: bytes = b""


@functools.lru_cache(maxsize=4096)
def pack_address(text: str) -> bytes | None:
    """An address as the kernel gives it (an IPv6 scope dropped), None if not one."""
    text = text.split("%", 1)[0]
    try:
        return socket.inet_pton(socket.AF_INET, text)
    except OSError:
        pass
    try:
        raw = socket.inet_pton(socket.AF_INET6, text)
    except OSError:
        return None
    return raw[12:] if raw[:12] == _V4_MAPPED else raw


def dump_request(family: int | None, seq: int, remotes: frozenset[bytes] | None = None,
                 ) -> bytes:
    """A dump of TCP sockets with tcp_info: of both families (`family` None:
    TCPDIAG_GETSOCK), else SOCK_DIAG_BY_FAMILY of `family`; with `remotes`, only those
    whose remote address is one of them (the kernel's filter: the other sockets of the
    host are neither filled in nor copied).

    Both families in one request: the kernel walks its whole table of connections for each
    dump, however few they are (0.9 ms of its time for 262,144 buckets on a 24 GiB
    machine, `bench/flow_cost.py`), and an IPv4 peer of a server on `::` is an IPv6
    socket, so an IPv4-only dump would miss it."""
    ext = 1 << (INET_DIAG_INFO - 1)
    if family is None:  # struct inet_diag_req: family (ignored), lengths, ext, id, states, dbs
        body = struct.pack("=BBBB", socket.AF_INET, 0, 0, ext) + bytes(48) + struct.pack(
            "=II", _STATES, 0)
        type_ = TCPDIAG_GETSOCK
    else:
        body = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, ext, 0, _STATES) + bytes(48)
        type_ = SOCK_DIAG_BY_FAMILY
    if remotes is not None:
        code = bytecode(remotes)
        body += _ATTR.pack(4 + len(code), INET_DIAG_REQ_BYTECODE) + code
    return _HDR.pack(_HDR.size + len(body), type_, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body


def bytecode(remotes: frozenset[bytes]) -> bytes:
    """inet_diag's filter program "remote address is one of `remotes`": per address a
    condition (match: on to a jump to the end, which accepts; else on to the next one)
    and that jump; past the last condition, 4 bytes beyond the end, which rejects
    (net/ipv4/inet_diag.c: inet_diag_bc_run)."""
    blocks = []
    for addr in sorted(remotes):
        family = socket.AF_INET if len(addr) == 4 else socket.AF_INET6
        blocks.append(struct.pack("=BBxxi", family, 8 * len(addr), -1) + addr)
    out = bytearray()
    total = sum(4 + len(b) + 4 for b in blocks)
    for i, b in enumerate(blocks):
        cond = 4 + len(b)
        last = i == len(blocks) - 1
        out += struct.pack("=BBH", _BC_D_COND, cond, cond + (8 if last else 4)) + b
        left = total - len(out)  # from the jump to the end
        out += struct.pack("=BBH", _BC_JMP, 4, left)
    return bytes(out)


def parse(buf: memoryview | bytes, wanted: frozenset[bytes] | None = None,
          ) -> tuple[list[Conn], bool]:
    """The connections in a netlink answer (only those whose remote address is in
    `wanted`, when given) and whether it ended the dump. OSError for an error message."""
    out: list[Conn] = []
    off, end = 0, len(buf)
    while off + _HDR.size <= end:
        length, type_, _flags, _seq, _pid = _HDR.unpack_from(buf, off)
        if length < _HDR.size or off + length > end:
            break
        if type_ == NLMSG_DONE:
            return out, True
        if type_ == NLMSG_ERROR:
            code = struct.unpack_from("=i", buf, off + _HDR.size)[0]
            if code:
                raise OSError(-code, f"sock_diag: {errno.errorcode.get(-code, code)}")
        elif type_ in (SOCK_DIAG_BY_FAMILY, TCPDIAG_GETSOCK) and length >= _HDR.size + _MSG_LEN:
            conn = _conn(buf, off + _HDR.size, off + length, wanted)
            if conn is not None:
                out.append(conn)
        off += (length + 3) & ~3
    return out, False


def _conn(buf: memoryview | bytes, m: int, end: int, wanted: frozenset[bytes] | None,
          ) -> Conn | None:
    family = buf[m]
    size = 4 if family == socket.AF_INET else 16
    remote = bytes(buf[m + 24:m + 24 + size])
    local = bytes(buf[m + 8:m + 8 + size])
    if size == 16 and remote[:12] == _V4_MAPPED:
        remote, local = remote[12:], local[12:]
    if wanted is not None and remote not in wanted:
        return None
    cookie = struct.unpack_from("=Q", buf, m + 44)[0]
    a = m + _MSG_LEN
    while a + 4 <= end:
        alen, atype = _ATTR.unpack_from(buf, a)
        if alen < 4:
            break
        if atype == INET_DIAG_INFO and alen >= 4 + _BYTES_AT + _BYTES.size:
            tx, rx = _BYTES.unpack_from(buf, a + 4 + _BYTES_AT)
            return Conn(cookie, local, remote, rx, tx, bytes(buf[m:m + 1]) + bytes(
                buf[m + 4:m + 4 + _ID_LEN]))
        a += (alen + 3) & ~3
    return None


def lookup_request(key: bytes, seq: int) -> bytes:
    """A request for one connection by its `Conn.key`: not a dump, the kernel finds it in
    its hash table by the 4-tuple (and interface) and checks the cookie, so a connection
    closed and its ports reused is not taken for it (net/ipv4/inet_diag.c:
    inet_diag_find_one_icsk). Answered by one message: the connection, or an error."""
    body = struct.pack("=BBBBI", key[0], socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), 0,
                       _STATES) + key[1:]
    return _HDR.pack(_HDR.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, seq, 0) + body


def parse_replies(buf: memoryview | bytes) -> tuple[list[Conn], int]:
    """The connections in answers to lookup requests, and how many answers there were: a
    connection gone (ENOENT, ESTALE) is an answer with none; a connection in TIME_WAIT, found
    by its 4-tuple but holding no counters, one with none too (its destroy message has its
    last ones). OSError for another error."""
    out: list[Conn] = []
    answers = 0
    off, end = 0, len(buf)
    while off + _HDR.size <= end:
        length, type_, _flags, _seq, _pid = _HDR.unpack_from(buf, off)
        if length < _HDR.size or off + length > end:
            break
        if type_ == NLMSG_ERROR:
            answers += 1
            code = struct.unpack_from("=i", buf, off + _HDR.size)[0]
            if code and -code not in (errno.ENOENT, errno.ESTALE):  # (gone: a kernel
                # before 4.5 said a cookie that no longer matches with ESTALE)
                raise OSError(-code, f"sock_diag: {errno.errorcode.get(-code, code)}")
        elif type_ == SOCK_DIAG_BY_FAMILY:
            answers += 1
            if length >= _HDR.size + _MSG_LEN:
                conn = _conn(buf, off + _HDR.size, off + length, None)
                if conn is not None:
                    out.append(conn)
        off += (length + 3) & ~3
    return out, answers


def tcp_opens(snmp: str) -> int | None:
    """The TCP connections this network namespace has ever established: opened actively
    or passively, less the attempts that failed (ActiveOpens + PassiveOpens - AttemptFails
    of /proc/net/snmp's `Tcp:` lines, IPv4 and IPv6 alike: the kernel keeps one TCP MIB
    per namespace). A connect() refused (a program polling a port nobody listens on, as
    the exo watcher does while exo is down) leaves it as it was. None if not there."""
    rows = [line.split() for line in snmp.splitlines() if line.startswith("Tcp:")]
    if len(rows) < 2:
        return None
    row = dict(zip(rows[0][1:], rows[1][1:], strict=False))
    try:
        return int(row["ActiveOpens"]) + int(row["PassiveOpens"]) - int(row["AttemptFails"])
    except (KeyError, ValueError):
        return None


class SockDiag:
    """The two netlink sockets; `open()` before reading, `close()` when not needed (the
    kernel builds destroy messages only while someone listens)."""

    #: the snapshot's `flow_source` of what it reads (core/schema.FLOW_SOURCES)
    NAME = "sockets"

    def __init__(self) -> None:
        self._dump: socket.socket | None = None
        self._destroyed: socket.socket | None = None
        self._seq = 0
        self._buf = bytearray(1 << 16)
        #: times the destroy socket's buffer overflowed (connections' last bytes lost)
        self.overflows = 0
        self._no_v6 = False
        self._no_both = False  # a kernel that refuses the one request for both families
        self._snmp: int | None = None  # /proc/net/snmp, held open while the sockets are

    @property
    def is_open(self) -> bool:
        return self._dump is not None

    def open(self) -> None:
        """OSError where the kernel has no socket diagnostics."""
        if self._dump is not None:
            return
        dump = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
        try:
            dump.settimeout(1.0)  # (the kernel answers a dump at once; never hang a tick)
            dump.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, DIAG_RCVBUF)
            dump.bind((0, 0))
            destroyed = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
        except OSError:
            dump.close()
            raise
        try:
            destroyed.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, DESTROY_RCVBUF)
            destroyed.bind((0, DESTROY_GROUPS))
            destroyed.setblocking(False)
        except OSError:
            dump.close()
            destroyed.close()
            raise
        self._dump, self._destroyed = dump, destroyed
        try:
            self._snmp = os.open(SNMP, os.O_RDONLY)
        except OSError:
            self._snmp = None  # (no /proc: opens() is None, every read dumps)

    def close(self) -> None:
        for s in (self._dump, self._destroyed):
            if s is not None:
                s.close()
        self._dump = self._destroyed = None
        if self._snmp is not None:
            os.close(self._snmp)
            self._snmp = None

    def opens(self) -> int | None:
        """The namespace's count of TCP connections ever opened (tcp_opens), None where it
        cannot be read."""
        if self._snmp is None:
            return None
        try:
            return tcp_opens(os.pread(self._snmp, 1 << 16, 0).decode("ascii", "replace"))
        except OSError:
            return None

    def lookup(self, keys: Sequence[bytes]) -> list[Conn]:
        """The connections of `keys` (Conn.key) that are still open, with their counters:
        one request each, sent LOOKUP_BATCH to a write; the kernel finds each by its hash,
        whatever the size of its table."""
        s = self._dump
        if s is None:
            raise OSError(errno.EBADF, "sock_diag is not open")
        out: list[Conn] = []
        view = memoryview(self._buf)
        for i in range(0, len(keys), LOOKUP_BATCH):
            batch = keys[i:i + LOOKUP_BATCH]
            first = self._seq + 1
            self._seq += len(batch)
            s.send(b"".join(lookup_request(k, first + j) for j, k in enumerate(batch)))
            left = len(batch)  # (the kernel answered them all within send())
            while left > 0:
                n = s.recv_into(self._buf)
                if n == 0:
                    break
                conns, answers = parse_replies(view[:n])
                out += conns
                left -= answers
        return out

    def destroyed(self, wanted: frozenset[bytes] | None = None) -> Iterator[Conn]:
        """The connections destroyed since the last call, with their last counters."""
        s = self._destroyed
        if s is None:
            return
        view = memoryview(self._buf)
        while True:
            try:
                n = s.recv_into(self._buf)
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno != errno.ENOBUFS:
                    raise
                self.overflows += 1
                continue
            yield from parse(view[:n], wanted)[0]

    def connections(self, wanted: frozenset[bytes] | None = None) -> list[Conn]:
        """The open TCP connections, IPv4 and IPv6 (to `wanted` remote addresses)."""
        if not self._no_both:
            try:
                return self._dump_of(None, wanted)
            except OSError as e:
                if e.errno not in _NO_FAMILY:
                    raise
                self._no_both = True  # (then one dump per family, two walks)
        out = self._dump_of(socket.AF_INET, wanted)
        if not self._no_v6:
            try:
                out += self._dump_of(socket.AF_INET6, wanted)
            except OSError as e:
                if e.errno not in _NO_FAMILY:
                    raise
                self._no_v6 = True  # a kernel without IPv6 (or its diag module)
        return out

    def _dump_of(self, family: int | None, wanted: frozenset[bytes] | None) -> list[Conn]:
        s = self._dump
        if s is None:
            raise OSError(errno.EBADF, "sock_diag is not open")
        out: list[Conn] = []
        view = memoryview(self._buf)
        self._seq += 1
        s.send(dump_request(family, self._seq, wanted))
        while True:
            n = s.recv_into(self._buf)
            conns, done = parse(view[:n], wanted)  # (OSError: an error ends the answer)
            out += conns
            if done or n == 0:
                return out
