"""Imports show the map: olive's modules import each other at module top, and no two depend on each other.

Read from the source with ``ast`` (nothing is imported): an import inside a function is lazy, one under
``if TYPE_CHECKING:`` is for annotations only and does not count.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from olive.testing.imports import PASS_DISTRIBUTIONS, check_distribution, import_cycles, module_imports, source_modules

SRC = Path(__file__).resolve().parents[1] / "src"

# olive's modules that import onnx or numpy at their top: importing them lazily keeps those lazy too.
HEAVY = {"olive.testing.models"}
PENDING: set[str] = set()
PENDING_CYCLES: list[set[str]] = []


MODULES = source_modules(SRC)

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
    found = []
    for imported in module_imports(module, MODULES[module]):
        target = _resolve(imported.name) if imported.name.split(".")[0] == "olive" else None
        if target is not None and target != module:
            found.append((target, imported.line, imported.lazy))
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


_cycles = import_cycles


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


#: olive.testing's kit of tiny decoder folders builds them with torch and transformers: inside its functions only
#: (importing it needs neither; calling it without them says to install olive-passes-genai)
TORCH_TEST_KITS = {"olive.testing.decoders", "olive.testing.adapters"}


def test_olive_core_never_imports_torch_or_a_pass_distribution() -> None:
    # olive-core finds pass distributions through entry points only, as a third party's, and needs no torch.
    banned = {"torch", "transformers", *PASS_DISTRIBUTIONS.values()}
    found = [
        f"{module}:{imported.line} imports {imported.name}"
        for module, path in MODULES.items()
        for imported in module_imports(module, path)
        if imported.name.split(".")[0] in banned
        and not (module in TORCH_TEST_KITS and imported.name.split(".")[0] in ("torch", "transformers"))
    ]
    assert found == []


def _project(root: Path, files: dict[str, str], dependencies: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "probe"\ndependencies = {dependencies!r}\n')
    for name, text in files.items():
        path = root / "src" / "probe" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_distribution_check_finds_each_kind_of_problem(tmp_path: Path) -> None:
    files = {
        "__init__.py": "",
        "a.py": "import torch\nfrom probe import b\n",
        "b.py": "from probe import a\n",
        "c.py": "def f():\n    from probe import b\n    import olive_passes_graph\n",
        "d.py": "def f():\n    from probe import heavy\n",
        "heavy.py": "import numpy\n",
    }
    project = _project(tmp_path, files, ["olive-core>=0.1", "olive-passes-quant"])
    assert check_distribution(project, forbidden={"torch"}) == [
        "probe.a:1 imports torch (forbidden here)",
        "probe.c:2 imports probe.b inside a function; import the distribution's own modules at the top",
        "probe.c:3 imports olive_passes_graph (an undeclared pass distribution)",
        "import cycle: probe.a -> probe.b",
    ]
    # A declared pass distribution may be imported; a pending module keeps its lazy imports until it is fixed.
    ok = _project(tmp_path / "ok", {"__init__.py": "", "c.py": files["c.py"]}, ["olive-passes-graph"])
    assert check_distribution(ok, pending={"probe.c"}) == []
    assert check_distribution(ok, pending={"probe.gone"}) == ["pending names no module of the distribution: probe.gone"]
