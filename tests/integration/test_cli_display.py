"""`exotray` and `exotray demo` where the display does not answer (issue 34 point 1): one
sentence and exit status 2, before Qt aborts the process (exit 134, "could not connect to
display … xcb-cursor0 is needed"). No X server is started: where one must answer, a
stand-in on loopback TCP speaks the X11 connection setup (cli/display.py asks with
libxcb's own xcb_connect, as Qt does)."""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from exotray.cli import display

#: what the platform picks and where it connects: removed, then set per test
DISPLAY_ENV = ("DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET", "QT_QPA_PLATFORM",
               "XDG_SESSION_TYPE")


def _no_x_server_at(n: int) -> bool:
    unix = Path(f"/tmp/.X11-unix/X{n}")
    abstract = f"@/tmp/.X11-unix/X{n}"
    try:
        listed = Path("/proc/net/unix").read_text()
    except OSError:
        listed = ""
    return not unix.exists() and abstract not in listed


def _env(**display: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DISPLAY_ENV}
    return {**env, **display}


def _exotray(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exotray", *args], capture_output=True,
                          text=True, timeout=60, env=env)


def test_a_display_that_does_not_answer_is_said_before_qt_aborts(tmp_path):
    n = next(n for n in range(90, 400) if _no_x_server_at(n))
    for env, said in ((_env(DISPLAY=f":{n}"), f"nothing answers at DISPLAY=:{n}"),
                      (_env(WAYLAND_DISPLAY=str(tmp_path / "wayland-9")),
                       f"nothing answers at WAYLAND_DISPLAY={tmp_path / 'wayland-9'}")):
        for cmd in ([], ["demo"]):
            r = _exotray(*cmd, env=env)
            assert r.returncode == 2, (cmd, r.returncode, r.stderr)
            assert said in r.stderr and "no display" in r.stderr, r.stderr
            assert "`exotray agent`" in r.stderr and "DISPLAY or WAYLAND_DISPLAY" in r.stderr
            for qt in ("Aborted", "xcb-cursor0", "could not connect to display", "Traceback"):
                assert qt not in r.stderr, r.stderr


class StandInX:
    """An X server's connection setup on 127.0.0.1:6000+n: it reads the client's setup
    request and answers with a minimal success (one screen) or, refusing, a failure with
    a reason, as a server does to a client without its cookie."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.sock = socket.socket()
        for n in range(100, 900):
            try:
                self.sock.bind(("127.0.0.1", 6000 + n))
                break
            except OSError:
                continue
        self.display = f"127.0.0.1:{n}"
        self.sock.listen()
        self.served = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _reply(self) -> bytes:
        if self.refuse:
            reason = b"Authorization required"
            padded = reason + b"\0" * (-len(reason) % 4)
            return struct.pack("<BBHHH", 0, len(reason), 11, 0, len(padded) // 4) + padded
        vendor = b"exotray test"
        visual = struct.pack("<IBBHIII4x", 0x21, 4, 8, 256, 0xFF0000, 0xFF00, 0xFF)
        screen = struct.pack("<IIIIIHHHHHHIBBBB", 0x100, 0x20, 0xFFFFFF, 0, 0, 1280, 800,
                             300, 200, 1, 1, 0x21, 0, 0, 24, 1)
        body = (struct.pack("<IIIIHHBBBBBBBB4x", 1, 0x200000, 0x1FFFFF, 0, len(vendor),
                            65535, 1, 1, 0, 0, 32, 32, 8, 255)
                + vendor + b"\0" * (-len(vendor) % 4)
                + struct.pack("<BBB5x", 24, 32, 32)  # one pixmap format
                + screen + struct.pack("<BxH4x", 24, 1) + visual)  # one depth, one visual
        return struct.pack("<BxHHH", 1, 11, 0, len(body) // 4) + body

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                head = conn.recv(12)
                name_len, data_len = struct.unpack("<6xHH2x", head)
                left = name_len + (-name_len % 4) + data_len + (-data_len % 4)
                while left > 0:
                    left -= len(conn.recv(left))
                conn.sendall(self._reply())
                self.served += 1
                conn.recv(1)  # until the client hangs up

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def x_server() -> Iterator[StandInX]:
    x = StandInX()
    yield x
    x.close()


def _elf_needing(soname: str, tmp_path: Path) -> Path:
    """A copy of this Python's executable whose libc is called `soname` (same length):
    an ELF file that links a library this machine does not have."""
    assert len(soname) == len("libc.so.6")
    elf = Path(os.path.realpath(sys.executable)).read_bytes()
    assert elf.count(b"libc.so.6\0") == 1
    fake = tmp_path / "libqfake.so"
    fake.write_bytes(elf.replace(b"libc.so.6\0", soname.encode() + b"\0"))
    return fake


@pytest.fixture
def complete_plugin(monkeypatch):
    """Qt's platform plugin as one whose every library is found (this Python), so that
    what is tested is the display's answer, not this machine's xcb libraries."""
    monkeypatch.setattr(display, "plugin_path", lambda platform: Path(sys.executable))


def test_a_display_that_answers_is_taken(x_server, complete_plugin):
    assert display.problem(_env(DISPLAY=x_server.display)) is None
    assert x_server.served == 1
    # a dead Wayland socket first (a Wayland session): Qt falls back to X, and so may we
    assert display.problem(_env(DISPLAY=x_server.display, WAYLAND_DISPLAY="/nonexistent",
                                XDG_SESSION_TYPE="wayland")) is None


def test_a_display_that_refuses_is_named():
    refusing = StandInX(refuse=True)
    try:
        said = display.problem(_env(DISPLAY=refusing.display))
    finally:
        refusing.close()
    assert said is not None and said.startswith("exotray: no display: ")
    assert f"DISPLAY={refusing.display}" in said and "refused this user" in said


def test_no_check_where_qt_draws_without_a_display():
    for platform in ("offscreen", "minimal", "eglfs", "vnc:size=800x600"):
        assert display.problem(_env(QT_QPA_PLATFORM=platform)) is None
    said = display.problem(_env(QT_QPA_PLATFORM="xcb"))
    assert said is not None and "neither DISPLAY nor WAYLAND_DISPLAY" in said


@pytest.mark.skipif(shutil.which("ldd") is None, reason="the libraries are read with ldd")
def test_a_display_whose_qt_plugin_lacks_a_library_names_the_library(x_server, tmp_path,
                                                                      monkeypatch):
    """X answers, but Qt's plugin for it cannot load: Qt's abort names libxcb-cursor0
    whichever library is missing; this names the one that is."""
    plugin = _elf_needing("libq.so.6", tmp_path)
    monkeypatch.setattr(display, "plugin_path", lambda platform: plugin)
    said = display.problem(_env(DISPLAY=x_server.display))
    assert said == ("exotray: Qt's plugin for this display (libqfake.so) cannot load: "
                    "libq.so.6 is missing (Debian/Ubuntu: apt install libq6).")


def test_qt_without_its_system_libraries_is_named_not_reinstall():
    """A bare server: Qt imports fail on a system library (libGL), not on this install."""
    from exotray.cli.main import gui_import_problem

    said = gui_import_problem(ImportError(
        "libGL.so.1: cannot open shared object file: No such file or directory",
        name="PySide6.QtWidgets"))
    assert "libGL.so.1 is missing (Debian/Ubuntu: apt install libgl1)" in said
    assert "reinstall" not in said and "`exotray agent`" in said
    said = gui_import_problem(ImportError(name="pyqtgraph"))
    assert "pyqtgraph is missing from this install" in said and "reinstall" in said


def test_debian_packages_of_libraries():
    assert [display.debian_package(s) for s in (
        "libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxkbcommon-x11.so.0", "libGL.so.1",
        "libX11-xcb.so.1")] == ["libxcb-cursor0", "libxcb-icccm4", "libxkbcommon-x11-0",
                                 "libgl1", "libx11-xcb1"]
