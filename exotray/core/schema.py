"""The snapshot a node serves at /v1/snapshot, and the validation of peers' snapshots.

A peer's snapshot is untrusted input: it is size-capped, decoded and checked in one pass
by msgspec (C: JSON without NaN or Infinity, then types, finite non-negative numbers,
bounded lengths, patterns), and its names are checked free of control, format and
separator characters (the UI shows them); it is refused when it claims our own id.
Every refusal is a `SnapshotRejected` with a short machine-readable reason.
msgspec rather than pydantic (docs/design.md, "The wire format"): the same checks, a
quarter of the memory, and the frames of every peer validated in C.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any, Literal

import msgspec
import msgspec.inspect
import msgspec.structs
from msgspec import Meta, Struct, field

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


def r(x: float | None, nd: int = 4) -> float | None:
    """A number as it goes on the wire and into history (None stays None)."""
    return None if x is None else round(x, nd)


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


#: the start of the message a model's __post_init__ raises for unsafe text (msgspec turns
#: it into a ValidationError, which `rejection` maps back to "unsafe_text")
_UNSAFE = "unsafe_text "


def _check_text(obj: Any, fields: tuple[str, ...]) -> None:
    """Raise ValueError (msgspec: a ValidationError at `obj`'s place) when one of `fields`
    (a string, None, or a list of strings) is unsafe to show."""
    for name in fields:
        v = getattr(obj, name)
        for text in (v if isinstance(v, list) else (v,)):
            if text is not None and (why := unsafe_char(text)) is not None:
                raise ValueError(f"{_UNSAFE}{name}: contains {why}")


def _num(lo: str, lo_v: float, hi: float) -> Any:
    return Annotated[float, Meta(**{lo: lo_v}, le=hi)]


# Numbers: JSON has no NaN or Infinity (the decoder refuses them) and a float too large
# for a double is refused as out of range, so every bound below also means finite.
Rate = _num("ge", 0, 1e13)  # bytes/s, <= 80 Tbit/s
#: a link speed, Mbit/s (<= 80 Tbit/s)
Mbit = _num("gt", 0, 8e7)
Ms = _num("ge", 0, 3_600_000)
Fraction = _num("ge", 0, 1)
Interval = _num("gt", 0, 3600)
Age = _num("ge", 0, 86400)
# Text: lengths in characters as pydantic counted them; patterns end at \Z (Python's $
# would let a trailing newline through).
Name = Annotated[str, Meta(min_length=1, max_length=64)]
Version = Annotated[str, Meta(max_length=32)]
Stamp = Annotated[str, Meta(max_length=40)]
Ident = Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+\Z")]
Address = Annotated[str, Meta(min_length=1, max_length=64,
                              pattern=r"^[0-9A-Fa-f.:%a-z0-9-]+\Z")]
Port = Annotated[int, Meta(ge=1, le=65535)]


class _Model(Struct, frozen=True):
    """A wire record: unknown fields are ignored (msgspec's default), types are strict
    (no "1" for 1, no true for 1; an integer is taken for a float), records are frozen.
    Each model is kw_only (msgspec does not inherit it): a field with a default may come
    before one without, in the order the JSON has them."""


class Node(_Model, kw_only=True):
    id: Ident
    name: Name
    version: Version

    def __post_init__(self) -> None:
        _check_text(self, ("name", "version"))


class Interface(_Model, kw_only=True):
    name: Name
    kind: Literal[KINDS]  # type: ignore[valid-type]
    label: Name
    up: bool
    addresses: Annotated[list[Address], Meta(max_length=64)]
    rx_bytes_per_s: Rate | None
    tx_bytes_per_s: Rate | None
    capacity_bytes_per_s: Rate | None
    capacity_source: Literal[CAPACITY_SOURCES]  # type: ignore[valid-type]
    capacity_measured_at: Stamp | None = None
    #: negotiated speed (Wi-Fi: the current PHY rate) and the port's maximum, where known
    speed_mbit: Mbit | None = None
    max_speed_mbit: Mbit | None = None
    #: a bridge's or bond's member interfaces
    members: Annotated[list[Name], Meta(max_length=32)] = []

    def __post_init__(self) -> None:
        _check_text(self, ("name", "label", "capacity_measured_at", "members"))


ExoText = Annotated[str, Meta(min_length=1, max_length=128)]
#: what a link's RDMA traffic is: added to its rates ("counted"), or invisible to this
#: node ("not_counted": macOS has no RDMA counters); None without RDMA
RDMA_NOTES = ("counted", "not_counted")
#: where a link's own bytes come from: Linux's socket diagnostics ("sockets"), macOS's
#: per-flow statistics ("nettop")
FLOW_SOURCES = ("sockets", "nettop")


class ExoInstanceRef(_Model, kw_only=True):
    """An exo instance whose traffic this node sends over a link (agent/exo/state.py)."""

    id: ExoText
    model: ExoText
    backend: Literal["ring", "jaccl"]

    def __post_init__(self) -> None:
        _check_text(self, ("id", "model"))


class RdmaPort(_Model, kw_only=True):
    """An RDMA device a link's exo (JACCL) traffic uses, and its port state as the OS
    reports it (macOS `ibv_devinfo`: "PORT_ACTIVE", "PORT_DOWN"; None: not listed)."""

    device: Name
    state: Name | None = None

    def __post_init__(self) -> None:
        _check_text(self, ("device", "state"))


class Link(_Model, kw_only=True):
    id: Ident
    peer_id: Ident | None
    peer_name: Name | None
    local_interface: Name | None
    local_label: Name | None = None
    #: the bridge member this link's traffic, speed and capacity are taken from (None when
    #: the local interface is not a bridge, or the member is not known: bridge totals)
    member_interface: Name | None = None
    peer_address: Address
    peer_port: Port
    state: Literal[LINK_STATES]  # type: ignore[valid-type]
    rtt_ms: Ms | None
    rtt_min_ms: Ms | None
    rtt_max_ms: Ms | None
    rtt_p90_ms: Ms | None = None
    #: one probe's RTT: in this node's own snapshot only (for local clients); a stream
    #: does not send it to peers (LOCAL_LINK_FIELDS), agents before that did
    rtt_last_ms: Ms | None = None
    jitter_ms: Ms | None
    loss: Fraction | None
    #: the path's idle RTT and the median of the last seconds above it (core/queueing.py);
    #: optional so that snapshots of agents from before issue 13 still validate
    rtt_baseline_ms: Ms | None = None
    queue_delay_ms: Ms | None = None
    rx_bytes_per_s: Rate | None
    tx_bytes_per_s: Rate | None
    capacity_bytes_per_s: Rate | None
    capacity_source: Literal[CAPACITY_SOURCES] = "unknown"  # type: ignore[valid-type]
    # Above 1 is real (traffic above a user-given capacity): bounded only as the rates are.
    utilization: Rate | None
    exo_instances: Annotated[list[ExoInstanceRef], Meta(max_length=16)] = []
    rdma: Literal[RDMA_NOTES] | None = None  # type: ignore[valid-type]
    #: where RDMA is not counted (macOS): whether it is enabled on this node (`rdma_ctl
    #: status`; None: cannot tell) and the state of the link's RDMA ports
    rdma_enabled: bool | None = None
    rdma_ports: Annotated[list[RdmaPort], Meta(max_length=8)] = []
    #: whether frames of the local interface's MTU reach the peer (core/pathmtu.py): the
    #: largest frame known to reach it, and whether the MTU's do (None: not known yet, or
    #: the peer's agent does not answer MTU probes)
    path_mtu: Annotated[int, Meta(ge=68, le=65535)] | None = None
    mtu_ok: bool | None = None
    #: the link's own TCP bytes (between its interface's addresses and its peer's), read
    #: where its carrier is shared and carries traffic (agent/hw/flows.py); None unknown.
    #: `rx_bytes_per_s`/`tx_bytes_per_s` stay the carrier's
    flow_rx_bytes_per_s: Rate | None = None
    flow_tx_bytes_per_s: Rate | None = None
    flow_source: Literal[FLOW_SOURCES] | None = None  # type: ignore[valid-type]

    def __post_init__(self) -> None:
        _check_text(self, ("peer_name", "local_interface", "local_label", "member_interface"))


MAX_INTERFACES = 256
MAX_LINKS = 1024


class Snapshot(_Model, kw_only=True):
    schema_: Literal[1] = field(name="schema")
    node: Node
    interval_s: Interval
    #: how old the measurements were when the sender built this snapshot
    data_age_s: Age
    interfaces: Annotated[list[Interface], Meta(max_length=MAX_INTERFACES)]
    links: Annotated[list[Link], Meta(max_length=MAX_LINKS)]


_DECODER = msgspec.json.Decoder(Snapshot)
_ANY = msgspec.json.Decoder()
_AT = re.compile(r" - at `\$(.*)`\Z", re.S)


def rejection(e: msgspec.ValidationError, where: str = "") -> SnapshotRejected:
    """A SnapshotRejected ("invalid" or "unsafe_text") for msgspec's error, its place as a
    dotted path ("links.0.peer_name: contains U+202E, a format character")."""
    msg = str(e)
    loc = ""
    if (m := _AT.search(msg)) is not None:
        msg = msg[:m.start()]
        loc = re.sub(r"\[(\d+|\.\.\.)\]", r".\1", m.group(1)).lstrip(".")
    reason = "invalid"
    if msg.startswith(_UNSAFE):
        reason, msg = "unsafe_text", msg[len(_UNSAFE):]
        name, _, msg = msg.partition(": ")
        loc = f"{loc}.{name}" if loc else name
    loc = ".".join(p for p in (where, loc) if p)
    return SnapshotRejected(reason, f"{loc}: {msg}"[:200] if loc else msg[:200])


def decode_object(raw: bytes) -> dict:
    """A JSON object from a peer (a snapshot, a stream frame's body), or
    SnapshotRejected("not_json" | "not_object" | "invalid": a number too large for a
    double): NaN and Infinity are refused."""
    try:
        obj = _ANY.decode(raw)
    except msgspec.ValidationError as e:
        raise rejection(e) from None
    except (msgspec.DecodeError, RecursionError) as e:
        raise SnapshotRejected("not_json", str(e)[:200]) from None
    if not isinstance(obj, dict):
        raise SnapshotRejected("not_object", type(obj).__name__)
    return obj


def validate(model: type[Any], obj: Any, where: str = "") -> Any:
    """`obj` (decoded JSON, or records already validated) as `model`, or
    SnapshotRejected("invalid" | "unsafe_text")."""
    try:
        return msgspec.convert(obj, model, strict=True)
    except msgspec.ValidationError as e:
        raise rejection(e, where) from None


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
    try:
        snap = _DECODER.decode(raw)
    except (msgspec.DecodeError, RecursionError) as e:
        # why, in the order of the reasons: not JSON, not an object, another version
        obj = decode_object(raw)
        version = obj.get("schema")
        if type(version) is not int or version != SCHEMA_VERSION:
            raise SnapshotRejected("schema_version", repr(version)[:40]) from None
        if not isinstance(e, msgspec.ValidationError):
            raise SnapshotRejected("not_json", str(e)[:200]) from None
        raise rejection(e) from None
    if own_id is not None and snap.node.id == own_id:
        raise SnapshotRejected("own_id", snap.node.id)
    if expected_id is not None and snap.node.id != expected_id:
        raise SnapshotRejected("id_mismatch", f"{snap.node.id} != {expected_id}")
    return snap


def dump(snap: Any) -> dict:
    """A snapshot (or any record) as JSON-ready builtins, with the wire's names."""
    return msgspec.to_builtins(snap)


def replace(record: Any, **changes: Any) -> Any:
    """A copy of a frozen record with `changes` (already valid values)."""
    return msgspec.structs.replace(record, **changes)


# -- the wire format, defined once --------------------------------------------------------
# This node builds its snapshot from these names (agent/share/views.py checks every dict it
# builds against them), and peers parse it with the models above: a field added to one
# side and not the other fails at once, in any test that builds a snapshot.


def wire_names(model: type[Struct]) -> frozenset[str]:
    """The JSON names of a model's fields (renamed ones as on the wire)."""
    return frozenset(model.__struct_encode_fields__)


def list_bounds(model: type[Struct]) -> dict[str, int]:
    """Each list field of `model` (its JSON name) -> the most items peers take. What a
    node sends must pass its peers' validation whatever it holds: its snapshot's lists
    are cut to these (agent/share/views.py), from the same definitions."""
    return {f.encode_name: f.type.max_length
            for f in msgspec.inspect.type_info(model).fields  # type: ignore[attr-defined]
            if isinstance(f.type, msgspec.inspect.ListType) and f.type.max_length is not None}


#: each list of a snapshot by its place ("links.exo_instances") -> the most items peers take
LIST_BOUNDS = {
    **list_bounds(Snapshot),
    **{f"links.{k}": n for k, n in list_bounds(Link).items()},
    **{f"interfaces.{k}": n for k, n in list_bounds(Interface).items()},
}

#: a link's fields that stay in this node's own snapshot (local clients) and are not
#: streamed to peers: one probe's RTT moves every interval and nothing shows a peer's
#: (docs/design.md, "What a stream leaves out")
LOCAL_LINK_FIELDS = frozenset({"rtt_last_ms"})

#: what a node's own snapshot carries beyond the shared schema, for local clients (the
#: tray app, `exotray status`, scripts); peers ignore them (unknown fields are ignored).
#: `omitted`: what its lists left out to stay within `list_bounds` ({"links.exo_instances": 4})
LOCAL_SNAPSHOT_FIELDS = frozenset({"proto", "kernel_timestamps", "paused", "warnings",
                                   "counters", "exo", "omitted", "history"})

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
