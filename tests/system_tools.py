"""The programs besides Python that tests run, and the Debian package of each.

A test that needs one says so, and skips where it is missing, naming the package to
install, rather than failing on FileNotFoundError:

    @pytest.mark.needs("iperf3", "ping")        # the mark (tests/conftest.py skips)
    system_tools.require("unshare")              # in a test or a helper, before its use
    reason = system_tools.missing("Xvfb")       # None when everything is there

`scripts/dev test` must pass on a machine that has only python3 with venv: there, every
test that needs one of these skips and says why. `.ci/run` installs them all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from exotray.cli import display  # (one ldd reading and naming rule for both)

#: program -> the Debian/Ubuntu package that ships it
PACKAGES = {
    # the network-namespace lab (tests/lab)
    "ip": "iproute2",
    "tc": "iproute2",
    "ss": "iproute2",
    "sysctl": "procps",
    "ping": "iputils-ping",
    "iperf3": "iperf3",
    "ethtool": "ethtool",
    "avahi-daemon": "avahi-daemon",
    "avahi-browse": "avahi-utils",
    "avahi-publish": "avahi-utils",
    # private D-Bus buses (tests/desktop, tests/qt, the lab's avahi)
    "dbus-daemon": "dbus",
    "dbus-monitor": "dbus",
    "dbus-send": "dbus",
    # the virtual desktop (tests/desktop)
    "Xvfb": "xvfb",
    "xwininfo": "x11-utils",
    "trayer": "trayer",
    "dunst": "dunst",
    "dunstctl": "dunst",
    "import": "imagemagick",
    # the rest
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "mount": "mount",
    "prlimit": "util-linux",
    "objdump": "binutils",  # PyInstaller, for the Linux bundle (tests/packaging)
    "promtool": "prometheus",
    "desktop-file-validate": "desktop-file-utils",
    "appstreamcli": "appstream",
    "systemd-analyze": "systemd",
}


def missing(*tools: str) -> str | None:
    """None when every program is on PATH, else the reason to skip: which are missing
    and the packages that have them. "Qt" stands for Qt's system libraries (qt_problem)."""
    absent = [t for t in dict.fromkeys(tools) if t != "Qt" and shutil.which(t) is None]
    reasons = []
    if absent:
        packages = " ".join(dict.fromkeys(PACKAGES.get(t, t) for t in absent))
        reasons.append(f"needs {', '.join(absent)} (Debian/Ubuntu: apt install {packages})")
    if "Qt" in tools and (qt := qt_problem()) is not None:
        reasons.append(qt)
    return "; ".join(reasons) or None


def require(*tools: str) -> None:
    """Skip the running test, naming the packages, unless every program is on PATH."""
    reason = missing(*tools)
    if reason is not None:
        pytest.skip(reason)


def needs(*tools: str) -> pytest.MarkDecorator:
    """The mark a test that runs these programs carries (`pytest.mark.needs(...)`)."""
    return pytest.mark.needs(*tools)


def missing_libraries(binary: Path) -> str | None:
    """None when every shared library `binary` needs resolves (or ldd cannot tell),
    else which do not and the packages that have them."""
    absent = display.missing_libraries(binary)
    if not absent:
        return None
    packages = " ".join(display.debian_package(lib) for lib in absent)
    return f"needs {', '.join(absent)} (Debian/Ubuntu: apt install {packages})"


def qt_xcb_plugin() -> Path:
    """Qt's X11 platform plugin, which the desktop tests run the tray app with."""
    plugin = display.plugin_path("xcb")
    assert plugin is not None, "PySide6 is not installed"
    return plugin


#: (why Qt does not load here, the ImportError's text), once asked; (None, None): it does
_qt: list[tuple[str | None, str | None]] = []


def qt_problem() -> str | None:
    """None where Qt loads (any desktop has its libraries), else what is missing: a
    machine with only python3 and venv lacks libGL, fontconfig, xkbcommon... There the
    tray app's tests skip and the agent's run."""
    if not _qt:
        try:
            import PySide6.QtGui
            import PySide6.QtWidgets
        except ImportError as e:
            import PySide6

            lib = Path(PySide6.__file__).parent / "Qt" / "lib" / "libQt6Widgets.so.6"
            libs = missing_libraries(lib)
            _qt.append((f"Qt {libs}" if libs else f"Qt does not load here ({e})", str(e)))
        else:
            _qt.append((None, None))
    return _qt[0][0]


def is_qt_failing(text: str) -> bool:
    """Whether an error (its text or traceback) is Qt failing to load here."""
    qt_problem()
    return _qt[0][1] is not None and _qt[0][1] in text
