"""The code's shape (docs/design.md, "Packages and the direction of imports"): one package
per part, each importing only the packages below it, no import circle between packages or
between modules, no file over about 400 lines, and no module left at a package's top level
that belongs in one of its parts.

The direction is written once here, as `MAY_IMPORT`, and once in docs/design.md as a
table; a test holds the two equal, so neither can drift.
"""

from __future__ import annotations

import ast
import importlib
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "exotray"
DESIGN = ROOT / "docs" / "design.md"
#: "about 400 lines": a file past this is split by job
MAX_LINES = 430

#: every package under exotray/ and the packages it may import, besides `exotray.core`
#: and exotray's own top-level modules (`exotray/__init__`, `appnap`), which all may.
#: Lowest layer first; a package's own modules import each other freely.
MAY_IMPORT: dict[str, set[str]] = {
    "exotray.core": set(),
    "exotray.agent.base": set(),
    "exotray.agent.hw": {"base"},
    "exotray.agent.peers": {"hw", "base"},
    "exotray.agent.probe": {"peers", "hw", "base"},
    "exotray.agent.exo": {"peers", "hw", "base"},
    "exotray.agent.history": {"peers", "hw", "base"},
    "exotray.agent.share": {"probe", "exo", "history", "peers", "hw", "base"},
    "exotray.agent.http": {"share", "history", "probe", "exo", "peers", "hw", "base"},
    "exotray.agent": {"http", "share", "history", "exo", "probe", "peers", "hw", "base"},
    "exotray.ui.style": set(),
    "exotray.ui.client": {"style"},
    "exotray.ui.link": {"style"},
    "exotray.ui.topology": {"link", "style"},
    "exotray.ui.tray": {"style"},
    "exotray.ui.window": {"topology", "link", "tray", "client", "style"},
    "exotray.ui": {"window", "tray", "topology", "link", "client", "style"},
    "exotray.cli": {"exotray.agent", "exotray.ui"},
}

#: the modules a package keeps at its top level: the assembly of its parts, nothing a
#: part owns
TOP_LEVEL = {
    "exotray": {"__init__", "__main__", "appnap"},
    "exotray.agent": {"__init__", "runtime", "ticking", "main"},
    "exotray.ui": {"__init__", "app", "demo", "lean"},
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package(module: str) -> str:
    """The package a module is in (a package's __init__ is in that package). `python -m
    exotray` (`exotray.__main__`) is the entry point, above every package."""
    if module == "exotray.__main__":
        return module
    path = ROOT.joinpath(*module.split("."))
    return module if path.is_dir() else module.rsplit(".", 1)[0]


def _resolve(name: str) -> str:
    """`exotray.agent.hw.monitor.InterfaceMonitor` -> the module `exotray.agent.hw.monitor`."""
    parts = name.split(".")
    while parts:
        path = ROOT.joinpath(*parts)
        if path.is_dir() or path.with_suffix(".py").exists():
            return ".".join(parts)
        parts.pop()
    return name


def _imports() -> dict[str, set[str]]:
    """Every module's exotray imports, TYPE_CHECKING and function-local ones included:
    a circle that only type checkers or late imports see is still a circle."""
    graph: dict[str, set[str]] = {}
    for path in PKG.rglob("*.py"):
        name = _module(path)
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {_resolve(a.name) for a in node.names if a.name.startswith("exotray")}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.startswith("exotray"):
                # `from exotray.agent.hw import monitor` names a module
                deps |= {_resolve(f"{node.module}.{a.name}") for a in node.names}
        graph[name] = deps - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if d not in graph:
                continue
            if state.get(d) == 1:
                return [*stack[stack.index(d):], d]
            if d not in state and (found := visit(d)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def _packages() -> set[str]:
    return {_module(p.parent / "__init__.py") for p in PKG.rglob("__init__.py")} - {
        m for m in map(_module, (PKG / "resources").rglob("__init__.py"))}


def _allowed(pkg: str) -> set[str]:
    """Full names of what `pkg` may import: its row, with short names in its own tree."""
    parent = pkg if pkg in ("exotray.agent", "exotray.ui") else pkg.rsplit(".", 1)[0]
    return {d if d.startswith("exotray.") else f"{parent}.{d}" for d in MAY_IMPORT[pkg]}


def _may_import(pkg: str, dep_pkg: str) -> bool:
    if pkg == "exotray.__main__":
        return True
    if dep_pkg == pkg or dep_pkg in ("exotray", "exotray.core"):
        return True
    if pkg == "exotray.core":
        return False
    return any(dep_pkg == a or dep_pkg.startswith(a + ".") for a in _allowed(pkg))


# --- the tests ---------------------------------------------------------------------------


def test_every_package_has_a_row_and_a_docstring_that_says_what_it_may_import():
    assert _packages() - {"exotray"} == set(MAY_IMPORT)  # exotray: __init__, appnap
    for pkg in MAY_IMPORT:
        init = ROOT.joinpath(*pkg.split("."), "__init__.py")
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        if pkg not in ("exotray.core", "exotray.agent", "exotray.ui"):
            assert "May import" in doc, f"{init}: say what the package owns and may import"
        assert len(doc) > 80, f"{init}: say what the package owns"


def test_no_import_circle_between_modules():
    assert _cycle(_imports()) is None, " -> ".join(_cycle(_imports()) or [])


def test_no_import_circle_between_packages():
    packages: dict[str, set[str]] = {}
    for mod, deps in _imports().items():
        packages.setdefault(_package(mod), set()).update(
            _package(d) for d in deps if _package(d) != _package(mod))
    assert _cycle(packages) is None, " -> ".join(_cycle(packages) or [])


def test_imports_go_one_way():
    wrong = sorted(
        f"{mod} imports {dep}"
        for mod, deps in _imports().items() for dep in deps
        if not _may_import(_package(mod), _package(dep)))
    assert wrong == [], "\n".join(wrong)


def test_the_table_in_the_design_is_this_one():
    """docs/design.md's table: `package | owns | may import`, one row per package."""
    rows = re.findall(r"^\| `([\w.]+)`(?: \(top\))? \| [^|]+ \| ([^|]*) \|$",
                      DESIGN.read_text(encoding="utf-8"), re.M)
    table = {pkg: set() if "core only" in deps or deps.strip() in ("", "—")
             else set(deps.split()) for pkg, deps in rows}
    assert table == MAY_IMPORT


def test_the_api_does_not_know_the_agent():
    graph = _imports()
    deps = set().union(*(d for m, d in graph.items() if m.startswith("exotray.agent.http")))
    assert not {"exotray.agent.runtime", "exotray.agent.ticking"} & deps


def test_the_ui_reaches_the_agent_only_over_http():
    for mod, deps in _imports().items():
        if mod.startswith("exotray.ui"):
            assert not any(d.startswith("exotray.agent") for d in deps), (mod, deps)


def test_a_package_top_level_holds_only_its_assembly():
    for pkg, allowed in TOP_LEVEL.items():
        here = {p.stem for p in ROOT.joinpath(*pkg.split(".")).glob("*.py")}
        assert here - allowed == set(), f"{pkg}: move {sorted(here - allowed)} into a part"
    for pkg in MAY_IMPORT.keys() - TOP_LEVEL.keys():
        assert not [p for p in ROOT.joinpath(*pkg.split(".")).iterdir()
                    if p.is_dir() and (p / "__init__.py").exists()], f"{pkg}: one level only"


def test_every_package_ships():
    """pyproject lists packages one by one (resources/ ships as exotray.resources): a
    package missing there is missing from the wheel and the bundle."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    assert _packages() <= listed


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: _module(p))
def test_modules_import_on_their_own_and_stay_small(path: Path):
    # unit tests load no Qt (tests/qt import the UI); __main__ runs the app as a script
    if not _module(path).startswith("exotray.ui") and path.name != "__main__.py":
        importlib.import_module(_module(path))
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it by job"
