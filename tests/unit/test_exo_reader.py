"""The exo reader (agent/exo/state.py) on fixtures built from exo's models
(tests/fixtures/exo/README.md says where each one comes from)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from exotray.agent.exo import state as exo
from exotray.agent.exo.state import (
    ExoUnreadable,
    decode_state,
    link_instances,
    parse_node_id,
    parse_state,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "exo"
# exo's node ids: hex, leading zeros stripped (build_fixtures.py)
A = "6a1f0c2e93b44d7ab0f11c2d3e4f5a60"  # studio-1, "us"
B = "b2c4e6f80a1b4c3d8e5f6a7b8c9d0e1"  # studio-2
C = "c0ffee0011114222833394445555666"  # mini-3
#: studio-1 in the exo of December 2025, whose node ids were libp2p peer ids
OLD_A = "12D3KooWEvVHeWwhGfT1nV7jLRyBzE3TXcVqF8aX2mQpN5dKs6Ja"


def load(name: str, node_id: str | None = A) -> exo.ExoState:
    return parse_state(decode_state((FIX / name).read_bytes()), node_id)


def ids(insts) -> list[tuple[str, str, str]]:
    return [(i["id"][:8], i["model"], i["backend"]) for i in (x.wire() for x in insts)]


def test_the_built_fixtures_are_what_the_builder_makes():
    spec = importlib.util.spec_from_file_location("build_fixtures", FIX / "build_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name, data in mod.files().items():
        assert (FIX / name).read_bytes() == data, name


def test_node_id_is_a_json_string():
    assert parse_node_id((FIX / "node_id_studio1.json").read_bytes()) == A
    assert parse_node_id(b'{"nodeId": "x-1"}') == "x-1"
    assert parse_node_id(b"<html>") is None
    assert parse_node_id(b"42") is None
    assert parse_node_id(b'""') is None


def test_ring_instance():
    st = load("state_ring.json")
    (ring,) = st.instances
    assert ring.backend == "ring" and ring.mine
    assert ring.model == "mlx-community/Llama-3.3-70B-Instruct-4bit"
    # our own slot (0.0.0.0) is not a neighbour; studio-2's Wi-Fi address is
    assert ring.neighbours == ("192.168.1.11",)
    assert ids(link_instances(st, "192.168.1.11", "en0")) == [
        ("1e5c6f0a", "mlx-community/Llama-3.3-70B-Instruct-4bit", "ring")]
    assert link_instances(st, "169.254.20.11", "bridge0") == []  # the Thunderbolt link
    assert st.rdma_enabled is True and st.skipped == 0


def test_ring_seen_from_the_other_node():
    st = load("state_ring.json", node_id=B)
    assert st.instances[0].neighbours == ("192.168.1.10",)


def test_jaccl_instance_marks_the_link_whose_interface_is_the_rdma_port():
    st = load("state_jaccl.json")
    (j,) = st.instances
    assert (j.backend, j.devices, j.mine) == ("jaccl", ("rdma_en3",), True)
    assert ids(link_instances(st, "169.254.20.11", "en3")) == [
        ("2f6d7a1b", "mlx-community/Llama-3.3-70B-Instruct-4bit", "jaccl")]
    # en3 as a member of the Thunderbolt bridge carrying the link
    members = {"bridge0": ("en2", "en3")}
    assert len(link_instances(st, "169.254.20.11", "bridge0", lambda i: members.get(i, ()))) == 1
    assert link_instances(st, "169.254.20.11", "bridge0") == []
    assert link_instances(st, "192.168.1.11", "en0") == []
    # studio-2 is rank 1: its device towards rank 0 is rdma_en4
    assert load("state_jaccl.json", node_id=B).instances[0].devices == ("rdma_en4",)


def test_several_instances():
    st = load("state_several.json")
    by_id = {i.id[:8]: i for i in st.instances}
    assert set(by_id) == {"1e5c6f0a", "2f6d7a1b", "3a7e8b2c"}
    other = by_id["3a7e8b2c"]  # studio-2 <-> mini-3: not ours
    assert (other.mine, other.neighbours) == (False, ())
    assert ids(link_instances(st, "192.168.1.11", "en0")) == [
        ("1e5c6f0a", "mlx-community/Llama-3.3-70B-Instruct-4bit", "ring")]
    assert [i.backend for i in link_instances(st, "192.168.1.11", "en3")] == ["ring", "jaccl"]
    assert link_instances(st, "192.168.1.12", "en0") == []  # mini-3: no traffic of ours


def test_no_instances_and_unknown_node():
    assert load("state_no_instances.json").instances == ()
    # without /node_id and without this machine's addresses nothing is marked: every
    # address the ring uses would mark links this node does not use
    st = load("state_ring.json", node_id=None)
    assert (st.instances[0].neighbours, st.instances[0].mine) == ((), False)
    assert (st.node_id, st.identified_by) == (None, None)
    assert st.unidentified == "this machine has no address to look for"
    # and JACCL cannot tell our rank: no device
    assert load("state_jaccl.json", node_id=None).instances[0].devices == ()
    assert load("state_ring.json").identified_by == "node_id"


def without_id(name: str, local: list[str]) -> exo.ExoState:
    return parse_state(decode_state((FIX / name).read_bytes()), None, local)


def test_without_node_id_this_machine_is_found_by_its_address_in_node_network():
    # studio-1's Thunderbolt address is ours: we are studio-1, as /node_id would say
    st = without_id("state_several.json", ["127.0.0.1", "169.254.20.10"])
    assert (st.node_id, st.identified_by) == (A, "network")
    by_id = {i.id[:8]: i for i in st.instances}
    assert by_id["1e5c6f0a"].neighbours == ("192.168.1.11",)
    assert by_id["2f6d7a1b"].devices == ("rdma_en3",)  # our JACCL rank is known again
    assert (by_id["3a7e8b2c"].mine, by_id["3a7e8b2c"].neighbours) == (False, ())
    assert link_instances(st, "192.168.1.12", "en0") == []  # mini-3: not ours
    # from studio-2's side
    assert without_id("state_ring.json", ["192.168.1.11"]).instances[0].neighbours == (
        "192.168.1.10",)


def test_an_address_every_node_has_says_nothing():
    state = json.loads((FIX / "state_ring.json").read_text())
    for info in state["nodeNetwork"].values():  # a VM bridge's address on every Mac
        info["interfaces"].append({"name": "bridge100", "ipAddress": "192.168.64.1",
                                   "interfaceType": "other"})
    st = parse_state(state, None, ["192.168.64.1"])
    assert (st.node_id, st.instances[0].neighbours) == (None, ())
    assert st.unidentified == "no address of this machine in exo's state"
    # addresses of two nodes (a misconfigured copy): neither is taken
    st = parse_state(state, None, ["192.168.1.10", "192.168.1.11"])
    assert (st.node_id, st.instances[0].neighbours) == (None, ())
    assert st.unidentified == "this machine's addresses belong to several exo nodes"


def test_without_node_network_our_own_ring_slot_tells_which_node_we_are():
    state = json.loads((FIX / "state_ring.json").read_text())
    del state["nodeNetwork"]
    # the other node connects to 192.168.1.10 at the slot of studio-1's 0.0.0.0: that
    # address being ours makes us studio-1
    st = parse_state(state, None, ["192.168.1.10"])
    assert (st.node_id, st.identified_by) == (A, "ring")
    assert st.instances[0].neighbours == ("192.168.1.11",)
    st = parse_state(state, None, ["10.9.9.9"])
    assert (st.node_id, st.instances[0].neighbours) == (None, ())


def test_an_old_exo_ring_without_node_id_marks_only_our_neighbours():
    hosts = [{"ip": ip, "port": 50123} for ip in ("10.0.0.1", "10.0.0.2", "10.0.0.3",
                                                 "10.0.0.4")]
    state = {"instances": {"r": {"MlxRingInstance": {"instanceId": "r", "hosts": hosts}}}}
    (ring,) = parse_state(state, None, ["10.0.0.2"]).instances
    assert (ring.mine, ring.neighbours) == (True, ("10.0.0.1", "10.0.0.3"))  # not .4
    (ring,) = parse_state(state, None, ["10.9.9.9"]).instances
    assert (ring.mine, ring.neighbours) == (False, ())


def test_an_exo_of_another_version():
    st = load("old_exo_f5783d64.json", OLD_A)
    ring, ibv = st.instances
    assert (ring.backend, ring.model) == ("ring", "mlx-community/Llama-3.3-70B-Instruct-4bit")
    assert ring.neighbours == ("169.254.20.11", "169.254.20.10")
    assert (ibv.backend, ibv.model, ibv.devices) == (
        "jaccl", "mlx-community/Qwen3-235B-A22B-4bit", ("rdma_en2",))
    assert st.skipped == 0


def test_snake_case_and_untagged_and_ip_port_strings():
    raw = {"instances": {"i1": {"instance_id": "i1", "hosts_by_node": {
        "n1": ["0.0.0.0:5000", "10.0.0.2:5000"]},
        "shard_assignments": {"model_id": "m/x"}}}}
    (i,) = parse_state(raw, "n1").instances
    assert (i.backend, i.model, i.neighbours) == ("ring", "m/x", ("10.0.0.2",))


@pytest.mark.parametrize("state", [
    {},
    {"instances": None},
    {"instances": {}},
    {"instances": {"x": {"MlxRingInstance": {"instanceId": "x"}}}},  # no hosts at all
])
def test_missing_keys_are_empty_not_errors(state):
    st = parse_state(state, A)
    assert all(i.neighbours == () for i in st.instances)


@pytest.mark.parametrize("instances,skipped", [
    ({"x": 7}, 1),
    ({"x": {"MlxRingInstance": {"hostsByNode": {A: "nope"}}}}, 1),
    ({"x": {"MlxJacclInstance": {"jacclDevices": "rdma_en3"}}}, 1),
    ({"x": {"SomethingNew": {"instanceId": "x"}}}, 1),
    ({"x": {"MlxRingInstance": {"hostsByNode": {A: [None, 3, {"ip": 5}]}}}}, 0),
    ([1, 2], 1),
])
def test_broken_instances_are_skipped_and_counted(instances, skipped):
    st = parse_state({"instances": instances}, A)
    assert st.skipped == skipped
    assert all(not i.neighbours and not i.devices for i in st.instances)


@pytest.mark.parametrize("raw", [
    (FIX / "garbage_502.html").read_bytes(), b"", b"[1, 2]", b'"text"', b"\xff\xfe\x00",
    b"null", b"{" * 5000,
])
def test_garbage_is_unreadable(raw):
    with pytest.raises(ExoUnreadable):
        decode_state(raw)


def test_text_from_exo_is_cut_and_cleaned():
    raw = {"instances": {"i": {"MlxRingInstance": {
        "instanceId": "i\u202e" + "x" * 300, "hostsByNode": {A: []},
        "shardAssignments": {"modelId": "evil\nmodel"}}}}}
    (i,) = parse_state(raw, A).instances
    assert len(i.id) == exo.MAX_TEXT and "\u202e" not in i.id
    assert i.model == "evilmodel"


def test_rdma_port_and_short_model():
    assert exo.rdma_port("rdma_en3") == "en3"
    assert exo.rdma_port("mlx5_0") is None
    assert exo.short_model("mlx-community/Llama-3.3-70B-Instruct-4bit") == \
        "Llama-3.3-70B-Instruct-4bit"
    assert json.loads(json.dumps(exo.ExoInstance("a", "m", "ring").wire())) == {
        "id": "a", "model": "m", "backend": "ring"}


def test_only_what_links_need_is_read_and_kept():
    """Issue 33 point 4: a 13.9 MB /state (850k neighbour addresses, or 380k
    nodeIdentities) cost 330 MiB and most of a core. Only the parts links need are
    decoded (others are skipped in msgspec's parser), within MAX_EXO_READ_BYTES in all,
    and an instance keeps at most MAX_EXO_PEERS_PER_INSTANCE neighbours or devices."""
    from exotray.agent.base.limits import MAX_EXO_PEERS_PER_INSTANCE as MOST
    from exotray.agent.base.limits import MAX_EXO_READ_BYTES

    state = json.loads((FIX / "state_several.json").read_text())
    state["nodeIdentities"].update({f"n{i}": {"friendlyName": "x"} for i in range(20_000)})
    parts = decode_state(json.dumps(state).encode())
    assert set(parts) == {"instances", "nodeNetwork", "nodeRdmaCtl", "nodeThunderbolt",
                          "nodeThunderboltBridge", "thunderboltBridgeCycles"}
    assert parse_state(parts, A).instances == load("state_several.json").instances
    # a ring whose host list names 5000 addresses, an old one-list ring, a JACCL rank of
    # 5000 devices: the first 16 of each are kept
    ips = [f"10.1.{i // 250}.{1 + i % 250}" for i in range(5000)]
    raw = {"instances": {
        "r": {"MlxRingInstance": {"hostsByNode": {A: ["0.0.0.0:1", *ips, ips[0]]}}},
        "o": {"MlxRingInstance": {"hosts": [f"{ip}:1" for ip in ips]}},
        "j": {"MlxJacclInstance": {
            "jacclDevices": [[f"rdma_en{i}" for i in range(5000)]],
            "shardAssignments": {"nodeToRunner": {A: "x"},
                                 "runnerToShard": {"x": {"deviceRank": 0}}}}}}}
    ring, old, jaccl = parse_state(decode_state(json.dumps(raw).encode()), A).instances
    assert ring.neighbours == tuple(ips[:MOST]) and old.neighbours == tuple(ips[:MOST])
    assert jaccl.devices == tuple(f"rdma_en{i}" for i in range(MOST))
    # over the bytes read: unreadable (said once by the poller), nothing decoded
    state["instances"]["big"] = {"MlxRingInstance": {"hostsByNode": {A: ips * 30}}}
    with pytest.raises(ExoUnreadable, match=r"^instances: \d+\.\d MB of JSON, over the "
                                            rf"{MAX_EXO_READ_BYTES >> 20} MiB the agent reads"):
        decode_state(json.dumps(state).encode())


# -- the shapes exo is moving to (issue 35 point 7) -------------------------------------
N1, N2 = "12d3f4a5b6c7d8e9f0a1b2c3d4e5f6a7", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"  # exo zids


def _shards_2147(model: str, nodes: list[str]) -> dict:
    """`ShardAssignments` as exo #2147 has it: `shards: [[nodeId, runnerId, shard]]`."""
    return {"modelId": model, "primaryOutputNode": nodes[-1], "shards": [
        [n, f"runner-{i}", {"TensorShardMetadata": {"deviceRank": i, "worldSize": len(nodes)}}]
        for i, n in enumerate(nodes)]}


def _jaccl_2160(devices: list) -> dict:
    """A JACCL instance with exo #2160/#2195's `jacclDevices`: each cell a list."""
    return {"instances": {"j1": {"MlxJacclInstance": {
        "instanceId": "j1", "shardAssignments": _shards_2147("m/Qwen3-4bit", [N1, N2]),
        "jacclDevices": devices, "jacclCoordinators": {}}}}}


def test_jaccl_device_cells_as_lists_and_shards_as_rows_are_read():
    st = exo.parse_state(_jaccl_2160([[[], ["rdma_en2", "rdma_en3"]], [["rdma_en4"], []]]), N1)
    (j,) = st.instances
    assert (j.backend, j.model, j.devices, j.mine) == (
        "jaccl", "m/Qwen3-4bit", ("rdma_en2", "rdma_en3"), True)
    assert exo.parse_state(_jaccl_2160([[None, "rdma_en2"], ["rdma_en4", None]]),
                           N2).instances[0].devices == ("rdma_en4",)  # the old cells
    assert exo.parse_state(_jaccl_2160([[[], ["rdma_en2"]], [[], []]]), "someone-else"
                           ).instances[0].mine is False


def test_a_ring_with_shards_as_rows_knows_it_is_ours():
    ring = {"instances": {"r1": {"MlxRingInstance": {
        "instanceId": "r1", "shardAssignments": _shards_2147("m/Llama", [N1, N2]),
        "hostsByNode": {N1: [{"ip": "0.0.0.0", "port": 1}, {"ip": "10.0.0.2", "port": 1}]}}}}}
    (r,) = exo.parse_state(ring, N1).instances
    assert (r.model, r.neighbours, r.mine) == ("m/Llama", ("10.0.0.2",), True)
    # exo's one ring list for every node (before Dec 2025) with shards as rows: a node
    # the rows do not name is not in the ring (read as "ours" before: no nodeToRunner)
    body = ring["instances"]["r1"]["MlxRingInstance"]
    body["hosts"] = body.pop("hostsByNode")[N1]
    assert exo.parse_state(ring, N1).instances[0].mine is True
    assert exo.parse_state(ring, "someone-else").instances[0].mine is False


def test_an_instance_whose_rank_or_devices_cannot_be_read_is_skipped_with_its_reason():
    from exotray.core.status import exo_lines

    bad_rank = _jaccl_2160([["rdma_en2"], ["rdma_en4"]])
    shard = bad_rank["instances"]["j1"]["MlxJacclInstance"]["shardAssignments"]["shards"][0]
    shard[2] = {"TensorShardMetadata": {"deviceRank": "zero"}}
    st = exo.parse_state(bad_rank, N1)
    assert st.instances == () and st.skipped == 1
    assert st.skip_reasons == ("jaccl: this node's rank cannot be read",)
    bad_devices = exo.parse_state(_jaccl_2160([[[{"x": 1}]], [[]]]), N1)
    assert bad_devices.skip_reasons == ("jaccl: this node's devices cannot be read",)
    exo_status = {"url": "http://127.0.0.1:52415", "status": "ok", "instances": [],
                  "skipped": 1, "skip_reasons": list(st.skip_reasons)}
    text = "\n".join(exo_lines({"nodes": [{"exo": exo_status, "links": []}]}))
    assert "1 instance(s) not understood (jaccl: this node's rank cannot be read)" in text
