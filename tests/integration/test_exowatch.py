"""The exo poll (agent/exo/watch.py) against a stand-in exo HTTP server on loopback
(tests/exo_standin.py), and real agents reading it: statuses, one log line per change,
links marked, `exotray status`'s one line, nothing at all with `--exo-url ""`."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace

import exo_state as ex
import pytest
from exo_standin import StandIn
from helpers import AgentProc, free_port, wait_for

from exotray.agent.exo.watch import ExoWatch
from exotray.core.capacity import Capacity

NODE = "6a1f0c2e93b44d7ab0f11c2d3e4f5a60"
PEER = "b2c4e6f80a1b4c3d8e5f6a7b8c9d0e1"


def ring_over(my_ip: str, peer_ip: str, iid: str = "ring-1") -> bytes:
    nodes = {NODE: {"name": "studio-1", "interfaces": [("en0", my_ip, "wifi")]},
             PEER: {"name": "studio-2", "interfaces": [("en0", peer_ip, "wifi")]}}
    inst = ex.ring_instance(iid, ex.MODEL_70B, [(NODE, my_ip), (PEER, peer_ip)])
    return ex.dumps(ex.state({iid: inst}, nodes))


@dataclass
class Monitor:
    """What ExoWatch asks of the interface monitor."""

    ifaces: dict = field(default_factory=dict)
    caps: dict = field(default_factory=dict)

    def numbers(self, name, peer=None, track=False):
        return None, Capacity(self.caps.get(name), "override"), 0.0

    def carrier(self, name, peer=None):
        return name


def link(id_, address, iface, state="up"):
    return SimpleNamespace(id=id_, target=(address, 52480), local_interface=iface, state=state,
                           peer=SimpleNamespace(id="peer-2", key="peer-2", name="studio-2"))


@pytest.fixture
def standin(tmp_path):
    s = StandIn(tmp_path).start()
    s.say(node_id=json.dumps(NODE).encode(), state=ring_over("10.213.140.1", "10.213.140.2"))
    yield s
    s.stop()


def make_watch(url, links, events):
    mon = Monitor(ifaces={n: SimpleNamespace(kind="ethernet", label=f"Ethernet ({n})",
                                             addresses=(ip,), vanished_at=None)
                          for n, ip in (("xta", "10.213.140.1"), ("xtb", "10.213.141.1"))},
                  caps={"xta": 12.5e6, "xtb": 125e6})
    return ExoWatch(url, monitor=mon, links=lambda: links, clock=lambda: 0.0,
                    emit=lambda t, f: events.append((t, f)), platform="test")


def test_links_marked_slow_path_once_and_cleared(standin, caplog):
    caplog.set_level(logging.INFO)
    events: list = []
    links = [link("slow", "10.213.140.2", "xta"), link("fast", "10.213.141.2", "xtb")]
    w = make_watch(standin.url, links, events)

    async def go(n):
        for _ in range(n):
            await w.tick()

    asyncio.run(go(3))
    assert w.status == "ok"
    assert [i.wire() for i in w.for_link("10.213.140.2", "xta")] == [
        {"id": "ring-1", "model": ex.MODEL_70B, "backend": "ring"}]
    assert w.for_link("10.213.141.2", "xtb") == []
    assert [(t, f["link_id"], f["better_link_id"]) for t, f in events] == [
        ("exo_slow_path", "slow", "fast")]
    # exo moves its ring to the faster LAN: cleared once
    standin.say(state=ring_over("10.213.141.1", "10.213.141.2"))
    asyncio.run(go(3))
    assert [t for t, _ in events] == ["exo_slow_path", "exo_slow_path_cleared"]
    assert [i.id for i in w.for_link("10.213.141.2", "xtb")] == ["ring-1"]
    d = w.status_dict()
    assert (d["status"], d["node_id"], [i["neighbours"] for i in d["instances"]]) == (
        "ok", NODE, [["10.213.141.2"]])
    exo_lines = [r.getMessage() for r in caplog.records if "exo" in r.getMessage()]
    assert exo_lines == [f"exo at {standin.url}: 1 instance(s)"]


def test_without_node_id_state_is_read_and_only_our_links_are_marked(standin, caplog):
    """An exo whose /node_id fails (404) is still read: this machine's addresses find
    its node, and only the link to its ring neighbour is marked; with none of its
    addresses in exo's state, nothing is marked and the status says why."""
    caplog.set_level(logging.INFO)
    (standin.root / "node_id").unlink()  # the stand-in answers 404, as exo would
    # a ring of four: studio-1's neighbours are studio-2 and x-4, not mini-3
    four = {n: {"name": name, "interfaces": [("en0", f"10.213.140.{i}", "wifi")]}
            for i, (n, name) in enumerate(((NODE, "studio-1"), (PEER, "studio-2"),
                                           ("c3", "mini-3"), ("x4", "x-4")), 1)}
    ring = ex.ring_instance("ring-4", ex.MODEL_70B, [
        (NODE, "10.213.140.1"), (PEER, "10.213.140.2"), ("c3", "10.213.140.3"),
        ("x4", "10.213.140.4")])
    standin.say(state=ex.dumps(ex.state({"ring-4": ring}, four)))
    links = [link(n, f"10.213.140.{n}", "xta") for n in ("2", "3", "4")]
    w = make_watch(standin.url, links, [])
    asyncio.run(w.tick())
    assert w.status == "ok"
    marked = {lk.id for lk in links if w.for_link(lk.target[0], "xta")}
    assert marked == {"2", "4"}  # not mini-3 (10.213.140.3): not our neighbour
    d = w.status_dict()
    assert (d["node_id"], d["identified_by"], d["node_id_error"]) == (
        NODE, "network", "/node_id answered HTTP 404")
    # this machine's address is nowhere in exo's state: nothing is marked
    w.monitor.ifaces["xta"].addresses = ("10.213.199.1",)
    w.monitor.ifaces["xtb"].addresses = ()
    asyncio.run(w.tick())
    assert not any(w.for_link(lk.target[0], "xta") for lk in links)
    d = w.status_dict()
    assert (d["status"], d["identified_by"], d["unidentified"]) == (
        "ok", None, "no address of this machine in exo's state")
    assert [r.getMessage() for r in caplog.records if "exo" in r.getMessage()] == [
        f"exo at {standin.url}: 1 instance(s)"]


def test_exo_going_away_unmarks_and_logs_once(standin, caplog):
    caplog.set_level(logging.INFO)
    events: list = []
    links = [link("slow", "10.213.140.2", "xta"), link("fast", "10.213.141.2", "xtb")]
    w = make_watch(standin.url, links, events)
    asyncio.run(w.tick())
    standin.stop()

    async def go():
        for _ in range(5):
            await w.tick()
        await w.aclose()

    asyncio.run(go())
    assert (w.status, w.detail) == ("absent", "connection refused")
    assert w.for_link("10.213.140.2", "xta") == []
    assert [t for t, _ in events] == ["exo_slow_path", "exo_slow_path_cleared"]
    gone = [r.getMessage() for r in caplog.records if "stopped answering" in r.getMessage()]
    assert gone == [f"exo at {standin.url} stopped answering (connection refused)"]
    standin.server = SimpleNamespace(shutdown=lambda: None, server_close=lambda: None)


@pytest.mark.parametrize("body,detail", [
    (b"<html>502 Bad Gateway</html>", "not JSON"),
    (b"[1, 2, 3]", "a JSON list, not an object"),
    (b"!500", "/state answered HTTP 500"),
    # issue 33 point 6: nested past Python's limit (a RecursionError was a traceback a poll)
    (b'{"instances": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "JSON nested deeper than can be read"),
    (b"[" * 200_000, "a JSON list, not an object"),  # (refused at its first byte)
])
def test_garbage_is_unreadable_with_one_log_line(standin, caplog, body, detail):
    caplog.set_level(logging.DEBUG)
    standin.say(state=body)
    w = make_watch(standin.url, [], [])

    async def go():
        for _ in range(6):
            await w.tick()
        await w.aclose()

    asyncio.run(go())
    assert w.status == "unreadable" and w.detail.startswith(detail)
    lines = [r for r in caplog.records if r.name.startswith("exotray")]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING


def test_absent_exo_says_nothing_in_the_log(caplog):
    caplog.set_level(logging.DEBUG)
    w = make_watch(f"http://127.0.0.1:{free_port()}", [], [])

    async def go():
        for _ in range(5):
            await w.tick()
        await w.aclose()

    asyncio.run(go())
    assert (w.status, w.detail) == ("absent", "connection refused")
    assert [r for r in caplog.records if r.name.startswith("exotray")] == []


def test_a_hung_exo_is_a_timeout_not_a_hang(standin):
    standin.say(state=b"!slow")
    w = make_watch(standin.url, [], [])

    async def go():
        await w.tick()
        await w.aclose()

    asyncio.run(go())
    assert (w.status, w.detail) == ("absent", "no answer within 1 s")


def test_off_is_off():
    w = make_watch("", [], [])
    asyncio.run(w.tick())
    assert (w.enabled, w.status, w.status_dict()) == (False, "off", None)


# -- real agents --------------------------------------------------------------------------


def status_text(port: int) -> str:
    out = subprocess.run([sys.executable, "-m", "exotray", "status", "--port", str(port)],
                         capture_output=True, text=True, timeout=20)
    return out.stdout + out.stderr


def test_agents_read_exo_and_status_says_so(tmp_path, standin):
    """Two agents on loopback; the stand-in says studio-1's ring neighbour is 127.0.0.1
    (the link's peer address): the link carries the instance, status has one line."""
    standin.say(state=ring_over("127.0.0.1", "127.0.0.1"))
    pa, pb, absent = free_port(), free_port(), free_port()
    a = AgentProc(tmp_path, "studio-1", pa, [pb], "--exo-url", standin.url)
    b = AgentProc(tmp_path, "studio-2", pb, [pa], "--exo-url", "")
    c = AgentProc(tmp_path, "lonely", free_port(), [], "--exo-url",
                  f"http://127.0.0.1:{absent}")
    try:
        def marked():
            links = a.get("/v1/snapshot")["links"]
            return links and links[0]["exo_instances"]

        assert wait_for(marked, 15), a.log()
        snap = a.get("/v1/snapshot")
        assert snap["links"][0]["exo_instances"] == [
            {"id": "ring-1", "model": ex.MODEL_70B, "backend": "ring"}]
        assert snap["exo"]["status"] == "ok"
        # the peer sees our link's marks in our shared snapshot
        assert wait_for(lambda: any(
            lk["exo_instances"] for n in b.get("/v1/cluster")["nodes"][1:]
            for lk in n["links"]), 10), b.log()
        # the peer's name comes with its snapshot: b may not have been listening yet
        # when a first asked (a retries after a back-off)
        assert wait_for(lambda: a.get("/v1/snapshot")["links"][0]["peer_name"]
                        == "studio-2", 15), a.log()
        text = status_text(pa)
        assert [ln for ln in text.splitlines() if ln.startswith("exo:")] == [
            "exo: Llama-3.3-70B-Instruct-4bit (ring) over Loopback to studio-2."], text
        # --exo-url "": no exo field, no line
        assert b.get("/v1/snapshot")["exo"] is None
        assert "exo" not in status_text(pb).replace("exotray", "")
        # an absent exo: one status line, not a word in the log
        assert wait_for(lambda: c.get("/v1/snapshot")["exo"]["status"] == "absent", 10)
        lines = [ln for ln in status_text(c.port).splitlines() if ln.startswith("exo:")]
        assert lines == [f"exo: not running at http://127.0.0.1:{absent} "
                         "(connection refused)."]
        assert "exo" not in c.log().replace("exotray", "")
    finally:
        for p in (a, b, c):
            p.close()


def test_twenty_instances_over_one_link_reach_the_peer_as_sixteen(tmp_path, standin):
    """Issue 33 point 3: exo runs 20 instances over one link (the reader keeps up to 64);
    peers take 16 a link. The peer dropped every stream frame ("links.exo_instances:
    Expected `array` of length <= 16") and its copy of this node froze. The first 16
    go out, and the snapshot and `exotray status` say 4 were left out."""
    nodes = {NODE: {"name": "studio-1", "interfaces": [("lo", "127.0.0.1", "other")]},
             PEER: {"name": "studio-2", "interfaces": [("lo", "127.0.0.1", "other")]}}
    rings = {f"ring-{i:02d}": ex.ring_instance(f"ring-{i:02d}", ex.MODEL_8B, [
        (NODE, "127.0.0.1"), (PEER, "127.0.0.1")]) for i in range(20)}
    standin.say(state=ex.dumps(ex.state(rings, nodes)))
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "studio-1", pa, [pb], "--exo-url", standin.url)
    b = AgentProc(tmp_path, "studio-2", pb, [pa], "--exo-url", "")
    try:
        def seen() -> list[int]:
            return [len(lk["exo_instances"]) for n in b.get("/v1/cluster")["nodes"][1:]
                    for lk in n["links"]]

        assert wait_for(lambda: seen() == [16], 15), (seen(), b.log())
        assert "dropped" not in b.log()
        snap = a.get("/v1/snapshot")
        assert [i["id"] for i in snap["links"][0]["exo_instances"]] == sorted(rings)[:16]
        assert snap["omitted"] == {"links.exo_instances": 4}
        assert len(snap["exo"]["instances"]) == 20  # (this node's own view has them all)
        assert ("note: this node's snapshot leaves out what its peers would refuse: "
                "4 exo instances of links.") in status_text(pa)
    finally:
        for p in (a, b):
            p.close()


def test_jaccl_link_through_a_bridge_member_and_rdma_not_counted(tmp_path):
    """A JACCL instance's rdma_en3 marks the link over bridge0 when the hardware readers
    know en3 is one of its members; with no RDMA counters the link says so."""
    from pathlib import Path

    from exotray.agent.exo import state as exo

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "exo"
    w = make_watch("http://127.0.0.1:1", [], [])
    w.monitor.hardware = SimpleNamespace(
        get=lambda name: SimpleNamespace(members=("en2", "en3")) if name == "bridge0" else None)
    w.state = exo.parse_state(exo.decode_state((fix / "state_jaccl.json").read_bytes()), NODE)
    (inst,) = w.for_link("169.254.20.11", "bridge0")
    assert inst.backend == "jaccl"
    assert w.rdma_for("bridge0", [inst]) == ("not_counted", (0.0, 0.0))
    assert w.for_link("169.254.20.11", "en0") == []
    # with port counters for en3 (Linux), they are the link's too
    w.rdma_rates.rates = {"en3": (1e9, 2e9)}
    assert w.rdma_for("bridge0", [inst]) == ("counted", (1e9, 2e9))
    # where it is not counted, the port states (macOS ibv_devinfo), within the schema's
    # 64 characters whatever exo and the command say
    w.rdma_rates.rates = {}
    w.rdma_macos = {"enabled": True, "ports": {"rdma_en3": "PORT_ACTIVE"}}
    long = exo.ExoInstance("j2", "m", "jaccl", devices=("rdma_en3", "rdma_" + "x" * 70))
    assert w.rdma_state("bridge0", [inst, long], "not_counted") == (
        True, [{"device": "rdma_en3", "state": "PORT_ACTIVE"}])
    assert w.rdma_state("bridge0", [inst], None) == (None, [])


def test_an_exo_that_starts_after_refusals_is_found_at_the_next_poll(tmp_path):
    """While nothing listens, a poll is a plain connect that is refused (no HTTP client
    request); that shortcut never hides an exo that has started since."""
    port = free_port()
    url = f"http://localhost:{port}"
    w = make_watch(url, [], [])
    calls = []
    fetch = w._fetch

    async def counted():
        calls.append(1)
        return await fetch()

    w._fetch = counted

    async def polls(n):
        for _ in range(n):
            await w.tick()

    asyncio.run(polls(4))
    assert (w.status, w.detail, w.polls) == ("absent", "connection refused", 4)
    assert len(calls) == 1  # the first poll asked over HTTP, the next three only connected
    s = StandIn(tmp_path, port=port).start()
    try:
        s.say(node_id=json.dumps(NODE).encode(), state=ring_over("10.213.140.1", "10.213.140.2"))

        async def then():
            await w.tick()
            await w.aclose()

        asyncio.run(then())
        assert w.status == "ok" and len(calls) == 2
    finally:
        s.stop()


def test_any_failure_to_read_exo_is_unreadable_not_a_traceback(monkeypatch):
    """Issue 33 point 6: /node_id nested past the limit reads as no id, and whatever the
    readers raise on an answer they did not expect is "unreadable", not "error in tick"."""
    from exotray.agent.exo import state as exo_state

    assert exo_state.parse_node_id(b"[" * 200_000) is None
    w = make_watch("http://127.0.0.1:9", [], [])

    def broken(*_a, **_k):
        raise KeyError("shardAssignments")

    monkeypatch.setattr(exo_state, "parse_state", broken)
    with pytest.raises(exo_state.ExoUnreadable, match=r"cannot be read \(KeyError\)"):
        w._read(None, b"{}", [])


def test_an_exo_that_drips_its_state_is_not_answering(standin, monkeypatch):
    """Issue 33 point 5: httpx's timeout is per read; a byte every 0.2 s held the poll for
    a minute while the status said "ok" and stale instances stayed on links. The poll has
    a deadline of its own."""
    from exotray.agent.exo import watch as exo_watch

    monkeypatch.setattr(exo_watch, "POLL_DEADLINE_S", 1.0, raising=False)
    standin.say(state=b"!drip")
    w = make_watch(standin.url, [], [])

    async def go():
        await w.tick()
        await w.aclose()

    asyncio.run(go())
    assert w.status == "absent" and w.detail.startswith("not answering"), w.detail
    assert w.state is None
