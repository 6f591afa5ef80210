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


def test_a_carrier_that_flaps_is_one_event_of_the_interface_and_counted_an_hour():
    """Issue 31 point 3: an interface's carrier down and up three times within ten
    minutes is link_flapping of the interface (no link, no peer), said once; cleared after
    ten quiet minutes; `exotray interfaces` counts its changes of the last hour."""
    from exotray.agent.hw.hardware import Hardware
    from exotray.agent.hw.read import NoReader
    from exotray.agent.share.views import interfaces
    from exotray.core.status import interface_lines

    said: list[tuple[str, dict]] = []
    m = InterfaceMonitor(Settings(), InterfaceClassifier(platform="linux",
                                                         sysfs_root="/nonexistent"), 1.0,
                         Hardware(NoReader(), lambda kind, **f: said.append((kind, f))))
    t = 0.0
    m.update({"bridge0": BR}, t)
    for _ in range(4):
        t += 20
        m.update({"bridge0": replace(BR, up=False)}, t)
        t += 20
        m.update({"bridge0": BR}, t)
    assert [k for k, _ in said] == ["link_flapping"]
    ev = said[0][1]
    assert (ev["interface"], ev["link_id"], ev["peer_id"], ev["changes"]) == (
        "bridge0", None, None, 3)
    st = m.ifaces["bridge0"]
    assert m.carrier_changes(st) == 8
    # (the links behind it are then not told flapping once more: peers/linkevents.py)
    assert m.carrier_flapping("bridge0") and not m.carrier_flapping("en0")
    report = interfaces(m, [])
    assert "bridge0: went down or up 8 times in the last hour" in interface_lines(report)
    m.update({"bridge0": BR}, t + 601)
    assert [k for k, _ in said] == ["link_flapping", "link_flapping_cleared"]
    assert not m.carrier_flapping("bridge0")


def test_an_adapter_unplugged_and_plugged_again_is_a_carrier_change():
    """Linux's Thunderbolt network device and USB NICs vanish when unplugged: each
    unplug is a down of the interface's carrier and each return an up."""
    from exotray.agent.hw.hardware import Hardware
    from exotray.agent.hw.read import NoReader

    said: list[str] = []
    m = InterfaceMonitor(Settings(), InterfaceClassifier(platform="linux",
                                                         sysfs_root="/nonexistent"), 1.0,
                         Hardware(NoReader(), lambda kind, **f: said.append(kind)))
    t = 0.0
    m.update({"bridge0": BR}, t)
    for _ in range(3):
        t += 20
        m.update({}, t)
        t += 20
        m.update({"bridge0": BR}, t)
    assert said == ["link_flapping"]
    assert m.carrier_changes(m.ifaces["bridge0"]) == 6


def test_a_bridge_members_flapping_cable_is_the_carrier_of_the_links_it_reaches(monkeypatch):
    """A Thunderbolt port under bridge0 flaps while the bridge stays up: the carrier of
    the link to the peer behind that port is flapping (its links are then not told
    flapping once more: peers/linkevents.py); a link to a peer behind another port not."""
    from exotray.agent.hw.hardware import Hardware
    from exotray.agent.hw.read import NoReader

    en2 = NicInfo("en2", True, None, (), (), multicast=True)
    m = InterfaceMonitor(Settings(), InterfaceClassifier(platform="linux",
                                                         sysfs_root="/nonexistent"), 1.0,
                         Hardware(NoReader(), lambda kind, **f: None))
    # (which member reaches which peer: the bridge readers' answer, tested on their own)
    monkeypatch.setattr(m.hardware, "member", lambda name, peer, _now=None: {
        "169.254.9.2": "en2"}.get(peer))
    t = 0.0
    m.update({"bridge0": BR, "en2": en2}, t)
    for _ in range(3):
        t += 20
        m.update({"bridge0": BR, "en2": replace(en2, up=False)}, t)
        t += 20
        m.update({"bridge0": BR, "en2": en2}, t)
    assert not m.carrier_flapping("bridge0")
    assert m.carrier_flapping("bridge0", "169.254.9.2")
    assert not m.carrier_flapping("bridge0", "169.254.9.3")
