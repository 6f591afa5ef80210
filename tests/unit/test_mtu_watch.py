"""core/pathmtu.py's MtuWatch on the test's clock, and the MTU probe's wire
(agent/probe/mtu.py). Real frames through a 1500-byte bridge between 9000-byte hosts:
tests/lab/test_lab_path_mtu.py; two real agents on loopback:
tests/integration/test_path_mtu.py."""

from __future__ import annotations

from exotray.agent.probe import mtu as wire
from exotray.agent.probe.datagram import MTU_REQUEST, PROBE_LEN, TAG_LEN, decode, unseal
from exotray.core import pathmtu as P


def _answer(w: P.MtuWatch, now: float, passes: int | None) -> list[tuple[int, str | None]]:
    """Run the watch until nothing is due: frames up to `passes` bytes are answered
    (None: the peer answers no padded probe). Returns (size, what it said) per probe."""
    out = []
    for _ in range(20):
        size = w.due(now, "en0", 9000)
        if size is None:
            break
        out.append((size, w.result(now, size, passes is not None and size <= passes)))
        now += P.TRY_GAP_S
    return out


def test_jumbo_frames_that_pass_are_known_and_checked_again_half_hourly():
    w = P.MtuWatch()
    assert _answer(w, 0.0, 9000) == [(P.SMALL, None), (9000, None)]
    assert (w.path_mtu, w.ok) == (9000, True)
    assert w.due(P.RECHECK_S - 10, "en0", 9000) is None
    assert w.due(P.RECHECK_S + 10, "en0", 9000) == 9000  # (support already known)


def test_a_1500_switch_between_9000_hosts_is_a_mismatch_said_once():
    w = P.MtuWatch()
    said = _answer(w, 0.0, 1500)
    assert said == [(P.SMALL, None), (9000, None), (9000, None), (9000, None),
                    (1500, P.MISMATCH)]
    assert (w.path_mtu, w.ok) == (1500, False)
    # a minute later it is tried again, still failing: nothing more is said
    assert [s for _, s in _answer(w, P.RETRY_S + 20, 1500)] == [None, None, None, None]
    # the switch fixed: one clear
    assert _answer(w, 2 * P.RETRY_S + 40, 9000) == [(9000, P.CLEARED)]
    assert (w.path_mtu, w.ok) == (9000, True)


def test_an_agent_that_does_not_answer_padded_probes_leaves_it_unknown():
    w = P.MtuWatch()
    assert _answer(w, 0.0, None) == [(P.SMALL, None)]
    assert (w.path_mtu, w.ok) == (None, None)
    assert w.due(P.RETRY_S + 1, "en0", 9000) == P.SMALL


def test_a_new_interface_or_mtu_is_checked_at_once():
    w = P.MtuWatch()
    _answer(w, 0.0, 9000)
    assert w.due(5.0, "en0", 1500) == P.SMALL  # the MTU changed: from the start
    assert w.path_mtu is None


def test_a_request_is_padded_to_the_frame_and_reads_back_from_its_head():
    key = b"k" * 32
    data = wire.request(key, 7, 123, 9000)
    assert len(data) == 9000 - wire.HEADERS and wire.is_mtu(data)
    p = decode(unseal(key, data[:PROBE_LEN + TAG_LEN]))
    assert (p.type, p.seq, p.t1) == (MTU_REQUEST, 7, 123)


def test_tries_that_did_not_count_start_again():
    w = P.MtuWatch()
    _answer(w, 0.0, 9000)
    now = P.RECHECK_S + 1
    for _ in range(2):
        assert w.result(now, w.due(now, "en0", 9000), False) is None
        now += P.TRY_GAP_S
    w.due(now, "en0", 9000)
    w.lost()  # the link lost everything meanwhile: that try says nothing
    now += P.TRY_GAP_S
    assert w.result(now, w.due(now, "en0", 9000), False) is None  # one, not three
    assert w.ok is True


def test_a_mismatch_said_is_cleared_once_it_passes_even_after_the_mtu_changed():
    w = P.MtuWatch()
    _answer(w, 0.0, 1500)
    assert w.said_mismatch
    assert w.due(100.0, "en0", 9216) == P.SMALL  # a new MTU: unknown, not "false"
    assert (w.ok, w.path_mtu) == (None, None)
    assert w.result(100.0, P.SMALL, True) is None
    assert w.due(101.0, "en0", 9216) == 9216
    assert w.result(101.0, 9216, True) == P.CLEARED
    assert (w.ok, w.path_mtu, w.said_mismatch) == (True, 9216, False)
