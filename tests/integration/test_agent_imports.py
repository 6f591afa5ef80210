"""What an agent's process holds: the wire format without pydantic, prometheus_client only
once /metrics is scraped, pyroute2's ethtool query in a child process, not httpx's
command-line client (its pygments and rich, where installed: pytest brings pygments)
(docs/design.md, "Memory"). Real processes: a fresh interpreter imports what
`exotray agent` imports."""

from __future__ import annotations

import json
import subprocess
import sys

from exotray.agent.hw import ethtool as hw_ethtool

PROBE = """
import json, sys
import exotray.cli.main, exotray.agent.runtime
from exotray.agent.hw import ethtool as hw_ethtool
before = sorted(m for m in ("pydantic", "prometheus_client", "pyroute2", "pygments", "rich")
                if m in sys.modules)
assert sys.modules.get("httpx._main") is None and "httpx" in sys.modules
answer = hw_ethtool.read_max_mbit("lo")  # asked in a child process
after = sorted(m for m in ("pyroute2",) if m in sys.modules)
print(json.dumps([before, answer, after]))
"""


def test_an_agent_process_does_not_hold_what_it_does_not_need():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=60, check=True)
    before, answer, after = json.loads(out.stdout)
    assert before == [] and after == []
    assert answer is None  # loopback lists no link modes: unknown


def test_the_child_answers_json_and_refuses_bad_usage():
    for name in ("lo", "xt-no-such-nic"):
        out = subprocess.run(hw_ethtool.child_command(name), capture_output=True, timeout=60,
                             check=True)
        assert json.loads(out.stdout) is None
    bad = subprocess.run([sys.executable, "-m", "exotray.agent.hw.ethtool"],
                         capture_output=True, timeout=60, check=False)
    assert bad.returncode == 2 and b"usage" in bad.stderr
