"""macOS Local Network permission, told apart from a peer that is down."""

from __future__ import annotations

import pytest

from exotray.core.health import LOCAL_NETWORK_DENIED, local_network_denied
from exotray.core.status import diagnostics
from exotray.ui.tray.summary import node_warnings


@pytest.mark.parametrize(
    ("platform", "streak", "links", "denied"),
    [
        ("darwin", 6, 2, True),     # every link's probes refused, several rounds
        ("darwin", 3, 1, True),
        ("darwin", 2, 1, False),    # too few to say
        ("darwin", 3, 5, False),    # some links' probes still leave: one host is down
        ("darwin", 0, 0, False),    # no peers, nothing refused
        ("linux", 50, 2, False),    # Linux: EHOSTUNREACH is a neighbour that is down
    ],
)
def test_local_network_denied(platform, streak, links, denied):
    assert local_network_denied(platform, streak, links) is denied


def test_the_warning_reaches_status_and_the_menu():
    cluster = {"self": "a", "nodes": [{"node": {"name": "mac"}, "links": [],
                                       "warnings": [LOCAL_NETWORK_DENIED]}],
               "discovery": {"mdns": True, "addresses": ["192.168.1.2"]}}
    notes = diagnostics(cluster)
    assert notes[0].startswith("note: Local Network access is not granted")
    assert "Privacy & Security › Local Network" in notes[0]
    assert node_warnings(cluster) == [LOCAL_NETWORK_DENIED]
    assert node_warnings(None) == [] and node_warnings({"nodes": [{}]}) == []
