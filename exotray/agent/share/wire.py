"""The stream sharing protocol's bytes (docs/design.md, "Stream sharing"): frames, the
numbers' display resolution, deltas, signatures, and the receiver's mirror of a peer's
snapshot that validates every part with the models of core/schema.py. Pure: no I/O, no
clock.

A frame is one ASCII header line, then its body:

    KIND SEQ LENGTH SIG\\n BODY

KIND is F (a full snapshot, exactly what /v1/snapshot's shared fields are) or D (a
delta); SEQ counts frames of one stream (the first frame is an F, each next one is
SEQ + 1); SIG is "-" or, with a cluster key, the hex HMAC-SHA256 over the stream id, the
subscriber's nonce, the header and the body's SHA-256 (so a frame replayed from another
stream, another subscriber or another place in this one is refused).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from exotray.agent.share import numbers as N
from exotray.core import schema
from exotray.core.schema import MAX_SNAPSHOT_BYTES, SnapshotRejected, dump, parse_snapshot

FULL, DELTA = b"F", b"D"
#: the stream's version, asked for by the follower (`v=`): 2 added RATES_OF and
#: hysteresis, 3 the tempo (a frame at least every HEARTBEAT intervals, not every one);
#: a producer answers 404 to a follower of another version, which polls it
VERSION = "3"
HEARTBEAT = N.HEARTBEAT
#: a header line longer than this is refused (KIND SEQ LENGTH and 64 hex digits fit)
MAX_HEADER = 160
#: a frame body over the snapshot cap is refused, as a polled snapshot would be
MAX_FRAME = MAX_SNAPSHOT_BYTES
#: the snapshot's top-level fields a stream carries (not data_age_s: each frame has it)
TOP = ("schema", "node", "interval_s")

#: reasons a frame is refused besides core/schema.py's REJECT_REASONS
FRAME_REASONS = (
    "truncated",  # the stream ended inside a frame
    "bad_frame",  # a malformed header line or delta structure
    "delta_before_full",  # a delta with no full snapshot before it
    "unknown_link",  # a delta for a link (or interface) the mirror does not have
    "bad_sequence",  # a frame out of sequence: replayed, reordered or missing
    "too_fast",  # more frames a second than any agent sends (share/stream.py FrameBudget)
)


class FrameError(ValueError):
    def __init__(self, reason: str, detail: str = "") -> None:
        assert reason in FRAME_REASONS or reason in schema.REJECT_REASONS, reason
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


# -- the sender: state, full frames, deltas ------------------------------------------------
State = tuple[dict, dict[str, dict], dict[str, dict]]  # top, links by id, interfaces by name

#: a link record's stream-only field: the interface whose rates are the link's ("lo", the
#: bridge member...) — then the link's own rates are not sent, the receiver copies them
RATES_OF = "rates_of"
_DERIVED = ("rx_bytes_per_s", "tx_bytes_per_s")
_LOCAL = schema.LOCAL_LINK_FIELDS


def _hold(rec: dict, last: dict | None) -> dict:
    out = dict(rec)
    for k in N.RESOLVED.intersection(rec):  # (the other fields go as they are)
        out[k] = N.quantize(k, rec[k]) if last is None else N.held(k, rec[k], last.get(k))
    return out


def split(snap: dict, last: State | None = None) -> State:
    """A node's own snapshot (views.snapshot) as the state a stream mirrors, `last` the
    state sent before: numbers through `held` against what was last sent; a link whose
    rates are exactly those of the interface carrying it (its member_interface, else its
    local_interface: views.link_dict takes them from there) names it in RATES_OF instead
    of repeating them, and every other link has RATES_OF None. The link fields kept for
    local clients (schema.LOCAL_LINK_FIELDS: one probe's RTT) are left out."""
    old_links, old_ifaces = (last[1], last[2]) if last is not None else ({}, {})
    ifaces = {i["name"]: _hold(i, old_ifaces.get(i["name"])) for i in snap["interfaces"]}
    raw = {i["name"]: i for i in snap["interfaces"]}
    links = {}
    for lk in snap["links"]:
        via = lk.get("member_interface") or lk.get("local_interface")
        src = raw.get(via) if isinstance(via, str) else None
        derived = src is not None and all(lk.get(f) == src.get(f) for f in _DERIVED)
        rec = {k: v for k, v in lk.items()
               if k not in _LOCAL and not (derived and k in _DERIVED)}
        rec[RATES_OF] = via if derived else None
        links[lk["id"]] = _hold(rec, old_links.get(lk["id"]))
    return {k: snap[k] for k in TOP}, links, ifaces


def encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()


def _filled(rec: dict, ifaces: dict[str, dict]) -> dict:
    """A link record of the state with its rates, as /v1/snapshot has them."""
    via = rec.get(RATES_OF)
    if via is None:
        return {k: v for k, v in rec.items() if k != RATES_OF}
    return {**rec, **{f: ifaces[via].get(f) for f in _DERIVED}}


def full_body(state: State, age: float) -> bytes:
    """An F frame's body: a whole snapshot, every link with its rates (a link naming its
    interface in RATES_OF keeps that field: the follower's deltas rely on it)."""
    top, links, ifaces = state
    return encode({**top, "data_age_s": round(max(0.0, age), 3),
                   "interfaces": list(ifaces.values()),
                   "links": [_filled(r, ifaces) for r in links.values()]})


def _records(old: dict[str, dict], new: dict[str, dict]) -> dict | None:
    add = [r for k, r in new.items() if k not in old]
    set_ = {}
    for k, r in new.items():
        if k in old:
            changed = {f: v for f, v in r.items() if old[k].get(f, v) != v or f not in old[k]}
            if changed:
                set_[k] = changed
    gone = [k for k in old if k not in new]
    out = {name: v for name, v in (("add", add), ("set", set_), ("del", gone)) if v}
    return out or None


def delta(old: State, new: State, age: float) -> dict:
    """What changed from `old` to `new` (records added, fields set, records removed),
    with the data's age; only {"age": …} when nothing moved."""
    out: dict[str, Any] = {"age": round(max(0.0, age), 3)}
    top = {k: v for k, v in new[0].items() if old[0].get(k) != v}
    if top:
        out["top"] = top
    if (links := _records(old[1], new[1])) is not None:
        out["links"] = links
    if (ifaces := _records(old[2], new[2])) is not None:
        out["interfaces"] = ifaces
    return out


def prompt(old: State, d: dict, own: float = 0.0, new: State | None = None) -> bool:
    """Whether delta `d` (from `old`, the state last sent, to `new`) holds a change that
    goes out at once; else it waits for the heartbeat (stream_numbers: the tempo; `own`,
    this agent's own traffic lately, bytes/s). A link naming its interface in RATES_OF,
    or no longer, is judged on the rates a follower shows for it (its own, or those of
    the interface it names), not on RATES_OF: a link whose rates part from its
    interface's by a byte (exo's RDMA counters) and come back shows the same numbers."""
    if d.get("top"):
        return True
    links = d.get("links")
    if links and new is not None and any(RATES_OF in f for f in links.get("set", {}).values()):
        sets = {}
        for k, fields in links["set"].items():
            if RATES_OF in fields:
                for f in _DERIVED:
                    if N.prompt(f, _shown(new[1][k], new[2], f), _shown(old[1][k], old[2], f),
                                own):
                        return True
                fields = {f: v for f, v in fields.items() if f != RATES_OF and f not in _DERIVED}
            sets[k] = fields
        links = {**links, "set": sets}
    return N.prompt_records(links, old[1], own) or N.prompt_records(d.get("interfaces"),
                                                                   old[2], own)


def _shown(rec: dict, ifaces: dict[str, dict], field: str) -> Any:
    """A link record's rate as a follower shows it (see `_filled`)."""
    via = rec.get(RATES_OF)
    return rec.get(field) if via is None else ifaces.get(via, {}).get(field)


# -- frames and signatures ---------------------------------------------------------------
def mac(key: bytes, stream_id: str, nonce: str, kind: bytes, seq: int, digest: bytes) -> str:
    msg = b"exotray-stream/1\n%s\n%s\n%s %d\n" % (stream_id.encode(), nonce.encode(),
                                                 kind, seq) + digest
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


def header(kind: bytes, seq: int, length: int, sig: str | None) -> bytes:
    return b"%s %d %d %s\n" % (kind, seq, length, (sig or "-").encode())


def parse_header(line: bytes) -> tuple[bytes, int, int, str]:
    """(kind, seq, length, sig) of a header line (without its newline)."""
    parts = line.split(b" ")
    if len(parts) != 4 or parts[0] not in (FULL, DELTA) or not parts[1].isdigit() \
            or not parts[2].isdigit() or len(parts[1]) > 18 or len(parts[2]) > 9:
        raise FrameError("bad_frame", repr(line[:40]))
    length = int(parts[2])
    if length > MAX_FRAME:
        raise FrameError("too_large", f"frame of {length} bytes > {MAX_FRAME}")
    return parts[0], int(parts[1]), length, parts[3].decode("ascii", "replace")


def signed(key: bytes, stream_id: str, nonce: str, kind: bytes, seq: int, body: bytes,
           sig: str) -> bool:
    want = mac(key, stream_id, nonce, kind, seq, hashlib.sha256(body).digest())
    return hmac.compare_digest(sig, want)


class FrameReader:
    """Frames from a byte stream's chunks; refuses a long header, an oversized frame and
    a stream that ends inside a frame. Holds at most one header and one frame."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, chunk: bytes) -> list[tuple[bytes, int, str, bytes, int]]:
        """Frames completed by `chunk`: (kind, seq, sig, body, wire bytes)."""
        self.buf += chunk
        out = []
        while True:
            nl = self.buf.find(b"\n", 0, MAX_HEADER + 1)
            if nl < 0:
                if len(self.buf) > MAX_HEADER:
                    raise FrameError("bad_frame", "header line too long")
                return out
            kind, seq, length, sig = parse_header(bytes(self.buf[:nl]))
            if len(self.buf) < nl + 1 + length:
                return out
            body = bytes(self.buf[nl + 1:nl + 1 + length])
            del self.buf[:nl + 1 + length]
            out.append((kind, seq, sig, body, nl + 1 + length))

    def end(self) -> None:
        if self.buf:
            raise FrameError("truncated", f"{len(self.buf)} bytes of an unfinished frame")


# -- the receiver: a peer's snapshot, rebuilt and validated ------------------------------
class Mirror:
    """One peer's snapshot as its stream describes it. `full()` and `delta()` return the
    new `schema.Snapshot`, or raise SnapshotRejected / FrameError and change nothing."""

    def __init__(self, own_id: str | None, expected_id: str | None) -> None:
        self.own_id = own_id
        self.expected_id = expected_id
        self.snap: schema.Snapshot | None = None
        self.top: dict = {}
        self.links: dict[str, dict] = {}
        self.link_objs: dict[str, schema.Link] = {}
        self.ifaces: dict[str, dict] = {}
        self.iface_objs: dict[str, schema.Interface] = {}

    def full(self, body: bytes) -> schema.Snapshot:
        snap = parse_snapshot(body, own_id=self.own_id, expected_id=self.expected_id)
        d = dump(snap)
        ifaces = {i["name"]: i for i in d["interfaces"]}
        links = {lk["id"]: lk for lk in d["links"]}
        for raw in schema.decode_object(body)["links"]:  # the links that name their rates
            if (via := _rates_of(raw.get(RATES_OF), ifaces, raw["id"])) is not None:
                links[raw["id"]][RATES_OF] = via
        self.top = {k: d[k] for k in TOP}
        self.links = links
        self.link_objs = {lk.id: lk for lk in snap.links}
        self.ifaces = {i["name"]: i for i in d["interfaces"]}
        self.iface_objs = {i.name: i for i in snap.interfaces}
        self.snap = snap
        return snap

    def delta(self, body: bytes) -> schema.Snapshot:
        if self.snap is None:
            raise FrameError("delta_before_full")
        obj = schema.decode_object(body)
        age = obj.get("age")
        if type(age) not in (int, float) or not 0 <= age <= 86400:
            raise SnapshotRejected("invalid", f"age: {age!r}"[:80])
        top = obj.get("top", {})
        if not isinstance(top, dict) or "schema" in top or (
                "node" in top and (not isinstance(top["node"], dict)
                                   or top["node"].get("id") != self.top["node"]["id"])):
            raise FrameError("bad_frame", "top: a stream cannot change its schema or node id")
        ifaces = self._records(obj.get("interfaces"), self.ifaces, self.iface_objs, "name",
                               schema.Interface, "interfaces", None)
        links = self._records(obj.get("links"), self.links, self.link_objs, "id",
                              schema.Link, "links", ifaces[0] if ifaces else self.ifaces)
        if ifaces is not None:  # links that take their rates from a changed interface
            links = _refill(links or (self.links, self.link_objs), ifaces[0])
        if not top and links is None and ifaces is None:
            snap = schema.replace(self.snap, data_age_s=float(age))
        else:
            new_top = {**self.top, **top}
            link_d, link_o = links or (self.links, self.link_objs)
            if_d, if_o = ifaces or (self.ifaces, self.iface_objs)
            snap = schema.validate(  # (the records are validated already, in C: kept)
                schema.Snapshot,
                {**new_top, "data_age_s": float(age), "interfaces": list(if_o.values()),
                 "links": list(link_o.values())}, "snapshot")
            self.top, self.links, self.link_objs = new_top, link_d, link_o
            self.ifaces, self.iface_objs = if_d, if_o
        self.snap = snap
        return snap

    @staticmethod
    def _records(part: Any, dicts: dict[str, dict], objs: dict[str, Any], key: str,
                 model: Any, where: str, ifaces: dict[str, dict] | None
                 ) -> tuple[dict, dict] | None:
        """The records after a delta's add / set / del, each changed one validated (a
        link naming its interface in RATES_OF with that interface's rates, from
        `ifaces`: the interfaces after this delta)."""
        if part is None:
            return None
        if not isinstance(part, dict) or not isinstance(part.get("add", []), list) \
                or not isinstance(part.get("set", {}), dict) \
                or not isinstance(part.get("del", []), list):
            raise FrameError("bad_frame", f"{where}: not add/set/del")
        d, o = dict(dicts), dict(objs)
        for k in part.get("del", []):
            if not isinstance(k, str) or k not in d:
                raise FrameError("unknown_link", f"{where}: delete {str(k)[:64]!r}")
            del d[k], o[k]
        changed: list[dict] = []
        for k, fields in part.get("set", {}).items():
            if k not in d:
                raise FrameError("unknown_link", f"{where}: change {k[:64]!r}")
            if not isinstance(fields, dict) or fields.get(key, k) != k:
                raise FrameError("bad_frame", f"{where}: change of {k[:64]!r}")
            changed.append({**d[k], **fields})
        for rec in part.get("add", []):
            if not isinstance(rec, dict):
                raise SnapshotRejected("invalid", f"{where}: add of a non-object")
            changed.append(rec)
        for rec in changed:
            via = None if ifaces is None else _rates_of(rec.get(RATES_OF), ifaces,
                                                         rec.get(key))
            if via is not None:
                rec = {**rec, **{f: ifaces[via][f] for f in _DERIVED}}  # type: ignore[index]
            obj = schema.validate(model, rec, where)
            k = getattr(obj, key)
            d[k], o[k] = dump(obj), obj
            if via is not None:
                d[k][RATES_OF] = via
        return d, o


def _rates_of(via: Any, ifaces: dict[str, dict], link: Any) -> str | None:
    """A link's RATES_OF, checked: None, or an interface the mirror has."""
    if via is not None and not isinstance(via, str):
        raise FrameError("bad_frame", f"link {str(link)[:64]!r}: {RATES_OF} {str(via)[:40]}")
    if via is not None and via not in ifaces:
        raise FrameError("unknown_link", f"link {str(link)[:64]!r}: {RATES_OF} an unknown "
                                         f"interface {via[:64]!r}")
    return via


def _refill(links: tuple[dict, dict], ifaces: dict[str, dict]) -> tuple[dict, dict]:
    """The links after their interfaces changed: each naming one in RATES_OF gets its
    (already validated) rates; one naming an interface that is gone is refused."""
    d, o = dict(links[0]), dict(links[1])
    for k, rec in links[0].items():
        if (via := _rates_of(rec.get(RATES_OF), ifaces, k)) is None:
            continue
        rates = {f: ifaces[via][f] for f in _DERIVED}
        if any(rec.get(f) != v for f, v in rates.items()):
            d[k], o[k] = {**rec, **rates}, schema.replace(o[k], **rates)
    return d, o
