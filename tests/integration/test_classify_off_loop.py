"""macOS classifies interfaces with `networksetup`, which can take seconds: the agent
runs it in a worker thread, so its API and probes never wait for it. The command is the
edge that cannot run here: a runner that blocks until released stands in for it."""

from __future__ import annotations

import asyncio
import threading

import httpx

from exotray.agent.hw.kinds import InterfaceClassifier
from exotray.agent.runtime import Agent
from exotray.core.settings import Settings

PORTS = "Hardware Port: Thunderbolt 1\nDevice: lo\nEthernet Address: N/A\n"


def test_a_slow_networksetup_never_blocks_the_agent(tmp_path):
    release = threading.Event()
    calls: list[int] = []

    def slow_networksetup() -> str:
        calls.append(1)
        release.wait(10)
        return PORTS

    async def main() -> None:
        s = Settings(name="mac", bind="127.0.0.1", port=0, mdns=False, interval=0.25,
                     state_dir=str(tmp_path))
        agent = Agent(s, classifier=InterfaceClassifier(
            platform="darwin", networksetup_runner=slow_networksetup))
        await agent.start()
        try:
            url = f"http://127.0.0.1:{agent.port}/v1/snapshot"
            async with httpx.AsyncClient(trust_env=False, timeout=3.0) as c:
                # networksetup is still running: the API answers regardless, with the
                # interface named by its name until the hardware ports are known.
                for _ in range(4):
                    snap = (await c.get(url)).json()
                    await asyncio.sleep(0.25)
                assert calls and not release.is_set()
                lo = next(i for i in snap["interfaces"] if i["name"] == "lo")
                assert lo["label"] != "Thunderbolt 1"
                release.set()
                for _ in range(40):
                    snap = (await c.get(url)).json()
                    lo = next(i for i in snap["interfaces"] if i["name"] == "lo")
                    if lo["label"] == "Thunderbolt 1":
                        break
                    await asyncio.sleep(0.1)
                assert (lo["kind"], lo["label"]) == ("thunderbolt", "Thunderbolt 1")
        finally:
            release.set()
            await agent.stop()

    asyncio.run(main())


def test_mdns_skips_vpn_interfaces_unless_named(tmp_path):
    from exotray.agent.hw.sampler import NicInfo

    async def main() -> tuple[list[str], list[str]]:
        nics = {
            "en0": NicInfo("en0", True, None, ("192.168.1.20",), (("192.168.1.20", 24),),
                           multicast=True),
            "utun3": NicInfo("utun3", True, None, ("100.64.0.2",), (("100.64.0.2", 32),),
                             multicast=True),
        }
        out = []
        for wanted in ((), ("100.64.0.2",)):
            s = Settings(name="mac", bind="127.0.0.1", port=0, mdns=False,
                         mdns_interfaces=wanted, state_dir=str(tmp_path / str(len(out))))
            agent = Agent(s, classifier=InterfaceClassifier(
                platform="darwin", networksetup_runner=lambda: PORTS))
            agent._update_ifaces(nics, 0.0)
            out.append(agent.mdns_addresses())
        return out[0], out[1]

    default, named = asyncio.run(main())
    assert default == ["192.168.1.20"]   # the VPN is skipped by default…
    assert named == ["100.64.0.2"]       # …and used when the user names it


def test_macos_local_network_refusal_is_named(tmp_path):
    """macOS 15+ without the Local Network permission: sendto() fails at once with
    EHOSTUNREACH for every local peer. The OS refusal is the seam (no Mac here)."""
    import errno

    async def main(platform: str) -> dict:
        s = Settings(name="mac", bind="127.0.0.1", port=0, mdns=False, interval=0.2,
                     peers=("127.0.0.1:9", "127.0.0.2:9"), state_dir=str(tmp_path / platform))
        agent = Agent(s)
        agent.platform = platform
        await agent.start()

        def refused(data: bytes, target: tuple[str, int]) -> int:
            raise OSError(errno.EHOSTUNREACH, "No route to host")

        agent.probe.send_datagram = refused
        try:
            for _ in range(30):
                await asyncio.sleep(0.1)
                if agent.snapshot()["warnings"]:
                    break
            return agent.snapshot()
        finally:
            await agent.stop()

    mac = asyncio.run(main("darwin"))
    assert len(mac["warnings"]) == 1 and "Local Network" in mac["warnings"][0]
    assert all(lk["state"] == "down" or lk["rtt_ms"] is None for lk in mac["links"])
    linux = asyncio.run(main("linux"))  # there it is a neighbour that is down
    assert linux["warnings"] == []
