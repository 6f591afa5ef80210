"""The state dir is this user's alone (issue 33 point 12): under umask 022 an agent makes
its state dir 0700 and its files 0600 (history.db with its -wal and -shm, node_id, the
token, the lock), and puts right the modes of a state dir made before."""

from __future__ import annotations

import os
import stat

from helpers import AgentProc, free_port, wait_for


def _modes(state) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in [state, *state.iterdir()]}


def _run_agent(tmp_path, name: str) -> AgentProc:
    old = os.umask(0o022)  # the agent inherits it, as from a login shell
    try:
        a = AgentProc(tmp_path, name, free_port(), [])
    finally:
        os.umask(old)
    a.wait_ready()
    return a


def test_a_new_state_dir_is_private(tmp_path):
    a = _run_agent(tmp_path, "a")
    try:
        assert wait_for(lambda: (a.state / "history.db-wal").exists(), 10)
        modes = _modes(a.state)
        assert modes.pop("state-a") == 0o700, modes
        assert {"history.db", "history.db-wal", "history.db-shm", "node_id",
                "control_token", "lock"} <= modes.keys()
        assert all(m == 0o600 for m in modes.values()), {k: oct(v) for k, v in modes.items()}
    finally:
        a.close()


def test_an_old_state_dir_is_made_private_at_start(tmp_path):
    a = _run_agent(tmp_path, "b")
    a.close()
    os.chmod(a.state, 0o755)
    for p in a.state.iterdir():
        os.chmod(p, 0o644)  # as an agent before this change left them
    b = _run_agent(tmp_path, "b")
    try:
        modes = _modes(b.state)
        assert modes.pop("state-b") == 0o700
        assert all(m == 0o600 for m in modes.values()), {k: oct(v) for k, v in modes.items()}
        assert "made private to this user" in b.log_path.read_text()
    finally:
        b.close()


