"""Wrong path for exo (agent/exo/paths.py): one event when exo's traffic takes a link
while a clearly better one to the same peer is up, one when that ends."""

from __future__ import annotations

import pytest

from exotray.agent.exo.paths import LinkFacts, SlowPaths, better

RING = {"id": "r1", "model": "mlx-community/Llama-3.3-70B-Instruct-4bit", "backend": "ring"}
MB = 1e6


def lk(id_, kind, cap, *, state="up", peer="studio-2", util=0.0, insts=()):
    return LinkFacts(id=id_, peer_key=peer, peer_name=peer, state=state, kind=kind,
                     label={"wifi": "Wi-Fi", "thunderbolt": "Thunderbolt Bridge",
                            "ethernet": "Ethernet"}.get(kind, kind), local_interface=id_,
                     capacity=cap, utilization=util, instances=tuple(insts))


@pytest.mark.parametrize("used,other,expected", [
    (lk("a", "wifi", 100 * MB), lk("b", "ethernet", 125 * MB), False),  # not clearly more
    (lk("a", "wifi", 100 * MB), lk("b", "ethernet", 150 * MB), True),
    (lk("a", "ethernet", 1250 * MB), lk("b", "wifi", 2000 * MB), True),  # capacity wins
    (lk("a", "wifi", None), lk("b", "thunderbolt", None), True),  # unknown: by kind
    (lk("a", "ethernet", 125 * MB), lk("b", "thunderbolt", None), True),
    (lk("a", "thunderbolt", None), lk("b", "ethernet", None), False),
    (lk("a", "wifi", None), lk("b", "virtual", None), False),  # kinds not compared
    (lk("a", "wifi", None), lk("b", "thunderbolt", None, state="down"), False),
    (lk("a", "wifi", None), lk("b", "thunderbolt", None, state="saturated"), False),
    (lk("a", "wifi", None), lk("b", "thunderbolt", None, peer="mini-3"), False),
])
def test_better(used, other, expected):
    assert better(used, other) is expected


def test_one_event_on_raise_one_on_clear():
    sp = SlowPaths()
    slow = [lk("wifi", "wifi", 50 * MB, insts=[RING]), lk("tb", "thunderbolt", 5000 * MB)]
    (ev,) = sp.update(slow)
    assert ev[0] == "exo_slow_path"
    f = ev[1]
    assert (f["link_id"], f["better_link_id"], f["instance"]) == ("wifi", "tb", RING)
    assert (f["local_label"], f["better_label"], f["better_idle"]) == (
        "Wi-Fi", "Thunderbolt Bridge", True)
    assert sp.update(slow) == [] and sp.update(slow) == []  # nothing while it lasts
    # exo moves to Thunderbolt: cleared once, nothing new (Thunderbolt is the best)
    fast = [lk("wifi", "wifi", 50 * MB), lk("tb", "thunderbolt", 5000 * MB, insts=[RING])]
    (ev,) = sp.update(fast)
    assert ev[0] == "exo_slow_path_cleared" and ev[1]["link_id"] == "wifi"
    assert sp.update(fast) == []


def test_cleared_when_the_better_link_goes_down_and_raised_again():
    sp = SlowPaths()
    up = [lk("wifi", "wifi", None, insts=[RING]), lk("tb", "thunderbolt", None)]
    down = [lk("wifi", "wifi", None, insts=[RING]), lk("tb", "thunderbolt", None, state="down")]
    assert [e[0] for e in sp.update(up)] == ["exo_slow_path"]
    assert [e[0] for e in sp.update(down)] == ["exo_slow_path_cleared"]
    assert [e[0] for e in sp.update(up)] == ["exo_slow_path"]
    assert [e[0] for e in sp.clear_all()] == ["exo_slow_path_cleared"]
    assert sp.active == {}


def test_each_instance_on_its_own_and_the_best_alternative():
    other = {**RING, "id": "r2", "model": "m/8B"}
    sp = SlowPaths()
    links = [lk("wifi", "wifi", 50 * MB, insts=[RING, other]),
             lk("eth", "ethernet", 125 * MB, util=0.5), lk("tb", "thunderbolt", 5000 * MB)]
    evs = sp.update(links)
    assert sorted((e[1]["instance"]["id"], e[1]["better_link_id"]) for e in evs) == [
        ("r1", "tb"), ("r2", "tb")]
