"""Importing `exotray.__main__` starts nothing (a package walk once started the tray app
and an agent with mDNS on the machine's network); `python -m exotray` still runs."""

from __future__ import annotations

import importlib
import subprocess
import sys

import exotray.cli.main


def test_importing_main_module_does_not_run_the_app(monkeypatch):
    called = []
    monkeypatch.setattr(exotray.cli.main, "main", lambda *a, **k: called.append(a) or 0)
    sys.modules.pop("exotray.__main__", None)
    importlib.import_module("exotray.__main__")
    assert called == []


def test_python_m_exotray_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "exotray", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("exotray "), out
