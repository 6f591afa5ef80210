"""The tray app's agent child: started, restarted when it dies, stopped on quit; an
agent that already runs is attached to and left alone. Loopback, mDNS off."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from helpers import AgentProc, free_port, wait_for

from exotray.ui.supervisor import AgentSupervisor, agent_answers, agent_command


def _args(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("")
    return ["--no-mdns", "--bind", "127.0.0.1", "--state-dir", str(tmp_path / "s"),
            "--config", str(cfg)]


def test_agent_command_same_executable():
    _program, args = agent_command(["--port", "1"])
    assert args[-3:] == ["agent", "--port", "1"]


def test_starts_restarts_and_stops_its_child(qtbot, tmp_path):
    port = free_port()
    sup = AgentSupervisor(port, _args(tmp_path))
    states: list[str] = []
    sup.stateChanged.connect(states.append)
    sup.start()
    assert sup.state == "running"
    qtbot.waitUntil(lambda: agent_answers(port), timeout=10_000)
    pid = sup.proc.processId()
    os.kill(pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: "restarting" in states, timeout=5000)
    qtbot.waitUntil(lambda: sup.state == "running" and sup.proc.processId() != pid,
                    timeout=10_000)
    qtbot.waitUntil(lambda: agent_answers(port), timeout=10_000)
    assert sup.restarts == 1
    new_pid = sup.proc.processId()
    sup.stop()
    assert sup.state == "stopped"
    assert not agent_answers(port)
    stat = Path(f"/proc/{new_pid}/stat")
    assert wait_for(lambda: not stat.exists() or stat.read_text().split()[2] == "Z", 5)


def test_attaches_to_a_running_agent_and_leaves_it_running(qtbot, tmp_path):
    port = free_port()
    a = AgentProc(tmp_path, "svc", port, [])
    try:
        a.wait_ready()
        sup = AgentSupervisor(port, _args(tmp_path))
        sup.start()
        assert sup.state == "attached" and sup.proc is None
        sup.stop()
        assert a.proc.poll() is None and agent_answers(port)
    finally:
        a.close()
