"""Whether this node's stream needs its state built this interval (issue 11's CPU).

The producer (share/serve.py) sends a frame only for a prompt change or at the
heartbeat (share/numbers.py: the tempo). Building the state to find out — this node's
whole snapshot, every number held against what subscribers have — costs 2.6 ms an
interval at 64 links (bench/stream_turn.py), for a frame that goes out one interval in
five. `Watch.moved` says, from what the agent already holds, whether a prompt change
*may* be in it (0.8 ms at 64 links): the producer builds then, and at every heartbeat;
between, nothing is built.

It answers yes for
* an event emitted since the last build (a link up or down, saturated or cleared, a
  peer come or gone);
* a link or interface that came or went, a node name or interval that changed;
* a link's state, peer, names, interface (or bridge cable) or address unlike what was
  sent; its capacity, utilization, rates, own bytes, RTT median, queueing delay or loss moved
  promptly (stream_numbers.prompt, the same rules as the frame's) from what was sent;
  a window's spread or its baseline become known or unknown (their moves never are
  prompt);
* an interface's field unlike what was sent, by the same rules (rates, capacity, up,
  addresses...);
* exo running, or running at the last build (its instances and RDMA counters move
  links' fields, and go when it stops: always built, as before).

A yes that finds nothing prompt only costs the build it saves otherwise; a missed
prompt change would wait at most HEARTBEAT intervals: the next heartbeat is built
whatever this says.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from typing import Any

from exotray.agent.peers.links import Link, queue_reading
from exotray.agent.share import numbers as N
from exotray.agent.share import wire as W
from exotray.core.schema import r

#: a link's fields compared as they are (a change is prompt)
_EXACT = ("state", "peer_id", "peer_name", "local_interface", "local_label",
          "member_interface", "peer_address", "peer_port", "path_mtu", "mtu_ok")
#: a link's fields compared with the tempo's rules: its carrier's numbers...
_CARRIER = ("capacity_bytes_per_s", "capacity_source", "utilization", "rx_bytes_per_s",
            "tx_bytes_per_s")
#: ... and its RTT window's and queue's
_RTT = ("rtt_ms", "loss", "queue_delay_ms", "rtt_min_ms", "rtt_max_ms", "rtt_p90_ms",
        "jitter_ms", "rtt_baseline_ms")
#: ... and its own bytes (hw/flows.py: views.flow_fields)
_FLOW = ("flow_rx_bytes_per_s", "flow_tx_bytes_per_s", "flow_source")
_NO_FLOW = dict.fromkeys(_FLOW)
_SPREAD = ("rtt_min_ms", "rtt_max_ms", "rtt_p90_ms", "jitter_ms", "rtt_baseline_ms")
assert set(_SPREAD) == N.SPREAD and set(_SPREAD) < set(_RTT)
_sent_exact = operator.itemgetter(*_EXACT)  # (a link record in the state has them all)
_sent_spread = operator.itemgetter(*_SPREAD)
#: a link's fields only exo moves (exo running: always built)
EXO_FIELDS = frozenset({"exo_instances", "rdma", "rdma_enabled", "rdma_ports"})
#: every link field the watch compares (tests/unit/test_stream_watch.py: with "id",
#: EXO_FIELDS and the fields not streamed, every field of a link record)
CHECKED = frozenset(_EXACT + _CARRIER + _RTT + _FLOW)


class Watch:
    """What a link or interface record would hold now, compared with the state the
    subscribers have (W.State, the producer's)."""

    def __init__(self, *, links: Callable[[], Iterable[Link]],
                 ifaces: Callable[[], list[dict[str, Any]]],
                 member: Callable[[str | None, str | None], str | None],
                 label: Callable[[str | None], str | None],
                 numbers: Callable[[str | None, str | None], tuple],
                 top: Callable[[], dict[str, Any]], events: Callable[[], int],
                 exo_running: Callable[[], bool], own: Callable[[], float],
                 now: Callable[[], float],
                 flows: Callable[[str], dict[str, Any]] = lambda _: _NO_FLOW) -> None:
        self._links, self._ifaces, self._member, self._top = links, ifaces, member, top
        self._numbers, self._label = numbers, label
        self._events, self._exo, self._own, self._now = events, exo_running, own, now
        self._flows = flows
        #: events emitted, and whether exo ran, when the state was last built
        self._events_at_build: int | None = None
        self._exo_at_build = True

    def built(self) -> None:
        """The producer built its state (sent or not): events before now are in it."""
        self._events_at_build = self._events()
        self._exo_at_build = self._exo()

    def moved(self, state: W.State) -> bool:
        """Whether a prompt change may be in this node's state against `state` (what
        the subscribers have)."""
        if self._exo() or self._exo_at_build or self._events() != self._events_at_build:
            return True  # (exo running, or stopped since: its fields go or went)
        top, sent_links, sent_ifaces = state
        if any(top.get(k) != v for k, v in self._top().items()):
            return True
        own = self._own()
        ifaces = self._ifaces()
        if len(ifaces) != len(sent_ifaces) or any(
                _iface_moved(i, sent_ifaces.get(i["name"]), own) for i in ifaces):
            return True
        now = self._now()
        n = 0
        numbers: dict[tuple, tuple] = {}  # (interface, bridge cable) -> its numbers
        for link in self._links():
            n += 1
            sent = sent_links.get(link.id)
            if sent is None or self._link_moved(
                    link, sent, now, own, numbers):
                return True
        return n != len(sent_links)

    def _link_moved(self, link: Link, sent: dict[str, Any], now: float, own: float,
                    numbers: dict[tuple, tuple]) -> bool:
        addr, port = link.target
        member = self._member(link.local_interface, addr)
        if _sent_exact(sent) != (link.state, link.peer.id, link.peer.name,
                                 link.local_interface, self._label(link.local_interface),
                                 member, addr, port, link.mtu.path_mtu, link.mtu.ok):
            return True
        # a link's rates, capacity and utilization are those of the interface (or bridge
        # cable) that carries it (views.link_dict): read once per carrier
        key = (link.local_interface, member)
        if key not in numbers:
            numbers[key] = self._numbers(link.local_interface, addr)
        rate, capacity, util = numbers[key]
        if (sent.get("capacity_source") != capacity.source
                or _prompt("capacity_bytes_per_s", capacity.bytes_per_s, sent)
                or _prompt("utilization", r(util), sent, own,
                           sent.get("capacity_bytes_per_s"))):
            return True
        if sent.get(W.RATES_OF) is None and (  # else: the interface's, checked above
                _prompt("rx_bytes_per_s", r(rate.rx_bytes_per_s, 1) if rate else None,
                        sent, own)
                or _prompt("tx_bytes_per_s", r(rate.tx_bytes_per_s, 1) if rate else None,
                           sent, own)):
            return True
        flow = self._flows(link.id)
        if (sent.get("flow_source") != flow["flow_source"]
                or _prompt("flow_rx_bytes_per_s", flow["flow_rx_bytes_per_s"], sent, own)
                or _prompt("flow_tx_bytes_per_s", flow["flow_tx_bytes_per_s"], sent, own)):
            return True
        s = link.rtt.summary(now)  # (cached: the history row read it at this tick's `now`)
        q = queue_reading(link, now)
        if (_prompt("rtt_ms", r(s.median_ms), sent) or _prompt("loss", r(s.loss), sent)
                or _prompt("queue_delay_ms", r(q.queue_delay_ms), sent)):
            return True
        # a window's spread and the baseline are prompt only when they become known or
        # unknown (stream_numbers.prompt: N.SPREAD)
        spread = (s.min_ms, s.max_ms, s.p90_ms, s.jitter_ms, q.baseline_ms)
        return any((v is None) != (last is None)
                   for v, last in zip(spread, _sent_spread(sent), strict=True))


def _prompt(field: str, value: Any, sent: dict[str, Any], own: float = 0.0,
            capacity: Any = None) -> bool:
    """As the frame would judge it: the value held against what was sent (at its
    display resolution, with its hysteresis: stream_numbers.held), then the tempo's
    rule."""
    last = sent.get(field)
    return N.prompt(field, N.held(field, value, last), last, own, capacity)


def _iface_moved(new: dict[str, Any], sent: dict[str, Any] | None, own: float) -> bool:
    if sent is None:
        return True
    cap = sent.get("capacity_bytes_per_s")  # (as stream_numbers.prompt_records)
    return any(f not in sent or (v != sent[f] and _prompt(f, v, sent, own, cap))
               for f, v in new.items())
