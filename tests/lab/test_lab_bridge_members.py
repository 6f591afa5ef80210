"""The bridge member that reaches a peer, on a real Linux bridge (issue 12 point 2).

A namespace holds bridge xt<tag>b0 with two member veths, each to its own peer namespace
(no root-namespace port). The bridge gets an address, pings each peer (bounded), and then
exotray.agent.hw_linux, run inside the bridge's namespace (its own /sys/class/net), must
name the member that leads to each peer, from the neighbour table and the kernel's
forwarding table. Root only (conftest skips otherwise, saying why); run under
`flock /tmp/exotray-bench.lock` like the other lab runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import netlab
import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from exotray.agent import hw_linux as hw
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
                "from exotray.agent.hw_linux import bond_info as b; "
                "i = b(sys.argv[2]); print(json.dumps([i.mode, i.slaves, i.active]))")
        mode, members, active = json.loads(
            lab.bridge_exec(sys.executable, "-c", code, str(ROOT), bond))
        assert mode == "active-backup" and members == slaves
        assert len(active) == 1 and active[0] in slaves
