"""Cluster key: snapshots (HMAC over the body) and probes (HMAC tag) are authenticated;
a peer with the right key is used, one with a wrong key is shown as unauthenticated and
its data is not; the key appears in no log, snapshot or status output."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import AgentProc, free_port, wait_for

KEY = "correct horse battery staple 42"
WRONG = "another cluster entirely, sorry!"


@pytest.fixture
def trio(tmp_path):
    (tmp_path / "key").write_text(KEY + "\n")
    (tmp_path / "wrong").write_text(WRONG + "\n")
    (tmp_path / "key").chmod(0o600)
    (tmp_path / "wrong").chmod(0o600)
    ports = [free_port() for _ in range(3)]
    a = AgentProc(tmp_path, "a", ports[0], [ports[1], ports[2]],
                  "--key-file", str(tmp_path / "key"))
    b = AgentProc(tmp_path, "b", ports[1], [ports[0]], "--key-file", str(tmp_path / "key"))
    c = AgentProc(tmp_path, "c", ports[2], [ports[0]], "--key-file", str(tmp_path / "wrong"))
    try:
        for x in (a, b, c):
            x.wait_ready()
        yield a, b, c
    finally:
        for x in (a, b, c):
            x.close()


def test_right_key_accepted_wrong_key_refused(trio):
    a, b, c = trio

    def settled():
        cl = a.get("/v1/cluster")
        peers = {p["key"].split(":")[-1]: p for p in cl["peers"]}
        b_up = any(lk["peer_port"] == b.port and lk["state"] == "up"
                   for lk in cl["nodes"][0]["links"])
        return (len(cl["nodes"]) == 2
                and "unauthenticated" in (peers[str(c.port)]["last_error"] or "")
                and peers[str(b.port)]["authenticated"] and b_up) and cl

    cluster = wait_for(settled, 8)
    assert cluster, a.get("/v1/cluster")
    assert [n["node"]["name"] for n in cluster["nodes"]] == ["a", "b"]
    assert all(n["authenticated"] for n in cluster["nodes"])
    peer_c = next(p for p in cluster["peers"] if p["key"].endswith(str(c.port)))
    assert peer_c["authenticated"] is False and "unauthenticated" in peer_c["last_error"]
    links = {lk["peer_port"]: lk for lk in a.get("/v1/snapshot")["links"]}
    assert links[b.port]["state"] == "up"
    assert links[c.port]["state"] == "down"  # its probes carry the wrong tag
    # c's probes and snapshot reach a with the wrong key and are counted as refused (on a
    # busy machine c's first probe may come after the view above has settled: wait).
    refused = wait_for(lambda: (c_ := a.get("/v1/snapshot")["counters"])[
        "datagrams_unauthenticated"] > 0 and c_["snapshots_unauthenticated"] > 0 and c_, 8)
    assert refused, a.get("/v1/snapshot")["counters"]


def test_key_never_shown(trio):
    a, b, c = trio
    wait_for(lambda: len(a.get("/v1/cluster")["nodes"]) == 2, 8)
    status = subprocess.run([sys.executable, "-m", "exotray", "status", "--json", "--port",
                             str(a.port)], capture_output=True, text=True, timeout=30).stdout
    texts = [status, str(a.get("/v1/snapshot")), str(a.get("/v1/cluster")), a.log(), b.log(),
             c.log()]
    for t in texts:
        for secret in (KEY, WRONG, KEY.split()[1], WRONG.split()[2]):
            assert secret not in t


def test_short_key_is_a_clear_error(tmp_path):
    (tmp_path / "short").write_text("tiny")
    a = AgentProc(tmp_path, "s", free_port(), [], "--key-file", str(tmp_path / "short"))
    try:
        assert a.proc.wait(10) == 1  # the tray retries: the key file is not the config
        assert "too short" in a.log() and "tiny" not in a.log()
    finally:
        a.close()
