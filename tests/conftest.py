import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).parent))

import system_tools  # (from the folder just put on the path)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs(*programs): runs these programs; skipped, naming their Debian "
                   "packages, where one is not on PATH (tests/system_tools.py)")


#: suites that share machine-wide resources (network namespaces and the routes of their
#: monitor veths, X displays, D-Bus daemons, the tray) run one test at a time, in one
#: worker, when the suite runs in parallel (`pytest -n 2`, as `scripts/dev test` does);
#: everything else spreads over the workers beside them
SERIAL_SUITES = ("lab", "desktop")


def _suite(nodeid: str) -> str:
    """"lab" for "tests/lab/test_x.py::test_y" (nodeids are relative to the rootdir)."""
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else ""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        programs = [p for mark in item.iter_markers("needs") for p in mark.args]
        if programs and (reason := system_tools.missing(*programs)):
            item.add_marker(pytest.mark.skip(reason=reason))
    # the serial suites first, so the longest work unit starts at once and the other
    # worker spends it on the rest (the order is the same in every worker, as xdist needs)
    items.sort(key=lambda it: (_suite(it.nodeid) not in SERIAL_SUITES,
                               _suite(it.nodeid) != "lab"))


def pytest_xdist_make_scheduler(config, log):
    """Each serial suite is one work unit; every other test is a unit of its own.
    (xdist's `--dist loadgroup` does this with marks, but its marks are not honoured with
    pytest 9: the nodeid it rewrites is no longer the one the scheduler reads.)"""
    from xdist.scheduler import LoadScopeScheduling

    class SuiteScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            suite = _suite(nodeid)
            return f"serial-{suite}" if suite in SERIAL_SUITES else nodeid

    return SuiteScheduling(config, log)
