"""olive-core's own modules import each other at module level, without a cycle (a cycle means a concept is in
the wrong module; a lazy import of an olive module only hides one)."""

from __future__ import annotations

import ast
from pathlib import Path

import olive

ROOT = Path(olive.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(tree: ast.Module, known: set[str]) -> set[str]:
    """Olive modules imported when the module is imported: statements outside functions and TYPE_CHECKING."""
    found: set[str] = set()

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                names = []
            found.update(filter(None, (owner(n) for n in names if n.split(".")[0] == "olive")))
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and not isinstance(node, ast.Import | ast.ImportFrom):
                    visit(inner)

    visit(tree.body)
    return found


def _lazy_imports(tree: ast.Module) -> list[str]:
    """Olive modules imported inside functions (where a cycle would hide)."""
    found = []
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("olive."):
                    found.append(node.module)
                elif isinstance(node, ast.Import):
                    found.extend(a.name for a in node.names if a.name.startswith("olive."))
    return found


def _graph() -> dict[str, set[str]]:
    files = {_module_name(path): path for path in ROOT.rglob("*.py")}
    known = set(files)
    graph = {}
    for name, path in files.items():
        graph[name] = _top_level_imports(ast.parse(path.read_text(encoding="utf-8")), known) - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_no_import_cycles_in_olive_core():
    assert _cycles(_graph()) == []


def test_the_check_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = _graph()
    assert "olive.data.config" in graph["olive.data.calibration"]


# Config validation, the Pass contract and data: nothing heavy to defer, so every olive import sits at the top.
TOP_ONLY = ("olive/config_errors.py", "olive/paths.py", "olive/exceptions.py", "olive/data", "olive/passes")
TOP_ONLY_FILES = ("olive/workflows/config.py", "olive/evaluator/metric.py")


def test_config_and_data_modules_import_olive_modules_at_the_top():
    lazy = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).as_posix()
        if relative.startswith(TOP_ONLY) or relative in TOP_ONLY_FILES:
            found = _lazy_imports(ast.parse(path.read_text(encoding="utf-8")))
            if found:
                lazy[relative] = found
    assert lazy == {}
    assert _lazy_imports(ast.parse("def f():\n    from olive.data.config import DataConfig\n")) == ["olive.data.config"]
