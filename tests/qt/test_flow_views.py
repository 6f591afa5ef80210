"""A link's own bytes in the window (issue 30): its map badge and its table cells say
"its own of its carrier's"; a link without them reads as before."""

from __future__ import annotations

from exotray.core import topology
from exotray.ui.link import model as linkmodel
from exotray.ui.topology.badges import badge_text


def _link(**kw) -> dict:
    base = {"id": "L0", "peer_id": "p0", "peer_name": "studio-2", "peer_address": "10.213.0.2",
            "peer_port": 52480, "local_interface": "en0", "local_label": "Ethernet",
            "member_interface": None, "state": "up", "rtt_ms": 0.4, "utilization": 0.9,
            "rx_bytes_per_s": 1.0e6, "tx_bytes_per_s": 1.2e9, "capacity_bytes_per_s": 1.25e9}
    return {**base, **kw}


def _edge(link: dict):
    (edge,) = topology.build({"self": "me", "nodes": [
        {"node": {"id": "me", "name": "studio-1"}, "links": [link]}]})[1]
    return edge


def test_the_badge_and_the_table_show_a_link_s_own_bytes_beside_its_carrier_s(qapp):
    own = _link(flow_rx_bytes_per_s=1.0e5, flow_tx_bytes_per_s=1.1e9, flow_source="sockets")
    assert badge_text(_edge(own)).startswith("1.1 GB/s of en0's 1.2 GB/s · ")
    assert badge_text(_edge(_link())).startswith("1.2 GB/s · ")
    m = linkmodel.LinkModel()
    values = linkmodel._values("studio-1", own, {}, {}, {})
    assert m.text(linkmodel.TX, values[linkmodel.TX]) == "1.1 GB/s of 1.2 GB/s"
    plain = linkmodel._values("studio-1", _link(), {}, {}, {})
    assert m.text(linkmodel.TX, plain[linkmodel.TX]) == "1.2 GB/s"
