"""What one resolved DNS-SD record may say: `parse_record` validates it into a
`PeerRecord` or raises `RecordRejected(reason)` (peers/discovery.py logs and remembers it)."""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from exotray import PROTO
from exotray.agent.base.limits import MAX_ADDRESSES_PER_RECORD
from exotray.core.schema import unsafe_char

MAX_TXT_BYTES = 512
_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


@dataclass(frozen=True)
class PeerRecord:
    service: str
    id: str
    name: str
    version: str
    proto: int
    port: int
    addresses: tuple[str, ...]


@dataclass
class Ignored:
    service: str
    reason: str
    detail: str


def merged(recs: dict[str, PeerRecord]) -> PeerRecord:
    """One peer from its records on several interfaces: the addresses of each."""
    first = next(iter(recs.values()))
    addrs = sorted({a for r in recs.values() for a in r.addresses})
    return dataclasses.replace(first, addresses=tuple(addrs[:MAX_ADDRESSES_PER_RECORD]))


def dns_label(name: str) -> str:
    label = re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-")[:40]
    return label or "exotray"


class RecordRejected(ValueError):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def _text(props: dict, key: bytes) -> str | None:
    value = props.get(key)
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except (UnicodeDecodeError, AttributeError):
        raise RecordRejected("bad_txt", f"{key.decode()} is not UTF-8 text") from None


def parse_record(
    service: str,
    port: int | None,
    properties: dict[bytes, bytes | None] | None,
    addresses: Iterable[str],
    *,
    own_id: str,
    own_service: str | None,
    local_networks: Iterable[ipaddress.IPv4Network],
) -> PeerRecord:
    """Validate what a resolved DNS-SD record says; raise RecordRejected(reason).

    Reasons: own (our own record), bad_port, no_txt, txt_too_large, bad_txt, bad_id,
    spoofed_id (another service claiming our id), version_mismatch, no_address (none of
    its IPv4 addresses is on one of `local_networks`: the runtime passes the subnets of
    the interfaces mDNS runs on, so a record cannot aim us at another local network).
    Only the first MAX_ADDRESSES_PER_RECORD (sorted) addresses are kept.
    """
    if own_service is not None and service == own_service:
        raise RecordRejected("own")
    if port is None or not 1 <= port <= 65535:
        raise RecordRejected("bad_port", repr(port))
    properties = {k: v for k, v in (properties or {}).items() if k}
    if not properties:  # none, or DNS-SD's empty TXT (a single empty string)
        raise RecordRejected("no_txt")
    size = sum(len(k) + len(v or b"") + 2 for k, v in properties.items())
    if size > MAX_TXT_BYTES:
        raise RecordRejected("txt_too_large", f"{size} bytes")
    peer_id = _text(properties, b"id")
    name = _text(properties, b"name")
    version = _text(properties, b"version") or "?"
    proto_text = _text(properties, b"proto")
    if peer_id is None or not _ID_RE.match(peer_id):
        raise RecordRejected("bad_id", repr(peer_id)[:70])
    if peer_id == own_id:
        raise RecordRejected("spoofed_id", f"{service} claims our id {own_id}")
    if name is None or not 1 <= len(name) <= 64:
        raise RecordRejected("bad_txt", f"name {name!r}"[:80])
    why = unsafe_char(name)  # the same rule as a snapshot's names: shown as plain text
    if why is not None:
        raise RecordRejected("bad_txt", f"name {name!r} contains {why}"[:120])
    try:
        proto = int(proto_text or "")
    except ValueError:
        raise RecordRejected("bad_txt", f"proto {proto_text!r}"[:80]) from None
    if proto != PROTO:
        raise RecordRejected(
            "version_mismatch",
            f"{name} speaks protocol {proto} (exotray {version}); we speak {PROTO}",
        )
    nets = list(local_networks)
    good: list[str] = []
    for a in addresses:
        try:
            ip = ipaddress.IPv4Address(a)
        except ValueError:
            continue
        if any(ip in n for n in nets) and not ip.is_loopback and not ip.is_unspecified:
            good.append(a)
    if not good:
        raise RecordRejected("no_address",
                             f"{list(addresses)} not on the subnets it may come from")
    # One record, at most MAX_ADDRESSES_PER_RECORD links (100 A records are not 100 links)
    kept = tuple(sorted(set(good))[:MAX_ADDRESSES_PER_RECORD])
    return PeerRecord(service, peer_id, name, version, proto, port, kept)
