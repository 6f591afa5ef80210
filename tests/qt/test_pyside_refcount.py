"""Guard against a PySide6 build that leaks references *away* from None.

PySide6 6.12.0 drops one reference to None on every call of a void method. Before
Python 3.12 None is not immortal, so a tray app that redraws for a while dies with
"Fatal Python error: none_dealloc". pyproject excludes that release; this test fails
loudly if a build with the bug is installed again.
"""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import QObject, QPointF
from PySide6.QtWidgets import QLabel


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="None is immortal from Python 3.12")
def test_void_calls_keep_nones_references(qtbot):
    p, label, obj = QPointF(), QLabel(), QObject()
    calls = [lambda: p.setX(1.0), lambda: label.setText("x"), lambda: obj.setObjectName("o")]
    for call in calls:
        call()
        before = sys.getrefcount(None)
        for _ in range(1000):
            call()
        assert sys.getrefcount(None) - before > -100, "this PySide6 leaks None references"
