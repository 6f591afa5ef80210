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
    with netlab.Lab(3) as lab:
        agents = Agents(lab, tmp_path)
        try:
            yield lab, agents
        finally:
            agents.close()


@pytest.fixture
def lab2(tmp_path) -> Iterator[tuple[netlab.Lab, Agents]]:
    with netlab.Lab(2) as lab:
        agents = Agents(lab, tmp_path)
        try:
            yield lab, agents
        finally:
            agents.close()
