"""Issue 31 on the virtual LAN: a second cable between two hosts pulled and put back
(`link_down` naming the first as the fallback, `link_up`, no `peer_down`), the same cable
set down and up three times (one `link_flapping`, its interface's), and a path whose
round trip grows by 60 ms through a forwarding host and shrinks back (`link_slower`,
then its clear). This
kernel has no netem: the delay is a small UDP and TCP forwarder in a third namespace.
Detection times are printed (their targets are measured by the benchmarks)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from helpers import wait_for
from netlab import SETTLE_S, Agents, Lab

PORT = 52480


def _events(agent, *types: str) -> list[dict]:
    return [e for e in agent.get("/v1/events")["events"] if e["type"] in types]


def _timed(pred, limit: float) -> float | None:
    t0 = time.monotonic()
    return time.monotonic() - t0 if wait_for(pred, limit, every=0.05) else None


def test_a_second_cable_pulled_put_back_and_flapping(tmp_path):
    with Lab(2) as lab:
        h1, h2 = lab.hosts
        (b1, _b2) = lab.add_lan([h1, h2])
        agents = Agents(lab, tmp_path)
        try:
            a1 = agents.start(h1, "--interval", "0.5", name="h1", all_interfaces=True)
            a2 = agents.start(h2, "--interval", "0.5", name="h2", all_interfaces=True)
            a1.wait_ready()
            a2.wait_ready()
            both = lambda: [lk for lk in a1.get("/v1/snapshot")["links"]  # noqa: E731
                            if lk["state"] == "up"]
            assert wait_for(lambda: len(both()) == 2, SETTLE_S), a1.log()
            second = next(lk for lk in both() if lk["local_interface"] == b1)
            first = next(lk for lk in both() if lk["local_interface"] != b1)

            # the cable pulled: the far end of h1's veth goes, h1's own end loses its carrier
            cable = f"xt{lab.tag}1d"

            def pull(state: str) -> None:
                lab.bridge_exec("ip", "link", "set", cable, state)

            pull("down")
            took = _timed(lambda: _events(a1, "link_down"), SETTLE_S)
            assert took is not None, a1.log()
            (down,) = _events(a1, "link_down")
            assert down["link_id"] == second["id"]
            assert down["fallback_link_id"] == first["id"]
            assert down["peer_name"] == "h2" and down["rtt_now_ms"] is not None
            pull("up")
            back = _timed(lambda: _events(a1, "link_up"), SETTLE_S)
            assert back is not None, a1.log()
            assert _events(a1, "peer_down") == []
            print(f"\nlink_down {took:.2f} s after the cable went, link_up {back:.2f} s "
                  "after it came back")

            t0 = time.monotonic()
            for _ in range(3):
                pull("down")
                assert wait_for(lambda: len(both()) == 1, SETTLE_S)
                pull("up")
                assert wait_for(lambda: len(both()) == 2, SETTLE_S)
            assert wait_for(lambda: _events(a1, "link_flapping"), 5), a1.log()
            time.sleep(3)
            flaps = _events(a1, "link_flapping")
            # the interface's carrier's (link null, the interface named), once: the link
            # behind it flaps with it and is not told once more
            assert [(e["link_id"], e["interface"]) for e in flaps] == [(None, b1)], flaps
            assert all(e["changes"] == 3 for e in flaps)
            # down, up (the pull above), down, up, down and back: the third return is
            # the cable's flapping, told as the interface's; the link's down told before
            # it gets its up, and nothing more is told of the link
            assert [e["type"] for e in _events(a1, "link_down", "link_up", "link_flapping")
                    if e["link_id"] == second["id"]] == [
                "link_down", "link_up", "link_down", "link_up", "link_down", "link_up"]
            assert _events(a1, "peer_down") == []
            print(f"three pulls in {time.monotonic() - t0:.0f} s: one link_flapping")
        finally:
            agents.close()


#: a UDP and TCP forwarder from `listen` to `to`, holding each datagram (both ways) for
#: the milliseconds in the file `delay` (read twice a second); runs for `secs`
FORWARDER = r"""
import asyncio, sys
from pathlib import Path
listen, to, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
delay_file, secs = Path(sys.argv[4]), float(sys.argv[5])
delay = [0.0]

async def reread():
    while True:
        try:
            delay[0] = float(delay_file.read_text() or 0) / 1000
        except (OSError, ValueError):
            pass
        await asyncio.sleep(0.5)

class Up(asyncio.DatagramProtocol):
    def __init__(self, down, client):
        self.down, self.client = down, client
    def datagram_received(self, data, _addr):
        loop.call_later(delay[0], self.down.sendto, data, self.client)

class Down(asyncio.DatagramProtocol):
    def connection_made(self, t):
        self.t, self.ups = t, {}
    def datagram_received(self, data, addr):
        up = self.ups.get(addr)
        if up is None:
            self.ups[addr] = up = asyncio.Future()
            loop.create_task(self.open(addr, up))
        up.add_done_callback(lambda f: loop.call_later(delay[0], f.result().sendto, data))
    async def open(self, addr, fut):
        t, _ = await loop.create_datagram_endpoint(lambda: Up(self.t, addr), remote_addr=(to, port))
        fut.set_result(t)

async def pipe(r, w):
    try:
        while data := await r.read(65536):
            w.write(data)
            await w.drain()
    except OSError:
        pass
    finally:
        w.close()

async def tcp(r, w):
    try:
        ur, uw = await asyncio.open_connection(to, port)
    except OSError:
        w.close()
        return
    await asyncio.gather(pipe(r, uw), pipe(ur, w))

async def main():
    await loop.create_datagram_endpoint(Down, local_addr=(listen, port))
    await asyncio.start_server(tcp, listen, port)
    asyncio.create_task(reread())
    await asyncio.sleep(secs)

loop = asyncio.new_event_loop()
loop.run_until_complete(main())
"""


def test_a_path_that_gets_slower_and_back(tmp_path):
    with Lab(3) as lab:
        h1, h2, h3 = lab.hosts
        delay = tmp_path / "delay_ms"
        delay.write_text("0")
        fwd = h3.popen(sys.executable, "-c", FORWARDER, h3.addr, h2.addr, str(PORT),
                       str(delay), "240")
        agents = Agents(lab, tmp_path)
        try:
            a2 = agents.start(h2, name="h2", mdns=False)
            a1 = agents.start(h1, name="h1", mdns=False, peers=[f"{h3.addr}:{PORT}"])
            a1.wait_ready()
            a2.wait_ready()
            up = lambda: [lk for lk in a1.get("/v1/snapshot")["links"]  # noqa: E731
                          if lk["state"] == "up"]
            assert wait_for(lambda: up(), SETTLE_S), a1.log()
            time.sleep(20)  # a baseline, through the forwarder
            before = up()[0]["rtt_ms"]
            delay.write_text("30")  # 30 ms each way
            took = _timed(lambda: _events(a1, "link_slower"), 45 + SETTLE_S)
            assert took is not None, (up(), a1.log())
            (slower,) = _events(a1, "link_slower")
            assert slower["rtt_now_ms"] >= 60 and slower["rtt_before_ms"] < 10, slower
            delay.write_text("0")
            cleared = _timed(lambda: _events(a1, "link_slower_cleared"), 20 + SETTLE_S)
            assert cleared is not None, a1.log()
            assert _events(a1, "peer_down", "link_down") == []
            print(f"\nRTT {before} ms, +60 ms: link_slower after {took:.1f} s "
                  f"({slower['rtt_before_ms']} -> {slower['rtt_now_ms']} ms); back: cleared "
                  f"after {cleared:.1f} s")
        finally:
            agents.close()
            fwd.terminate()
            fwd.wait(5)
    assert Path(delay).exists()
