"""The command line as a new user meets it: wrong input and missing pieces end with one
clear line and a documented exit status, never a traceback or a Qt abort."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import system_tools
from helpers import AgentProc, JsonHandler, free_port, wait_for

from exotray.core.settings import EXIT_CONFIG


def run(*args: str, env: dict[str, str] | None = None,
        timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exotray", *args], capture_output=True,
                          text=True, timeout=timeout, env=env or dict(os.environ))


def test_tray_without_a_display_says_so_and_exits_2():
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    for cmd in ([], ["demo"]):
        r = run(*cmd, env=env)
        assert r.returncode == 2, r.stderr
        assert "no display" in r.stderr and "exotray agent" in r.stderr
        assert "Traceback" not in r.stderr and "Reinstalling" not in r.stderr


def test_config_error_has_its_own_exit_status(tmp_path):
    bad = tmp_path / "config.toml"
    bad.write_text("port = [unclosed\n")
    r = run("agent", "--no-mdns", "--bind", "127.0.0.1", "--config", str(bad),
            "--state-dir", str(tmp_path / "state"))
    assert r.returncode == EXIT_CONFIG
    assert "not valid TOML" in r.stderr and str(bad) in r.stderr
    assert "Traceback" not in r.stderr


# -- the agent's own command line ------------------------------------------------------

def _agent(tmp_path, *args: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    """An agent that is expected to refuse to start (a timeout means it did start)."""
    return run("agent", "--no-mdns", "--bind", "127.0.0.1", "--port", str(free_port()),
               *args, timeout=timeout)


def test_a_wrong_option_shows_the_subcommands_usage():
    for cmd, *rest in (("agent",), ("measure", "b"), ("status",)):
        r = run(cmd, *rest, "--bogus")
        assert r.returncode == 2
        assert f"usage: exotray {cmd} " in r.stderr, r.stderr
        assert f"exotray {cmd}: error: unrecognized arguments: --bogus" in r.stderr


def test_port_0_is_refused_on_the_command_line_and_in_the_config(tmp_path):
    r = run("agent", "--no-mdns", "--bind", "127.0.0.1", "--port", "0",
            "--state-dir", str(tmp_path / "s"), timeout=10)
    assert r.returncode == 2
    assert "usage: exotray agent" in r.stderr and "--port: must be 1..65535, not 0" in r.stderr
    cfg = tmp_path / "config.toml"
    cfg.write_text("port = 0\n")
    r = run("agent", "--no-mdns", "--bind", "127.0.0.1", "--config", str(cfg),
            "--state-dir", str(tmp_path / "s"), timeout=10)
    assert r.returncode == EXIT_CONFIG and "port 0" in r.stderr and "1..65535" in r.stderr


def test_a_second_agent_on_the_same_state_dir_is_refused(tmp_path):
    first = AgentProc(tmp_path, "one", free_port(), [])
    try:
        first.wait_ready()
        node_id = first.get("/v1/snapshot")["node"]["id"]
        r = _agent(tmp_path, "--state-dir", str(first.state))
        assert r.returncode == 1, r.stderr
        assert f"cannot use state dir {first.state}: another exotray agent (pid " \
               f"{first.proc.pid}) is using it" in r.stderr
        assert "--state-dir DIR" in r.stderr and "Traceback" not in r.stderr
        assert first.get("/v1/snapshot")["node"]["id"] == node_id  # the first one goes on
    finally:
        first.close()
    # Once the first has stopped (or died: the kernel drops the lock), the dir is free.
    again = AgentProc(tmp_path, "one", free_port(), [])
    try:
        again.wait_ready()
        assert again.get("/v1/snapshot")["node"]["id"] == node_id
        again.kill()  # SIGKILL: no clean-up, and still no stale lock
    finally:
        again.close()
    last = AgentProc(tmp_path, "one", free_port(), [])
    try:
        last.wait_ready()
    finally:
        last.close()


def test_state_dir_errors_name_the_state_dir_not_the_port(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for state in (a_file, a_file / "below"):
        r = _agent(tmp_path, "--state-dir", str(state))
        assert r.returncode == 1
        assert f"exotray agent: cannot use state dir {state}: Not a directory" in r.stderr, \
            r.stderr
        assert "listen" not in r.stderr and "Traceback" not in r.stderr


def test_a_read_only_state_dir_is_a_state_dir_error(tmp_path):
    state = tmp_path / "ro"
    state.mkdir()
    port = str(free_port())
    agent = [sys.executable, "-m", "exotray", "agent", "--no-mdns", "--bind", "127.0.0.1",
             "--port", port, "--state-dir", str(state)]
    if os.geteuid() == 0:  # root writes anywhere: a read-only mount in a mount namespace
        system_tools.require("unshare")  # (as root)
        cmd = ["unshare", "-m", "sh", "-c",
               'mount --bind -o ro "$0" "$0" && exec "$@"', str(state), *agent]
        reason = "Read-only file system"
    else:
        state.chmod(0o500)
        cmd, reason = agent, "Permission denied"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    assert r.returncode == 1
    assert f"exotray agent: cannot use state dir {state}: {reason}" in r.stderr, r.stderr
    assert "listen" not in r.stderr


def test_an_unwritable_events_file_is_named(tmp_path):
    r = _agent(tmp_path, "--state-dir", str(tmp_path / "s"),
               "--events", str(tmp_path / "no" / "such" / "dir" / "events.jsonl"))
    assert r.returncode == 1
    assert "cannot write events to" in r.stderr and "No such file or directory" in r.stderr
    assert "listen" not in r.stderr


def test_a_taken_port_is_still_a_listen_error(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run("agent", "--no-mdns", "--bind", "127.0.0.1", "--port", str(port),
                "--state-dir", str(tmp_path / "s"), timeout=10)
    assert r.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in r.stderr
    # it never started: no "exotray agent stopped" before (or after) why (issue 34 point 19)
    assert "exotray agent stopped" not in r.stderr, r.stderr


def test_capacity_of_an_interface_that_never_appears_is_warned_once(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text("capacity_warn_after = 1.0\n")  # a minute by default
    a = AgentProc(tmp_path, "cap", free_port(), [], "--config", str(cfg), "--interval", "0.2",
                  "--capacity", "nosuchif=100", "--capacity", "lo=1000")
    try:
        a.wait_ready()
        assert wait_for(lambda: "no interface named 'nosuchif'" in a.log(), 10), a.log()
        time.sleep(1.5)  # several more checks: still one line
        log = a.log()
        assert log.count("no interface named") == 1, log
        assert "capacity nosuchif=100 Mbit/s" in log and "lo" in log.split("interfaces here")[1]
    finally:
        a.close()


def test_capacity_warning_waits_for_its_delay(tmp_path):
    a = AgentProc(tmp_path, "cap", free_port(), [], "--interval", "0.2",
                  "--capacity", "nosuchif=100")
    try:
        a.wait_ready()
        time.sleep(1.5)  # the default 60 s have not passed
        assert "no interface named" not in a.log()
    finally:
        a.close()


# -- measure, export, prometheus-sd ----------------------------------------------------

def test_measure_bounds_are_stated():
    for args, msg in ((["--seconds", "100"], "--seconds: must be 1..30 s, not 100"),
                      (["--seconds", "0.5"], "--seconds: must be 1..30 s, not 0.5"),
                      (["--streams", "0"], "--streams: must be 1..8, not 0"),
                      (["--streams", "9"], "--streams: must be 1..8, not 9")):
        r = run("measure", "b", "--port", "9", *args)
        assert r.returncode == 2, r.stderr
        assert "usage: exotray measure" in r.stderr and msg in r.stderr
        assert "measuring" not in r.stderr


def test_measure_says_measuring_only_when_an_agent_answers(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "control_token").write_text("x" * 40 + "\n")
    r = run("measure", "b", "--port", str(free_port()), "--state-dir", str(state))
    assert r.returncode == 1
    assert "no exotray agent answered" in r.stderr
    assert "measuring" not in r.stderr


@pytest.fixture
def lone_agent(tmp_path):
    """One agent with one (down) link, to 127.0.0.1 on a port nobody answers."""
    a = AgentProc(tmp_path, "lone", free_port(), [free_port()])
    try:
        a.wait_ready()
        yield a
    finally:
        a.close()


def test_export_and_sd_to_an_unwritable_place_say_so(lone_agent, tmp_path):
    port = str(lone_agent.port)
    for args in (["export", "127.0.0.1", "-o", "/nonexistent/dir/x.csv"],
                 ["prometheus-sd", "--once", "-o", "/nonexistent/x.json"]):
        r = run(*args, "--port", port)
        assert r.returncode == 1, (args, r.stderr)
        assert "Traceback" not in r.stderr
        path = args[args.index("-o") + 1]
        assert f"cannot write {path}: No such file or directory" in r.stderr, r.stderr
    assert not any(tmp_path.glob("*.tmp"))
    r = run("export", "127.0.0.1", "-o", str(tmp_path), "--port", port)  # a directory
    assert r.returncode == 1 and f"cannot write {tmp_path}: Is a directory" in r.stderr


def test_prometheus_sd_refresh_bounds_are_stated():
    for value in ("0", "-5", "nan", "1e9"):
        r = run("prometheus-sd", "--refresh", value, "--port", "9")
        assert r.returncode == 2, r.stderr
        assert "usage: exotray prometheus-sd" in r.stderr
        assert f"--refresh: must be 1..86400 s, not {value}" in r.stderr
        assert "Traceback" not in r.stderr
    assert "1..86400" in run("prometheus-sd", "--help").stdout


def test_measure_names_the_state_dir_whose_token_it_tried(lone_agent, tmp_path):
    port = str(lone_agent.port)
    other = tmp_path / "other"
    other.mkdir()
    (other / "control_token").write_text("y" * 40 + "\n")  # another agent's token
    r = run("measure", "127.0.0.1", "--port", port, "--state-dir", str(other))
    assert r.returncode == 1, r.stderr
    assert f"refused the control token in {other} (given with --state-dir)" in r.stderr
    assert "--state-dir DIR" in r.stderr
    assert "measuring" not in r.stderr and "Traceback" not in r.stderr
    # without --state-dir: the default one, by name
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    r = run("measure", "127.0.0.1", "--port", port, env=env)
    assert r.returncode == 1, r.stderr
    assert f"no control token in {tmp_path / 'xdg' / 'exotray'} (the default" in r.stderr
    assert "--state-dir DIR" in r.stderr and "measuring" not in r.stderr


def test_measure_an_unknown_peer_says_so_before_measuring(lone_agent):
    r = run("measure", "nosuchpeer", "--port", str(lone_agent.port),
            "--state-dir", str(lone_agent.state))
    assert r.returncode == 1, r.stderr
    assert "no link to 'nosuchpeer'; this node's links: " in r.stderr
    assert "(127.0.0.1" in r.stderr  # the links it has, to choose from
    assert "measuring" not in r.stderr and "Traceback" not in r.stderr


# -- scripts/dev -----------------------------------------------------------------------

def test_scripts_dev_without_arguments_prints_its_usage_only():
    dev = Path(__file__).resolve().parents[2] / "scripts" / "dev"
    r = subprocess.run([str(dev)], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2
    assert r.stdout.splitlines()[0].startswith("exotray developer entry point")
    assert "scripts/dev lint" in r.stdout
    assert "set -" not in r.stdout and "#" not in r.stdout


class _Busy(JsonHandler):
    """An agent's stand-in that answers /v1/cluster and is busy for /v1/history."""

    tries = 0

    def do_GET(self):
        if self.path.startswith("/v1/cluster"):
            links = [{"id": "l1", "peer_name": "b", "peer_address": "127.0.0.9"}]
            self.answer(json.dumps({"nodes": [{"links": links}]}).encode())
            return
        type(self).tries += 1
        self.send_response(503)
        self.send_header("retry-after", "0")
        self.send_header("content-length", "61")
        self.end_headers()
        self.wfile.write(b'{"error": "busy with other history reads; try again in 1 s"}\n')


def test_export_from_a_busy_agent_says_busy_after_trying_again(tmp_path):
    """Before, an agent busy with LAN history reads made `export` say that no agent
    answered and advise starting one (issue 33 point 2)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        r = run("export", "l1", "--since", "1h", "--port", str(server.server_address[1]),
                "-o", str(tmp_path / "x.csv"))
    finally:
        server.shutdown()
        server.server_close()
    assert r.returncode == 1
    assert "is busy" in r.stderr and "Start one" not in r.stderr, r.stderr
    assert _Busy.tries == 3  # two waits of its Retry-After, then the message
