"""exo in the contract: the `exo_url` setting and `--exo-url`, the links' `exo_instances`
and `rdma` on the wire, and `exotray status`'s one exo line."""

from __future__ import annotations

import json

import pytest

from exotray.cli.args import build_parser, settings_from_args
from exotray.core import schema
from exotray.core.settings import DEFAULT_EXO_URL, Settings, SettingsError, from_mapping
from exotray.core.status import exo_lines

M = "mlx-community/Llama-3.3-70B-Instruct-4bit"


def test_exo_url_setting_and_option(tmp_path):
    assert Settings().exo_url == DEFAULT_EXO_URL == "http://127.0.0.1:52415"
    assert from_mapping({"exo_url": ""}).exo_url == ""
    for bad in ("127.0.0.1:52415", "ftp://x", 5):
        with pytest.raises(SettingsError):
            from_mapping({"exo_url": bad})
    cfg = tmp_path / "none.toml"
    cfg.write_text("")
    for argv, want in (([], DEFAULT_EXO_URL), (["--exo-url", ""], ""),
                       (["--exo-url", "http://10.213.140.1:9000"], "http://10.213.140.1:9000")):
        args = build_parser().parse_args(["agent", "--config", str(cfg), *argv])
        assert settings_from_args(args).exo_url == want


def _link(**over):
    base = {"id": "l1", "peer_id": "p", "peer_name": "studio-2", "local_interface": "en0",
            "peer_address": "10.213.140.2", "peer_port": 52480, "state": "up",
            "rtt_ms": 1.0, "rtt_min_ms": 1.0, "rtt_max_ms": 1.0, "jitter_ms": 0.0,
            "loss": 0.0, "rx_bytes_per_s": 1.0, "tx_bytes_per_s": 1.0,
            "capacity_bytes_per_s": None, "utilization": None}
    return {**base, **over}


def _snap(links):
    return json.dumps({"schema": 1, "node": {"id": "n1", "name": "a", "version": "1"},
                       "interval_s": 1.0, "data_age_s": 0.0, "interfaces": [],
                       "links": links}).encode()


def test_exo_instances_on_the_wire_and_older_peers():
    inst = {"id": "r1", "model": M, "backend": "ring"}
    snap = schema.parse_snapshot(_snap([_link(exo_instances=[inst], rdma="not_counted")]))
    assert schema.dump(snap)["links"][0]["exo_instances"] == [inst]
    assert snap.links[0].rdma == "not_counted"
    # a peer of an older version sends neither: an empty list and None
    old = schema.parse_snapshot(_snap([_link()]))
    assert (old.links[0].exo_instances, old.links[0].rdma) == ([], None)
    for bad in ({**inst, "backend": "tcp"}, {**inst, "model": "x\u202ey"}):
        with pytest.raises(schema.SnapshotRejected):
            schema.parse_snapshot(_snap([_link(exo_instances=[bad])]))
    with pytest.raises(schema.SnapshotRejected):
        schema.parse_snapshot(_snap([_link(exo_instances=[inst] * 17)]))


def _cluster(exo, links=()):
    return {"nodes": [{"node": {"id": "n1", "name": "a"}, "links": list(links), "exo": exo}]}


def test_status_line():
    url = DEFAULT_EXO_URL
    assert exo_lines(_cluster(None)) == []  # --exo-url "": nothing
    assert exo_lines({"nodes": [{}]}) == [] and exo_lines({}) == []
    assert exo_lines(_cluster({"url": url, "status": "absent",
                               "detail": "connection refused"})) == [
        f"exo: not running at {url} (connection refused)."]
    assert exo_lines(_cluster({"url": url, "status": "unreadable", "detail": "not JSON"})) == [
        f"exo: unreadable (not JSON) at {url}."]
    assert exo_lines(_cluster({"url": url, "status": "ok", "instances": []})) == [
        f"exo: running at {url}, no instance."]
    inst = {"id": "r1", "model": M, "backend": "ring", "mine": True}
    link = _link(local_label="Thunderbolt Bridge", exo_instances=[
        {"id": "r1", "model": M, "backend": "ring"}])
    ok = {"url": url, "status": "ok", "instances": [inst, {**inst, "id": "x", "mine": False}],
          "skipped": 1, "rdma_enabled": True, "rdma_ports": {"rdma_en3": "PORT_ACTIVE"}}
    assert exo_lines(_cluster(ok, [link])) == [
        "exo: Llama-3.3-70B-Instruct-4bit (ring) over Thunderbolt Bridge to studio-2; "
        "Llama-3.3-70B-Instruct-4bit (ring) (not on this node); 1 instance(s) not "
        "understood; RDMA enabled (rdma_en3 PORT_ACTIVE)."]


def test_status_line_without_node_id():
    url = DEFAULT_EXO_URL
    inst = {"id": "r1", "model": M, "backend": "ring", "mine": True}
    link = _link(local_label="Wi-Fi", exo_instances=[
        {"id": "r1", "model": M, "backend": "ring"}])
    found = {"url": url, "status": "ok", "instances": [inst], "identified_by": "network",
             "node_id_error": "/node_id answered HTTP 404"}
    assert exo_lines(_cluster(found, [link])) == [
        "exo: Llama-3.3-70B-Instruct-4bit (ring) over Wi-Fi to studio-2; /node_id failed "
        "(/node_id answered HTTP 404): this node found by its address in exo's "
        "nodeNetwork."]
    lost = {"url": url, "status": "ok", "instances": [{**inst, "mine": False}],
            "identified_by": None, "node_id_error": "/node_id answered HTTP 404",
            "unidentified": "no address of this machine in exo's state"}
    assert exo_lines(_cluster(lost)) == [
        "exo: Llama-3.3-70B-Instruct-4bit (ring); /node_id failed (/node_id answered HTTP "
        "404) and this node cannot be told apart (no address of this machine in exo's "
        "state): no link is marked."]


def test_exo_marks_travel_in_stream_deltas():
    """A link's exo_instances and rdma change like any field: the follower's mirror
    (stream sharing) ends up with them, and without them again."""
    import copy

    from stream_frames import snapshot

    from exotray.agent.share import wire as W

    snap = snapshot(links=2)
    m = W.Mirror("aaaaaaaaaaaa", None)
    old = W.split(snap)
    m.full(W.full_body(old, 0.0))
    marked = copy.deepcopy(snap)
    inst = {"id": "r1", "model": M, "backend": "jaccl"}
    marked["links"][0].update(exo_instances=[inst], rdma="not_counted")
    new = W.split(marked)
    d = W.delta(old, new, 0.1)
    assert d["links"]["set"][marked["links"][0]["id"]] == {
        "exo_instances": [inst], "rdma": "not_counted"}
    got = m.delta(W.encode(d))
    assert got.links[0].exo_instances[0].model == M and got.links[0].rdma == "not_counted"
    cleared = copy.deepcopy(snap)  # as views.link_dict sends it: both keys, always
    cleared["links"][0].update(exo_instances=[], rdma=None)
    back = W.split(cleared)
    got = m.delta(W.encode(W.delta(new, back, 0.1)))
    assert (got.links[0].exo_instances, got.links[0].rdma) == ([], None)
