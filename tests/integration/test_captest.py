"""Active capacity tests on loopback: consent, one at a time, a clear refusal."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
from helpers import AgentProc, ctrl_c_as_at_a_terminal, free_port, wait_for


def _measure(a, peer, seconds=1.0):
    tok = (a.state / "control_token").read_text().strip()
    return httpx.post(a.url + "/v1/control/measure", timeout=30, trust_env=False,
                      json={"peer": peer, "seconds": seconds, "streams": 2},
                      headers={"authorization": f"Bearer {tok}"})


@pytest.fixture
def trio(tmp_path):
    ports = [free_port() for _ in range(3)]
    cfg = tmp_path / "no-tests.toml"
    cfg.write_text("allow_capacity_tests = false\n")
    a = AgentProc(tmp_path, "a", ports[0], [ports[1], ports[2]])
    b = AgentProc(tmp_path, "b", ports[1], [ports[0]])
    c = AgentProc(tmp_path, "c", ports[2], [ports[0]], "--config", str(cfg))
    try:
        for x in (a, b, c):
            x.wait_ready()
        assert wait_for(lambda: len([lk for lk in a.get("/v1/snapshot")["links"]
                                     if lk["state"] == "up" and lk["peer_name"]]) == 2, 8)
        yield a, b, c
    finally:
        for x in (a, b, c):
            x.close()


def test_measure_sets_a_measured_capacity(trio):
    a, _, _ = trio
    r = _measure(a, "b")
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["up_mbit_s"] > 100 and data["down_mbit_s"] > 100  # loopback is fast
    assert data["interface"] == "lo"
    lo = wait_for(lambda: (i := next(i for i in a.get("/v1/snapshot")["interfaces"]
                                     if i["name"] == "lo"))["capacity_source"] == "measured"
                  and i, 3)
    assert lo and lo["capacity_measured_at"].endswith("Z")
    assert lo["capacity_bytes_per_s"] == pytest.approx(
        max(data["up_mbit_s"], data["down_mbit_s"]) * 125_000)


def test_a_peer_is_named_by_the_address_port_given_to_peer_and_never_guessed(trio):
    """b and c share 127.0.0.1: "127.0.0.1:<b's port>" (as given to --peer) is b, and
    the bare address is refused, naming both, rather than measuring one of them."""
    a, b, c = trio
    r = _measure(a, f"127.0.0.1:{b.port}")
    assert r.status_code == 200, r.text
    assert r.json()["peer_name"] == "b" and r.json()["up_mbit_s"] > 100
    r = _measure(a, "127.0.0.1")
    assert r.status_code == 404
    error = r.json()["error"]
    assert f"b (127.0.0.1:{b.port})" in error and f"c (127.0.0.1:{c.port})" in error, error


def test_a_peer_can_refuse(trio):
    a, _, _ = trio
    r = _measure(a, "c")
    assert r.status_code == 403 and "does not take capacity tests" in r.json()["error"]


def test_one_test_at_a_time(trio):
    a, _, _ = trio
    first: list[httpx.Response] = []
    t = threading.Thread(target=lambda: first.append(_measure(a, "b", seconds=3)))
    t.start()
    try:
        time.sleep(1.0)  # the first test is transferring (it runs 2 x 3 s)
        second = _measure(a, "b")
        assert second.status_code == 409
        assert "a capacity test with 127.0.0.1 is running" in second.json()["error"]
    finally:
        t.join(30)
    assert first[0].status_code == 200


def test_a_far_end_in_a_test_is_busy_not_a_refusal(trio):
    """c asks a while a tests its link to b: a is busy (409, "try again shortly"), which
    c passes on as busy, not as a refusal (403 is for a peer that takes no tests)."""
    a, _, c = trio
    first: list[httpx.Response] = []
    t = threading.Thread(target=lambda: first.append(_measure(a, "b", seconds=3)))
    t.start()
    try:
        time.sleep(1.0)  # a's test with b is transferring
        r = _measure(c, "a")
        assert r.status_code == 409, r.text
        assert "is busy" in r.json()["error"] and "try again shortly" in r.json()["error"]
    finally:
        t.join(30)
    assert first[0].status_code == 200


def test_cli_measure(trio):
    a, _, _ = trio
    p = subprocess.run([sys.executable, "-m", "exotray", "measure", "b", "--seconds", "1",
                        "--port", str(a.port), "--state-dir", str(a.state), "--units", "bits"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert re.search(r"\d [kMGT]?bit/s up, .*\d [kMGT]?bit/s down", p.stdout), p.stdout
    assert "now the capacity of lo" in p.stdout
    p = subprocess.run([sys.executable, "-m", "exotray", "measure", "nobody",
                        "--port", str(a.port), "--state-dir", str(a.state)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "no link to 'nobody'" in p.stderr


def test_a_measure_killed_midway_cancels_the_test(trio):
    a, _, _ = trio
    cli = subprocess.Popen([sys.executable, "-m", "exotray", "measure", "b", "--seconds", "10",
                            "--port", str(a.port), "--state-dir", str(a.state)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=ctrl_c_as_at_a_terminal)
    try:
        assert cli.stderr is not None
        assert "measuring the link to b" in cli.stderr.readline()
        time.sleep(1.5)  # the test is transferring (it would run 2 x 10 s)
        cli.send_signal(signal.SIGINT)  # Ctrl-C
        _, err = cli.communicate(timeout=10)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 130 and "interrupted" in err and "Traceback" not in err
    # Both ends let go at once: a new test (a as initiator, b as responder) runs now,
    # not after the cancelled one's 20 s.
    assert wait_for(lambda: "capacity test with 127.0.0.1 cancelled" in a.log(), 3), a.log()
    r = _measure(a, "b")
    assert r.status_code == 200, r.text


def test_a_client_that_vanishes_cancels_the_test(trio):
    """SIGKILL: no goodbye from the client, only its closed connection."""
    a, _, _ = trio
    tok = (a.state / "control_token").read_text().strip()
    body = b'{"peer": "b", "seconds": 10, "streams": 2}'
    with socket.create_connection(("127.0.0.1", a.port)) as s:
        s.sendall(b"POST /v1/control/measure HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                  b"content-type: application/json\r\n"
                  b"authorization: Bearer " + tok.encode() + b"\r\n"
                  b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        time.sleep(1.5)
    # the cancelled test is released on b in the background: until then a new one is
    # busy (409, on either end), never refused
    started = time.monotonic()
    r = _measure(a, "b")
    while r.status_code == 409 and time.monotonic() - started < 10:
        time.sleep(0.2)
        r = _measure(a, "b")
    assert r.status_code == 200, r.text


def test_measure_bounds_are_checked_by_the_agent_too(trio):
    a, _, _ = trio
    tok = (a.state / "control_token").read_text().strip()
    for body, msg in (({"peer": "b", "seconds": 100}, "seconds must be 1..30"),
                      ({"peer": "b", "streams": 0}, "streams must be 1..8")):
        r = httpx.post(a.url + "/v1/control/measure", json=body, trust_env=False,
                       headers={"authorization": f"Bearer {tok}"})
        assert r.status_code == 400 and msg in r.json()["error"]


def _listening(pid: int) -> set[int]:
    import psutil

    return {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN}


def test_one_fixed_port_consecutive_agents_and_a_listener_only_per_test(tmp_path):
    """The agent's port is its only fixed one: agents on consecutive ports run side by
    side, and the capacity listener exists only while a consented test is open."""
    base = free_port()
    port_b = base + 1
    try:
        with socket.socket() as t:
            t.bind(("127.0.0.1", port_b))
    except OSError:
        pytest.skip(f"port {port_b} is taken on this machine right now")
    a = AgentProc(tmp_path, "a", base, [port_b])
    b = AgentProc(tmp_path, "b", port_b, [base])
    try:
        a.wait_ready()
        b.wait_ready()  # was "Address already in use": a's capacity port was b's port
        assert _listening(b.proc.pid) == {port_b}
        r = httpx.post(b.url + "/v1/capacity/session", json={"seconds": 1, "streams": 1},
                       timeout=5, trust_env=False)
        assert r.status_code == 200, r.text
        grant = r.json()
        assert grant["port"] not in (base, port_b)
        assert _listening(b.proc.pid) == {port_b, grant["port"]}

        header = (json.dumps({"token": grant["token"], "dir": "down"}) + "\n").encode()
        first = socket.create_connection(("127.0.0.1", grant["port"]), timeout=5)
        first.sendall(header)
        assert first.recv(1024)  # the granted stream gets data
        extra = socket.create_connection(("127.0.0.1", grant["port"]), timeout=5)
        extra.sendall(header)
        extra.settimeout(5)
        assert extra.recv(1024) == b""  # a second stream beyond the one granted: closed
        extra.close()
        first.close()

        r = httpx.post(b.url + "/v1/capacity/finish", json={"token": grant["token"]},
                       timeout=5, trust_env=False)
        assert r.status_code == 200
        assert wait_for(lambda: _listening(b.proc.pid) == {port_b}, 5)
        # and a real test still works between them (once a knows b by name)
        assert wait_for(lambda: any(lk["state"] == "up" and lk["peer_name"] == "b"
                                    for lk in a.get("/v1/snapshot")["links"]), 10)
        r = _measure(a, "b")
        assert r.status_code == 200, r.text
        assert _listening(b.proc.pid) == {port_b}
    finally:
        a.close()
        b.close()


def test_streams_of_a_pinned_link_leave_through_its_interface(tmp_path):
    """A link pinned to an on-link interface is measured through it: the device option
    is set on every stream's socket before it connects (a bogus device fails at once)."""
    import asyncio
    import errno

    from exotray.agent.base.bound_http import bind_options
    from exotray.agent.http.captest import CapacityTester

    if not sys.platform.startswith("linux"):
        pytest.skip("SO_BINDTODEVICE is Linux's; macOS: CHECKLIST.md")
    b = AgentProc(tmp_path, "b", free_port(), [])
    try:
        b.wait_ready()

        async def run(device: str) -> dict:
            tester = CapacityTester("127.0.0.1")
            async with httpx.AsyncClient(trust_env=False) as http:
                return await tester.run(http, "127.0.0.1", b.port, seconds=1, streams=1,
                                        sock_options=bind_options(device, 1, "linux"))

        result = asyncio.run(run("lo"))
        assert result["up_mbit_s"] > 10 and result["down_mbit_s"] > 10
        with pytest.raises(OSError) as e:
            asyncio.run(run("xtnosuch0"))
        assert e.value.errno == errno.ENODEV
        # the failed test freed the peer's slot: the next one is not refused as busy
        assert asyncio.run(run("lo"))["up_mbit_s"] > 10
    finally:
        b.close()


def test_a_grant_that_cannot_open_its_listener_leaves_the_slot_free(monkeypatch):
    """Out of fds, or cancelled while opening: the responder must not stay 'busy'."""
    import asyncio

    from exotray.agent.http import captest as C

    async def boom(*a, **k):
        raise OSError(24, "Too many open files")

    async def main() -> None:
        t = C.CapacityTester("127.0.0.1")
        monkeypatch.setattr(C.asyncio, "start_server", boom)
        with pytest.raises(OSError):
            await t.grant("127.0.0.1", 1, 1)
        assert t.busy_with is None and t.port is None
        monkeypatch.undo()
        grant = await t.grant("127.0.0.1", 1, 1)  # the next one is not refused as busy
        assert grant["port"]
        t.finish(grant["token"])
        await t.stop()

    asyncio.run(main())
