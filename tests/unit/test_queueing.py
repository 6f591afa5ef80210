"""Baseline RTT, queueing delay and saturation by queueing (core/queueing.py, the
queueing cause of core/saturation.py, and how a link re-learns in agent/peers/links.py).

Probes are fed as the agent feeds them: 4 a second, `at` = send time; the clock is the
numbers given, nothing sleeps.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from exotray.agent.peers import links as linkstats
from exotray.core.queueing import (
    LOSS,
    TOO_FEW_PROBES,
    QueueParams,
    QueueReading,
    QueueTracker,
)
from exotray.core.saturation import SaturationDetector, SaturationParams
from exotray.core.stats import Rate

IDLE = 0.06  # ms: the lab's veth pair
LOADED = 170.0  # ms: through a saturated 50 Mbit/s hop with a deep buffer
STEP = 0.25  # 4 probes a second


def feed(q: QueueTracker, start: float, seconds: float, rtt, lost_every: int = 0) -> float:
    """Probes from `start` for `seconds`; `rtt` is a number or f(i); returns the end."""
    n = round(seconds / STEP)
    for i in range(n):
        at = start + i * STEP
        if lost_every and i % lost_every == 0:
            q.lost(at)
        else:
            q.reply(at, rtt(i) if callable(rtt) else rtt)
    return start + n * STEP


def test_idle_path_baseline_and_zero_queue():
    q = QueueTracker()
    end = feed(q, 0.0, 20, lambda i: IDLE + 0.01 * (i % 3))
    rd = q.reading(end)
    assert rd.baseline_ms == pytest.approx(IDLE, abs=0.005)
    assert rd.queue_delay_ms is not None and rd.queue_delay_ms < 0.02
    assert rd.unknown is None and rd.replies == 8


def test_queue_forming_on_a_known_baseline_is_seen_within_the_recent_window():
    q = QueueTracker()
    t = feed(q, 0.0, 30, IDLE)
    t = feed(q, t, 2.0, LOADED)
    rd = q.reading(t)
    assert rd.baseline_ms == pytest.approx(IDLE)
    assert rd.queue_delay_ms == pytest.approx(LOADED - IDLE)


def test_start_under_load_then_the_baseline_falls_when_load_drops():
    q = QueueTracker()
    t = feed(q, 0.0, 60, lambda i: LOADED + (i % 7))  # starts under load: all it knows
    rd = q.reading(t)
    assert rd.baseline_ms >= LOADED  # the best it can know is the loaded RTT...
    assert rd.queue_delay_ms < 10  # ...so no queueing is claimed
    # The load stops: within a few seconds the idle RTT becomes the baseline.
    t_idle = t
    while q.reading(t).baseline_ms > 1.0:
        t = feed(q, t, 0.25, IDLE)
        assert t - t_idle <= 5.0, "baseline did not fall within 5 s of the load ending"
    # and a later load is then measured against the idle RTT
    t = feed(q, t, 30, IDLE)
    t = feed(q, t, 2, LOADED)
    assert q.reading(t).queue_delay_ms == pytest.approx(LOADED - IDLE)


def test_one_low_outlier_does_not_set_the_baseline():
    q = QueueTracker()
    t = feed(q, 0.0, 20, lambda i: 0.001 if i == 5 else 5.0)
    assert q.reading(t).baseline_ms == pytest.approx(5.0)


def test_baseline_is_kept_through_minutes_of_load_and_forgotten_after_ten():
    q = QueueTracker()
    t = feed(q, 0.0, 30, IDLE)
    t = feed(q, t, 9 * 60, LOADED)  # nine minutes saturated: still measured against idle
    assert q.reading(t).queue_delay_ms == pytest.approx(LOADED - IDLE)
    t = feed(q, t, 2 * 60, LOADED)  # the idle minute left the 10-minute history
    assert q.reading(t).baseline_ms == pytest.approx(LOADED)


def test_too_few_probes_is_unknown_not_a_guess():
    q = QueueTracker()
    feed(q, 0.0, 30, IDLE)
    q.reply(40.0, LOADED)  # one reply in the last 2 s
    rd = q.reading(40.5)
    assert rd.queue_delay_ms is None and rd.unknown == TOO_FEW_PROBES
    assert rd.baseline_ms == pytest.approx(IDLE)  # the baseline is still known
    assert QueueTracker().reading(1.0).unknown == TOO_FEW_PROBES


def test_high_loss_is_unknown_loss_is_its_own_signal():
    q = QueueTracker()
    t = feed(q, 0.0, 30, IDLE)
    t = feed(q, t, 4, LOADED, lost_every=1)  # every probe lost
    rd = q.reading(t)
    assert rd.queue_delay_ms is None and rd.unknown == LOSS and rd.lost == 8
    # two lost of three: still more loss than max_loss (0.5)
    q2 = QueueTracker(QueueParams(min_replies=1))
    t = feed(q2, 0.0, 30, IDLE)
    for i in range(9):
        if i % 3:
            q2.lost(t + i * 0.2)
        else:
            q2.reply(t + i * 0.2, LOADED)
    assert q2.reading(t + 1.8).unknown == LOSS
    # a little loss (a shaper dropping a probe now and then) does not hide the delay
    q3 = QueueTracker()
    t = feed(q3, 0.0, 30, IDLE)
    t = feed(q3, t, 2, LOADED, lost_every=4)
    assert q3.reading(t).queue_delay_ms == pytest.approx(LOADED - IDLE)


def test_relearn_forgets_and_learns_the_new_path():
    q = QueueTracker()
    t = feed(q, 0.0, 30, IDLE)
    q.relearn("path changed")
    assert q.reading(t).baseline_ms is None and q.reading(t).unknown == TOO_FEW_PROBES
    t = feed(q, t, 3, 4.0)  # the new path: 4 ms idle
    rd = q.reading(t)
    assert rd.baseline_ms == pytest.approx(4.0) and rd.queue_delay_ms == 0.0
    assert q.relearned == 1 and q.last_relearn == "path changed"


def test_idle_rtt_that_stays_higher_is_relearned_only_while_no_traffic_flows():
    q = QueueTracker()
    t = feed(q, 0.0, 60, IDLE)
    # The path got longer (a route change beyond this host): 3 ms, no traffic of ours.
    for _ in range(40):
        t = feed(q, t, 1.0, 3.0)
        q.observe(t, carrying=False)
    assert q.relearned == 1 and q.last_relearn == "idle RTT rose"
    assert q.reading(t).baseline_ms == pytest.approx(3.0)
    assert q.reading(t).queue_delay_ms == 0.0
    # Whereas a high RTT while the interface carries traffic is a queue: kept.
    q = QueueTracker()
    t = feed(q, 0.0, 60, IDLE)
    for _ in range(120):
        t = feed(q, t, 1.0, LOADED)
        q.observe(t, carrying=True)
    assert q.relearned == 0 and q.reading(t).baseline_ms == pytest.approx(IDLE)


@pytest.mark.parametrize(("qd", "base", "rate", "high", "low"), [
    (170.0, 0.06, 6.2e6, True, False),  # deep buffer, traffic: high
    (3.5, 0.06, 6.2e6, True, False),  # shallow buffer (a few ms): over the 1 ms floor
    (0.8, 0.06, 6.2e6, False, False),  # under the floor, over half of it: neither
    (0.3, 0.06, 6.2e6, False, True),  # low
    (170.0, 0.06, 20e3, False, True),  # no traffic: RTT noise (a busy CPU) is not a queue
    (170.0, 0.06, None, False, True),  # rate unknown
    (4.0, 5.0, 6.2e6, False, False),  # Wi-Fi, 5 ms idle: bound is the baseline itself
    (6.0, 5.0, 6.2e6, True, False),
    (None, 0.06, 6.2e6, False, True),  # unknown delay never raises
])
def test_judge_rule(qd, base, rate, high, low):
    q = QueueTracker()
    j = q.judge(QueueReading(base, qd, None, 8, 0, None if qd is not None else LOSS), rate)
    assert (j.high, j.low) == (high, low)
    assert j.bound_ms == pytest.approx(max(1.0, base))


# -- the detector with two causes ----------------------------------------------------------
def drive(det: SaturationDetector, start: float, seconds: float, util, qh: bool, ql: bool):
    out, t = [], start
    while t < start + seconds - 1e-9:
        t += 0.25
        tr = det.update(t, 1.0, util, queue_high=qh, queue_low=ql)
        if tr is not None:
            out.append(tr)
    return out, t


def test_queueing_alone_raises_and_clears_with_its_cause():
    det = SaturationDetector(SaturationParams())
    out, t = drive(det, 0.0, 10, None, True, False)  # capacity unknown, queue high
    assert [(x.saturated, x.cause) for x in out] == [(True, "queueing")]
    # samples every 0.25 s each covering 1 s: the first (at 0.25) starts the run at -0.75
    assert out[0].at == pytest.approx(2.25)
    out, t = drive(det, t, 4, None, False, False)  # in between: stays saturated
    assert out == []
    out, t = drive(det, t, 6, None, False, True)
    assert [(x.saturated, x.cause, x.notify) for x in out] == [(False, "queueing", True)]


def test_first_cause_to_fire_wins_and_clear_needs_both_low():
    det = SaturationDetector(SaturationParams())
    drive(det, 0.0, 1.0, 0.95, False, True)  # utilization high first
    out, t = drive(det, 1.0, 5, 0.95, True, False)  # then the queue too
    assert [x.cause for x in out] == ["utilization"]
    out, t = drive(det, t, 10, 0.5, True, False)  # utilization fell, queue still high
    assert out == []
    out, t = drive(det, t, 6, 0.5, False, True)
    assert [(x.saturated, x.cause) for x in out] == [(False, "utilization")]
    det = SaturationDetector(SaturationParams())
    drive(det, 0.0, 1.0, 0.5, True, False)  # queue first (a slow hop behind a fast NIC)
    out, _ = drive(det, 1.0, 5, 0.95, True, False)
    assert [x.cause for x in out] == ["queueing"]


def test_queueing_raises_respect_the_cooldown():
    det = SaturationDetector(SaturationParams(cooldown_s=60))
    out, t = drive(det, 0.0, 5, None, True, False)
    out2, t = drive(det, t, 6, None, False, True)
    out3, t = drive(det, t, 5, None, True, False)  # again 11 s later: state, no notice
    assert [x.notify for x in out + out2 + out3] == [True, True, False]
    assert det.saturated and out3[0].cause == "queueing"


# -- a link: re-learning on path changes, flapping, and the detector fed by its queue ------
@dataclass
class FakePeer:
    key: str = "h2"
    id: str | None = "node-b"
    name: str | None = "h2"


def make_link():
    link = linkstats.new_link("node-a", FakePeer(), ("10.213.130.2", 52480), 1.0,
                              SaturationParams(cooldown_s=0))
    link.up, link.local_interface = True, "eth0"
    return link


BUSY = Rate(6.2e6, 0.1e6, 1.0)  # 6.2 MB/s, capacity unknown
QUIET = Rate(2e3, 2e3, 1.0)


def tick(link, t0: float, seconds: float, rtt: float, rate: Rate = BUSY) -> tuple[list, float]:
    """Probes and detector ticks as the agent runs them: probes every 0.25 s, detection
    every 0.25 s; returns the transitions and the end time."""
    out, t = [], t0
    while t < t0 + seconds - 1e-9:
        if link.up:
            link.rtt.reply(t, rtt)
            link.queue.reply(t, rtt)
        t += 0.25
        tr = linkstats.detect(link, t, rate, None)
        if tr is not None:
            out.append(tr)
    return out, t


def test_link_saturated_by_queueing_without_a_capacity_then_cleared():
    link = make_link()
    out, t = tick(link, 0.0, 30, IDLE, QUIET)
    assert out == []
    out, t = tick(link, t, 6, LOADED)
    assert [(x.saturated, x.cause) for x in out] == [(True, "queueing")]
    assert link.state == "saturated"
    q = linkstats.queue_reading(link, t)
    assert q.queue_delay_ms == pytest.approx(LOADED - IDLE)
    out, t = tick(link, t, 8, IDLE, QUIET)
    assert [(x.saturated, x.cause) for x in out] == [(False, "queueing")]


def test_busy_cpu_rtt_noise_without_traffic_raises_nothing():
    link = make_link()
    _, t = tick(link, 0.0, 30, IDLE, QUIET)
    out, t = tick(link, t, 20, 5.0, QUIET)  # RTT up 5 ms, no traffic
    assert out == [] and link.state == "up"


def test_local_interface_change_relearns():
    link = make_link()
    _, t = tick(link, 0.0, 30, IDLE, QUIET)
    link.local_interface = "wlan0"  # the route now goes through Wi-Fi
    out, t = tick(link, t, 10, 4.0)  # a slower path, with traffic: not queueing
    assert out == [] and link.queue.last_relearn == "path changed"
    assert linkstats.queue_reading(link, t).baseline_ms == pytest.approx(4.0)


def test_peer_id_change_relearns_but_learning_the_id_does_not():
    link = make_link()
    link.peer.id = None  # a manual peer before its first snapshot
    _, t = tick(link, 0.0, 30, IDLE, QUIET)
    link.peer.id = "node-b"
    _, t = tick(link, t, 1, IDLE, QUIET)
    assert link.queue.relearned == 0
    link.peer.id = "node-c"  # another machine answers at that address now
    _, t = tick(link, t, 1, IDLE, QUIET)
    assert link.queue.relearned == 1


def test_restarted_peer_link_back_up_relearns_and_flapping_reports_no_queue():
    link = make_link()
    _, t = tick(link, 0.0, 30, IDLE, QUIET)
    for flap in range(1, 6):  # a flapping link: down 3 s, up 3 s
        link.up = False
        out, t = tick(link, t, 3, IDLE)
        q = linkstats.queue_reading(link, t)
        assert q.queue_delay_ms is None and q.unknown == "down"
        assert out == []
        link.up = True
        out, t = tick(link, t, 3, 0.5)  # the peer came back on a 0.5 ms path
        assert link.queue.relearned == flap
        assert linkstats.queue_reading(link, t).baseline_ms == pytest.approx(0.5)
        assert out == []
    assert link.state == "up"



def test_events_carry_cause_queueing_delay_and_baseline():
    from exotray.core.capacity import Capacity

    link = make_link()
    _, t = tick(link, 0.0, 30, IDLE, QUIET)
    out, t = tick(link, t, 6, LOADED)
    type_, at, fields = linkstats.saturation_event(
        link, out[0], 1_780_000_000.0, t, BUSY, Capacity(None, "unknown"), None,
        node="studio-1", label="Ethernet")
    assert type_ == "link_saturated" and at == 1_780_000_000.0
    assert fields["cause"] == "queueing" and fields["utilization"] is None
    assert fields["queue_delay_ms"] == pytest.approx(LOADED - IDLE)
    assert fields["rtt_baseline_ms"] == pytest.approx(IDLE)
    assert fields["capacity_bytes_per_s"] is None
    # utilization-caused saturation reports the queueing delay too
    link2 = make_link()
    _, t = tick(link2, 0.0, 30, IDLE, QUIET)
    trs = []
    for _ in range(24):
        link2.queue.reply(t, LOADED)
        t += 0.25
        tr = linkstats.detect(link2, t, BUSY, 0.97)
        if tr is not None:
            trs.append(tr)
    assert [x.cause for x in trs] == ["utilization"]  # first: the 2 s median lags a second
    _, _, f2 = linkstats.saturation_event(link2, trs[0], 0.0, t, BUSY,
                                          Capacity(6.4e6, "override"), 0.97, node="a", label="b")
    assert f2["cause"] == "utilization" and f2["queue_delay_ms"] > 100


def test_a_slower_interval_widens_the_recent_window():
    link = linkstats.new_link("node-a", FakePeer(), ("10.213.130.2", 52480), 5.0,
                              SaturationParams())
    assert link.queue.params.recent_s == 10.0
    linkstats.retune(link, 0.5, SaturationParams())
    assert link.queue.params.recent_s == 2.0


def test_a_link_probed_once_a_second_at_rest_keeps_eight_probes_in_its_window():
    """agent/probe/pacing.py probes a link at rest once an interval: the recent window widens
    to its last 8 probes (never beyond recent_max_s), so the delay stays known; once
    probed 4 a second again it is the last 2 s, as before."""
    q = QueueTracker(linkstats.queue_params(1.0))
    t = 0.0
    for i in range(30):  # 30 s at rest, one probe a second
        q.reply(t + i, IDLE)
    t = 30.0
    rd = q.reading(t)
    assert rd.unknown is None and rd.replies == 8 and rd.queue_delay_ms == pytest.approx(0)
    assert q.recent_since(t) == 22.0
    # traffic: 4 probes a second through a queue; after 2 s the window is those 8 only
    t = feed(q, t, 2.0, LOADED)
    rd = q.reading(t)
    assert rd.replies == 8 and rd.queue_delay_ms == pytest.approx(LOADED - IDLE)
    # a link probed even more slowly never reaches back more than recent_max_s
    q2 = QueueTracker(linkstats.queue_params(1.0))
    for i in range(10):
        q2.reply(i * 3.0, IDLE)
    assert q2.recent_since(30.0) == 22.0 and q2.reading(30.0).unknown == TOO_FEW_PROBES
    # a new link with fewer than 8 probes so far: all of them, within recent_max_s
    q3 = QueueTracker(linkstats.queue_params(1.0))
    for i in range(5):
        q3.reply(float(i), IDLE)
    assert q3.reading(5.0).replies == 5 and q3.reading(5.0).unknown is None
