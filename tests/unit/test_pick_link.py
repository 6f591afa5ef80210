"""Which link `exotray measure PEER` (and the window's button) measures (measuring.pick_link):
by name, id, address, address:port or the HOST:PORT given to --peer; never a guess
between two live peers on one address, whose capacities would be blamed on each other."""

from __future__ import annotations

import pytest

from exotray.agent.http.measuring import pick_link
from exotray.agent.peers.links import new_link
from exotray.agent.peers.table import Peer
from exotray.core.saturation import SaturationParams


def _link(peer: Peer, addr: str, port: int, iface: str, up: bool = True):
    lk = new_link("me", peer, (addr, port), 1.0, SaturationParams())
    lk.local_interface, lk.up = iface, up
    return lk


def _peer(key: str, host: str | None, port: int, name: str, pid: str) -> Peer:
    return Peer(key=key, host=host, port=port, id=pid, name=name)


STUDIO = _peer("studio-2.lan:52480", "studio-2.lan", 52480, "studio-2", "a1b2c3")
TB, ETH = (_link(STUDIO, "169.254.7.2", 52480, "bridge0"),
           _link(STUDIO, "192.168.1.12", 52480, "en0"))


@pytest.mark.parametrize("name", ["studio-2", "a1b2c3", "studio-2.lan:52480",
                                  "169.254.7.2", "169.254.7.2:52480"])
def test_a_peer_by_any_of_its_names(name):
    assert pick_link([TB, ETH], name, None) is TB


def test_one_peer_over_two_interfaces_is_not_ambiguous_and_interface_picks():
    assert pick_link([TB, ETH], "studio-2", "en0") is ETH
    with pytest.raises(LookupError, match="no link to 'studio-2' via en1"):
        pick_link([TB, ETH], "studio-2", "en1")


def test_two_live_peers_on_one_address_are_named_not_guessed():
    a = _link(_peer("mdns:x", None, 52480, "vm", "x1"), "10.0.0.5", 52480, "eth0")
    b = _link(_peer("mdns:y", None, 52481, "vm", "y1"), "10.0.0.5", 52481, "eth0")
    with pytest.raises(LookupError) as e:
        pick_link([a, b], "10.0.0.5", None)
    assert "vm (10.0.0.5:52480), vm (10.0.0.5:52481)" in str(e.value)
    assert "address:port" in str(e.value)
    assert pick_link([a, b], "10.0.0.5:52481", None) is b
    assert pick_link([a, b], "y1", None) is b
    # one of them down (killed, still listed): the live one is the only one to measure
    a.up = False
    assert pick_link([a, b], "10.0.0.5", None) is b
    b.up = False
    with pytest.raises(LookupError, match=r"the link to '10\.0\.0\.5' is down"):
        pick_link([a, b], "10.0.0.5", None)
