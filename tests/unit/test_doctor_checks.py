"""`exotray doctor`'s checks (core/doctor*.py) on cluster views: a healthy one, the one
recorded in the lab (tests/qt/fixtures), a Thunderbolt 5 Mac pair built from the macOS
and exo recordings, and each problem made in a copy of the healthy one."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import doctor_views as dv
import pytest

from exotray.core import doctor
from exotray.core.events import unix
from exotray.core.health import LOCAL_NETWORK_DENIED

QT_FIXTURES = Path(__file__).parents[1] / "qt" / "fixtures"


def run(cluster, events=(), platform="linux"):
    return {c.id: c for c in doctor.run(cluster, list(events), dv.NOW, platform)}


def failing(cluster, events=(), platform="linux"):
    return {c.id for c in doctor.run(cluster, list(events), dv.NOW, platform)
            if c.status == "fail"}


def own_link(cluster, lid):
    return next(lk for n in cluster["nodes"] for lk in n["links"] if lk["id"] == lid)


def test_a_healthy_cluster_passes_every_check_in_the_contract_order():
    checks = doctor.run(dv.healthy(), [], dv.NOW, "linux")
    assert [c.id for c in checks] == list(doctor.IDS)
    assert {c.status for c in checks} == {"pass"}
    assert doctor.exit_status(checks) == 0
    assert set(doctor.IDS) == {
        "reachable", "udp_probes", "fastest_link", "link_speed", "mtu", "loss", "queueing",
        "flapping", "capacity_unknown", "versions", "rdma", "tb_bridge", "local_network",
        "wifi_awdl", "history"}
    assert checks[0].as_dict().keys() == {"id", "status", "summary", "fix", "nodes", "links"}


def test_the_recorded_lab_view_fails_the_dead_peer_and_nothing_it_cannot_know():
    cluster = json.loads((QT_FIXTURES / "cluster.json").read_text())
    events = json.loads((QT_FIXTURES / "events.json").read_text())["events"]
    now = max(unix(e["at"]) for e in events) + 10
    checks = doctor.run(cluster, events, now, "linux")
    by = {c.id: c for c in checks}
    assert checks[0].id == "reachable" and checks[0].status == "fail"
    assert by["reachable"].nodes == ("gpu-3",) and "10.213.0.3" in by["reachable"].summary
    assert doctor.exit_status(checks) == 1
    # studio-2 is reached through the 50 Mbit/s hop while its 1 Gbit/s link idles
    assert by["fastest_link"].status == "warn"
    assert "0386def512a998f6" in by["fastest_link"].links
    # no MTU, no history state in this recording: unknown, not a failure
    assert by["mtu"].status == "pass" and "unknown" in by["mtu"].summary
    assert by["history"].status == "pass" and "unknown" in by["history"].summary
    assert [c.id for c in checks if c.status == "fail"] == ["reachable"]


def test_a_peer_whose_http_answers_and_probes_do_not_is_udp_probes_not_reachable():
    cluster = dv.healthy()
    cluster["peers"][0] = dv.peer("b", "10.0.0.2", up=False, reachable=True,
                                  sources=["manual"])
    for n in cluster["nodes"]:
        for lk in n["links"]:
            if lk["peer_name"] == "b" or n["node"]["name"] == "b":
                lk["state"] = "down"
    by = run(cluster)
    assert by["udp_probes"].status == "fail"
    assert by["udp_probes"].nodes == ("b",)
    assert "Open UDP 52480 on b" in by["udp_probes"].fix
    assert by["udp_probes"].links == ("ab",)
    assert by["reachable"].status == "pass"  # b's links down are udp_probes' finding
    # a peer that answers neither: reachable's
    cluster["peers"][0] = dv.peer("b", "10.0.0.2", up=False, reachable=False)
    cluster["nodes"][1]["reachable"] = False
    by = run(cluster)
    assert by["udp_probes"].status == "pass"
    assert by["reachable"].status == "fail" and by["reachable"].nodes == ("b",)


def test_every_peer_blocked_points_at_this_node():
    cluster = dv.healthy()
    cluster["peers"] = [dv.peer(p, f"10.0.0.{i}", up=False, reachable=True,
                                sources=["manual"]) for i, p in ((2, "b"), (3, "c"))]
    by = run(cluster)
    assert by["udp_probes"].status == "fail" and by["udp_probes"].nodes == ("a",)


def test_an_address_that_does_not_answer_warns_naming_it():
    cluster = dv.healthy()
    cluster["nodes"][0]["links"].append(dv.link("ab2", "b", "eth1", "10.9.0.2", state="down"))
    by = run(cluster)
    assert by["reachable"].status == "warn" and "10.9.0.2" in by["reachable"].summary
    assert by["reachable"].links == ("ab2",)


def test_a_degraded_port_fails_link_speed_naming_node_and_speeds():
    cluster = dv.healthy()
    cluster["nodes"][2]["interfaces"][0]["speed_mbit"] = 1000
    by = run(cluster)
    assert by["link_speed"].status == "fail"
    assert by["link_speed"].nodes == ("c",)
    assert "1 Gb/s of 10 Gb/s" in by["link_speed"].summary
    assert set(by["link_speed"].links) == {"ca", "cb"}
    for n in cluster["nodes"]:
        n["interfaces"][0]["max_speed_mbit"] = None
    assert "unknown" in run(cluster)["link_speed"].summary


def test_mtu_false_fails_and_unknown_passes_saying_so():
    cluster = dv.healthy()
    own_link(cluster, "ac").update(mtu_ok=False, path_mtu=1500)
    by = run(cluster)
    assert by["mtu"].status == "fail" and by["mtu"].links == ("ac",)
    assert "only 1500 bytes" in by["mtu"].summary and by["mtu"].nodes == ("a", "c")
    for n in cluster["nodes"]:
        for lk in n["links"]:
            lk.update(mtu_ok=None, path_mtu=None)
    assert run(cluster)["mtu"].status == "pass"
    assert "unknown" in run(cluster)["mtu"].summary


def test_traffic_over_a_set_capacity_fails_and_unknown_capacity_warns_with_the_command():
    cluster = dv.healthy()
    own_link(cluster, "ab").update(capacity_bytes_per_s=1.25e6, capacity_source="override",
                                   tx_bytes_per_s=6e6, utilization=4.8)
    by = run(cluster)
    assert by["capacity_unknown"].status == "fail"
    assert by["capacity_unknown"].links == ("ab",)
    assert "override" in by["capacity_unknown"].summary
    cluster = dv.healthy()
    own_link(cluster, "ba").update(capacity_bytes_per_s=None, tx_bytes_per_s=3e6)
    by = run(cluster)
    assert by["capacity_unknown"].status == "warn"
    assert "On b: exotray measure a" in by["capacity_unknown"].fix


def test_loss_now_warns_then_fails():
    cluster = dv.healthy()
    own_link(cluster, "bc")["loss"] = 0.05
    assert run(cluster)["loss"].status == "pass"
    own_link(cluster, "bc")["loss"] = 0.2  # two probes of ten: a start, a glitch
    assert run(cluster)["loss"].status == "warn"
    own_link(cluster, "bc")["loss"] = 0.5
    assert run(cluster)["loss"].status == "fail"
    own_link(cluster, "bc")["state"] = "down"  # a down link is reachable's
    assert run(cluster)["loss"].status == "pass"


def test_versions_and_the_old_sharing_protocol_warn_and_another_protocol_fails():
    cluster = dv.healthy()
    cluster["nodes"][1]["node"]["version"] = "0.2.9"
    cluster["peers"][1]["sharing"] = "poll"
    by = run(cluster)
    assert by["versions"].status == "warn"
    assert "b runs 0.2.9" in by["versions"].summary and "c speaks" in by["versions"].summary
    cluster["discovery"]["ignored"] = [{"service": "d._exotray._udp.local.",
                                        "reason": "version_mismatch"}]
    assert run(cluster)["versions"].status == "fail"


def test_local_network_denied_fails_on_this_node_only():
    cluster = dv.healthy()
    assert run(cluster, platform="darwin")["local_network"].status == "pass"
    cluster["nodes"][0]["warnings"] = [LOCAL_NETWORK_DENIED]
    by = run(cluster, platform="darwin")
    assert by["local_network"].status == "fail" and by["local_network"].nodes == ("a",)


def test_awdl_up_while_wifi_carries_traffic_warns():
    cluster = dv.tb5_macs()
    mb = cluster["nodes"][0]
    assert run(cluster, platform="darwin")["wifi_awdl"].status == "pass"
    next(i for i in mb["interfaces"] if i["name"] == "awdl0")["up"] = True
    own_link(cluster, "mb-wifi")["tx_bytes_per_s"] = 4e6
    by = run(cluster, platform="darwin")
    assert by["wifi_awdl"].status == "warn" and by["wifi_awdl"].links == ("mb-wifi",)


@pytest.mark.parametrize(("history", "status"), [
    ({"days": 30.0, "database": "unavailable", "behind_since": None, "free_bytes": None,
      "path": "/s/history.db"}, "fail"),
    ({"days": 30.0, "database": "ok", "behind_since": "2027-01-15T08:00:00.000Z",
      "free_bytes": 0}, "fail"),
    ({"days": 30.0, "database": "ok", "behind_since": None, "free_bytes": 300 << 20}, "warn"),
    ({"days": 0.0, "database": "off", "behind_since": None, "free_bytes": None}, "warn"),
])
def test_the_history_database_state(history, status):
    cluster = dv.healthy()
    cluster["nodes"][0]["history"] = history
    assert run(cluster)["history"].status == status


def test_a_view_a_check_cannot_read_is_said_not_raised():
    cluster = dv.healthy()
    cluster["nodes"][1]["links"][0]["capacity_bytes_per_s"] = "fast"
    cluster["nodes"][1]["links"][0]["tx_bytes_per_s"] = 1e7
    by = run(cluster)
    assert by["capacity_unknown"].status == "warn"
    assert "could not be checked" in by["capacity_unknown"].summary


def test_checks_are_pure():
    cluster = dv.tb5_macs(rdma_peer=False)
    before = copy.deepcopy(cluster)
    doctor.run(cluster, [], dv.NOW, "darwin")
    assert cluster == before
