"""The snapshot a node serves at /v1/snapshot, and the validation of peers' snapshots.

A peer's snapshot is untrusted input: it is size-capped, parsed by pydantic's JSON
parser (no NaN or Infinity, bounded nesting), checked against this schema (types,
finite non-negative numbers, bounded lengths, names free of control, format and
separator characters: the UI shows them), and refused when it claims our own id.
Every refusal is a `SnapshotRejected` with a short machine-readable reason.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Literal

import pydantic_core
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from exotray.core.capacity import SOURCES

SCHEMA_VERSION = 1
MAX_SNAPSHOT_BYTES = 1 << 20  # 1 MiB: 64 peers x 4 links is about 100 KiB

KINDS = ("ethernet", "wifi", "thunderbolt", "loopback", "virtual", "vpn", "other")
CAPACITY_SOURCES = SOURCES
LINK_STATES = ("up", "saturated", "down")

REJECT_REASONS = (
    "too_large",  # over the size cap
    "not_json",  # not parseable JSON (incl. NaN/Infinity, too deeply nested)
    "not_object",  # JSON, but not an object
    "schema_version",  # unknown or missing schema version
    "invalid",  # does not match the schema
    "unsafe_text",  # a name, label or version with control, format or separator characters
    "own_id",  # claims to be us
    "id_mismatch",  # not the node we expected at that address
)


class SnapshotRejected(ValueError):
    def __init__(self, reason: str, detail: str = "") -> None:
        assert reason in REJECT_REASONS, reason
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


#: Unicode categories refused in text that peers control and we show: controls (Cc),
#: format characters (Cf: bidi overrides such as U+202E that turn "exe.gnp" into
#: "png.exe", U+200F, U+2066…, zero-width and invisible ones), line and paragraph
#: separators (Zl, Zp: U+2028, U+2029) and surrogates (Cs).
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: format characters that scripts need inside ordinary words (Persian, Indic scripts,
#: emoji sequences): zero-width non-joiner and joiner. They join or separate letters,
#: they reorder and hide nothing.
_ALLOWED_FORMAT = frozenset({"\u200c", "\u200d"})
_CATEGORY_WORDS = {"Cc": "a control character", "Cf": "a format character",
                   "Cs": "a surrogate", "Zl": "a line separator", "Zp": "a paragraph separator"}


def unsafe_char(text: str) -> str | None:
    """Why `text` must not be shown as a name ("U+202E, a format character"), or None
    when it is fine. Shared with mDNS discovery's check of a record's name."""
    if text.isascii() and text.isprintable():  # (most names: no character to look up)
        return None
    for ch in text:
        if ch in _ALLOWED_FORMAT:
            continue
        cat = unicodedata.category(ch)
        if cat in UNSAFE_CATEGORIES:
            return f"U+{ord(ch):04X}, {_CATEGORY_WORDS[cat]}"
    return None


def _safe_text(text: str) -> str:
    why = unsafe_char(text)
    if why is not None:
        raise PydanticCustomError("unsafe_text", "contains {why}", {"why": why})
    return text


Rate = Annotated[float, Field(ge=0, le=1e13, allow_inf_nan=False)]  # <= 80 Tbit/s
#: a link speed, Mbit/s (<= 80 Tbit/s)
Mbit = Annotated[float, Field(gt=0, le=8e7, allow_inf_nan=False)]
Ms = Annotated[float, Field(ge=0, le=3_600_000, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_safe_text)]
Version = Annotated[str, Field(max_length=32), AfterValidator(_safe_text)]
Stamp = Annotated[str, Field(max_length=40), AfterValidator(_safe_text)]
Ident = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]
Address = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[0-9A-Fa-f.:%a-z0-9-]+$")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False, frozen=True)


class Node(_Model):
    id: Ident
    name: Name
    version: Version


class Interface(_Model):
    name: Name
    kind: Literal[KINDS]  # type: ignore[valid-type]
    label: Name
    up: bool
    addresses: Annotated[list[Address], Field(max_length=64)]
    rx_bytes_per_s: Rate | None
    tx_bytes_per_s: Rate | None
    capacity_bytes_per_s: Rate | None
    capacity_source: Literal[CAPACITY_SOURCES]  # type: ignore[valid-type]
    capacity_measured_at: Stamp | None = None
    #: negotiated speed (Wi-Fi: the current PHY rate) and the port's maximum, where known
    speed_mbit: Mbit | None = None
    max_speed_mbit: Mbit | None = None
    #: a bridge's or bond's member interfaces
    members: Annotated[list[Name], Field(max_length=32)] = []


ExoText = Annotated[str, Field(min_length=1, max_length=128), AfterValidator(_safe_text)]
#: what a link's RDMA traffic is: added to its rates ("counted"), or invisible to this
#: node ("not_counted": macOS has no RDMA counters); None without RDMA
RDMA_NOTES = ("counted", "not_counted")


class ExoInstanceRef(_Model):
    """An exo instance whose traffic this node sends over a link (agent/exo.py)."""

    id: ExoText
    model: ExoText
    backend: Literal["ring", "jaccl"]


class RdmaPort(_Model):
    """An RDMA device a link's exo (JACCL) traffic uses, and its port state as the OS
    reports it (macOS `ibv_devinfo`: "PORT_ACTIVE", "PORT_DOWN"; None: not listed)."""

    device: Name
    state: Name | None = None


class Link(_Model):
    id: Ident
    peer_id: Ident | None
    peer_name: Name | None
    local_interface: Name | None
    local_label: Name | None = None
    #: the bridge member this link's traffic, speed and capacity are taken from (None when
    #: the local interface is not a bridge, or the member is not known: bridge totals)
    member_interface: Name | None = None
    peer_address: Address
    peer_port: Annotated[int, Field(ge=1, le=65535)]
    state: Literal[LINK_STATES]  # type: ignore[valid-type]
    rtt_ms: Ms | None
    rtt_min_ms: Ms | None
    rtt_max_ms: Ms | None
    rtt_p90_ms: Ms | None = None
    rtt_last_ms: Ms | None = None
    jitter_ms: Ms | None
    loss: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None
    #: the path's idle RTT and the median of the last seconds above it (core/queueing.py);
    #: optional so that snapshots of agents from before issue 13 still validate
    rtt_baseline_ms: Ms | None = None
    queue_delay_ms: Ms | None = None
    rx_bytes_per_s: Rate | None
    tx_bytes_per_s: Rate | None
    capacity_bytes_per_s: Rate | None
    capacity_source: Literal[CAPACITY_SOURCES] = "unknown"  # type: ignore[valid-type]
    # Above 1 is real (traffic above a user-given capacity): bounded only as the rates are.
    utilization: Annotated[float, Field(ge=0, le=1e13, allow_inf_nan=False)] | None
    exo_instances: Annotated[list[ExoInstanceRef], Field(max_length=16)] = []
    rdma: Literal[RDMA_NOTES] | None = None  # type: ignore[valid-type]
    #: where RDMA is not counted (macOS): whether it is enabled on this node (`rdma_ctl
    #: status`; None: cannot tell) and the state of the link's RDMA ports
    rdma_enabled: bool | None = None
    rdma_ports: Annotated[list[RdmaPort], Field(max_length=8)] = []


class Snapshot(_Model):
    schema_: Literal[1] = Field(alias="schema")
    node: Node
    interval_s: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)]
    #: how old the measurements were when the sender built this snapshot
    data_age_s: Annotated[float, Field(ge=0, le=86400, allow_inf_nan=False)]
    interfaces: Annotated[list[Interface], Field(max_length=256)]
    links: Annotated[list[Link], Field(max_length=1024)]


def decode_object(raw: bytes) -> dict:
    """A JSON object from a peer (a snapshot, a stream frame's body), or
    SnapshotRejected("not_json" | "not_object"): NaN and Infinity are refused."""
    try:
        obj = pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError as e:
        raise SnapshotRejected("not_json", str(e)[:200]) from None
    if not isinstance(obj, dict):
        raise SnapshotRejected("not_object", type(obj).__name__)
    return obj


def parse_snapshot(
    raw: bytes,
    *,
    own_id: str | None = None,
    expected_id: str | None = None,
    max_bytes: int = MAX_SNAPSHOT_BYTES,
) -> Snapshot:
    """Validate a peer's snapshot; raise SnapshotRejected(reason) on anything wrong."""
    if len(raw) > max_bytes:
        raise SnapshotRejected("too_large", f"{len(raw)} bytes > {max_bytes}")
    obj = decode_object(raw)
    version = obj.get("schema")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise SnapshotRejected("schema_version", repr(version)[:40])
    try:
        snap = Snapshot.model_validate(obj)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        reason = "unsafe_text" if first["type"] == "unsafe_text" else "invalid"
        raise SnapshotRejected(reason, f"{where}: {first['msg']}"[:200]) from None
    if own_id is not None and snap.node.id == own_id:
        raise SnapshotRejected("own_id", snap.node.id)
    if expected_id is not None and snap.node.id != expected_id:
        raise SnapshotRejected("id_mismatch", f"{snap.node.id} != {expected_id}")
    return snap


def dump(snap: Snapshot) -> dict:
    return snap.model_dump(mode="json", by_alias=True)


# -- the wire format, defined once --------------------------------------------------------
# This node builds its snapshot from these names (agent/views.py checks every dict it
# builds against them), and peers parse it with the models above: a field added to one
# side and not the other fails at once, in any test that builds a snapshot.


def wire_names(model: type[BaseModel]) -> frozenset[str]:
    """The JSON names of a model's fields (aliases where given)."""
    return frozenset(f.alias or name for name, f in model.model_fields.items())


#: what a node's own snapshot carries beyond the shared schema, for local clients (the
#: tray app, `exotray status`, scripts); peers ignore them (extra="ignore")
LOCAL_SNAPSHOT_FIELDS = frozenset({"proto", "kernel_timestamps", "paused", "warnings",
                                   "counters", "exo"})

WIRE_FIELDS: dict[str, frozenset[str]] = {
    "node": wire_names(Node),
    "interface": wire_names(Interface),
    "link": wire_names(Link),
    "snapshot": wire_names(Snapshot) | LOCAL_SNAPSHOT_FIELDS,
}


def on_wire(kind: str, record: dict) -> dict:
    """`record` itself, once its keys are exactly the wire fields of `kind`."""
    expected = WIRE_FIELDS[kind]
    if record.keys() != expected:
        missing = sorted(expected - record.keys())
        extra = sorted(record.keys() - expected)
        raise ValueError(f"{kind} does not match the schema: missing {missing}, "
                         f"not in the schema {extra}")
    return record
