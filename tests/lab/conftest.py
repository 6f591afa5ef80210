"""Fixtures for multi-host tests in network namespaces (root only; see netlab.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import netlab
from netlab import Agents

_REASON = netlab.why_not_available()


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(item.fspath).is_relative_to(here):
            item.add_marker(pytest.mark.lab)
            if _REASON:
                item.add_marker(pytest.mark.skip(reason=_REASON))


@pytest.fixture(scope="session", autouse=True)
def _stale_lab() -> None:
    if _REASON is None:
        netlab.cleanup_stale()


@pytest.fixture
def lab3(tmp_path) -> Iterator[tuple[netlab.Lab, Agents]]:
    with netlab.lab_with_agents(tmp_path, 3) as both:
        yield both


@pytest.fixture
def lab2(tmp_path) -> Iterator[tuple[netlab.Lab, Agents]]:
    with netlab.lab_with_agents(tmp_path, 2) as both:
        yield both
