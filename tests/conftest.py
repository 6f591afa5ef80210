import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).parent))

import system_tools  # (from the folder just put on the path)

#: None where Qt loads; else why not (a machine without Qt's system libraries): there
#: pytest-qt stays out, and every test of the tray app skips, saying what to install
QT_PROBLEM = system_tools.qt_problem()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    if QT_PROBLEM is not None:  # (its configure would import Qt and stop the whole run)
        config.pluginmanager.set_blocked("pytest-qt")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs(*programs): runs these programs (\"Qt\": Qt's libraries); "
                   "skipped, naming their Debian packages, where one is missing "
                   "(tests/system_tools.py)")


def _needs_qt(item) -> bool:
    """The tray app's tests: tests/qt and tests/desktop, and any test with a Qt fixture."""
    return _suite(item.nodeid) in ("qt", "desktop") or \
        bool({"qtbot", "qapp"} & set(getattr(item, "fixturenames", ())))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A test file that imports Qt, where Qt does not load: skipped, saying why."""
    report = (yield).get_result()
    if QT_PROBLEM is not None and report.failed and isinstance(collector, pytest.Module) \
            and system_tools.is_qt_failing(str(report.longrepr)):
        report.outcome = "skipped"
        report.longrepr = (str(collector.path), 0, f"Skipped: {QT_PROBLEM}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that imports Qt as it runs, where Qt does not load: skipped, saying why."""
    report = (yield).get_result()
    if QT_PROBLEM is not None and report.failed and call.excinfo is not None \
            and call.excinfo.errisinstance(ImportError) \
            and system_tools.is_qt_failing(str(call.excinfo.value)):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1], f"Skipped: {QT_PROBLEM}")


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
        if QT_PROBLEM is not None and _needs_qt(item):
            programs.append("Qt")
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
