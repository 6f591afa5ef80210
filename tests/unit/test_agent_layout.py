"""The agent's shape (docs/design.md): parts with one job each, no import circles,
imports in one direction (ui -> client -> core, agent -> core, core -> nothing), and no
file in exotray/agent over ~400 lines."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "exotray"
MAX_LINES = 400


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> dict[str, set[str]]:
    """Every module's exotray imports, TYPE_CHECKING and function-local ones included:
    a circle that only type checkers or late imports see is still a circle."""
    graph: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        name = _module(path)
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("exotray")}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.startswith("exotray"):
                for a in node.names:  # `from exotray.agent import api` names a module
                    sub = f"{node.module}.{a.name}"
                    deps.add(sub if (ROOT.parent / sub.replace(".", "/")).with_suffix(
                        ".py").exists() else node.module)
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
                continue  # a package __init__ or a name, not a module file
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


def test_no_import_circle():
    assert _cycle(_imports()) is None, " -> ".join(_cycle(_imports()) or [])


def test_imports_go_one_way():
    for mod, deps in _imports().items():
        if mod.startswith("exotray.core."):
            assert all(d.startswith("exotray.core") or d == "exotray" for d in deps), (mod, deps)
        if mod.startswith("exotray.agent."):
            assert not any(d.startswith("exotray.ui") for d in deps), (mod, deps)


def test_the_api_does_not_know_the_agent():
    deps = _imports()["exotray.agent.http.api"] | _imports()["exotray.agent.http.metrics"]
    assert "exotray.agent.runtime" not in deps


@pytest.mark.parametrize("path", sorted((ROOT / "agent").glob("*.py")), ids=lambda p: p.name)
def test_agent_modules_import_on_their_own_and_stay_small(path: Path):
    importlib.import_module(_module(path))
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines: split it by job"
