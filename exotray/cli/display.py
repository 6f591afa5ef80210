"""Whether the tray app has a display to open, asked before Qt is loaded.

Qt aborts the process (SIGABRT, exit status 134) when no platform plugin can connect,
and its hint names libxcb-cursor0 even where that library is installed and the X server
is simply not there (a stale DISPLAY after an SSH session or a desktop that ended). So the
command line tries what Qt will try, in Qt's order (qguiapplication.cpp: QT_QPA_PLATFORM,
else Wayland when WAYLAND_DISPLAY or a Wayland session says so, then X11 when DISPLAY
is set): an X display is asked with libxcb's own xcb_connect (the call Qt makes, with
the user's Xauthority), a Wayland display by connecting to its socket. Where any of them
answers, or Qt is told to draw without a display (offscreen, eglfs, vnc, ...), there is
nothing to say; else one sentence on what is missing and what to do, exit status 2. Where
a display answers but Qt's plugin for it lacks a library it links (ldd), that library
and its Debian package are said instead: Qt's own hint names libxcb-cursor0 whichever
is missing.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

#: how long a display may take to answer (a DISPLAY naming a host that drops packets
#: would hold xcb_connect for the TCP timeout, minutes): past this it does not answer
ANSWER_S = 5.0

_ADVICE = ("The tray app needs a desktop session: run it from one, or set DISPLAY or "
           "WAYLAND_DISPLAY to its display. On a server, run `exotray agent` (headless).")


def _platforms(env: Mapping[str, str]) -> list[str]:
    """The platform plugins Qt will try, in its order (their names only)."""
    forced = env.get("QT_QPA_PLATFORM", "")
    if forced:
        return [p.split(":", 1)[0].strip() for p in forced.split(";") if p.strip()]
    order = []
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        order.append("wayland")
    order.append("xcb")  # after Wayland when DISPLAY is set, and Qt's default anyway
    return order


def _x_problem(display: str | None) -> str | None:
    """None when the X display answers (or cannot be asked here), else why not."""
    if not display:
        return "DISPLAY is not set"
    try:
        xcb = ctypes.CDLL("libxcb.so.1")
    except OSError:
        return None  # Qt's xcb plugin needs libxcb too: its own message is then right
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    result: list[int] = []

    def ask() -> None:
        conn = xcb.xcb_connect(display.encode(), None)
        result.append(xcb.xcb_connection_has_error(conn))
        xcb.xcb_disconnect(conn)

    asking = threading.Thread(target=ask, name="display-check", daemon=True)
    asking.start()
    asking.join(ANSWER_S)
    if not result:
        return f"the X server at DISPLAY={display} does not answer"
    if result[0] == 0:
        return None
    if result[0] == 5:  # XCB_CONN_CLOSED_PARSE_ERR
        return f"DISPLAY={display} is not a display name"
    return (f"nothing answers at DISPLAY={display} (no X server there, or it refused "
            "this user)")


def _wayland_problem(env: Mapping[str, str]) -> str | None:
    """None when the Wayland compositor's socket takes a connection, else why not."""
    if env.get("WAYLAND_SOCKET"):
        return None  # a connected socket handed down by the compositor
    name = env.get("WAYLAND_DISPLAY") or "wayland-0"
    path = name if name.startswith("/") else os.path.join(env.get("XDG_RUNTIME_DIR", ""), name)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(ANSWER_S)
            s.connect(path)
    except OSError as e:
        return f"nothing answers at WAYLAND_DISPLAY={name} ({path}: {e.strerror or e})"
    return None


#: each platform's plugin (in PySide6's Qt/plugins/platforms)
_PLUGINS = {"xcb": "libqxcb.so", "wayland": "libqwayland.so"}


def debian_package(soname: str) -> str:
    """A shared library's Debian package by the naming policy: libxcb-icccm.so.4 ->
    libxcb-icccm4, libxkbcommon-x11.so.0 -> libxkbcommon-x11-0 (a hint, not a lookup)."""
    name, _, version = soname.partition(".so.")
    name = name.lower()
    return f"{name}{'-' if name[-1:].isdigit() else ''}{version.split('.')[0]}"


def missing_libraries(binary: Path) -> list[str]:
    """The shared libraries `binary` links that the loader does not find (ldd); none
    where ldd is missing or cannot tell."""
    if shutil.which("ldd") is None or not binary.exists():
        return []
    try:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True,
                             timeout=ANSWER_S).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return list(dict.fromkeys(re.findall(r"^\s*(\S+) => not found", out, re.M)))


def plugin_problem(plugin: Path) -> str | None:
    """None when every library Qt's platform plugin links is found (or ldd cannot say),
    else which are not: Qt then aborts with a hint about libxcb-cursor0 whichever it is."""
    absent = missing_libraries(plugin)
    if not absent:
        return None
    return (f"Qt's plugin for this display ({plugin.name}) cannot load: "
            f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} missing (Debian/"
            f"Ubuntu: apt install {' '.join(debian_package(lib) for lib in absent)})")


def plugin_path(platform: str) -> Path | None:
    """Qt's plugin for a platform ("xcb", "wayland"), None without PySide6."""
    try:
        import PySide6  # the package only: its libraries load with the app
    except ImportError:
        return None
    return Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / _PLUGINS[platform]


def problem(env: Mapping[str, str] | None = None) -> str | None:
    """What to tell the user when Qt would find no display to open, else None."""
    env = os.environ if env is None else env
    if sys.platform in ("darwin", "win32"):
        return None
    platforms = _platforms(env)
    if any(p != "xcb" and not p.startswith("wayland") for p in platforms):
        return None  # offscreen, minimal, eglfs, vnc, ...: Qt needs no display server
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY") \
            and "wayland" not in platforms:
        return f"exotray: no display (neither DISPLAY nor WAYLAND_DISPLAY is set). {_ADVICE}"
    why, cannot_load = [], []
    for p in dict.fromkeys("wayland" if p.startswith("wayland") else p for p in platforms):
        found = _x_problem(env.get("DISPLAY")) if p == "xcb" else _wayland_problem(env)
        if found is not None:
            why.append(found)
        elif (plugin := plugin_path(p)) is None or (libs := plugin_problem(plugin)) is None:
            return None
        else:
            cannot_load.append(libs)
    if cannot_load:  # a display answers, but Qt cannot load the plugin that draws on it
        return f"exotray: {'; '.join(cannot_load)}."
    return f"exotray: no display: {'; '.join(why)}. {_ADVICE}"
