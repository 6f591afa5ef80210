"""The exo reader on the Thunderbolt 5 fixture (tests/fixtures/exo/state_tb5.json, checked
against exo's own code by check_with_exo.py): exo's hex node ids, socket edges whose
sinkMultiaddr carries ip_address and port, RDMA edges, and what exo knows of this node's
Thunderbolt ports and bridge (agent/exo/thunderbolt.py)."""

from __future__ import annotations

import json
from pathlib import Path

from exotray.agent.exo import thunderbolt
from exotray.agent.exo.state import decode_state, link_instances, parse_state

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "exo"
D = "4e1b9c07d2a85f36b0c1e9a7d4f26b83"  # studio-a, "us"
E = "9c3f52a1e07b4d68a2f1c0b39e8d7a5"  # studio-b: 31 hex digits (a leading 0 stripped)
F = "d07a6e9b31c4f2580e9a7b1c6d3f4e2a"  # studio-c
RAW = (FIX / "state_tb5.json").read_bytes()


def test_the_fixture_has_exo_s_shapes():
    doc = json.loads(RAW)
    edges = doc["topology"]["connections"][D][E]
    assert edges[0]["sinkMultiaddr"] == {"address": "/ip4/10.0.1.21/tcp/52415",
                                         "address_type": "ip4", "ip_address": "10.0.1.21",
                                         "port": 52415}
    assert {"sourceRdmaIface": "rdma_en2", "sinkRdmaIface": "rdma_en2"} in edges
    assert doc["nodeThunderbolt"][D]["interfaces"][0]["rdmaInterface"] == "rdma_en2"


def test_hex_node_ids_and_the_rdma_matrix_mark_our_ports():
    st = parse_state(decode_state(RAW), D)
    (j,) = st.instances
    # row 0 of get_mlx_jaccl_devices_matrix: rdma_en2 towards studio-b, rdma_en3 to -c
    assert (j.backend, j.devices, j.mine) == ("jaccl", ("rdma_en2", "rdma_en3"), True)
    assert link_instances(st, "169.254.31.21", "en2") == [j]
    assert link_instances(st, "10.0.1.22", "en3") == [j]
    assert link_instances(st, "10.0.1.21", "en0") == []
    # studio-b's id has 31 digits; its row: rdma_en2 to studio-a, rdma_en3 to studio-c
    assert parse_state(decode_state(RAW), E).instances[0].devices == ("rdma_en2", "rdma_en3")


def test_without_node_id_our_address_tells_which_hex_id_we_are():
    # every node lists lo0's 127.0.0.1: it tells nothing; the Ethernet address does
    st = parse_state(decode_state(RAW), None, ["127.0.0.1", "10.0.1.22"])
    assert (st.node_id, st.identified_by) == (F, "network")
    assert st.instances[0].devices == ("rdma_en2", "rdma_en3")


def test_exo_s_thunderbolt_facts_of_this_node():
    tb = parse_state(decode_state(RAW), D).thunderbolt
    assert [(p.interface, p.link_speed, p.speed_mbit) for p in tb.ports] == [
        ("en2", "80 Gb/s", 80000), ("en3", "80 Gb/s", 80000),
        # empty receptacles say their maximum: no link speed
        *((f"en{n}", "Up to 120 Gb/s", None) for n in range(4, 8))]
    assert tb.speeds() == {"en2": 80000.0, "en3": 80000.0}
    assert (tb.bridge_enabled, tb.bridge_exists, tb.bridge_service) == (
        True, True, "Thunderbolt Bridge")
    assert (tb.cycles, tb.cycle) == (1, (D, E))
    # studio-b: its cable to studio-c is a Thunderbolt 4 one; the loop from its side
    tb = parse_state(decode_state(RAW), E).thunderbolt
    assert tb.speeds() == {"en2": 80000.0, "en3": 40000.0}
    assert tb.cycle == (E, D)
    # studio-c: bridge off, in no loop
    tb = parse_state(decode_state(RAW), F).thunderbolt
    assert (tb.bridge_enabled, tb.cycles, tb.cycle) == (False, 1, ())


def test_no_thunderbolt_facts_without_our_id_or_without_exo_s_parts():
    assert parse_state(decode_state(RAW), "someone-else").thunderbolt == \
        thunderbolt.ExoThunderbolt(cycles=1)
    assert parse_state(decode_state(b'{"instances": {}}'), D).thunderbolt is None
    assert parse_state(decode_state(RAW), None).thunderbolt is None


def test_what_cannot_be_read_is_left_out_and_lists_are_bounded():
    ports = [{"rdmaInterface": f"rdma_en{n}", "domainUuid": "x", "linkSpeed": "80 Gb/s"}
             for n in range(100)]
    ports[0:0] = [{"rdmaInterface": "en9"}, {"rdmaInterface": 7}, "junk",
                  {"rdma_interface": "rdma_en1", "link_speed": "fast"}]
    state = {"nodeThunderbolt": {D: {"interfaces": ports}},
             "nodeThunderboltBridge": {D: {"enabled": "yes", "exists": True}},
             "thunderboltBridgeCycles": [[f"n{i}" for i in range(40)] + [D]] * 500}
    tb = thunderbolt.read(state, D)
    assert tb.ports[0] == thunderbolt.TbPort("en1", "rdma_en1", "fast", None)
    assert len(tb.ports) == 16
    assert (tb.bridge_enabled, tb.bridge_exists) == (None, True)
    assert tb.cycles == 500 and len(tb.cycle) == 16 and tb.cycle[0] == D
