"""Record a real cluster view for the GUI tests (run as root, inside the lab):

    python tests/lab/record_fixture.py tests/qt/fixtures

Three hosts on one LAN, h1 and h2 also on a second LAN (parallel links), a 50 Mbit/s
bottleneck towards h2 saturated by iperf3, then h3 killed (its links down). Writes
cluster.json (as h1 sees it), history.json (the saturated link, 60 s) and events.json.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

import netlab
from helpers import wait_for
from netlab import Agents


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, netlab.Lab(3) as lab:
        agents = Agents(lab, Path(tmp))
        try:
            h1, h2, h3 = lab.hosts
            lab.add_lan([h1, h2])
            lab.shape(h2, "50mbit")
            caps = ["--capacity", f"{h1.veth}=50", "--capacity", f"xt{lab.tag}1c=1000"]
            names = ["studio-1", "studio-2", "gpu-3"]
            a1 = agents.start(h1, *caps, name=names[0], all_interfaces=True)
            agents.start(h2, "--capacity", f"{h2.veth}=50", name=names[1], all_interfaces=True)
            a3 = agents.start(h3, name=names[2], all_interfaces=True)
            assert wait_for(lambda: len(a1.get("/v1/cluster")["nodes"]) == 3, 15)
            assert wait_for(lambda: len(a1.get("/v1/snapshot")["links"]) == 3, 15)
            time.sleep(20)  # some idle history
            lab.iperf_server(h2)
            client = lab.iperf_client(h1, h2, 30)
            assert wait_for(lambda: [e for e in a1.get("/v1/events")["events"]
                                     if e["type"] == "link_saturated"], 10)
            time.sleep(4)
            a3.kill()
            time.sleep(4)
            cluster = a1.get("/v1/cluster")
            link = next(lk for lk in cluster["nodes"][0]["links"] if lk["state"] == "saturated")
            history = a1.get("/v1/history", link=link["id"], seconds=60)
            events = a1.get("/v1/events")
            client.wait(60)
        finally:
            agents.close()
    # Lab names are random per run; make them stable for tests and screenshots.
    text = json.dumps({"cluster": cluster, "history": history, "events": events}, indent=1)
    text = text.replace(f"xt{lab.tag}", "xt").replace(f"10.213.{lab.net}.", "10.213.0.")
    text = text.replace(f"10.213.{lab.net + 1}.", "10.213.1.")
    data = json.loads(text)
    for name, value in data.items():
        (out / f"{name}.json").write_text(json.dumps(value, indent=1) + "\n")
    print(f"wrote {', '.join(f'{n}.json' for n in data)} to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/qt/fixtures"))
