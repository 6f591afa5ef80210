"""Qt tests run offscreen with real widgets (pytest-qt)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def cluster() -> dict:
    return json.loads((FIXTURES / "cluster.json").read_text())


@pytest.fixture
def history() -> dict:
    return json.loads((FIXTURES / "history.json").read_text())


@pytest.fixture
def events() -> list[dict]:
    return json.loads((FIXTURES / "events.json").read_text())["events"]


@pytest.fixture
def view(qtbot, cluster: dict):
    """The topology map, 1000 × 650, shown, with the recorded cluster drawn."""
    from exotray.ui.topology.view import TopologyView

    v = TopologyView()
    qtbot.addWidget(v)
    v.resize(1000, 650)
    v.show()
    qtbot.waitExposed(v)
    v.set_cluster(cluster)
    return v


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item):
    """Collect what a test left in reference cycles before pytest-qt processes the events
    of its teardown: widgets and clients a test dropped (a dialog, its client, a window)
    are then deleted here, between events, not by a collection that happens to run inside
    a later event's handler (a paint, a queued call), where deleting a C++ object that is
    in use crashes the process."""
    import gc

    gc.collect()
    return (yield)
