"""macOS's source of each link's own bytes (hw/nettop_source.py) through a seam Linux can
run: the nettop process is a stand-in that prints, on the pseudo-terminal the source
gives it, what the test appends to a file — samples in the format of the recorded
`nettop -m tcp -L 1 -n` output (tests/fixtures/macos, OrbStack's), with the test's own
times, addresses and counts. What only a Mac can show is in packaging/macos/CHECKLIST.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers import until

from exotray.agent.hw import flows, nettop_source
from exotray.agent.hw.flows import FlowBytes, FlowLink, Flows
from exotray.agent.hw.nettop_source import NettopSource

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "macos"
RECORDED = (FIX / "nettop_m_tcp_p0_L1_n_loopback_orbstack.txt").read_text().splitlines()
HEADER = RECORDED[0]
#: the recorded connection row's columns after bytes_out (rx_dupe ... arch)
TAIL = RECORDED[2].split(",")[6:]
ME, A, B = "10.213.162.1", "10.213.162.2", "10.213.162.3"
MB = 1_000_000
#: prints what is appended to the file named by its argument, for at most 60 s
STAND_IN = """
import sys, time
end = time.monotonic() + 60
with open(sys.argv[1]) as f:
    while time.monotonic() < end:
        line = f.readline()
        if line:
            sys.stdout.write(line)
            sys.stdout.flush()
        else:
            time.sleep(0.01)
"""


def clock(t: float) -> str:
    t %= 86400
    return f"{int(t // 3600):02d}:{int(t % 3600 // 60):02d}:{t % 60:09.6f}"


def sample(t: float, rows: list[tuple[int, int, str, int, int]]) -> str:
    """A header, then per (pid, local port, remote address, in, out) a process row and its
    connection row, all read at `t` (seconds since midnight)."""
    out = [HEADER]
    for pid, port, remote, rx, tx in rows:
        out.append(f"{clock(t)},python3.{pid},,,{rx},{tx},0,0,0,,,,,,,,,,,,")
        out.append(",".join([clock(t), f"tcp4 {ME}:{port}<->{remote}:5201", "en0",
                             "Established", str(rx), str(tx), *TAIL]))
    return "\n".join(out) + "\n"


class Stand:
    """The stand-in's file and a source reading it."""

    def __init__(self, tmp: Path, now: list[float] | None = None) -> None:
        self.path = tmp / "nettop.out"
        self.path.write_text("")
        self.now = now if now is not None else [0.0]
        self.source = NettopSource([sys.executable, "-c", STAND_IN, str(self.path)],
                                   clock=lambda: self.now[0])

    def say(self, text: str) -> None:
        with self.path.open("a") as f:
            f.write(text)


@pytest.fixture
def stand(tmp_path):
    s = Stand(tmp_path)
    yield s
    s.source.close()


def test_each_link_gets_its_own_rate_over_nettops_own_interval(stand):
    """Two links through en0: 5 MB and 1 MB a second by nettop's sample times, whatever
    the ticks that read them; a sample is taken once the next one's header came."""
    flows = Flows(FlowBytes(stand.source))
    links = [FlowLink("to-a", "en0", (ME,), A), FlowLink("to-b", "en0", (ME,), B)]
    t0 = 13 * 3600.0
    try:
        for i in range(4):
            stand.say(sample(t0 + i, [(501, 50000, A, 0, 5 * MB * i),
                                      (502, 50001, B, MB * i, 0)]))
        stand.say(HEADER + "\n")  # (the fourth sample is whole: the next has begun)
        flows.tick(100.0, links, lambda _: True)  # counting starts: where each one stands
        until(lambda: stand.source.sampled_at == t0 + 3
               or flows.tick(100.0, links, lambda _: True))
        for i in range(4, 7):
            stand.say(sample(t0 + i, [(501, 50000, A, 0, 5 * MB * i),
                                      (502, 50001, B, MB * i, 0)])[len(HEADER) + 1:]
                      + HEADER + "\n")
        tick = [101.0]

        def read() -> bool:  # the ticks come every 0.5 s of ours: not nettop's seconds
            tick[0] += 0.5
            flows.tick(tick[0], links, lambda _: True)
            return stand.source.sampled_at == t0 + 6
        until(read)
        a, b = flows.rate("to-a"), flows.rate("to-b")
        assert a.tx_bytes_per_s == pytest.approx(5 * MB) and a.rx_bytes_per_s == 0
        assert b.rx_bytes_per_s == pytest.approx(MB) and b.tx_bytes_per_s == 0
        assert flows.source("to-a") == "nettop"
        # a read with no newer sample leaves the rates as they were
        flows.tick(tick[0] + 0.5, links, lambda _: True)
        assert flows.rate("to-a") == a
    finally:
        flows.stop()


def _counted(stand: Stand, reader: FlowBytes, upto: float, now: float = 0.0) -> int:
    def read():
        reader.read(frozenset({_packed(A)}), now)
        return stand.source.sampled_at == upto
    until(read)
    return reader.totals.get((_packed(ME), _packed(A)), [0, 0])[1]


def _packed(text: str) -> bytes:
    from exotray.agent.hw import sockdiag
    return sockdiag.pack_address(text)


def test_a_connection_left_out_of_a_sample_is_not_counted_twice(stand):
    """A sample may leave out a connection that did not move; when it shows again, only
    what it carried since is counted. The same name with lower counts is another
    connection, counted from its first byte."""
    reader = FlowBytes(stand.source)
    stand.say(sample(10.0, [(501, 50000, A, 0, 2 * MB)]) + HEADER + "\n")
    assert _counted(stand, reader, 10.0) == 0  # (its past: where counting starts)
    stand.say(sample(11.0, [(501, 50000, A, 0, 3 * MB)])[len(HEADER) + 1:] + HEADER + "\n")
    assert _counted(stand, reader, 11.0) == MB
    stand.say(sample(12.0, [(502, 50009, A, 0, 0)])[len(HEADER) + 1:] + HEADER + "\n")
    assert _counted(stand, reader, 12.0) == MB  # (the first one left out: nothing new)
    stand.say(sample(13.0, [(501, 50000, A, 0, 4 * MB)])[len(HEADER) + 1:] + HEADER + "\n")
    assert _counted(stand, reader, 13.0) == 2 * MB
    stand.say(sample(14.0, [(501, 50000, A, 0, MB // 2)])[len(HEADER) + 1:] + HEADER + "\n")
    assert _counted(stand, reader, 14.0) == 2 * MB + MB // 2
    reader.close()


def test_a_connection_left_out_before_its_peer_was_wanted_starts_where_it_stood(stand):
    """nettop's source remembers what a sample left out: a connection to a peer not yet
    read, left out of the samples since, then its peer read, then it moves: only what it
    carried since the peer was first read is counted (the source's memory, not
    FlowBytes', knows where it stood)."""
    reader = FlowBytes(stand.source)
    pb = _packed(B)
    stand.say(sample(10.0, [(501, 50000, A, 0, 0), (502, 50001, B, 0, 5 * MB)])
              + HEADER + "\n")
    _counted(stand, reader, 10.0)  # (only A wanted)
    stand.say(sample(11.0, [(501, 50000, A, 0, 0)])[len(HEADER) + 1:] + HEADER + "\n")
    _counted(stand, reader, 11.0)

    def read(upto: float) -> int:
        until(lambda: reader.read(frozenset({_packed(A), pb}), 0.0)
               or stand.source.sampled_at == upto)
        return reader.totals.get((_packed(ME), pb), [0, 0])[1]

    assert read(11.0) == 0  # B wanted: where its connection stands is noted
    stand.say(sample(12.0, [(502, 50001, B, 0, 5 * MB + 300)])[len(HEADER) + 1:]
              + HEADER + "\n")
    assert read(12.0) == 300
    reader.close()


def test_nettops_times_run_on_past_midnight(stand):
    stand.source.open()
    stand.say(sample(86399.5, [(501, 50000, A, 0, 0)]) + HEADER + "\n")
    until(lambda: stand.source.connections() and stand.source.sampled_at == 86399.5)
    stand.say(sample(0.5, [(501, 50000, A, 0, MB)])[len(HEADER) + 1:] + HEADER + "\n")
    until(lambda: stand.source.connections() and stand.source.sampled_at == 86400.5)


def test_a_nettop_that_exits_or_falls_silent_is_an_error_and_is_ended(tmp_path, caplog):
    """Flows logs why and stops reading; the source ends its own child."""
    gone = NettopSource([sys.executable, "-c", "print('nettop: no such option')"])
    flows = Flows(FlowBytes(gone))
    links = [FlowLink("to-a", "en0", (ME,), A), FlowLink("to-b", "en0", (ME,), B)]
    caplog.set_level("WARNING", "exotray.agent.hw.monitor")
    until(lambda: flows.tick(1.0, links, lambda _: True) or flows._failed)
    assert "nettop exited" in caplog.text and not gone.is_open
    assert flows.source("to-a") is None

    now = [0.0]
    silent = Stand(tmp_path, now).source
    silent.open()
    proc = silent._proc
    assert silent.connections() == []
    now[0] = nettop_source.SILENT_S + 1
    with pytest.raises(OSError, match="no sample"):
        silent.connections()
    silent.close()
    assert proc.poll() is not None and not silent.is_open


def test_text_without_a_header_is_bounded(stand, monkeypatch, caplog):
    monkeypatch.setattr(nettop_source, "MAX_PENDING", 1000)
    caplog.set_level("WARNING", "exotray.agent.hw.monitor")
    stand.say("x" * 2000 + "\n")
    stand.source.open()
    until(lambda: stand.source.connections() == [] and "without a header" in caplog.text)
    assert stand.source._pending == ""


def test_a_nettop_silent_after_its_samples_is_an_error(tmp_path):
    """Once samples came, a nettop alive but printing nothing more fails the read after
    SILENT_S (the links' last rates are not left on show)."""
    now = [0.0]
    stand = Stand(tmp_path, now)
    stand.source.open()
    try:
        stand.say(sample(10.0, [(501, 50000, A, 0, MB)]) + HEADER + "\n")
        until(lambda: stand.source.connections() and stand.source.sampled_at == 10.0)
        now[0] = nettop_source.SILENT_S + 1
        with pytest.raises(OSError, match="no sample"):
            stand.source.connections()
    finally:
        stand.source.close()


def test_nettops_clock_set_back_or_on_moves_the_samples_by_ours(stand):
    """nettop's times are its local time of day: set back an hour (daylight saving) or on,
    the samples go on by our clock's step, not by the jump."""
    now = stand.now
    stand.source.open()
    t = 2 * 3600.0 - 1
    for step, ours in ((0.0, 0.0), (1.0, 1.0), (-3600.0, 1.0), (1.0, 1.0), (7200.0, 1.0)):
        t += step
        now[0] += ours
        want = (stand.source.sampled_at or t) + ours
        stand.say(sample(t, [(501, 50000, A, 0, MB)])[len(HEADER) + 1:] + HEADER + "\n"
                  if step else sample(t, [(501, 50000, A, 0, MB)]) + HEADER + "\n")
        until(lambda w=want: stand.source.connections()
               and stand.source.sampled_at == pytest.approx(w))


def test_the_connections_to_the_links_peers_are_the_last_forgotten(stand, monkeypatch):
    """Over MAX_CONNECTIONS the least recently moved go, but not a link's peer's: idle
    longer than FlowBytes keeps a missing one (FORGET_LONG_S), forgotten by both and seen
    again, it would be counted whole again."""
    monkeypatch.setattr(nettop_source, "MAX_CONNECTIONS", 4)
    reader = FlowBytes(stand.source)
    stand.say(sample(10.0, [(501, 50000, A, 0, MB)]) + HEADER + "\n")
    _counted(stand, reader, 10.0)
    others = [(600 + i, 51000 + i, f"10.213.163.{i + 1}", 0, i) for i in range(6)]
    stand.say(sample(11.0, others)[len(HEADER) + 1:] + HEADER + "\n")
    assert _counted(stand, reader, 11.0, now=1.0) == 0
    assert len(stand.source._conns) == 3
    stand.say(sample(12.0, others)[len(HEADER) + 1:] + HEADER + "\n")  # (an hour passes)
    late = flows.FORGET_LONG_S + 10
    assert _counted(stand, reader, 12.0, now=late) == 0
    stand.say(sample(13.0, [(501, 50000, A, 0, MB + 300)])[len(HEADER) + 1:] + HEADER + "\n")
    assert _counted(stand, reader, 13.0, now=late + 1) == 300
    reader.close()


#: an agent with a nettop (a stand-in that, as a C program writing with printf would,
#: goes on when its writes fail) that prints its nettop's pid and waits to be killed
ORPHAN = """
import sys, time
from exotray.agent.hw.nettop_source import NettopSource
stand = '''
import os, time
end = time.monotonic() + 30
while time.monotonic() < end:
    try:
        os.write(1, b"time,,interface,state,bytes_in,bytes_out,\\\\n")
    except OSError:
        pass
    time.sleep(0.1)
'''
s = NettopSource([sys.executable, "-c", stand])
s.open()
print(s._proc.pid, flush=True)
time.sleep(30)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_nettop_ends_with_an_agent_killed_outright():
    """The agent killed (SIGKILL: no close()): its terminal is nettop's controlling one,
    hung up when the agent's side goes, so nettop gets SIGHUP and does not run on."""
    import signal
    import subprocess

    agent = subprocess.Popen([sys.executable, "-c", ORPHAN], stdout=subprocess.PIPE,
                             text=True)
    child = int(agent.stdout.readline())
    try:
        agent.kill()  # (ours, by its Popen)
        agent.wait()
        until(lambda: _gone(child))
    finally:
        if not _gone(child):
            os.kill(child, signal.SIGKILL)  # (the stand-in this test started)
