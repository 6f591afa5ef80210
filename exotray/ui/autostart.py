"""Start at login: an XDG autostart entry on Linux, a LaunchAgent on macOS.

Plain files, so they are testable anywhere: `path()` says where, `enable()` writes,
`disable()` removes, `enabled()` reads. The command is the one that runs this
installation (the bundle's executable when frozen).
"""

from __future__ import annotations

import os
import plistlib
import shlex
import sys
from pathlib import Path

LABEL = "io.exotray.app"


def command() -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "exotray"]


def path(platform: str = sys.platform, home: Path | None = None) -> Path:
    home = home or Path.home()
    if platform == "darwin":
        return home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return config / "autostart" / "exotray.desktop"


def desktop_entry(cmd: list[str]) -> str:
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=exotray\n"
        "Comment=Cluster network links, RTT and saturation in the tray\n"
        f"Exec={shlex.join(cmd)}\n"
        "Icon=exotray\n"
        "Terminal=false\n"
        "Categories=Network;Monitor;\n"
        "X-GNOME-Autostart-enabled=true\n"
    )


def launch_agent(cmd: list[str]) -> bytes:
    return plistlib.dumps(
        {"Label": LABEL, "ProgramArguments": cmd, "RunAtLoad": True,
         "ProcessType": "Interactive", "LimitLoadToSessionType": "Aqua"}
    )


def enable(platform: str = sys.platform, home: Path | None = None) -> Path:
    p = path(platform, home)
    p.parent.mkdir(parents=True, exist_ok=True)
    if platform == "darwin":
        p.write_bytes(launch_agent(command()))
    else:
        p.write_text(desktop_entry(command()))
    return p


def disable(platform: str = sys.platform, home: Path | None = None) -> None:
    path(platform, home).unlink(missing_ok=True)


def enabled(platform: str = sys.platform, home: Path | None = None) -> bool:
    return path(platform, home).exists()
