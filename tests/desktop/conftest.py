"""Desktop tests: a real Xvfb + private D-Bus session (+ trayer, dunst); see harness.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import Desktop

_REASON = Desktop.why_not_available(tray=True, notifications=True, monitor=True)


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(item.fspath).is_relative_to(here) and _REASON:
            item.add_marker(pytest.mark.skip(reason=_REASON))
