"""A port that renegotiates to a lower speed raises link_degraded, and its recovery
link_restored (issue 12 point 3), on a real kernel interface whose speed really changes.

A veth's speed cannot be changed (ethtool -s: "Operation not supported"), but a tap's can
(drivers/net/tun.c keeps whatever link settings it is given): a namespace holds tap
xt<tag>t with a reader attached (so it has carrier and is up), ethtool sets 10000 then
1000 then 10000 Mb/s, and the agent's own reader (hwread.LinuxReader) and cache
(hardware.Hardware), run inside that namespace, report what changed. A tap is classified
as a VPN, whose speed changes are not events, so the script hands the tap to Hardware as
"ethernet": what is tested here is the kernel → sysfs → reader → event path; which kinds
raise events is covered by tests/unit/test_hardware.py. Root only (conftest skips
otherwise); run under `flock /tmp/exotray-bench.lock` like the other lab runs.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import netlab
import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import asyncio, fcntl, json, os, struct, subprocess, sys
sys.path.insert(0, sys.argv[1])
from exotray.agent.hw.hardware import Hardware
from exotray.agent.hw.read import LinuxReader
tap = sys.argv[2]
# attach to the tap (IFF_TAP | IFF_NO_PI, TUNSETIFF): carrier on, so the port is up
fd = os.open("/dev/net/tun", os.O_RDWR)
fcntl.ioctl(fd, 0x400454CA, struct.pack("16sH", tap.encode(), 0x0002 | 0x1000))
subprocess.run(["ip", "link", "set", tap, "up"], check=True, timeout=10)
events = []
hw = Hardware(LinuxReader(), lambda t, **f: events.append({"type": t, **f}))
kinds, labels, up = {tap: "ethernet"}, {tap: "Ethernet"}, {tap: True}

async def read(now):
    hw.changed()
    hw.tick(now, kinds, labels, up)
    assert hw._task is not None, "no read started"
    await asyncio.gather(hw._task, return_exceptions=True)
    hw.tick(now, kinds, labels, up)

async def main():
    seen = []
    for i, speed in enumerate(("10000", "1000", "1000", "10000")):
        subprocess.run(["ethtool", "-s", tap, "speed", speed, "duplex", "full",
                        "autoneg", "off"], check=True, timeout=10)
        await read(20.0 * i)  # reads are at least 15 s apart (hardware.MIN_GAP_S)
        seen.append(hw.get(tap).speed_mbit if hw.get(tap) else None)
    print(json.dumps({"seen": seen, "events": events}))

asyncio.run(main())
"""


@pytest.mark.needs("ethtool")  # run by the script, inside the namespace
def test_a_port_that_renegotiates_down_and_back_raises_one_event_each() -> None:
    tag = secrets.token_hex(2)[:3]
    ns, tap = f"xt{tag}sp", f"xt{tag}t"
    netlab.run("ip", "netns", "add", ns)
    try:
        netlab.run("ip", "-n", ns, "tuntap", "add", "dev", tap, "mode", "tap")
        out = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", SCRIPT,
                              str(ROOT), tap], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        r = json.loads(out.stdout)
    finally:
        netlab.run("ip", "netns", "del", ns, check=False)
    print(r)
    assert r["seen"] == [10000.0, 1000.0, 1000.0, 10000.0]
    assert r["events"] == [
        {"type": "link_degraded", "interface": tap, "local_label": "Ethernet",
         "from_mbit": 10000.0, "to_mbit": 1000.0, "max_mbit": None},
        {"type": "link_restored", "interface": tap, "local_label": "Ethernet",
         "from_mbit": 1000.0, "to_mbit": 10000.0, "max_mbit": None},
    ]
