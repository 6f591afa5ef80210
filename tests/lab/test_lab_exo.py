"""Issue 14: which link exo uses, and a warning when it is the wrong one.

    LAN A: h1 xt…1a 10.213.<n>.1   h2 10.213.<n>.2     --capacity 100 Mbit/s
    LAN B: h1 xt…1c 10.213.<n+1>.1 h2 10.213.<n+1>.2   --capacity 1000 Mbit/s

A stand-in exo (tests/exo_standin.py, exo's /node_id and /state) runs on h1's loopback.
It says the ring between h1 and h2 goes over LAN A (the slower): h1's link to h2's LAN-A
address carries the instance and `exo_slow_path` fires once. It switches to LAN B: the
mark moves and `exo_slow_path_cleared` fires once. Its /node_id fails: h1 finds its node
by its own address and keeps the mark. It stops: the marks go, `exotray status` has one
exo line, and the log no new line however long exo stays away.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import exo_state as ex
import httpx
from helpers import wait_for

PORT = 52480
EXO_PORT = 52415
H1 = "6a1f0c2e93b44d7ab0f11c2d3e4f5a60"
H2 = "b2c4e6f80a1b4c3d8e5f6a7b8c9d0e1"
STANDIN = Path(__file__).resolve().parents[1] / "exo_standin.py"


def _state_dict(h1_ip: str, h2_ip: str) -> dict:
    nodes = {H1: {"name": "h1", "interfaces": [("xta", h1_ip, "ethernet")]},
             H2: {"name": "h2", "interfaces": [("xta", h2_ip, "ethernet")]}}
    inst = ex.ring_instance("ring-1", ex.MODEL_70B, [(H1, h1_ip), (H2, h2_ip)])
    return ex.state({"ring-1": inst}, nodes)


def _state(h1_ip: str, h2_ip: str) -> bytes:
    return ex.dumps(_state_dict(h1_ip, h2_ip))


def _say(root: Path, state: bytes) -> None:
    tmp = root / "state.tmp"
    tmp.write_bytes(state)
    tmp.replace(root / "state")


def _events(agent) -> list[dict]:
    if not agent.events_path.exists():
        return []
    return [json.loads(x) for x in agent.events_path.read_text().splitlines() if x.strip()]


def _kinds(agent) -> list[str]:
    return [e["type"] for e in _events(agent) if e["type"].startswith("exo_")]


def _links(agent) -> dict[str, dict]:
    return {lk["peer_address"]: lk for lk in agent.get("/v1/snapshot")["links"]}


_GET = ("import sys, urllib.request as u; sys.stdout.write(u.build_opener(u.ProxyHandler({}))"
        ".open(sys.argv[1], timeout=5).read().decode())")


def _local(host, path: str = "/v1/snapshot") -> dict:
    """`path` as a local client of the host's agent gets it (on its loopback): a client
    on the LAN does not get the exo node's details."""
    return json.loads(host.exec(sys.executable, "-c", _GET, f"http://127.0.0.1:{PORT}{path}"))


def _polls(host) -> int:
    return _local(host)["exo"]["polls"]


def _two_more_polls(host) -> bool:
    start = _polls(host)
    return bool(wait_for(lambda: _polls(host) >= start + 2, 10))


def _exo_log_lines(agent) -> list[str]:
    return [ln for ln in agent.log().splitlines()
            if re.search(r"\bexo(\b|_)", ln) and "exotray agent" not in ln]


def test_exo_slow_path_marked_raised_cleared_and_gone(lab3, tmp_path):
    lab, agents = lab3
    h1, h2 = lab.hosts[0], lab.hosts[1]
    n = lab.net
    if_a = h1.veth
    if_b, _ = lab.add_lan([h1, h2])
    a_slow, a_fast = f"10.213.{n}.2", f"10.213.{n + 1}.2"
    root = tmp_path / "exo"
    root.mkdir()
    (root / "node_id").write_text(json.dumps(H1))
    _say(root, _state(f"10.213.{n}.1", a_slow))  # the ring over LAN A
    standin = h1.popen(sys.executable, str(STANDIN), str(root), str(EXO_PORT),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    a = agents.start(h1, "--interval", "0.5", "--capacity", f"{if_a}=100",
                     "--capacity", f"{if_b}=1000", "--exo-url", f"http://127.0.0.1:{EXO_PORT}",
                     name="h1", mdns=False, peers=[f"{a_slow}:{PORT}", f"{a_fast}:{PORT}"])
    agents.start(h2, "--interval", "0.5", "--exo-url", "", name="h2", mdns=False,
                 peers=[f"10.213.{n}.1:{PORT}", f"10.213.{n + 1}.1:{PORT}"])

    def marked_slow():
        links = _links(a)
        s, f = links.get(a_slow), links.get(a_fast)
        return (s and f and s["state"] == f["state"] == "up" and s["peer_id"] == f["peer_id"]
                and s["exo_instances"] and "exo_slow_path" in _kinds(a))

    assert wait_for(marked_slow, 20), (_links(a), a.log())
    links = _links(a)
    assert links[a_slow]["exo_instances"] == [
        {"id": "ring-1", "model": ex.MODEL_70B, "backend": "ring"}]
    assert links[a_fast]["exo_instances"] == []
    (raised,) = [e for e in _events(a) if e["type"] == "exo_slow_path"]
    assert raised["link_id"] == links[a_slow]["id"]
    assert raised["better_link_id"] == links[a_fast]["id"]
    assert raised["instance"] == {"id": "ring-1", "model": ex.MODEL_70B, "backend": "ring"}
    assert _two_more_polls(h1)
    assert _kinds(a) == ["exo_slow_path"]  # once, not per poll

    # exo moves the ring to LAN B: the mark moves, one clear
    _say(root, _state(f"10.213.{n + 1}.1", a_fast))
    assert wait_for(lambda: _links(a)[a_fast]["exo_instances"]
                    and "exo_slow_path_cleared" in _kinds(a), 15), _kinds(a)
    assert _links(a)[a_slow]["exo_instances"] == []
    assert _two_more_polls(h1)
    assert _kinds(a) == ["exo_slow_path", "exo_slow_path_cleared"]

    # exo's /node_id fails (404): h1 finds itself by its own address in exo's state
    # (nodeNetwork), the mark stays on LAN B's link, nothing else is marked, no event
    (root / "node_id").unlink()
    assert wait_for(lambda: _local(h1)["exo"]["identified_by"] == "network", 10)
    assert _links(a)[a_fast]["exo_instances"] and _links(a)[a_slow]["exo_instances"] == []
    assert _local(h1)["exo"]["node_id"] == H1
    status = h1.exec(sys.executable, "-m", "exotray", "status", "--port", str(PORT))
    (line,) = [ln for ln in status.splitlines() if ln.startswith("exo:")]
    assert line.endswith("; /node_id failed (/node_id answered HTTP 404): this node found "
                         "by its address in exo's nodeNetwork."), line
    assert _kinds(a) == ["exo_slow_path", "exo_slow_path_cleared"]

    # exo stops: marks go, one status line, no log flood
    standin.terminate()
    standin.wait(5)
    assert wait_for(lambda: _local(h1)["exo"]["status"] == "absent", 10)
    assert all(lk["exo_instances"] == [] for lk in _links(a).values())
    logged = _exo_log_lines(a)
    assert _two_more_polls(h1) and _two_more_polls(h1)
    assert _exo_log_lines(a) == logged, "the log grows while exo is away"
    assert len(logged) <= 4, logged  # found, slow path, cleared, stopped answering
    status = h1.exec(sys.executable, "-m", "exotray", "status", "--port", str(PORT))
    assert [ln for ln in status.splitlines() if ln.startswith("exo:")] == [
        f"exo: not running at http://127.0.0.1:{EXO_PORT} (connection refused)."], status
    assert _kinds(a) == ["exo_slow_path", "exo_slow_path_cleared"]


def _rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmRSS"))) / 1024


def test_a_huge_exo_state_costs_little_and_stays_off_the_lan(lab2, tmp_path):
    """Issue 33 point 4: one ring instance with 850k neighbour addresses (13.9 MB) took
    the agent from 44 to 384 MiB and 63 % of a core, and its /v1/snapshot, served to
    the LAN, grew to 12 MB; 380k nodeIdentities cost 39 % of a core. Of exo's /state
    only what links need is decoded (2 MiB at most, else "unreadable"), an instance
    keeps 16 neighbours, and a LAN client gets the links' marks and exo's status only."""
    lab, agents = lab2
    h1, h2 = lab.hosts
    ip1, ip2 = f"10.213.{lab.net}.1", f"10.213.{lab.net}.2"
    root = tmp_path / "exo"
    root.mkdir()
    (root / "node_id").write_text(json.dumps(H1))
    _say(root, _state(ip1, ip2))
    h1.popen(sys.executable, str(STANDIN), str(root), str(EXO_PORT),
             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    a = agents.start(h1, "--interval", "0.5", "--exo-url", f"http://127.0.0.1:{EXO_PORT}",
                     name="h1", mdns=False, peers=[f"{ip2}:{PORT}"])
    agents.start(h2, "--interval", "0.5", "--exo-url", "", name="h2", mdns=False,
                 peers=[f"{ip1}:{PORT}"])
    assert wait_for(lambda: (_links(a).get(ip2) or {}).get("exo_instances"), 20), a.log()
    # the LAN (this test's own address on it) gets the links' marks and exo's status
    assert a.get("/v1/snapshot")["exo"] == {"status": "ok"}
    assert a.get("/v1/cluster")["nodes"][0]["exo"] == {"status": "ok"}
    local = _local(h1)["exo"]
    assert (local["node_id"], local["instances"][0]["neighbours"]) == (H1, [ip2])
    assert _two_more_polls(h1)
    before = _rss_mib(a.proc.pid)
    seen = [before]

    def polled(n: int) -> bool:
        """n more polls of exo, the agent's RSS taken every 0.1 s meanwhile."""
        start = _polls(h1)

        def done() -> bool:
            seen.append(_rss_mib(a.proc.pid))
            return _polls(h1) >= start + n
        return bool(wait_for(done, 30, every=0.1))

    def with_ring_hosts(n: int) -> bytes:
        state = _state_dict(ip1, ip2)
        hosts = state["instances"]["ring-1"]["MlxRingInstance"]["hostsByNode"][H1]
        hosts += [f"172.{16 + (i >> 16 & 15)}.{i >> 8 & 255}.{i & 255}" for i in range(n)]
        return json.dumps(state, separators=(",", ":")).encode()

    big = with_ring_hosts(850_000)
    _say(root, big)
    assert polled(4)
    sizes = {p: len(httpx.get(a.url + p, timeout=5, trust_env=False).content)
             for p in ("/v1/snapshot", "/v1/cluster")}
    print(f"exo /state of {len(big) / 1e6:.1f} MB: RSS {before:.0f} MiB, at most "
          f"+{max(seen) - before:.0f}; LAN /v1/snapshot {sizes['/v1/snapshot']} B, "
          f"/v1/cluster {sizes['/v1/cluster']} B")
    assert max(seen) - before < 40, (before, max(seen))
    assert max(sizes.values()) < 64 << 10, sizes
    exo = _local(h1)["exo"]
    assert exo["status"] == "unreadable", exo
    assert exo["detail"].startswith("instances: 13.") and "over the 2 MiB" in exo["detail"]
    # 100k neighbours (1.6 MB, read): 16 kept, the link to h2 still carries the ring
    _say(root, with_ring_hosts(100_000))
    assert polled(4)
    exo = _local(h1)["exo"]
    assert exo["status"] == "ok" and len(exo["instances"][0]["neighbours"]) == 16
    assert exo["instances"][0]["neighbours"][0] == ip2 and _links(a)[ip2]["exo_instances"]
    # 380k nodeIdentities (14 MB): skipped unread
    state = _state_dict(ip1, ip2)
    state["nodeIdentities"].update({f"n{i:07d}": {"friendlyName": f"m{i}"}
                                    for i in range(380_000)})
    _say(root, json.dumps(state, separators=(",", ":")).encode())
    assert polled(4)
    assert _local(h1)["exo"]["status"] == "ok"
    print(f"then 100k neighbours and 380k nodeIdentities: at most +{max(seen) - before:.0f} MiB")
    assert max(seen) - before < 40, (before, max(seen))
