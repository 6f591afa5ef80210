"""Entry point of the PyInstaller bundles (Linux and macOS): the `exotray` command.

One executable runs every sub-command, so the tray app's supervisor can start the agent
as `<bundle executable> agent ...` (exotray.ui.client.supervisor.agent_command).

With EXOTRAY_BUNDLE_SELFTEST=1 it instead checks that the bundle's icons load (the app
icon and every tray icon, plain and template, rendered offscreen), prints one line per
icon and exits 0 or 1: tests/packaging/test_bundle.py uses it.
"""

import os
import sys


def _argv() -> list[str]:
    # A frozen executable has no `-m`: a caller that runs `sys.executable -m exotray ...`
    # (as an unfrozen install would) gets the same command here.
    if getattr(sys, "frozen", False) and sys.argv[1:3] == ["-m", "exotray"]:
        return sys.argv[3:]
    return sys.argv[1:]


def _selftest() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from exotray.ui.tray import icon as tray
    from exotray.ui.tray import summary

    app = QApplication(sys.argv[:1])  # noqa: F841
    icons = {"exotray.svg": tray.app_icon()}
    for state in summary.HEALTH:
        for template in (False, True):
            name = f"tray-{state}{'-template' if template else ''}.svg"
            icons[name] = tray.tray_icon(state, template=template)
    failed = 0
    for name, icon in icons.items():
        image = icon.pixmap(22, 22).toImage()
        opaque = sum(image.pixelColor(x, y).alpha() > 0
                     for x in range(image.width()) for y in range(image.height()))
        ok = not image.isNull() and opaque > 0
        failed += not ok
        print(f"{'ok' if ok else 'FAILED'} {name} {image.width()}x{image.height()} "
              f"{opaque} opaque pixels from {tray.icon_path(name)}")
    return 1 if failed else 0


if __name__ == "__main__":
    if os.environ.get("EXOTRAY_BUNDLE_SELFTEST") == "1":
        sys.exit(_selftest())
    from exotray.cli.main import main

    sys.exit(main(_argv()))
