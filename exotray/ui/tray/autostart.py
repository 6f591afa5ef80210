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
#: the app's bundle id (packaging/macos/info_plist.py BUNDLE_ID): System Settings › General
#: › Login Items shows the LaunchAgent under the app's name and icon with it
BUNDLE_ID = "io.exotray.app"


class AutostartError(RuntimeError):
    """Start at login cannot be set up from where the app runs now."""


def unstable_location(executable: str) -> str | None:
    """Why a login item pointing at this executable would break after a reboot, or None.

    An app opened from its disk image runs under /Volumes/…, gone once the image is
    ejected; one opened from Downloads without being moved is translocated by Gatekeeper
    to a random /private/var/folders/…/AppTranslocation/… path that changes each launch."""
    if executable.startswith("/Volumes/"):
        return ("exotray runs from its disk image (/Volumes/…): drag exotray.app to "
                "Applications, open it from there, then turn on Start at login")
    if "/AppTranslocation/" in executable:
        return ("macOS runs exotray from a temporary copy (App Translocation) because it "
                "was opened where it was downloaded: move exotray.app to Applications, "
                "open it from there, then turn on Start at login")
    return None


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
         "ProcessType": "Interactive", "LimitLoadToSessionType": "Aqua",
         "AssociatedBundleIdentifiers": [BUNDLE_ID]}
    )


def enable(platform: str = sys.platform, home: Path | None = None,
           cmd: list[str] | None = None) -> Path:
    """Write the login item; raises AutostartError where it would not survive a reboot."""
    cmd = cmd or command()
    if platform == "darwin" and (why := unstable_location(cmd[0])):
        raise AutostartError(why)
    p = path(platform, home)
    p.parent.mkdir(parents=True, exist_ok=True)
    if platform == "darwin":
        p.write_bytes(launch_agent(cmd))
    else:
        p.write_text(desktop_entry(cmd))
    return p


def disable(platform: str = sys.platform, home: Path | None = None) -> None:
    path(platform, home).unlink(missing_ok=True)


def enabled(platform: str = sys.platform, home: Path | None = None) -> bool:
    return path(platform, home).exists()
