"""`exotray doctor` on a Thunderbolt 5 Mac pair built from the recorded macOS and exo
fixtures (rdma, fastest_link, tb_bridge, link_speed), and its checks of the last day's
events (queueing, flapping, exo_slow_path)."""

from __future__ import annotations

import doctor_views as dv

from exotray.core import doctor

HOUR = 3600.0


def run(cluster, events=(), platform="darwin"):
    return {c.id: c for c in doctor.run(cluster, list(events), dv.NOW, platform)}


def link_of(cluster, lid):
    return next(lk for n in cluster["nodes"] for lk in n["links"] if lk["id"] == lid)


def test_the_tb5_pair_as_recorded():
    """The recordings: the MacBook's receptacle 1 and the Studio's 2 at 80 Gb/s of TB5's
    (symmetric) 80, RDMA enabled (rdma_ctl), exo's JACCL instance over the cable; the
    MacBook's ibv_devinfo shows its rdma_en1 PORT_DOWN, which is said."""
    cluster = dv.tb5_macs()
    mb = cluster["nodes"][0]
    tb = next(i for i in mb["interfaces"] if i["kind"] == "thunderbolt")
    assert (tb["name"], tb["speed_mbit"], tb["max_speed_mbit"]) == ("en1", 80000, 80000)
    by = run(cluster)
    assert by["link_speed"].status == "pass" and "2 ports" in by["link_speed"].summary
    assert by["rdma"].status == "warn"
    assert "rdma_en1" in by["rdma"].summary and "not active" in by["rdma"].summary
    assert by["fastest_link"].status == "pass"
    assert [c for c in by.values() if c.status == "fail"] == []
    link_of(cluster, "mb-tb")["rdma_ports"][0]["state"] = "PORT_ACTIVE"
    assert run(cluster)["rdma"].status == "pass"


def test_rdma_on_one_end_only_fails_naming_the_other():
    by = run(dv.tb5_macs(rdma_peer=False))
    assert by["rdma"].status == "fail"
    assert by["rdma"].nodes[0] == "studio"
    assert "on at macbook" in by["rdma"].summary and "rdma_ctl enable" in by["rdma"].fix


def test_exo_as_a_tcp_ring_over_tb5_warns_once_per_pair():
    by = run(dv.tb5_macs(ring=True))
    assert by["rdma"].status == "warn"
    assert by["rdma"].summary.count("TCP ring") == 1
    assert "Llama-3.3-70B-Instruct-4bit" in by["rdma"].summary


def test_exo_over_wifi_while_thunderbolt_is_up_fails_fastest_link():
    cluster = dv.tb5_macs()
    tb, wifi = link_of(cluster, "mb-tb"), link_of(cluster, "mb-wifi")
    wifi["exo_instances"], tb["exo_instances"] = tb["exo_instances"], []
    by = run(cluster)
    assert by["fastest_link"].status == "fail"
    assert by["fastest_link"].links == ("mb-wifi", "mb-tb")
    assert "169.254.10.2" in by["fastest_link"].fix


def test_an_exo_slow_path_still_on_fails_and_a_cleared_one_does_not():
    raise_ = dv.event("exo_slow_path", dv.NOW - HOUR, link_id="x1", better_link_id="x2",
                      peer_name="studio", local_label="Wi-Fi", better_label="Thunderbolt 1")
    by = run(dv.healthy(), [raise_])
    assert by["fastest_link"].status == "fail" and by["fastest_link"].links == ("x1", "x2")
    clear = dv.event("exo_slow_path_cleared", dv.NOW - HOUR + 60, link_id="x1")
    assert run(dv.healthy(), [raise_, clear])["fastest_link"].status == "pass"


def test_a_tb5_port_at_40_gbs_fails_link_speed():
    cluster = dv.tb5_macs()
    next(i for i in cluster["nodes"][1]["interfaces"] if i["name"] == "en2")["speed_mbit"] = 40000
    by = run(cluster)
    assert by["link_speed"].status == "fail" and by["link_speed"].nodes == ("studio",)
    assert "40 Gb/s of 80 Gb/s" in by["link_speed"].summary


def _bridged(names: list[str], cables: dict[str, list[tuple[str, str]]]) -> dict:
    """Macs whose Thunderbolt Bridge reaches each peer through the given member."""
    nodes = []
    for n in names:
        links = [dv.link(f"{n}-{p}-{m}", p, "bridge0", f"169.254.0.{names.index(p) + 1}",
                         member_interface=m) for p, m in cables[n]]
        members = sorted({m for _, m in cables[n]})
        nodes.append(dv.node(n, links, [dv.iface("bridge0", "other", members=members),
                                        *[dv.iface(m, "thunderbolt") for m in members]]))
    return dv.view(nodes, [dv.peer(p) for p in names[1:]])


def test_three_bridged_macs_in_a_ring_are_a_loop():
    cluster = _bridged(["m1", "m2", "m3"], {
        "m1": [("m2", "en1"), ("m3", "en2")], "m2": [("m1", "en1"), ("m3", "en2")],
        "m3": [("m1", "en1"), ("m2", "en2")]})
    by = run(cluster)
    assert by["tb_bridge"].status == "fail" and set(by["tb_bridge"].nodes) == {"m1", "m2", "m3"}
    chain = _bridged(["m1", "m2", "m3"], {
        "m1": [("m2", "en1")], "m2": [("m1", "en1"), ("m3", "en2")], "m3": [("m2", "en1")]})
    assert run(chain)["tb_bridge"].status == "pass"


def test_exos_own_facts_count_where_our_links_say_nothing():
    """exo's nodeRdmaCtl and thunderboltBridgeCycles, from the snapshot's local exo."""
    cluster = dv.tb5_macs(ring=True)
    cluster["nodes"][0]["exo"] = {"status": "ok", "rdma_ctl": False, "tb_bridge_cycles": 1,
                                  "tb_bridge_cycle": ["n1", "n2", "n3"]}
    by = run(cluster)
    assert "RDMA is off on macbook" in by["rdma"].summary
    assert by["tb_bridge"].status == "fail" and "in one of 3 nodes" in by["tb_bridge"].summary


def test_a_bridge_with_two_cables_to_one_peer_fails():
    cluster = _bridged(["m1", "m2"], {"m1": [("m2", "en1"), ("m2", "en2")],
                                      "m2": [("m1", "en1")]})
    by = run(cluster)
    assert by["tb_bridge"].status == "fail" and "2 cables (en1, en2)" in by["tb_bridge"].summary


def test_queueing_now_and_in_the_last_day_with_when_and_how_long():
    cluster = dv.healthy()
    sat = dv.event("link_saturated", dv.NOW - 5 * HOUR, link_id="ab", cause="queueing",
                   queue_delay_ms=35.0, node="a", peer_name="b", local_interface="eth0")
    clr = dv.event("link_cleared", dv.NOW - 5 * HOUR + 600, link_id="ab", cause="queueing")
    by = run(cluster, [sat, clr])
    assert by["queueing"].status == "warn"
    assert "for 10 min" in by["queueing"].summary and "+35.0 ms" in by["queueing"].summary
    assert run(cluster, [sat])["queueing"].status == "fail"  # still on
    old = dict(sat, at=dv.event("x", dv.NOW - 30 * HOUR)["at"])
    assert run(cluster, [old])["queueing"].status == "pass"  # older than 24 h
    by_util = dict(sat, cause="utilization")
    assert run(cluster, [by_util])["queueing"].status == "pass"
    link_of(cluster, "ab").update(queue_delay_ms=5.0, rtt_baseline_ms=0.2)
    assert run(cluster)["queueing"].status == "warn"


def test_flapping_links_and_carriers_of_the_last_day():
    flap = dv.event("link_flapping", dv.NOW - 2 * HOUR, link_id="ac", changes=3, node="a",
                    peer_name="c", local_interface="eth0")
    calm = dv.event("link_flapping_cleared", dv.NOW - HOUR, link_id="ac")
    carrier = dv.event("link_flapping", dv.NOW - 3 * HOUR, interface="eth1", node="a")
    by = run(dv.healthy(), [flap, calm])
    assert by["flapping"].status == "warn" and by["flapping"].links == ("ac",)
    by = run(dv.healthy(), [flap, carrier])
    assert by["flapping"].status == "fail"
    assert "a's eth1 (eth1) flapped" in by["flapping"].summary
