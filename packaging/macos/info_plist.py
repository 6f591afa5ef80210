"""The Info.plist of exotray.app, as a dict (plain Python, so it is tested on Linux too).

Used by packaging/macos/exotray.spec (PyInstaller's BUNDLE merges it over its defaults) and
by tests/unit/test_packaging.py. `python packaging/macos/info_plist.py` prints it as XML.
"""

from __future__ import annotations

import plistlib
import sys
from typing import Any

BUNDLE_ID = "io.exotray.app"  # also the LaunchAgent label (exotray.ui.tray.autostart.LABEL)
NAME = "exotray"
BONJOUR_SERVICE = "_exotray._tcp"  # exotray.agent's DNS-SD type, without ".local."
# Qt 6.11 (the PySide6 range pyproject.toml allows: >=6.11.3,<6.12) runs on macOS 13 and later.
MIN_MACOS = "13.0"
LOCAL_NETWORK_USAGE = (
    "exotray finds the other machines of your cluster on the local network with Bonjour "
    "and measures the round-trip time and throughput of every link to them."
)


def _version() -> str:
    from exotray import __version__

    return __version__


def info_plist(version: str | None = None, min_macos: str = MIN_MACOS) -> dict[str, Any]:
    """The Info.plist keys exotray.app needs (PyInstaller adds CFBundleExecutable and the icon)."""
    version = version or _version()
    return {
        "CFBundleIdentifier": BUNDLE_ID,
        "CFBundleName": NAME,
        "CFBundleDisplayName": NAME,
        "CFBundlePackageType": "APPL",
        "CFBundleShortVersionString": version,
        "CFBundleVersion": version,
        "CFBundleInfoDictionaryVersion": "6.0",
        "NSHumanReadableCopyright": "MIT licence",
        "LSApplicationCategoryType": "public.app-category.developer-tools",
        # A menu-bar app: no Dock icon, no application menu.
        "LSUIElement": True,
        "LSMinimumSystemVersion": min_macos,
        "NSHighResolutionCapable": True,
        "NSSupportsAutomaticGraphicsSwitching": True,
        "NSRequiresAquaSystemAppearance": False,  # follow dark mode
        # macOS 15+ asks before an app talks to the local network (mDNS, probes, HTTP to
        # peers); the prompt shows this sentence, and Bonjour browsing needs the type listed.
        "NSLocalNetworkUsageDescription": LOCAL_NETWORK_USAGE,
        "NSBonjourServices": [BONJOUR_SERVICE],
        # App Nap would stretch a menu-bar app's 1 s timers (and its agent child's, which
        # runs from the same bundle) to ~10 s while no window is visible: a monitor must
        # keep its own pace.
        "NSAppSleepDisabled": True,
    }


if __name__ == "__main__":
    sys.stdout.write(plistlib.dumps(info_plist()).decode())
