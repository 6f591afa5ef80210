"""macOS: each connection's byte counters, from `nettop`'s logging output (issue 30).

macOS has no per-connection TCP counters an unprivileged process can read as Linux's
socket diagnostics (hw/sockdiag.py); the kernel's network statistics source
(xnu bsd/net/ntstat.c, the `com.apple.network.statistics` control socket behind the
private NetworkStatistics framework) is what `nettop` shows. On macOS it asks no
privilege to watch every socket of every user: `nstat_privcheck` is 0 there
(`#if !XNU_TARGET_OS_OSX ... = 1 #else ... = 0`) and the "add all sources" request
checks `PRIV_NET_PRIVILEGED_NETWORK_STATISTICS` only when it is not. This module only
reads the text; nothing here runs nettop.

nettop(1) (macOS manual, "4/5/10"): `-L <samples>` logging mode, CSV, 0 = forever;
`-x` numbers in full instead of suffixes such as MiB; `-n` no address-to-name
resolution; `-m tcp|udp|route`; `-t wifi|wired|loopback|awdl|expensive|undefined|
external` (repeatable); `-p <name|pid>` (repeatable); `-s <delay>` seconds between
samples (default 1); `-P` per-process rows only (no connections); `-J` only these
columns, `-j` add, `-k` drop columns. What the recordings in
tests/fixtures/macos/README.md ("Per-connection bytes") show of the text:

- each sample starts with a header line; its empty field is the row-name column (the
  second field after `time`, the first when `-J` leaves `time` out); lines end with `,`;
- then per process a row `name.pid,...` (the name cut to 15 characters, may hold spaces,
  dots and parentheses) followed by its connections, `proto local<->remote,...`, where
  `proto` is `tcp4`, `tcp6`, `udp4`, `udp6`, `quic4`, `quic6`;
- an IPv4 endpoint is `addr:port`, an IPv6 one `addr.port` (a scope as `%lo0`), `*`
  a wildcard (`*:*`, `*.*`); without `-n` a host name stands for the address;
- `bytes_in`, `bytes_out` are the connection's counts since it opened; empty on a
  listening socket. Run with `-x -n`: a suffixed or named value is not read here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from exotray.agent.hw import sockdiag

#: the row-name column of the header ("" in nettop's header) and the columns read
_NAME, _IFACE, _STATE, _IN, _OUT = "", "interface", "state", "bytes_in", "bytes_out"
_TIME = "time"
_SEP = "<->"
TCP = frozenset({"tcp4", "tcp6"})


class Endpoint(NamedTuple):
    """One end of a connection as nettop prints it: `host` an address (an IPv6 one
    possibly with its `%scope`) or, without `-n`, a name; None for the wildcard `*`."""

    host: str | None
    port: int | None


class Flow(NamedTuple):
    """One connection row of a sample, with the process row it follows."""

    process: str | None
    pid: int | None
    proto: str
    local: Endpoint
    remote: Endpoint
    interface: str | None
    state: str | None
    bytes_in: int | None
    bytes_out: int | None
    #: the row's connection field as printed (`tcp4 a:p<->b:q`): with the pid, what
    #: names this connection from one sample to the next
    name: str
    #: when nettop read the row's counters, in seconds since its local midnight (the
    #: `time` column, `18:21:35.556534`), None without that column
    at: float | None = None

    @property
    def key(self) -> str:
        return f"{self.pid}|{self.name}"


def columns(line: str) -> list[str] | None:
    """A header line's column names (the row names' column is ""), or None when `line`
    is not a header (a header names bytes_in or bytes_out, which a row never holds)."""
    names = line.rstrip("\r\n").split(",")
    if (_IN in names or _OUT in names) and _NAME in names:
        return names
    return None


def parse(text: str, header: str | None = None) -> list[list[Flow]]:
    """Every sample in `text` (one per header line), each as its connection rows in the
    order printed. Lines before the first header belong to no sample and are dropped,
    unless `header` (a header line of the same command) says what their columns are."""
    samples: list[list[Flow]] = []
    cols = columns(header) if header is not None else None
    if cols is not None:
        samples.append([])
    process: tuple[str | None, int | None] = (None, None)
    for line in text.splitlines():
        line = line.rstrip("\r")
        if not line:
            continue
        if (new := columns(line)) is not None:
            cols = new
            samples.append([])
            process = (None, None)
            continue
        if cols is None:
            continue
        name, row = _fields(line, cols)
        if _SEP not in name:
            process = split_process(name)
            continue
        flow = _flow(name, row, process)
        if flow is not None:
            samples[-1].append(flow)
    return samples


def _fields(line: str, cols: list[str]) -> tuple[str, dict[str, str]]:
    """A row's name and its other fields by column name. A row with more fields than the
    header has commas in its name (a process may be called so): they stay in the name.
    (The header's closing `,` makes a second empty name: the first one is the row's.)"""
    fields = line.split(",")
    extra = len(fields) - len(cols)
    at = cols.index(_NAME)
    if extra > 0:
        fields[at:at + extra + 1] = [",".join(fields[at:at + extra + 1])]
    name = fields[at] if at < len(fields) else ""
    return name, {c: v for c, v in zip(cols, fields, strict=False) if c}


def split_process(name: str) -> tuple[str | None, int | None]:
    """`Name With Spaces.123` -> (name, pid); a name without a numeric suffix has no pid."""
    base, dot, pid = name.rpartition(".")
    if dot and pid.isdigit():
        return base, int(pid)
    return (name or None), None


def _flow(name: str, row: dict[str, str],
          process: tuple[str | None, int | None]) -> Flow | None:
    proto, _, ends = name.partition(" ")
    local, sep, remote = ends.partition(_SEP)
    if not sep or not proto:
        return None
    return Flow(process[0], process[1], proto, endpoint(local, proto),
                endpoint(remote, proto), row.get(_IFACE) or None, row.get(_STATE) or None,
                _count(row.get(_IN)), _count(row.get(_OUT)), name,
                clock(row.get(_TIME)))


def clock(text: str | None) -> float | None:
    """`18:21:35.556534` -> seconds since midnight; None if not a time of day."""
    parts = (text or "").split(":")
    if len(parts) != 3:
        return None
    try:
        h, m, sec = int(parts[0]), int(parts[1]), float(parts[2])
    except ValueError:
        return None
    return h * 3600 + m * 60 + sec if 0 <= h < 24 and 0 <= m < 60 and 0 <= sec < 61 else None


def endpoint(text: str, proto: str) -> Endpoint:
    """`192.0.2.1:80`, `2001:db8::1.443`, `fe80::1%lo0.53`, `host.example.com:443`,
    `*:*`, `*.*` -> (host, port). IPv6 rows (`proto` ending in 6) put the port after the
    last `.`, the others after the last `:`."""
    seps = (".", ":") if proto.endswith("6") else (":", ".")
    for sep in seps:
        host, found, port = text.rpartition(sep)
        if found:
            break
    else:
        host, port = text, ""
    return Endpoint(None if host in ("", "*") else host,
                    int(port) if port.isdigit() else None)


def _count(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def packed(ep: Endpoint) -> bytes | None:
    """The endpoint's address as hw/sockdiag.py packs it (4 or 16 bytes, a scope
    dropped), None for a wildcard or a name."""
    return sockdiag.pack_address(ep.host) if ep.host else None


def conns(flows: Iterable[Flow], protos: frozenset[str] = TCP) -> Iterator[sockdiag.Conn]:
    """The connections of `protos` with both addresses numeric and both counts known, as
    hw/flows.py's FlowBytes takes them from the Linux reader: `cookie` a stable number
    for the connection's key (pid and row name), rx = bytes_in, tx = bytes_out."""
    for f in flows:
        if f.proto not in protos or f.bytes_in is None or f.bytes_out is None:
            continue
        local, remote = packed(f.local), packed(f.remote)
        if local is None or remote is None:
            continue
        digest = hashlib.blake2b(f.key.encode(), digest_size=8).digest()
        yield sockdiag.Conn(int.from_bytes(digest, "big"), local, remote,
                            f.bytes_in, f.bytes_out)
