"""Which links `exotray doctor --active` measures (cli/doctor_active.targets): this node's
links that `capacity_unknown` names for traffic over an unknown capacity, one per
interface that carries them, at most MAX_TESTS; other nodes' are left to them."""

from __future__ import annotations

import doctor_views as dv

from exotray.cli import doctor_active
from exotray.core import doctor

BUSY = {"rx_bytes_per_s": 5e6, "tx_bytes_per_s": 1e6}


def _view() -> dict:
    nics = [dv.iface(n) for n in ("eth0", "eth1", "eth2", "eth3", "eth4")]
    a = dv.node("a", [
        dv.link("ab0", "b", "eth0", "10.0.0.2", capacity_bytes_per_s=None, **BUSY),
        dv.link("ac0", "c", "eth0", "10.0.0.3", capacity_bytes_per_s=None, **BUSY),
        dv.link("ab1", "b", "eth1", "10.0.1.2", capacity_bytes_per_s=None, **BUSY),
        dv.link("ab2", "b", "eth2", "10.0.2.2", capacity_bytes_per_s=None, **BUSY),
        dv.link("ab3", "b", "eth3", "10.0.3.2", capacity_bytes_per_s=None, **BUSY),
        # idle, or known and within its capacity: nothing to learn
        dv.link("ab4", "b", "eth4", "10.0.4.2", capacity_bytes_per_s=None),
        dv.link("ac1", "c", "eth1", "10.0.1.3", **BUSY),
    ], nics)
    b = dv.node("b", [dv.link("ba0", "a", "eth0", "10.0.0.1", capacity_bytes_per_s=None,
                              **BUSY)])
    c = dv.node("c", [dv.link("ca0", "a", "eth0", "10.0.0.1")])
    return dv.view([a, b, c], [dv.peer("b", "10.0.0.2"), dv.peer("c", "10.0.0.3")])


def test_one_link_per_interface_at_most_max_tests_and_other_nodes_named():
    view = _view()
    checks = doctor.run(view, [], dv.NOW, None)
    picked, later, others = doctor_active.targets(view, checks)
    assert doctor_active.MAX_TESTS == 3
    assert [t.link_id for t in picked] == ["ab0", "ab1", "ab2"]  # ac0 shares eth0 with ab0
    assert [t.link_id for t in later] == ["ab3"]
    assert others == ["b"]
    assert picked[0].peer == "10.0.0.2:52480" and picked[0].interface == "eth0"
    assert picked[0].words == "a → b via eth0"


def test_nothing_to_measure_when_every_capacity_is_known():
    view = dv.healthy()
    picked, later, others = doctor_active.targets(view, doctor.run(view, [], dv.NOW, None))
    assert (picked, later, others) == ([], [], [])
