"""App Nap exemption: the documented NSProcessInfo activity, with the options that keep
timers on time and still let an idle Mac sleep. NSProcessInfo is the seam (no Mac)."""

from __future__ import annotations

from exotray import appnap


class FakeProcessInfo:
    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []

    def beginActivityWithOptions_reason_(self, options: int, reason: str) -> object:
        self.calls.append((options, reason))
        return object()


def test_macos_holds_a_user_initiated_latency_critical_activity():
    pi = FakeProcessInfo()
    assert appnap.keep_timers_on_time("measuring links", platform="darwin", process_info=pi)
    (options, reason), = pi.calls
    assert options & appnap.NS_ACTIVITY_USER_INITIATED_ALLOWING_IDLE_SYSTEM_SLEEP == 0x00EFFFFF
    assert options & appnap.NS_ACTIVITY_LATENCY_CRITICAL
    # "allowing idle system sleep": the idle-system-sleep bit (1 << 20) is not set
    assert not options & (1 << 20)
    assert reason == "measuring links"


def test_elsewhere_nothing_happens():
    pi = FakeProcessInfo()
    assert not appnap.keep_timers_on_time("x", platform="linux", process_info=pi)
    assert pi.calls == []
