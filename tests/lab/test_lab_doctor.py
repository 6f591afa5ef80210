"""Issue 32 on the virtual LAN: `exotray doctor` run on h1 of four hosts (peers given with
--peer, mDNS off). Clean, it exits 0 with no check failing. Then three things break at
once, each on another host, and exactly their checks fail, naming them:

- h2: UDP to its agent's port dropped in its namespace (an `ip rule` blackhole ahead of
  the local table; its HTTP still answers): `udp_probes`, naming h2;
- h3: the LAN at MTU 9000 but h3's switch port at 1500: `mtu`, every failing link h3's;
- h4: a capacity of 10 Mbit/s set for its port while iperf3 sends 50 Mbit/s from it:
  `capacity_unknown` (the capacity is wrong), naming h4.

Every other check passes or warns. Times and the outputs are printed."""

from __future__ import annotations

import json
import sys
import time

import netlab
from helpers import wait_for
from netlab import SETTLE_S, Agents, Lab

PORT = 52480


def doctor(host: netlab.Host) -> tuple[int, dict[str, dict]]:
    r = netlab.run("ip", "netns", "exec", host.ns, sys.executable, "-m", "exotray", "doctor",
                   "--json", check=False, timeout=30)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, {c["id"]: c for c in json.loads(r.stdout)["checks"]}


def failing(checks: dict[str, dict]) -> set[str]:
    return {i for i, c in checks.items() if c["status"] == "fail"}


def _settled(agent, n: int) -> bool:
    cluster = agent.get("/v1/cluster")
    nodes = cluster["nodes"]
    return len(nodes) == n and all(
        len(node["links"]) == n - 1 and all(lk["state"] == "up" and lk["loss"] == 0
                                            for lk in node["links"]) for node in nodes)


def test_a_clean_cluster_then_three_faults_each_named_by_its_check(tmp_path):
    with Lab(4) as lab:
        h1, h2, h3, h4 = lab.hosts
        agents = Agents(lab, tmp_path)
        try:
            for h in lab.hosts:
                extra = ["--capacity", f"{h4.veth}=10"] if h is h4 else []
                agents.start(h, *extra, name=h.ns[-2:], mdns=False,
                             peers=[f"{o.addr}:{PORT}" for o in lab.hosts if o is not h])
            a1 = agents.all[0]
            a1.wait_ready()
            assert wait_for(lambda: _settled(a1, 4), 30), a1.log()
            # a link's first seconds count probes sent before its peer listened as lost
            since = time.monotonic()
            assert wait_for(lambda: time.monotonic() - since > 11 and _settled(a1, 4),
                            30), a1.log()
            code, clean = doctor(h1)
            print("\nclean:", {i: c["status"] for i, c in clean.items()})
            assert code == 0 and not failing(clean), clean

            # h3: jumbo frames everywhere but at h3's switch port
            for i, h in enumerate(lab.hosts, 1):
                h.exec("ip", "link", "set", h.veth, "mtu", "9000")
                if h is not h3:
                    lab.bridge_exec("ip", "link", "set", f"xt{lab.tag}{i}b", "mtu", "9000")
            # h2: UDP to the agent's port dropped before local delivery (the local table
            # moved behind the blackhole), in h2's namespace only
            h2.exec("ip", "rule", "add", "pref", "100", "lookup", "local")
            h2.exec("ip", "rule", "del", "pref", "0", "lookup", "local")
            h2.exec("ip", "rule", "add", "pref", "10", "iif", h2.veth, "ipproto", "udp",
                    "dport", str(PORT), "blackhole")
            # h4: 50 Mbit/s through a port whose capacity is set at 10
            lab.iperf_server(h1)
            client = lab.iperf_client(h4, h1, 75, "-b", "50M")
            t0 = time.monotonic()
            expected = {"udp_probes", "mtu", "capacity_unknown"}
            last: list = [None]

            def broken() -> bool:
                last[0] = doctor(h1)  # (h1's own link to h3 among the mtu's: its turn)
                return (failing(last[0][1]) == expected
                        and "h1 → h3" in last[0][1]["mtu"]["summary"])

            found = wait_for(broken, 60 + SETTLE_S, every=2.0)
            took = time.monotonic() - t0
            code, checks = last[0]
            print(f"broken after {took:.1f} s:")
            for c in checks.values():
                print(f"  {c['status']:<4} {c['id']}: {c['summary']} | {c['fix']}")
            assert found, {i: c["summary"] for i, c in checks.items() if c["status"] != "pass"}
            assert code == 1
            assert checks["udp_probes"]["nodes"] == ["h2"]
            assert f"UDP {PORT}" in checks["udp_probes"]["summary"]
            assert checks["capacity_unknown"]["nodes"] == ["h4"]
            assert "override" in checks["capacity_unknown"]["summary"]
            ends = {lk["id"]: {node["node"]["name"], lk["peer_name"]}
                    for node in a1.get("/v1/cluster")["nodes"] for lk in node["links"]}
            assert checks["mtu"]["links"] and all("h3" in ends[i] for i in checks["mtu"]["links"])
            # the rest: h2's downs are udp_probes', not reachable's
            assert checks["reachable"]["status"] == "pass"
            human = netlab.run("ip", "netns", "exec", h1.ns, sys.executable, "-m", "exotray",
                               "doctor", check=False, timeout=30)
            assert human.returncode == 1 and human.stdout.startswith("FAIL  udp_probes")
            print(human.stdout)
            client.terminate()  # (bounded by -t anyway)
            client.wait(10)
        finally:
            agents.close()
