"""GET /metrics: the agent's measurements in the Prometheus text format.

Produced with the official client library: a custom collector builds the metric
families from the agent's state at scrape time (no background work, no hand-written
exposition). Base units: seconds, bytes, ratios; counters end in _total.

A link's series are labelled by its peer's node id, never by its name: a peer names
itself, and one renaming itself at every frame made a new series at every scrape (issue
33 point 11). The name is in `exotray_peer_info`, one series per peer with its current
name only; PromQL joins it where a name is wanted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from exotray import PROTO, __version__
from exotray.core.events import EVENT_TYPES

if TYPE_CHECKING:
    from exotray.agent.hw.monitor import InterfaceMonitor
    from exotray.agent.peers.links import Link, Target
    from exotray.agent.peers.table import Peer
    from exotray.agent.probe.udp import ProbeSocket
    from exotray.agent.share.poll import Sharing
    from exotray.core.events import EventLog
    from exotray.core.settings import Settings


class Source(Protocol):
    """What /metrics reads of the agent (runtime.Agent is one)."""

    settings: Settings
    node_id: str
    events: EventLog
    probe: ProbeSocket | None
    monitor: InterfaceMonitor
    sharing: Sharing
    links: dict[Target, Link]
    peers: dict[str, Peer]

    def clock(self) -> float: ...
    def link_dict(self, link: Link, now: float) -> dict: ...

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: `peer_id` is "" until the peer has said its id (a manual peer before its first snapshot)
LINK_LABELS = ["node", "peer_id", "peer_address", "interface", "kind"]


class AgentCollector(Collector):
    def __init__(self, agent: Source) -> None:
        self.agent = agent

    def collect(self) -> Iterator[Metric]:
        a = self.agent
        node = a.settings.name
        yield InfoMetricFamily("exotray_build", "exotray agent build information",
                               value={"version": __version__, "proto": str(PROTO),
                                      "node": node, "node_id": a.node_id})
        yield from self._peers(node)
        yield from self._links(node)
        yield from self._interfaces(node)
        yield from self._counters(node)

    def _peers(self, node: str) -> Iterator[Metric]:
        """Each identified peer's current name, by its node id: a rename replaces its
        series (one per peer in the table, base/limits.py MAX_PEERS)."""
        info = InfoMetricFamily("exotray_peer", "A peer's current name, by its node id",
                                labels=["node", "peer_id"])
        names = {p.id: p.name for p in self.agent.peers.values() if p.id is not None}
        for pid, name in sorted(names.items()):
            info.add_metric([node, pid], {"peer_name": name or ""})
        yield info

    def _links(self, node: str) -> Iterator[Metric]:
        """Each link's RTT, jitter, loss, state and load, labelled with its peer's id and
        address and the interface that carries it."""
        a = self.agent
        rtt = {stat: GaugeMetricFamily(f"exotray_link_rtt_{stat}_seconds",
                                       f"Round-trip time {label} over the probe window",
                                       labels=LINK_LABELS)
               for stat, label in (("median", "median"), ("min", "minimum"),
                                   ("max", "maximum"), ("p90", "90th percentile"))}
        jitter = GaugeMetricFamily("exotray_link_jitter_seconds",
                                   "RTT jitter (RFC 3550 estimator)", labels=LINK_LABELS)
        loss = GaugeMetricFamily("exotray_link_loss_ratio",
                                 "Fraction of probes lost over the window", labels=LINK_LABELS)
        up = GaugeMetricFamily("exotray_link_up", "1 when the link answers probes",
                               labels=LINK_LABELS)
        sat = GaugeMetricFamily("exotray_link_saturated",
                                "1 while the link is saturated", labels=LINK_LABELS)
        util = GaugeMetricFamily("exotray_link_utilization_ratio",
                                 "max(rx, tx) / capacity of the carrying interface",
                                 labels=LINK_LABELS)
        base = GaugeMetricFamily("exotray_link_rtt_baseline_seconds",
                                 "The path's idle RTT (low percentile over 10 minutes)",
                                 labels=LINK_LABELS)
        queue = GaugeMetricFamily("exotray_link_queue_delay_seconds",
                                  "Recent median RTT above the baseline (absent when unknown)",
                                  labels=LINK_LABELS)
        own = {"receive": GaugeMetricFamily(
                   "exotray_link_flow_receive_bytes_per_second",
                   "The link's own TCP bytes received a second, where its interface is "
                   "shared (absent when not read)", labels=LINK_LABELS),
               "transmit": GaugeMetricFamily(
                   "exotray_link_flow_transmit_bytes_per_second",
                   "The link's own TCP bytes sent a second, where its interface is shared "
                   "(absent when not read)", labels=LINK_LABELS)}
        now = a.clock()
        for link in a.links.values():
            d = a.link_dict(link, now)
            iface = d["local_interface"] or ""
            ifaces = a.monitor.ifaces
            kind = ifaces[iface].kind if iface in ifaces else ""
            labels = [node, d["peer_id"] or "", d["peer_address"], iface, kind]
            for stat, key in (("median", "rtt_ms"), ("min", "rtt_min_ms"),
                              ("max", "rtt_max_ms"), ("p90", "rtt_p90_ms")):
                if d[key] is not None:
                    rtt[stat].add_metric(labels, d[key] / 1000.0)
            if d["jitter_ms"] is not None:
                jitter.add_metric(labels, d["jitter_ms"] / 1000.0)
            if d["loss"] is not None:
                loss.add_metric(labels, d["loss"])
            up.add_metric(labels, 0.0 if d["state"] == "down" else 1.0)
            sat.add_metric(labels, 1.0 if d["state"] == "saturated" else 0.0)
            if d["utilization"] is not None:
                util.add_metric(labels, d["utilization"])
            for family, key in ((base, "rtt_baseline_ms"), (queue, "queue_delay_ms")):
                if d[key] is not None:
                    family.add_metric(labels, d[key] / 1000.0)
            for family, key in ((own["receive"], "flow_rx_bytes_per_s"),
                                (own["transmit"], "flow_tx_bytes_per_s")):
                if d[key] is not None:
                    family.add_metric(labels, d[key])
        yield from rtt.values()
        yield from (jitter, loss, up, sat, util, base, queue, *own.values())

    def _interfaces(self, node: str) -> Iterator[Metric]:
        """Each present interface's kernel byte counters and its capacity."""
        a = self.agent
        iface_labels = ["node", "interface", "kind"]
        rx = CounterMetricFamily("exotray_interface_receive_bytes",
                                 "Bytes received, as the kernel counts them", labels=iface_labels)
        tx = CounterMetricFamily("exotray_interface_transmit_bytes",
                                 "Bytes sent, as the kernel counts them", labels=iface_labels)
        cap = GaugeMetricFamily("exotray_interface_capacity_bytes_per_second",
                                "Capacity of the interface (absent when unknown)",
                                labels=[*iface_labels, "source"])
        for name, st in sorted(a.monitor.ifaces.items()):
            if st.vanished_at is not None:
                continue
            labels = [node, name, st.kind]
            raw = a.monitor.raw_counters.get(name)
            if raw is not None:
                rx.add_metric(labels, float(raw[0]))
                tx.add_metric(labels, float(raw[1]))
            if st.capacity.bytes_per_s is not None:
                cap.add_metric([*labels, st.capacity.source], st.capacity.bytes_per_s)
        yield from (rx, tx, cap)

    def _counters(self, node: str) -> Iterator[Metric]:
        """What the agent counted: events by type, probe datagrams by outcome, peers'
        snapshots dropped by reason."""
        a = self.agent
        events = CounterMetricFamily("exotray_events", "Events raised, by type",
                                     labels=["node", "type"])
        for t in EVENT_TYPES:
            events.add_metric([node, t], float(a.events.counts.get(t, 0)))
        yield events
        probes = CounterMetricFamily("exotray_probe_datagrams",
                                     "Probe socket datagrams, by outcome",
                                     labels=["node", "outcome"])
        if a.probe is not None:
            for k, v in sorted(a.probe.counters.items()):
                probes.add_metric([node, k], float(v))
        yield probes
        rejected = CounterMetricFamily("exotray_snapshots_rejected",
                                       "Peers' snapshots dropped, by reason",
                                       labels=["node", "reason"])
        for reason, n in sorted(a.sharing.rejections.items()):
            rejected.add_metric([node, reason], float(n))
        yield rejected


def registry_for(agent: Source) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AgentCollector(agent))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
