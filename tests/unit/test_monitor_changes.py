"""What counts as an interface change for mDNS and for choosing a link's on-link
interface: an address, a network (prefix) or the up/down state."""

from __future__ import annotations

from dataclasses import replace

from exotray.agent.hw.kinds import InterfaceClassifier
from exotray.agent.hw.monitor import InterfaceMonitor
from exotray.agent.hw.sampler import NicInfo
from exotray.core.settings import Settings

BR = NicInfo("bridge0", True, None, ("169.254.3.4",), (("169.254.3.4", 16),), multicast=True)


def _monitor() -> InterfaceMonitor:
    m = InterfaceMonitor(Settings(), InterfaceClassifier(platform="linux",
                                                         sysfs_root="/nonexistent"), 1.0)
    m.update({"bridge0": BR}, 0.0)
    return m


def test_down_with_the_same_address_is_a_change():
    m = _monitor()
    assert m.update({"bridge0": replace(BR, up=False)}, 1.0) is True


def test_a_new_prefix_is_a_change():
    m = _monitor()
    assert m.update({"bridge0": replace(BR, networks=(("169.254.3.4", 24),))}, 1.0) is True


def test_nothing_new_is_no_change():
    m = _monitor()
    assert m.update({"bridge0": BR}, 1.0) is False
