"""Two minutes of 8 agents with mDNS, probes and rotating iperf3 bursts: open fds,
threads and asyncio tasks do not grow (bench/soak.py runs the hour-long version)."""

from __future__ import annotations

import pytest
import soak


@pytest.mark.timeout(400)
@pytest.mark.needs("iperf3", "ss")
def test_two_minute_soak_does_not_grow(tmp_path):
    rows = soak.run(tmp_path, hosts=8, seconds=120, every=20)
    by_agent: dict[str, list[dict]] = {}
    for r in rows:
        by_agent.setdefault(r["agent"], []).append(r)
    report = []
    for name, samples in sorted(by_agent.items()):
        # Tasks and fds move with what is in flight when a sample is taken (a fetch task
        # and a keep-alive connection per peer come and go every interval), so a single
        # sample says little. A leak raises the floor: compare the quietest of the last
        # samples with the busiest of the first ones (after the warm-up round).
        first, last = samples[1:3], samples[-3:]
        for key, slack in (("fds", 2), ("threads", 0), ("tasks", 3)):
            base = max(s[key] for s in first)
            floor = min(s[key] for s in last)
            assert floor <= base + slack, (name, key, [s[key] for s in samples])
        assert all(s["links_up"] == 7 for s in samples[1:]), (name, samples)
        report.append(f"{name}: fds {samples[1]['fds']}->{samples[-1]['fds']}, threads "
                      f"{samples[-1]['threads']}, tasks {samples[1]['tasks']}->"
                      f"{samples[-1]['tasks']}, RSS {samples[1]['rss_mib']:.1f}->"
                      f"{samples[-1]['rss_mib']:.1f} MiB")
    print("\n" + "\n".join(report))
