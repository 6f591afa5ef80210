"""The bridge member that reaches a peer, on a real Linux bridge (issue 12 point 2).

A namespace holds bridge xt<tag>b0 with two member veths, each to its own peer namespace
(no root-namespace port). The bridge gets an address, pings each peer (bounded), and then
exotray.agent.hw.linux, run inside the bridge's namespace (its own /sys/class/net), must
name the member that leads to each peer, from the neighbour table and the kernel's
forwarding table. Root only (conftest skips otherwise, saying why); run under
`flock /tmp/exotray-bench.lock` like the other lab runs.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import netlab
import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from exotray.agent.hw import linux as hw
bridge, peers = sys.argv[2], sys.argv[3:]
print(json.dumps({
    "members": hw.bridge_members(bridge),
    "ports": {str(k): v for k, v in hw.bridge_ports(bridge).items()},
    "macs": {ip: hw.neighbour_mac(ip, bridge) for ip in peers},
    "via": {ip: hw.bridge_member_for_peer(bridge, ip) for ip in peers},
    "fdb": [[e.mac, e.port, e.is_local] for e in hw.read_brforward(bridge)],
    "brforward_hex": open(f"/sys/class/net/{bridge}/brforward", "rb").read().hex(),
    "arp": {ip: mac for (ip, dev), mac in hw.parse_proc_arp(open(hw.PROC_ARP).read()).items()
            if dev == bridge},
    "speeds": {m: hw.link_speed_mbit(m) for m in hw.bridge_members(bridge) or ()},
    "tb": hw.thunderbolt_link(bridge) is not None,
}))
"""


def _probe(lab: netlab.Lab, *args: str) -> dict:
    out = lab.bridge_exec(sys.executable, "-c", PROBE, str(ROOT), *args, timeout=60)
    return json.loads(out)


@pytest.mark.needs("ping")
def test_bridge_member_for_each_peer() -> None:
    with netlab.Lab(2, monitor=False) as lab:
        lab.address_bridge()
        h1, h2 = lab.hosts
        macs = {h.addr: h.exec("cat", f"/sys/class/net/{h.veth}/address").strip()
                for h in (h1, h2)}
        for h in (h1, h2):
            out = lab.bridge_exec("ping", "-n", "-c", "2", "-i", "0.2", "-W", "2", h.addr,
                                  check=False, timeout=15)
            assert " 0% packet loss" in out, out
        r = _probe(lab, lab.bridge, h1.addr, h2.addr)
        print(json.dumps(r, indent=1))
        assert r["members"] == sorted([h1.bridge_port, h2.bridge_port])
        assert sorted(r["ports"].values()) == r["members"]
        assert r["macs"] == macs
        assert r["arp"] == macs  # the fallback without pyroute2 agrees with netlink
        assert r["via"] == {h1.addr: h1.bridge_port, h2.addr: h2.bridge_port}
        # the forwarding table holds both peers, learnt, on the right port numbers
        learnt = {mac: port for mac, port, local in r["fdb"] if not local}
        for h in (h1, h2):
            assert r["ports"][str(learnt[macs[h.addr]])] == h.bridge_port
        assert r["tb"] is False
        if os.environ.get("EXOTRAY_RECORD_BRFORWARD"):  # refresh the unit-test recording
            out = Path(os.environ["EXOTRAY_RECORD_BRFORWARD"])
            (out / "brforward.bin").write_bytes(bytes.fromhex(r["brforward_hex"]))
            (out / "brforward.json").write_text(json.dumps(
                {"kernel": os.uname().release, "ports": r["ports"], "peers": r["via"],
                 "macs": r["macs"]}, indent=1) + "\n")
        # a peer that never spoke is nowhere: None, not a wrong member
        assert _probe(lab, lab.bridge, f"10.213.{lab.net}.77")["via"] == {
            f"10.213.{lab.net}.77": None}


def _ipv6_link_local(run, ifname: str) -> str:
    """Turn IPv6 on for `ifname` (netlab turns it off) and wait, bounded, for its
    link-local address to leave DAD ("tentative")."""
    run("sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=0")
    for _ in range(50):  # at most 10 s
        out = run("ip", "-6", "-o", "addr", "show", "dev", ifname, "scope", "link")
        if "fe80::" in out and "tentative" not in out:
            return out.split("inet6 ", 1)[1].split("/", 1)[0]
        time.sleep(0.2)
    raise AssertionError(f"no usable link-local address on {ifname}: {out!r}")


@pytest.mark.needs("ping")
def test_bridge_member_for_an_ipv6_peer() -> None:
    """Issue 35 point 6: an IPv6 peer's member comes from the kernel's neighbour table
    too, whichever way its address is written (with its zone, uncompressed, upper case):
    pyroute2 matched only the kernel's compressed text."""
    with netlab.Lab(2, monitor=False) as lab:
        h1, h2 = lab.hosts
        _ipv6_link_local(lab.bridge_exec, lab.bridge)
        for h in (h1, h2):
            _ipv6_link_local(lab.bridge_exec, h.bridge_port)
        peers = {h.bridge_port: _ipv6_link_local(h.exec, h.veth) for h in (h1, h2)}
        for ll in peers.values():
            out = lab.bridge_exec("ping", "-6", "-n", "-c", "2", "-i", "0.2", "-W", "2",
                                  f"{ll}%{lab.bridge}", check=False, timeout=15)
            assert " 0% packet loss" in out, out
        for port, ll in peers.items():
            full = ipaddress.IPv6Address(ll).exploded.upper()
            for written in (ll, f"{ll}%{lab.bridge}", full):
                assert _probe(lab, lab.bridge, written)["via"] == {written: port}, written


def test_bond_lists_its_members() -> None:
    with netlab.Lab(1, monitor=False) as lab:
        bond = f"xt{lab.tag}bd"
        r = subprocess.run(["ip", "-n", lab.br_ns, "link", "add", bond, "type", "bond",
                            "mode", "active-backup", "miimon", "100"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            pytest.skip(f"this kernel cannot make a bond ({r.stderr.strip()}): "
                        "bond members are covered by the fake-sysfs unit tests only")
        slaves = []
        for k in (1, 2):
            a, b = f"xt{lab.tag}s{k}", f"xt{lab.tag}t{k}"
            netlab.run("ip", "-n", lab.br_ns, "link", "add", a, "type", "veth", "peer",
                       "name", b)
            netlab.run("ip", "-n", lab.br_ns, "link", "set", a, "master", bond)
            netlab.run("ip", "-n", lab.br_ns, "link", "set", b, "up")
            slaves.append(a)
        netlab.run("ip", "-n", lab.br_ns, "link", "set", bond, "up")
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); "
                "from exotray.agent.hw.linux import bond_info as b; "
                "i = b(sys.argv[2]); print(json.dumps([i.mode, i.slaves, i.active]))")
        mode, members, active = json.loads(
            lab.bridge_exec(sys.executable, "-c", code, str(ROOT), bond))
        assert mode == "active-backup" and members == slaves
        assert len(active) == 1 and active[0] in slaves


@pytest.mark.needs("iperf3", "tc")
def test_a_transfer_through_a_bridge_saturates_its_own_cable_only(tmp_path: Path) -> None:
    """Issue 12: an agent on a host whose interface is a bridge of two cables, one to
    each peer. The same capacity (100 Mbit/s) is given to the bridge and to each cable:
    with the bridge's totals both links would "saturate" together; with each link's
    traffic taken from the member that reaches its peer, only the loaded one does.
    `exotray interfaces --json` lists the bridge with both members."""
    import time

    from helpers import wait_for
    from netlab import Agents, Host

    port = 52480
    with netlab.Lab(2) as lab:  # the root namespace's port reads the agent's API
        br_addr = lab.address_bridge()
        h1, h2 = lab.hosts
        hub = Host(lab.br_ns, lab.bridge, "", br_addr)
        lab.shape(h1, "50mbit")  # the cable to h1 queues at 50 Mbit/s (tbf on its port)
        agents = Agents(lab, tmp_path)
        try:
            caps = [f"{lab.bridge}=100", f"{h1.bridge_port}=100", f"{h2.bridge_port}=100"]
            a = agents.start(hub, *[x for c in caps for x in ("--capacity", c)],
                             "--threshold", "0.3", name="hub", mdns=False,
                             peers=[f"{h1.addr}:{port}", f"{h2.addr}:{port}"])
            for h in (h1, h2):
                agents.start(h, name=h.ns[-2:], mdns=False, peers=[f"{br_addr}:{port}"])

            def links() -> dict[str, dict]:
                return {lk["peer_address"]: lk for lk in a.get("/v1/snapshot")["links"]}

            def members_known() -> bool:
                ls = links()
                return (len(ls) == 2 and all(lk["state"] == "up" for lk in ls.values())
                        and ls[h1.addr]["member_interface"] == h1.bridge_port
                        and ls[h2.addr]["member_interface"] == h2.bridge_port)

            assert wait_for(members_known, 20), (a.get("/v1/interfaces"), links())
            srv = h1.popen("iperf3", "-s", "-1", "-B", h1.addr,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            client = hub.popen("iperf3", "-c", h1.addr, "-t", "10", "-C", "cubic",
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            try:
                def saturated() -> list[dict]:
                    return [e for e in a.get("/v1/events")["events"]
                            if e["type"] == "link_saturated"]

                sat = wait_for(saturated, 9.0, every=0.2)
                assert sat, a.log()
                time.sleep(2.0)
                during = links()
                report = json.loads(lab.bridge_exec(
                    sys.executable, "-m", "exotray", "interfaces", "--json", "--port",
                    str(port), "--host", br_addr))
            finally:
                client.wait(30)
                srv.wait(10)
            evs = a.get("/v1/events")["events"]
            tag = lab.tag
        finally:
            agents.close()
    print(json.dumps({k: (v["tx_bytes_per_s"], v["utilization"]) for k, v in during.items()}))
    loaded, idle = during[h1.addr], during[h2.addr]
    assert loaded["tx_bytes_per_s"] > 4e6 and loaded["utilization"] > 0.3
    assert idle["tx_bytes_per_s"] < 0.2e6 and idle["utilization"] < 0.05
    sats = [e for e in evs if e["type"] == "link_saturated"]
    assert [e["peer_name"] for e in sats] == ["h1"], evs
    by_name = {it["name"]: it for it in report["interfaces"]}
    bridge = by_name[lab.bridge]
    assert bridge["bridge"] is True
    assert bridge["members"] == sorted([h1.bridge_port, h2.bridge_port, f"xt{tag}mb"])
    carried = {lk["peer_address"]: name for name, it in by_name.items() for lk in it["links"]}
    assert carried == {h1.addr: h1.bridge_port, h2.addr: h2.bridge_port}
