"""Imports show the map: olive's modules import each other at module top, and no two depend on each other.

Read from the source with ``ast`` (nothing is imported): an import inside a function is lazy, one under
``if TYPE_CHECKING:`` is for annotations only and does not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# olive's modules that import onnx or numpy at their top: importing them lazily keeps those lazy too.
HEAVY = {"olive.testing.models"}
PENDING: set[str] = set()
PENDING_CYCLES: list[set[str]] = []


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()

# Modules on a startup path keep olive's heavier modules lazy, so that `olive --help`, each command's `--help`,
# the pass listing (the registry reads metadata only) and every pytest session (olive.testing.plugin is a
# pytest11 plugin) stay fast.
STARTUP_PATH = {m for m in MODULES if m.startswith("olive.cli.")} | {"olive.plugins.registry", "olive.testing.plugin"}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> list[tuple[str, int, bool]]:
    """``(imported olive module, line, lazy)`` for every import of ``module`` that runs at some point."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.FunctionDef) and child.name == "__getattr__" and path.name == "__init__.py":
                continue  # a package's lazy facade: its names load their modules on first access
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - child.level + 1], base]).strip(".")
                names = [f"{base}.{alias.name}" for alias in child.names]
            for name in names:
                target = _resolve(name) if name.split(".")[0] == "olive" else None
                if target is not None and target != module:
                    found.append((target, child.lineno, lazy))
            visit(child, lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for module in MODULES:
        for target, _, _ in _imports(module):
            # Importing a.b.c runs a and a.b first; a module's own packages are already running.
            parts = target.split(".")
            for depth in range(1, len(parts) + 1):
                package = ".".join(parts[:depth])
                if package in MODULES and not module.startswith(package + ".") and package != module:
                    graph[module].add(package)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in graph:
        if node not in index:
            connect(node)
    return found


def test_no_import_cycles() -> None:
    cycles = [cycle for cycle in _cycles(_graph()) if cycle not in PENDING_CYCLES]
    assert cycles == []


def test_olive_modules_import_each_other_at_module_top() -> None:
    lazy = [
        f"{module}:{line} imports {target}"
        for module in sorted(MODULES)
        if module not in STARTUP_PATH | PENDING
        for target, line, is_lazy in _imports(module)
        if is_lazy and target not in HEAVY
    ]
    assert lazy == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import olive.engine.keys\n", [("olive.engine.keys", 1, False)]),
        ("def f():\n    from olive.engine import keys\n", [("olive.engine.keys", 2, True)]),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from olive.engine import keys\n", []),
    ],
)
def test_the_checks_see_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, expected: list) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    monkeypatch.setitem(MODULES, "olive.probe", probe)
    assert _imports("olive.probe") == expected


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
