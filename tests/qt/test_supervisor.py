"""The tray app's agent child: started, restarted when it dies, stopped on quit; an
agent that already runs is attached to and left alone. Loopback, mDNS off."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from helpers import AgentProc, free_port, wait_for

from exotray.ui.client.supervisor import AgentSupervisor, agent_answers, agent_command


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
    assert sup.state == "starting"  # the GUI thread did not wait for anything
    qtbot.waitUntil(lambda: sup.state == "running", timeout=10_000)
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
        qtbot.waitUntil(lambda: sup.state == "attached", timeout=5000)
        assert sup.proc is None
        sup.stop()
        assert a.proc.poll() is None and agent_answers(port)
        assert sup.state == "detached"  # not "stopped": it was never ours
    finally:
        a.close()


def test_config_error_is_shown_and_not_restarted_until_the_file_changes(qtbot, tmp_path):
    port = free_port()
    args = _args(tmp_path)
    cfg = tmp_path / "c.toml"
    cfg.write_text("threshold = [broken\n")
    sup = AgentSupervisor(port, args)
    problems: list[object] = []
    sup.problemChanged.connect(problems.append)
    sup.start()
    try:
        qtbot.waitUntil(lambda: sup.state == "config_error", timeout=10_000)
        assert sup.problem and "not valid TOML" in sup.problem and str(cfg) in sup.problem
        assert problems == [sup.problem]
        # No restart loop: nothing is spawned while the file stays as it is.
        qtbot.wait(2500)
        assert sup.proc is None and sup.restarts == 0 and sup.state == "config_error"
        # The user fixes the file: the agent starts, and the problem is gone.
        cfg.write_text("threshold = 0.8\n")
        qtbot.waitUntil(lambda: agent_answers(port), timeout=10_000)
        assert sup.state == "running" and sup.problem is None
    finally:
        sup.stop()


def test_a_crash_keeps_its_last_error_line(qtbot, tmp_path):
    port = free_port()
    sup = AgentSupervisor(port, _args(tmp_path))
    sup.start()
    try:
        qtbot.waitUntil(lambda: agent_answers(port), timeout=10_000)
        os.kill(sup.proc.processId(), signal.SIGKILL)
        qtbot.waitUntil(lambda: sup.problem is not None, timeout=5000)
        assert sup.problem.startswith("the agent stopped (crashed)")
        qtbot.waitUntil(lambda: agent_answers(port), timeout=10_000)
        sup.clear_problem()  # what the app does once the agent answers again
        assert sup.problem is None
    finally:
        sup.stop()


def test_problem_line_picks_the_agents_last_word():
    from exotray.ui.client.supervisor import problem_line

    lines = [
        "2026-12-03 01:02:03,456 INFO exotray.agent.runtime: starting",
        "2026-12-03 01:02:03,500 WARNING exotray.agent.runtime: interface lo vanished",
        "exotray agent: config /x/c.toml is not valid TOML: Expected ']' (at line 1)",
    ]
    assert problem_line(lines).startswith("config /x/c.toml is not valid TOML")
    assert problem_line(lines[:2]) == "interface lo vanished"
    assert problem_line(["Traceback (most recent call last):", "  File …",
                         "RuntimeError: boom"]) == "RuntimeError: boom"
    assert problem_line([]) is None


def test_start_never_blocks_the_gui_thread_on_the_network(qtbot, tmp_path, monkeypatch):
    """The attach check (an HTTP GET) runs in a thread: a slow answer (here 2 s) does not
    hold up start(), and the result still decides (attach or spawn)."""
    import time

    from exotray.ui.client import supervisor as S

    def slow_answers(port, host="127.0.0.1", timeout=0.5):
        time.sleep(2.0)
        return True

    monkeypatch.setattr(S, "agent_answers", slow_answers)
    sup = AgentSupervisor(free_port(), _args(tmp_path))
    sup.start()
    assert sup.state == "starting"  # had start() waited for the answer, it would be attached
    qtbot.waitUntil(lambda: sup.state == "attached", timeout=5000)
    sup.stop()


def test_an_agent_that_never_answers_does_not_hold_up_the_event_loop(qtbot, tmp_path):
    """Something listens on the agent's port and never answers (a hung agent): the
    attach check waits for it in its thread while the GUI thread's timers keep firing."""
    import socket

    from PySide6.QtCore import QTimer

    silent = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    port = silent.getsockname()[1]
    sup = AgentSupervisor(port, _args(tmp_path))
    sup.check_timeout = 3.0
    ticks_while_checking = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: sup._pending and ticks_while_checking.append(1))
    timer.start()
    try:
        sup.start()
        assert sup.state == "starting"
        qtbot.waitUntil(lambda: len(ticks_while_checking) >= 20, timeout=2500)
        assert sup._pending  # still waiting for an answer that does not come
        sup.stop()  # before the check gives up: no agent of ours is started
        timer.stop()
        # the check's thread gives up and its answer is dropped: nothing is started
        qtbot.waitUntil(lambda: not sup._pending, timeout=8000)
        assert sup.proc is None and sup.state == "stopped"
    finally:
        timer.stop()
        silent.close()
