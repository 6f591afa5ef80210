"""How often each link is probed and judged: as often as it needs (issue 11's CPU).

A link at rest — up, answering every probe, its interface idle, its RTT at its baseline,
its detector quiet — needs one RTT sample an interval and one judgement an interval
(both on the agent's full tick, ticking.py). A link whose state is in question needs all
of them: `probes_per_interval` probes and a judgement at every quarter-interval tick.

In question (probed at the full rate) while any of these holds:
* it is not up, or has never answered (the unanswered ones stay rate-limited: probe/prober.py);
* a probe of it is unanswered after a tick, twice its last RTT and the time the peer
  holds a request (`Link.hold_s`; a peer stopping: liveness must see two losses within
  its 2.5 intervals), or was lost since the last reply, or within the RTT window (loss
  is then measured on the full rate's samples);
* its on-link path is being searched (hw/onlink.py probes through each candidate);
* it is busy (`busy`, set by its judgement, held for the RTT window): its interface
  carries traffic (beyond this agent's own probes and sharing, `OwnTraffic`: else a hub
  with many peers, or agents sharing a loopback, would keep themselves busy), its
  utilization is a fraction of the threshold, its detector is
  saturated or counting towards it, its queueing delay is unknown (too few probes yet,
  no baseline, loss) or not clearly low (half the bound that raises saturation), or its
  last RTT is above its baseline by that bound.

Judged at every tick (not only the full one) while busy or while its interface's rate
says it may be (`may_be_busy`: the same traffic bounds, checked on the counters every
tick), so saturation is seen within a quarter interval as before. Pure functions of the
link's state and the numbers given; no clock of their own.
"""

from __future__ import annotations

from collections import deque

from exotray.agent.peers.links import Link
from exotray.agent.probe.pressure import HOLD_TICK_MAX_S
from exotray.core.queueing import QueueParams, QueueReading
from exotray.core.stats import Rate

#: an interface carrying at least this fraction of the queueing "carrying" bound
#: (core/queueing.py, 1 Mbit/s: below it the queueing cause cannot fire) beyond our own
#: traffic makes its links busy: probed and judged at the full rate
CARRYING_FRACTION = 1.0
_CARRYING = QueueParams().carrying_bytes_per_s
#: a utilization at least this fraction of the saturation threshold makes a link busy
UTILIZATION_FRACTION = 0.25


#: updates (full ticks: intervals) OwnTraffic.peak looks back over: one more than the
#: stream's heartbeat (stream_numbers.HEARTBEAT), so a frame's burst is always in it
PEAK_INTERVALS = 6
#: bytes on the wire per probe datagram (40 B + UDP/IPv4 + Ethernet), and per stream
#: frame beyond its bytes (TCP/IPv4/Ethernet headers of the frame and of its ACK)
DATAGRAM_BYTES = 82
FRAME_OVERHEAD_BYTES = 140
#: a large frame is several TCP segments: 66 B of headers per 1448 B of payload
SEGMENT_FACTOR = 1 + 66 / 1448


class OwnTraffic:
    """What this agent itself sends and receives a second — probes, reflections, the
    sharing streams — from its counters, all interfaces together (an upper bound of its
    share of any one interface's rx or tx)."""

    def __init__(self) -> None:
        self.bytes_per_s = 0.0
        self._last: tuple[float, float] | None = None
        self._recent: deque[float] = deque(maxlen=PEAK_INTERVALS)
        #: stream_frames_built at the last update, and the frames queued for subscribers
        #: since the first (each interval's new frames times the subscribers then: not
        #: every frame since the start times today's subscribers, which jumped by all of
        #: them when a follower came)
        self._built: int | None = None
        self._frames_out = 0

    @property
    def peak(self) -> float:
        """The most of the last PEAK_INTERVALS updates (intervals): what the stream's
        tempo takes as this agent's own share of a rate's moves (a frame to many
        followers is a burst in one interval, gone in the next)."""
        return max(self._recent, default=self.bytes_per_s)

    @staticmethod
    def total(probe: dict[str, int], sharing: dict[str, int], frames_out: int) -> float:
        datagrams = (probe.get("probes_sent", 0) + probe.get("replies_received", 0)
                     + 2 * probe.get("requests_reflected", 0))
        frames = sharing.get("stream_frames_in", 0) + frames_out
        payload = sharing.get("stream_bytes_in", 0) + sharing.get("stream_bytes_out", 0)
        return (DATAGRAM_BYTES * datagrams + FRAME_OVERHEAD_BYTES * frames
                + payload * SEGMENT_FACTOR)

    def update(self, now: float, probe: dict[str, int], sharing: dict[str, int]) -> None:
        built = sharing.get("stream_frames_built", 0)
        if self._built is not None:
            self._frames_out += max(0, built - self._built) * max(
                1, sharing.get("stream_subscribers", 0))
        self._built = built
        total = self.total(probe, sharing, self._frames_out)
        if self._last is not None and now > self._last[0]:
            self.bytes_per_s = max(0.0, (total - self._last[1]) / (now - self._last[0]))
            self._recent.append(self.bytes_per_s)
        self._last = (now, total)


def may_be_busy(link: Link, rate: Rate | None, util: float | None,
                own_bytes_per_s: float = 0.0) -> bool:
    """From the interface's numbers alone (cheap: every tick): traffic worth a look."""
    if rate is not None and max(rate.rx_bytes_per_s, rate.tx_bytes_per_s) - own_bytes_per_s >= (
            CARRYING_FRACTION * link.queue.params.carrying_bytes_per_s):
        return True
    return util is not None and util >= UTILIZATION_FRACTION * link.detector.params.threshold


def iface_may_be_busy(rate: Rate | None, capacity_bytes_per_s: float | None,
                      own_bytes_per_s: float, threshold: float) -> bool:
    """`may_be_busy` for every link of one interface at once (the same bounds, the
    queueing cause's default `carrying` bound)."""
    if rate is None:
        return False
    top = max(rate.rx_bytes_per_s, rate.tx_bytes_per_s)
    if top - own_bytes_per_s >= CARRYING_FRACTION * _CARRYING:
        return True
    return bool(capacity_bytes_per_s) and (
        top / capacity_bytes_per_s >= UTILIZATION_FRACTION * threshold)  # type: ignore[operator]


def busy(link: Link, rate: Rate | None, util: float | None, reading: QueueReading,
         own_bytes_per_s: float = 0.0) -> bool:
    """After a judgement: whether the link's state is in question (see the module's
    docstring); `reading` is its queue reading at the judgement's time."""
    if may_be_busy(link, rate, util, own_bytes_per_s):
        return True
    d = link.detector
    if d.saturated or d.pending:
        return True
    if reading.unknown is not None:  # too few probes yet, no baseline, or loss
        return True
    bound = link.queue.bound_ms(reading.baseline_ms)
    if bound is None:
        return False
    low = link.queue.params.low_fraction * bound
    if reading.queue_delay_ms is not None and reading.queue_delay_ms >= low:
        return True
    # one probe as far above the baseline as a saturating queue (one late wake-up of
    # a busy host is less: kernel timestamps keep most of it out of the RTT)
    last = link.rtt.last_ms
    return last is not None and reading.baseline_ms is not None and (
        last - reading.baseline_ms >= bound)


def mark(link: Link, now: float, is_busy: bool) -> None:
    """Hold a busy link at the full rate for the RTT window (its loss, median and
    jitter are then of full-rate samples)."""
    if is_busy:
        link.busy_until = max(link.busy_until, now + link.rtt.window_s)


#: Link.hold_s follows a peer's hold up at once, and down by this factor a reply
HOLD_DECAY = 0.9
#: a reply is overdue this long after its RTT and the peer's hold (timer jitter)
HOLD_MARGIN_S = 0.02


def full_rate(link: Link, now: float, last_sent: float | None) -> bool:
    """Whether `link` is probed at every tick (else once an interval, on the full tick)."""
    if not link.up or link.last_reply is None or link.lost_since_reply:
        return True
    if link.busy_until > now or link.path.searching:
        return True
    # a probe out and not answered by the next tick (nor within twice the last RTT: a
    # far peer's replies take longer than a quarter interval; nor within the time the
    # peer holds a request: one that reads its socket at its ticks holds it up to one)
    if last_sent is None or (link.answered_sent is not None
                             and link.answered_sent >= last_sent):
        return False
    # (at most a tick's hold: a longer one was a peer's stall, and would delay "down")
    hold = min(link.hold_s, HOLD_TICK_MAX_S) + HOLD_MARGIN_S if link.hold_s else 0.0
    return now - last_sent >= 2 * (link.rtt.last_ms or 0.0) / 1000 + hold
