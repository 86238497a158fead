"""A distribution's import map, read from its source with ``ast`` (nothing is imported), for tests that keep
it as designed: which modules import which, lazily or at module top, and the cycles among them.

An import inside a function is lazy (it runs when the function is called); one under ``if TYPE_CHECKING:``
is for annotations only. Where modules must import at module top, annotation imports do not count; for cycles
every import counts, lazy and annotation ones too, since each is an arrow between two modules that a reader
follows and a cycle hidden behind one still makes the two modules one. A package ``__init__``'s
``__getattr__`` facade never counts (its names load their modules on first access)::

    from olive.testing.imports import check_distribution

    def test_imports_show_the_map():
        assert check_distribution(Path(__file__).parents[1], forbidden={"torch"}) == []
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable
from pathlib import Path

import attrs

__all__ = ["Import", "check_distribution", "import_cycles", "import_graph", "module_imports", "source_modules"]

# The pass distributions of this repository, by import name: one may import another only when it declares it.
PASS_DISTRIBUTIONS = {
    "olive-passes-quant": "olive_passes_quant",
    "olive-passes-graph": "olive_passes_graph",
    "olive-passes-torch": "olive_passes_torch",
    "olive-passes-genai": "olive_passes_genai",
}


# Libraries that make importing a module slow: a module importing one at its top may itself be imported lazily.
HEAVY_LIBRARIES = frozenset(
    {"numpy", "onnx", "onnxruntime", "onnxscript", "onnx_ir", "optuna", "sympy", "torch", "transformers"}
)


@attrs.frozen
class Import:
    """One import statement's name: ``name`` is absolute (``pkg.module.attribute`` for ``from`` imports);
    ``annotation``: it sits under ``if TYPE_CHECKING:`` and never runs."""

    name: str
    line: int
    lazy: bool
    annotation: bool = False


def source_modules(src: Path) -> dict[str, Path]:
    """``{dotted module name: file}`` of every ``.py`` file under a ``src`` folder."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def module_imports(module: str, path: Path, annotations: bool = False) -> list[Import]:
    """Every import of ``module`` (its source at ``path``) that runs at some point, in source order; with
    ``annotations``, those under ``if TYPE_CHECKING:`` too."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool, annotation: bool = False) -> None:
        for child in ast.iter_child_nodes(node):
            inner = annotation
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                if not annotations:
                    continue
                inner = True
            if isinstance(child, ast.FunctionDef) and child.name == "__getattr__" and path.name == "__init__.py":
                continue
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")
                    base = ".".join([*parts[: len(parts) - child.level + 1], base]).strip(".")
                names = [f"{base}.{alias.name}" for alias in child.names]
            found.extend(Import(name, child.lineno, lazy, annotation) for name in names)
            visit(child, lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef), inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Which of ``modules`` each of them imports, counting every import: at module top, inside a function, or
    for annotations only.

    Importing ``a.b.c`` runs packages ``a`` and ``a.b`` first, so those count as imported too, except the
    importer's own packages (already running when it is imported). ``modules`` may span several
    distributions (:func:`source_modules` of each, merged) to find cycles across them.
    """
    graph: dict[str, set[str]] = {module: set() for module in modules}
    roots = {name.split(".")[0] for name in modules}
    for module, path in modules.items():
        for found in module_imports(module, path, annotations=True):
            target = _resolve(found.name, modules) if found.name.split(".")[0] in roots else None
            if target is None or target == module:
                continue
            parts = target.split(".")
            for depth in range(1, len(parts) + 1):
                package = ".".join(parts[:depth])
                if package in modules and package != module and not module.startswith(package + "."):
                    graph[module].add(package)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
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


def _declared(project: Path) -> set[str]:
    """The distributions ``pyproject.toml`` depends on, by normalized name (extras' too)."""
    data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(data.get("dependencies", []))
    for extra in data.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    names = set()
    for requirement in requirements:
        name = requirement.split(";")[0]
        for mark in "<>=!~[ (":
            name = name.split(mark)[0]
        names.add(name.strip().lower().replace("_", "-"))
    return names


def check_distribution(project: Path, forbidden: Iterable[str] = (), pending: Iterable[str] = ()) -> list[str]:
    """What breaks a pass distribution's import map, one line each (an empty list when nothing does).

    - no import of a top-level package in ``forbidden`` (``torch`` for a distribution that must not need it),
      lazy or not;
    - no import of another pass distribution of this repository that ``pyproject.toml`` does not declare;
    - its own modules imported at module top, except those that import a heavy library (:data:`HEAVY_LIBRARIES`)
      at theirs, and no cycle among them (:func:`import_graph`: lazy and annotation imports count).

    :param project: the distribution's folder (``pyproject.toml`` and ``src/``).
    :param forbidden: top-level packages the distribution must never import.
    :param pending: modules whose lazy imports of the distribution's own modules are not reported yet (known
        debt, listed so that no new module joins them).
    """
    modules = source_modules(project / "src")
    roots = {name.split(".")[0] for name in modules}
    declared = _declared(project)
    undeclared = {module for dist, module in PASS_DISTRIBUTIONS.items() if dist not in declared} - roots
    banned = set(forbidden) | undeclared
    pending = set(pending)
    stale = sorted(pending - set(modules))
    if stale:
        return [f"pending names no module of the distribution: {', '.join(stale)}"]
    problems: list[str] = []
    imports = {module: module_imports(module, path) for module, path in modules.items()}
    heavy = {
        m for m, found in imports.items() if any(not i.lazy and i.name.split(".")[0] in HEAVY_LIBRARIES for i in found)
    }
    for module, found_imports in imports.items():
        for found in found_imports:
            root = found.name.split(".")[0]
            where = f"{module}:{found.line}"
            if root in banned:
                why = "an undeclared pass distribution" if root in undeclared else "forbidden here"
                problems.append(f"{where} imports {found.name} ({why})")
            if root not in roots:
                continue
            target = _resolve(found.name, modules)
            if target is None or target == module:
                continue
            if found.lazy and target not in heavy and module not in pending:
                problems.append(
                    f"{where} imports {target} inside a function; import the distribution's own modules at the top"
                )
    problems.extend(f"import cycle: {' -> '.join(sorted(cycle))}" for cycle in import_cycles(import_graph(modules)))
    return problems


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None
