"""The wheel, as `pipx install` would use it: built from the checkout, installed into a
fresh virtual environment, its command runs and its icons are inside."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.skipif(os.environ.get("EXOTRAY_SKIP_BUNDLE") == "1",
                                 reason="EXOTRAY_SKIP_BUNDLE=1"),
              pytest.mark.needs("Qt")]  # the installed app imports its GUI


@pytest.mark.timeout(900)
def test_wheel_installs_into_a_fresh_venv(tmp_path):
    wheels = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                        str(wheels), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = wheels.glob("exotray-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    # The plain install is the app: no extra needed for the tray and the window.
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    gui = subprocess.run([str(py), "-c", "import PySide6.QtWidgets, pyqtgraph"],
                         capture_output=True, text=True, timeout=120)
    assert gui.returncode == 0, gui.stderr
    out = subprocess.run([str(env_dir / "bin" / "exotray"), "--version"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("exotray "), out.stderr
    check = ("import importlib.resources as r; f = r.files('exotray.resources.icons'); "
             "print(f.joinpath('tray-ok.svg').is_file(), f.joinpath('png').is_dir())")
    out = subprocess.run([str(py), "-c", check], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert out.stdout.split() == ["True", "True"], out.stderr
