"""Take the exo screenshot of docs/exo.md from the app itself (offscreen, loopback only):

    .venv/bin/python scripts/screenshot_exo.py docs/screenshots

Three agents on 127.0.0.1-3 (mDNS off), a stand-in exo (tests/exo_standin.py, shapes
from exo's models: tests/exo_state.py) on 127.0.0.1 saying that studio-1 and studio-2
run Llama 3.3 70B as an MLX ring over studio-2's 127.0.0.2; the window is saved with
that link selected.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import exo_state as ex
from exo_standin import StandIn
from PySide6.QtWidgets import QApplication
from screenshots import pump  # scripts/: the folder this script runs from

from exotray.ui.app import App


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    qapp = QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory(prefix="exotray-exo-shot-") as tmp_s:
        tmp = Path(tmp_s)
        (tmp / "exo").mkdir()
        exo = StandIn(tmp / "exo").start()
        me, peer = "6a1f0c2e93b44d7ab0f11c2d3e4f5a60", "b2c4e6f80a1b4c3d8e5f6a7b8c9d0e1"
        nodes = {me: {"name": "studio-1", "interfaces": [("lo", "127.0.0.1", "unknown")]},
                 peer: {"name": "studio-2", "interfaces": [("lo", "127.0.0.2", "unknown")]}}
        ring = ex.ring_instance("1e5c6f0a-7b8c-4d9e-a0b1-c2d3e4f5a6b7", ex.MODEL_70B,
                                [(me, "127.0.0.1"), (peer, "127.0.0.2")])
        exo.say(node_id=json.dumps(me).encode(),
                state=ex.dumps(ex.state({"ring": ring}, nodes)))
        names = ["studio-1", "studio-2", "mini-3"]
        port = 52490
        procs = []
        try:
            for i, name in enumerate(names):
                addr = f"127.0.0.{i + 1}"
                peers = [x for j in range(3) if j != i
                         for x in ("--peer", f"127.0.0.{j + 1}:{port}")]
                exo_url = exo.url if i == 0 else ""
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "exotray", "agent", "--name", name, "--bind", addr,
                     "--port", str(port), "--no-mdns", "--state-dir", str(tmp / name),
                     "--capacity", "lo=10000", "--exo-url", exo_url, *peers],
                    stderr=open(tmp / f"{name}.log", "wb")))  # noqa: SIM115
            app = App(port=port, state_dir=tmp / "studio-1", manage_agent=False)
            app.start()

            def ready():
                c = app.cluster
                return c and len(c["nodes"]) == 3 and any(
                    lk["exo_instances"] for lk in c["nodes"][0]["links"])

            assert pump(qapp, 20, ready), "no exo link"
            pump(qapp, 6)
            app.open_window()
            w = app.window
            w.resize(1280, 820)
            used = next(lk for lk in app.cluster["nodes"][0]["links"] if lk["exo_instances"])
            w.select_link(used["id"])
            pump(qapp, 4)
            w.grab().save(str(out / "exo-link.png"))
            print(f"saved {out / 'exo-link.png'}")
            app.client.stop()
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(10)
            exo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")))
