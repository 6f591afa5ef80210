"""macOS Local Network permission, told apart from a peer that is down."""

from __future__ import annotations

import pytest

from exotray.core.health import LOCAL_NETWORK_DENIED, local_network_denied
from exotray.core.status import diagnostics
from exotray.ui.tray.summary import node_warnings


@pytest.mark.parametrize(
    ("platform", "streaks", "denied"),
    [
        ("darwin", [6, 6], True),        # every local link's probes refused, rounds on
        ("darwin", [3], True),
        ("darwin", [2], False),          # too few to say
        ("darwin", [3, 0, 0, 0, 0], False),  # other links' probes leave: one host down
        ("darwin", [], False),           # no peers, nothing refused
        ("linux", [50, 50], False),      # Linux: EHOSTUNREACH is a neighbour that is down
    ],
)
def test_local_network_denied(platform, streaks, denied):
    assert local_network_denied(platform, streaks) is denied


def test_a_routed_peer_that_answers_does_not_hide_on_link_ones_refused(tmp_path):
    """Issue 35 point 3: the streak was one for the socket, so one probe that left (to a
    peer over a VPN, which Local Network does not cover) reset it, and the warning never
    came. Each link keeps its own now, and only on-link links are asked about."""
    import errno

    from exotray.agent.probe.udp import ProbeSocket

    ps = ProbeSocket(lambda *a: None, lambda *a: None)

    def refuse(data, target):
        if target[0].startswith("169.254."):
            raise OSError(errno.EHOSTUNREACH, "No route to host")
        return len(data)

    ps.sock = object()  # (sends go through the seam below)
    ps.send_datagram = refuse
    for _ in range(4):
        for target in (("169.254.3.2", 52480), ("169.254.7.9", 52480), ("10.8.0.2", 52480)):
            ps.send(target)
    assert ps.unreachable.get(("10.8.0.2", 52480)) is None  # the VPN peer's sends work
    on_link = [ps.unreachable.get(t, 0) for t in (("169.254.3.2", 52480),
                                                  ("169.254.7.9", 52480))]
    assert local_network_denied("darwin", on_link)


def test_the_warning_reaches_status_and_the_menu():
    cluster = {"self": "a", "nodes": [{"node": {"name": "mac"}, "links": [],
                                       "warnings": [LOCAL_NETWORK_DENIED]}],
               "discovery": {"mdns": True, "addresses": ["192.168.1.2"]}}
    notes = diagnostics(cluster)
    assert notes[0].startswith("note: Local Network access is not granted")
    assert "Privacy & Security › Local Network" in notes[0]
    assert node_warnings(cluster) == [LOCAL_NETWORK_DENIED]
    assert node_warnings(None) == [] and node_warnings({"nodes": [{}]}) == []
