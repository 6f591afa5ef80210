"""One tick for what shares a schedule (agent/ticking.py): counters at every quarter
interval, a link at rest judged once an interval, a link with traffic at every tick (so
saturation is still seen within a quarter interval), sharing once an interval.

The real Agent and its parts; the interface counters are the edge replaced (no traffic
of this size on this machine: `monitor.read`), the clock is injected."""

from __future__ import annotations

import pytest
from helpers import counted_agent, manual_link

from exotray.agent.hw.sampler import NicInfo

IFACE, PEER = "xt0", "10.213.160.2"
NIC = NicInfo(IFACE, True, 1000.0, ("10.213.160.1",), (("10.213.160.1", 24),), multicast=True)


@pytest.fixture
def agent(tmp_path):
    a = counted_agent(tmp_path, IFACE, NIC)
    now = a.now_
    link = manual_link(a, PEER, IFACE)
    link.last_reply = now[0]
    a.judged = []
    update = link.detector.update

    def counted(*args, **kw):
        a.judged.append(now[0])
        return update(*args, **kw)

    link.detector.update = counted
    a.produced = []
    a.sharing.produce = lambda: a.produced.append(now[0])
    a.sharing.tick = lambda: None
    yield a
    a._unlock()


def _ticks(a, n: int, bytes_per_tick: int) -> None:
    for _ in range(n):
        a.now_[0] += 0.25
        a.counters[0] += bytes_per_tick
        a.counters[1] += bytes_per_tick
        k = a.ticker.count % a.ticker.per_interval
        if k == 0:  # the link's probe of this interval, answered (the probe socket's part)
            for link in a.links.values():
                a.prober.on_reply(link.target, a.now_[0], 0.05)
        a.ticker.sample(k == 0)
        if k == 0:
            a.ticker.share()
        a.ticker.count += 1


def test_a_link_at_rest_is_judged_once_an_interval_and_a_busy_one_every_tick(agent):
    _ticks(agent, 64, 250)  # 1 kB/s: at rest (the queueing delay known, the hold over)
    agent.judged.clear()
    agent.produced.clear()
    _ticks(agent, 16, 250)
    assert len(agent.judged) == 4 and len(agent.produced) == 4  # once an interval each
    # 12.5 MB/s, the whole 100 Mbit/s: judged at every tick from the first that sees it,
    # and saturated after the sustain time (3 s) of samples, as with four samples always
    _ticks(agent, 1, 250)
    agent.judged.clear()
    start = agent.now_[0]  # the traffic starts now: the next tick is a sub-tick
    (link,) = agent.links.values()
    saturated_at = None
    for _ in range(20):
        _ticks(agent, 1, 12_500_000 // 4)
        if saturated_at is None and link.state == "saturated":
            saturated_at = agent.now_[0]
    assert len(agent.judged) == 20
    assert saturated_at is not None and saturated_at - start <= 3.0 + 0.25
    (event,) = agent.events.after(0)
    assert event["type"] == "link_saturated" and event["cause"] == "utilization"


class _Quiet:
    """rtnetlink with nothing to say (sampler.NicChanges' answer when nothing changed)."""

    def __init__(self) -> None:
        self.say = False

    def changed(self) -> bool:
        said, self.say = self.say, False
        return said

    def close(self) -> None:
        pass


def test_the_interface_list_is_read_when_something_changed_not_every_interval(agent):
    reads = []
    counters = {IFACE: (0, 0)}
    agent.monitor.carriers.sysfs = None  # (counters given: every tick reads them)
    agent.monitor.read = lambda full: (reads.append((agent.now_[0], full)) or dict(counters),
                                       {IFACE: NIC})
    quiet = agent.ticker.nic_changes = _Quiet()
    _ticks(agent, 40, 0)  # 10 s: the list at the first full tick and every 5 s
    fresh = [t for t, full in reads if full]
    assert len(fresh) == 2 and fresh[1] - fresh[0] == 5.0
    reads.clear()
    quiet.say = True  # rtnetlink: a link or an address changed
    _ticks(agent, 4, 0)
    assert [full for _, full in reads] == [True, False, False, False]
    reads.clear()
    counters["xt1"] = (0, 0)  # an interface the counters list and the list does not
    _ticks(agent, 4, 0)
    assert [full for _, full in reads] == [False, True, False, False, False]


def test_rtnetlink_notices_where_the_kernel_has_them():
    import sys

    from exotray.agent.hw.sampler import NicChanges

    assert NicChanges(platform="darwin").changed() is True  # cannot tell: read
    if sys.platform.startswith("linux"):
        n = NicChanges()
        try:
            assert n.sock is not None and n.changed() in (True, False)
        finally:
            n.close()


def test_one_tick_does_what_is_due_in_order_and_a_failing_step_stops_nothing(agent, caplog):
    ran = []
    agent.ticker.sample = lambda full: ran.append(("sample", full))
    agent.ticker.probe = lambda full: ran.append(("probe", full))
    agent.ticker.share = lambda full: ran.append(("share", full))
    agent.ticker.period(1.0, 4)
    for _ in range(5):
        agent.ticker.tick()
    assert ran == [("sample", True), ("probe", True), ("share", True),
                   ("sample", False), ("probe", False), ("sample", False), ("probe", False),
                   ("sample", False), ("probe", False),
                   ("sample", True), ("probe", True), ("share", True)]

    def broken(full):
        raise RuntimeError("a bug in sampling")

    ran.clear()
    agent.ticker.sample = broken
    agent.ticker.tick()
    assert ran == [("probe", False)] and "error in the sample step" in caplog.text


def test_an_event_between_full_ticks_is_shared_at_once(agent):
    """A link that saturates (or goes down) on a tick between full ones: this node's
    stream gets a frame on that tick, not up to an interval later."""
    agent.ticker.period(1.0, 4)
    agent.ticker.tick()  # a full tick: its frame
    assert len(agent.produced) == 1
    agent.ticker.tick()  # nothing happened
    assert len(agent.produced) == 1
    agent.ticker.probe = lambda full: agent.events.emit("peer_down", 0.0, peer="p")
    agent.ticker.tick()
    assert len(agent.produced) == 2


def test_fewer_probes_per_interval_are_spread_over_the_ticks(agent):
    sends = []
    agent.ticker.sample = lambda full: None
    agent.ticker.share = lambda full: None
    agent.prober.tick = lambda paused, full, send=True: sends.append(send)
    assert agent.ticker.period(1.0, 2) == 0.25
    for _ in range(8):
        agent.ticker.tick()
    assert sends == [True, False, True, False] * 2  # 2 an interval, half an interval apart
    assert agent.ticker.period(1.0, 8) == 0.125  # more than 4: ticks of an eighth


def test_between_full_ticks_only_the_links_that_may_be_busy_are_judged(agent):
    """A link in question on one interface does not make a quiet link on another fetch
    its numbers at every tick: between full ticks only the busy one is judged; at the
    full tick both are."""
    quiet_if, quiet_peer = "xt1", "10.213.161.2"
    nic1 = NicInfo(quiet_if, True, 1000.0, ("10.213.161.1",), (("10.213.161.1", 24),),
                   multicast=True)
    quiet_counters = [5_000, 5_000]
    agent.monitor.carriers.sysfs = None  # (counters given: every tick reads them)
    agent.monitor.read = lambda full: (
        {IFACE: tuple(agent.counters), quiet_if: tuple(quiet_counters)},
        {IFACE: NIC, quiet_if: nic1})
    quiet = manual_link(agent, quiet_peer, quiet_if)
    quiet.last_reply = agent.now_[0]
    (busy,) = [lk for lk in agent.links.values() if lk is not quiet]
    judged: list[tuple[str, bool]] = []
    judge = agent.ticker.judge

    def counted(link, t, full=True, now=None):
        judged.append((link.local_interface, full))
        return judge(link, t, full, now)

    agent.ticker.judge = counted
    _ticks(agent, 64, 250)  # both at rest (1 kB/s), their holds over
    judged.clear()
    _ticks(agent, 8, 2_000_000)  # 8 MB/s on xt0: its link is in question
    assert busy.busy_until > agent.now_[0]
    subs = [name for name, full in judged if not full]
    fulls = [name for name, full in judged if full]
    assert subs and set(subs) == {IFACE}  # the quiet link: not between full ticks
    assert sorted(fulls) == sorted([IFACE, quiet_if] * 2)  # both on the 2 full ticks

