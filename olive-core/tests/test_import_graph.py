"""Imports show the map: olive's modules import each other at module top, and no two depend on each other.

Read from the source with ``ast`` (nothing is imported): an import inside a function is lazy, one under
``if TYPE_CHECKING:`` is for annotations only. Annotation imports do not count for where a module imports; for
cycles every import counts, in every distribution of the repository (olive.testing.imports.import_graph).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from olive.testing.imports import (
    PASS_DISTRIBUTIONS,
    check_distribution,
    import_cycles,
    import_graph,
    module_imports,
    source_modules,
)

SRC = Path(__file__).resolve().parents[1] / "src"
REPOSITORY = Path(__file__).resolve().parents[2]
#: Every distribution of the repository: a folder with a pyproject.toml and a src/ tree.
DISTRIBUTIONS = sorted(p.parent.name for p in REPOSITORY.glob("*/pyproject.toml") if (p.parent / "src").is_dir())
#: A distribution with an import cycle today, and the cycle: its check is an expected failure (strict, so that it
#: reports when the cycle is gone and the entry must go).
KNOWN_CYCLES: dict[str, set[str]] = {}

# olive's modules that import onnx or numpy at their top: importing them lazily keeps those lazy too.
HEAVY = {"olive.testing.models"}
PENDING: set[str] = set()


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


def _cycle_marks(name: str) -> list[pytest.MarkDecorator]:
    cycle = KNOWN_CYCLES.get(name)
    if cycle is None:
        return []
    return [pytest.mark.xfail(strict=True, reason=f"import cycle: {' -> '.join(sorted(cycle))}")]


@pytest.mark.parametrize("name", [pytest.param(name, marks=_cycle_marks(name)) for name in DISTRIBUTIONS])
def test_no_import_cycles(name: str) -> None:
    assert import_cycles(import_graph(source_modules(REPOSITORY / name / "src"))) == []


def test_no_import_cycles_across_distributions() -> None:
    # Distributions that depend on each other (genai on quant) must not also be imported back.
    modules = {m: p for name in DISTRIBUTIONS for m, p in source_modules(REPOSITORY / name / "src").items()}
    assert import_cycles(import_graph(modules)) == []


def test_every_distribution_is_checked() -> None:
    assert {"olive-core", *PASS_DISTRIBUTIONS} <= set(DISTRIBUTIONS)
    assert set(KNOWN_CYCLES) <= set(DISTRIBUTIONS)


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
    assert import_cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]


@pytest.mark.parametrize(
    "back",
    [
        "from probe.a import A\n",
        "def f():\n    from probe import a\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from probe.a import A\n",
        # importing probe.pkg.c runs probe.pkg first, whose __init__ imports probe.a
        "import probe.pkg.c\n",
    ],
    ids=["module-top", "in-a-function", "for-annotations", "through-a-package"],
)
def test_the_graph_counts_every_import(tmp_path: Path, back: str) -> None:
    _write(tmp_path, {"a.py": "from probe.b import B\n", "b.py": back, "pkg/__init__.py": "from probe import a\n"})
    cycles = import_cycles(import_graph(source_modules(tmp_path)))
    assert len(cycles) == 1 and {"probe.a", "probe.b"} <= cycles[0]


def test_a_package_facade_is_no_arrow(tmp_path: Path) -> None:
    # A package __init__'s __getattr__ loads its names' modules on first access: importing it imports none.
    facade = "def __getattr__(name):\n    from probe import a\n    return a\n"
    _write(tmp_path, {"a.py": "from probe.b import B\n", "b.py": "import probe.pkg.c\n", "pkg/__init__.py": facade})
    assert import_cycles(import_graph(source_modules(tmp_path))) == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in {"__init__.py": "", "pkg/c.py": "", **files}.items():
        (root / "probe" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "probe" / name).write_text(text)


def test_the_old_search_parameter_path_is_the_same_module() -> None:
    # DESIGN's Public API: olive.strategy.search_parameter stays an alias of olive.search.search_parameter.
    import olive.search.search_parameter
    import olive.strategy.search_parameter
    from olive.strategy.search_parameter import Categorical, SpecialParamValue

    assert olive.strategy.search_parameter is olive.search.search_parameter
    assert Categorical is olive.search.search_parameter.Categorical
    assert SpecialParamValue.INVALID == "OLIVE_INVALID_PARAM_VALUE"


#: olive.testing's kit of tiny decoder folders builds them with torch and transformers: inside its functions only
#: (importing it needs neither; calling it without them says to install olive-passes-genai)
TORCH_TEST_KITS = {"olive.testing.decoders", "olive.testing.adapters", "olive.testing.outliers"}


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
