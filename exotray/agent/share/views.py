"""Pure views: this node's snapshot, the cluster view and history, built from the parts'
current state. Reading changes nothing: no liveness update, no event, no I/O (liveness
moves on the probe tick only). The wire names come from core/schema.py (`on_wire`), the
same definitions peers parse with, and so do the bounds of its lists (`list_bounds`):
whatever this node holds (20 exo instances over a link, 300 container interfaces), what
it sends passes its peers' validation, and its `omitted` says what was left out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from exotray import PROTO, __version__
from exotray.agent.base import limits as L
from exotray.agent.hw.monitor import IfaceState, InterfaceMonitor
from exotray.agent.peers.links import Link, queue_reading
from exotray.agent.peers.table import Peer
from exotray.core import health, schema
from exotray.core.events import iso
from exotray.core.schema import SCHEMA_VERSION, dump, on_wire, r

if TYPE_CHECKING:
    from exotray.agent.exo.watch import ExoWatch
    from exotray.agent.peers.discovery import Discovery
    from exotray.agent.probe.udp import ProbeSocket


#: the most items each list takes, by its place in a snapshot ("links.exo_instances")
BOUNDS = schema.LIST_BOUNDS


#: this node's snapshot is kept this far under the size peers take: a stream's full frame
#: also names each link's interface (`rates_of`), and a poller gets the local fields
FIT_BYTES = schema.MAX_SNAPSHOT_BYTES * 15 // 16


def within(where: str, items: list, omitted: dict[str, int] | None) -> list:
    """`items` cut to what peers take at `where`; what was cut counted in `omitted`."""
    most = BOUNDS[where]
    if len(items) <= most:
        return items
    if omitted is not None:
        omitted[where] = omitted.get(where, 0) + len(items) - most
    return items[:most]


def _cut(kind: str, record: dict[str, Any], omitted: dict[str, int] | None) -> dict[str, Any]:
    for where in BOUNDS:
        if where.startswith(kind):
            name = where.partition(".")[2]
            record[name] = within(where, record[name], omitted)
    return record


def link_dict(link: Link, now: float, monitor: InterfaceMonitor,
              exo: ExoWatch | None = None,
              omitted: dict[str, int] | None = None) -> dict[str, Any]:
    s = link.rtt.summary(now)
    q = queue_reading(link, now)
    # the same numbers the detector and the history take (RDMA included where counted)
    rate, capacity, util, rdma, insts = (
        exo.numbers(link) if exo
        else (*monitor.numbers(link.local_interface, link.target[0]), None, []))
    rdma_enabled, rdma_ports = (
        exo.rdma_state(link.local_interface, insts, rdma,
                       monitor.carrier(link.local_interface, link.target[0]))
        if exo else (None, []))
    return _cut("links.", on_wire("link", {
        "id": link.id,
        "peer_id": link.peer.id,
        "peer_name": link.peer.name,
        "local_interface": link.local_interface,
        "local_label": monitor.label(link.local_interface),
        "member_interface": monitor.member(link.local_interface, link.target[0]),
        "peer_address": link.target[0],
        "peer_port": link.target[1],
        "state": link.state,
        "rtt_ms": r(s.median_ms),
        "rtt_min_ms": r(s.min_ms),
        "rtt_max_ms": r(s.max_ms),
        "rtt_p90_ms": r(s.p90_ms),
        "rtt_last_ms": r(s.last_ms),
        "jitter_ms": r(s.jitter_ms),
        "loss": r(s.loss),
        "rtt_baseline_ms": r(q.baseline_ms),
        "queue_delay_ms": r(q.queue_delay_ms),
        "rx_bytes_per_s": r(rate.rx_bytes_per_s, 1) if rate else None,
        "tx_bytes_per_s": r(rate.tx_bytes_per_s, 1) if rate else None,
        "capacity_bytes_per_s": capacity.bytes_per_s,
        "capacity_source": capacity.source,
        "utilization": r(util),
        "exo_instances": [i.wire() for i in insts],
        "rdma": rdma,
        "rdma_enabled": rdma_enabled,
        "rdma_ports": rdma_ports,
        "path_mtu": link.mtu.path_mtu,
        "mtu_ok": link.mtu.ok,
        **flow_fields(monitor, link.id),
    }), omitted)


def flow_fields(monitor: InterfaceMonitor, link_id: str) -> dict[str, Any]:
    """The link's own TCP bytes where they are read (hw/flows.py), else nulls."""
    own = monitor.flows.rate(link_id)
    return {"flow_rx_bytes_per_s": r(own.rx_bytes_per_s, 1) if own else None,
            "flow_tx_bytes_per_s": r(own.tx_bytes_per_s, 1) if own else None,
            "flow_source": monitor.flows.source(link_id)}


def iface_dict(st: IfaceState, monitor: InterfaceMonitor,
               omitted: dict[str, int] | None = None) -> dict[str, Any]:
    measured = monitor.measurement(st.name)
    speed, top = monitor.speed_of(st.name)
    hw = monitor.hardware.get(st.name)
    return _cut("interfaces.", on_wire("interface", {
        "name": st.name,
        "kind": st.kind,
        "label": st.label,
        "up": st.up,
        "addresses": list(st.addresses),
        "rx_bytes_per_s": r(st.rate.rx_bytes_per_s, 1) if st.rate else None,
        "tx_bytes_per_s": r(st.rate.tx_bytes_per_s, 1) if st.rate else None,
        "capacity_bytes_per_s": st.capacity.bytes_per_s,
        "capacity_source": st.capacity.source,
        "capacity_measured_at": iso(measured.at) if measured is not None else None,
        "speed_mbit": speed,
        "max_speed_mbit": top,
        "members": list(hw.members) if hw else [],
    }), omitted)


def iface_dicts(monitor: InterfaceMonitor, links: Iterable[Link] = (),
                omitted: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """This node's interfaces as its snapshot lists them (the vanished left out), by
    name. Beyond what peers take, those that carry `links` are kept first, then all
    but the virtual ones (a container host's veths), by name."""
    live = [st for st in monitor.ifaces.values() if st.vanished_at is None]
    if len(live) > BOUNDS["interfaces"]:
        carriers = {n for lk in links for n in (
            lk.local_interface, monitor.member(lk.local_interface, lk.target[0]))}
        live.sort(key=lambda s: (s.name not in carriers, s.kind == "virtual", s.name))
        live = within("interfaces", live, omitted)
    return [iface_dict(st, monitor, omitted) for st in sorted(live, key=lambda s: s.name)]


def node_dict(node_id: str, name: str) -> dict[str, Any]:
    return on_wire("node", {"id": node_id, "name": name, "version": __version__})


def snapshot(*, node_id: str, name: str, interval: float, now: float,
             last_sample: float | None, monitor: InterfaceMonitor, links: Iterable[Link],
             probe: ProbeSocket | None, platform: str, paused: bool,
             shared_counters: dict[str, int], exo: ExoWatch | None = None,
             local: bool = True, history: dict[str, Any] | None = None) -> dict[str, Any]:
    """This node's snapshot; for a client that is not `local` (not on loopback) the exo
    node's details are left out (its links' marks are all a LAN client gets of exo), and
    so is `history` (the history database's state: HistoryStore.status)."""
    links = list(links)
    omitted: dict[str, int] = {}
    counters = dict(shared_counters)
    if probe is not None:
        counters.update(probe.counters)
    for k, v in monitor.rates.rejected.items():
        counters[f"rates_rejected_{k}"] = v
    try:
        counters["asyncio_tasks"] = len(asyncio.all_tasks())
    except RuntimeError:  # no running loop (a test calling snapshot() directly)
        counters["asyncio_tasks"] = 0
    warnings = []
    nearby = [lk for lk in links if lk.path.onlink] or links
    if probe is not None and health.local_network_denied(
            platform, [probe.unreachable.get(lk.target, 0) for lk in nearby]):
        warnings.append(health.LOCAL_NETWORK_DENIED)
    return fit(on_wire("snapshot", {
        "schema": SCHEMA_VERSION,
        "node": node_dict(node_id, name),
        "proto": PROTO,
        "interval_s": interval,
        "data_age_s": round(now - last_sample, 3) if last_sample else 0.0,
        "interfaces": iface_dicts(monitor, links, omitted),
        "links": [link_dict(lk, now, monitor, exo, omitted)
                  for lk in within("links", links, omitted)],
        "kernel_timestamps": bool(probe and probe.kernel_timestamps),
        "paused": paused,
        # conditions of this node the user must fix, in words (local clients show them)
        "warnings": warnings,
        "counters": counters,
        # the local exo node as this agent reads it (None: --exo-url "")
        "exo": exo.status_dict(local) if exo else None,
        # what the lists above left out to stay within what peers take, by place
        "omitted": omitted,
        # the history database, for `exotray doctor` (local clients only)
        "history": history if local else None,
    }))


def fit(snap: dict[str, Any]) -> dict[str, Any]:
    """`snap` within FIT_BYTES of JSON, as peers take it: lists at their bounds together
    are more (1024 links, 256 interfaces of 64 IPv6 addresses). Beyond it records are
    left out (counted in its `omitted`): interfaces that carry no link, virtual ones
    first, then down links, then the last links, then the other interfaces."""
    over = len(msgspec.json.encode(snap)) - FIT_BYTES
    if over <= 0:
        return snap
    links, ifaces, omitted = snap["links"], snap["interfaces"], snap["omitted"]
    used = {lk[k] for lk in links for k in ("local_interface", "member_interface")}
    order = ([("interfaces", i) for i in sorted(ifaces[::-1], key=lambda i: i["kind"] != "virtual")
              if i["name"] not in used]
             + [("links", lk) for lk in sorted(links[::-1], key=lambda lk: lk["state"] != "down")]
             + [("interfaces", i) for i in ifaces[::-1] if i["name"] in used])
    gone: set[int] = set()
    for where, record in order:
        if over <= 0:
            break
        gone.add(id(record))
        over -= len(msgspec.json.encode(record)) + 1
        omitted[where] = omitted.get(where, 0) + 1
    snap["links"] = [lk for lk in links if id(lk) not in gone]
    snap["interfaces"] = [i for i in ifaces if id(i) not in gone]
    return snap


def cluster(*, node_id: str, own: dict[str, Any], authenticated: bool,
            peers: Iterable[Peer], now: float, discovery: dict[str, Any],
            sharing: tuple[str, Callable[[Peer], str | None]] | None = None,
            local: bool = True) -> dict[str, Any]:
    """This node's snapshot first, then every peer's latest valid one, each with its age
    on our clock (the sender says how old its data was). `sharing`: our protocol, and
    the one each peer speaks to us (never a silent half-view in a mixed cluster).

    Bounded whatever peers send: a peer's node shows at most MAX_CLUSTER_LINKS_PER_NODE
    links and MAX_CLUSTER_IFACES_PER_NODE interfaces (`truncated` counts the rest). A
    client that is not `local` (not on loopback) does not get `last_error`: what went
    wrong talking to other hosts (refused, timed out...) would make us a port scanner's
    oracle."""
    peers = list(peers)
    nodes = [{**own, "age_s": own["data_age_s"], "reachable": True,
              "authenticated": authenticated}]
    for p in peers:
        if p.snapshot is None or p.snapshot_at is None:
            continue
        age = (now - p.snapshot_at) + p.snapshot.data_age_s
        node = dump(p.snapshot)
        cut = (max(0, len(node["links"]) - L.MAX_CLUSTER_LINKS_PER_NODE)
               + max(0, len(node["interfaces"]) - L.MAX_CLUSTER_IFACES_PER_NODE))
        if cut:
            node["links"] = node["links"][:L.MAX_CLUSTER_LINKS_PER_NODE]
            node["interfaces"] = node["interfaces"][:L.MAX_CLUSTER_IFACES_PER_NODE]
            node["truncated"] = cut
        nodes.append(
            {
                **node,
                "age_s": round(age, 3),
                "reachable": p.reachable,
                "authenticated": p.authenticated,
            }
        )
    table = [
        {
            "key": p.key,
            "id": p.id,
            "name": p.name,
            "sources": sorted(p.sources),
            "addresses": [f"{a}:{port}" for a, port in p.addresses],
            "up": p.was_up,
            "reachable": p.reachable,
            "authenticated": p.authenticated,
            "last_error": p.last_error if local else None,
            "sharing": sharing[1](p) if sharing else None,
        }
        for p in peers
    ]
    return {"self": node_id, "sharing": sharing[0] if sharing else None, "nodes": nodes,
            "peers": table, "discovery": discovery}


def discovery(mdns: bool, d: Discovery | None) -> dict[str, Any]:
    """What mDNS is doing, for `exotray status`."""
    return {
        "mdns": mdns,
        "addresses": list(d.addresses) if d else [],
        "problem": d.problem if d else None,
        "ignored": [vars(i).copy() for i in d.ignored] if d else [],
    }


def history(*, links: Iterable[Link], ifaces: dict[str, IfaceState], link_id: str | None,
            iface: str | None, since: float, interval: float) -> dict | None:
    if link_id is not None:
        for lk in links:
            if lk.id == link_id:
                return {"link": link_id, "interval_s": interval, **lk.history.since(since)}
        return None
    if iface is not None and iface in ifaces:
        return {"interface": iface, "interval_s": interval,
                **ifaces[iface].history.since(since)}
    return None


def interfaces(monitor: InterfaceMonitor, links: Iterable[Link]) -> dict[str, Any]:
    """What the agent knows of each local interface, and why (`exotray interfaces`): the
    user's first look when a number seems wrong."""
    carried: dict[str, list[dict[str, Any]]] = {}
    for lk in links:
        member = monitor.member(lk.local_interface, lk.target[0])
        via = member or lk.local_interface
        if via is not None:
            carried.setdefault(via, []).append({
                "link_id": lk.id, "peer": lk.peer.name or lk.target[0],
                "peer_address": lk.target[0], "local_interface": lk.local_interface,
                "member_interface": member})
    out = []
    for st in sorted(monitor.ifaces.values(), key=lambda s: s.name):
        if st.vanished_at is not None:
            continue
        hw = monitor.hardware.get(st.name)
        nic = monitor.nics.get(st.name)
        speed, top = monitor.speed_of(st.name)
        raw = monitor.raw_counters.get(st.name)
        measured = monitor.measurement(st.name)
        out.append({
            "name": st.name, "kind": st.kind, "label": st.label, "up": st.up,
            "addresses": list(st.addresses),
            "members": list(hw.members) if hw else [],
            "bridge": bool(hw and hw.bridge),
            "speed_mbit": speed, "max_speed_mbit": top,
            "speed_source": ("psutil" if nic and nic.speed_mbit
                             else hw.source if hw and hw.speed_mbit else None),
            "phy_rate": bool(hw and hw.phy_rate),
            "degraded_at_mbit": monitor.hardware.degraded.get(st.name),
            "capacity_bytes_per_s": st.capacity.bytes_per_s,
            "capacity_source": st.capacity.source,
            "capacity_measured_at": iso(measured.at) if measured else None,
            "rx_bytes_per_s": r(st.rate.rx_bytes_per_s, 1) if st.rate else None,
            "tx_bytes_per_s": r(st.rate.tx_bytes_per_s, 1) if st.rate else None,
            "counters": {"rx_bytes": raw[0], "tx_bytes": raw[1]} if raw else None,
            "links": carried.get(st.name, []),
            # its carrier's downs and ups in the last hour (link_flapping's count)
            "carrier_changes_1h": monitor.carrier_changes(st),
        })
    return {"interfaces": out}
