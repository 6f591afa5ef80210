"""A config file with a wrong key, as `exotray agent` (a real process) says it: the file,
the line, the key and the one most likely meant; exit status 78, no traceback (issue 34
point 6)."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import free_port

from exotray.core.settings import EXIT_CONFIG


def _agent(tmp_path, config) -> subprocess.CompletedProcess[str]:
    """An agent expected to refuse its config (a timeout means it started)."""
    return subprocess.run(
        [sys.executable, "-m", "exotray", "agent", "--no-mdns", "--bind", "127.0.0.1",
         "--port", str(free_port()), "--state-dir", str(tmp_path / "state"),
         "--config", str(config)],
        capture_output=True, text=True, timeout=20, env=dict(os.environ))


def test_an_option_name_as_a_key_names_the_key_meant(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('# studio-1\nname = "studio-1"\nno_mdns = true\n')
    r = _agent(tmp_path, config)
    assert r.returncode == EXIT_CONFIG
    assert r.stderr == (f"exotray agent: config {config}, line 3: unknown setting no_mdns "
                        "(did you mean `mdns = false`?)\n")


def test_every_wrong_key_is_named_with_its_line(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('peer = "10.0.0.2:52480"\ntreshold = 0.8\n\n[capacity]\nen0 = 0\n')
    r = _agent(tmp_path, config)
    assert r.returncode == EXIT_CONFIG
    assert r.stderr == (
        f"exotray agent: config {config}: "
        'line 1: unknown setting peer (did you mean `peers = ["10.0.0.2:52480"]`?); '
        "line 2: unknown setting treshold (did you mean `threshold = 0.8`?); "
        "line 4: capacity of en0 must be a positive number of Mbit/s\n")
