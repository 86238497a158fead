"""Rendering the template with cookiecutter: derived names, overrides, and names the hook rejects."""

from __future__ import annotations

import ast
import importlib.util
import tomllib
from pathlib import Path

import pytest
from conftest import TEMPLATE


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_project(project: Path, class_name: str, distribution: str, module: str) -> dict:
    """The rendered project is complete and consistent; returns its parsed pyproject.toml."""
    assert project.name == distribution
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["name"] == distribution
    assert pyproject["project"]["entry-points"]["olive.passes"] == {class_name: f"{module}.onnx_pass:{class_name}"}
    assert pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [f"src/{module}"]
    pass_module = project / "src" / module / "onnx_pass.py"
    classes = [
        node.name for node in ast.parse(pass_module.read_text(encoding="utf-8")).body if isinstance(node, ast.ClassDef)
    ]
    assert classes == [class_name]
    for path in project.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            assert "{{" not in text and "{%" not in text and "cookiecutter" not in text, path
            if path.suffix == ".py":
                ast.parse(text, filename=str(path))
    return pyproject


@pytest.mark.parametrize(
    ("pass_name", "class_name", "distribution", "module"),
    [
        ("Strip Doc Strings", "StripDocStrings", "olive-pass-strip-doc-strings", "olive_pass_strip_doc_strings"),
        ("fuse MatMul 4bit", "FuseMatMul4bit", "olive-pass-fuse-matmul-4bit", "olive_pass_fuse_matmul_4bit"),
        # Non-ASCII letters are transliterated; the human name itself is kept in the description.
        ("Größe prüfen", "GrossePrufen", "olive-pass-grosse-prufen", "olive_pass_grosse_prufen"),
    ],
)
def test_names_are_derived_from_the_pass_name(render, pass_name, class_name, distribution, module):
    project = render(pass_name=pass_name)
    pyproject = _check_project(project, class_name, distribution, module)
    assert pyproject["project"]["description"].startswith(pass_name)
    assert pyproject["project"]["dynamic"] == ["classifiers"]
    assert "olive-core>=0.1" in pyproject["project"]["dependencies"]


def test_every_name_can_be_overridden(render):
    project = render(
        pass_name="Strip Doc Strings",
        class_name="DocStripper",
        distribution_name="acme-olive-strip",
        module_name="acme_strip",
        description='Strips "doc" strings \\ fast',
        author="Zoë O'Brien",
        license="Apache-2.0",
        olive_core_min_version="0.2",
    )
    pyproject = _check_project(project, "DocStripper", "acme-olive-strip", "acme_strip")
    assert pyproject["project"]["description"] == 'Strips "doc" strings \\ fast'
    assert pyproject["project"]["authors"] == [{"name": "Zoë O'Brien"}]
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert "olive-core>=0.2" in pyproject["project"]["dependencies"]


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"pass_name": "🙂 ✨"}, "pass_name '🙂 ✨' has no letters or digits that can be written in ASCII"),
        ({"pass_name": "3D Fuse"}, "class_name '3DFuse' is not allowed: use ASCII letters"),
        ({"class_name": "class"}, "class_name 'class' is not allowed"),
        ({"class_name": "Größe"}, "class_name 'Größe' is not allowed: use ASCII letters"),
        ({"distribution_name": "../escape"}, "would be written outside the output folder"),
        ({"distribution_name": "/tmp/abs-olive-pass"}, "would be written outside the output folder"),
        ({"distribution_name": "olive-core"}, "is olive-core's own name"),
        ({"distribution_name": "Olive_Core", "module_name": "olive_pass_x"}, "is olive-core's own name"),
        ({"distribution_name": "Olive-Pass-X"}, "use lowercase ASCII letters, digits and single hyphens"),
        ({"module_name": "olive"}, "module_name 'olive' is olive-core's own package"),
        ({"module_name": "json"}, "would shadow Python's standard library module"),
        ({"module_name": "my-pass"}, "module_name 'my-pass' is not allowed"),
        ({"description": "two\nlines"}, "description must be one line"),
        ({"olive_core_min_version": ">=0.1"}, "olive_core_min_version '>=0.1' is not allowed"),
    ],
)
def test_bad_names_are_rejected_before_anything_is_written(render, tmp_path, capfd, answers, message):
    from cookiecutter.exceptions import FailedHookException

    with pytest.raises(FailedHookException):
        render(**{"pass_name": "Strip Doc Strings", **answers})
    assert message in capfd.readouterr().err
    assert list((tmp_path / "out").iterdir()) == []
    assert not (tmp_path / "escape").exists()
    assert not Path("/tmp/abs-olive-pass").exists()


def test_unrendered_hook_accepts_good_names_and_lists_every_problem():
    # olive new-pass imports the hook file as it is in the template.
    hook = _load(TEMPLATE / "hooks" / "pre_gen_project.py", "pre_gen_project_under_test")
    good = {
        "pass_name": "Strip Doc Strings",
        "class_name": "StripDocStrings",
        "distribution_name": "olive-pass-strip-doc-strings",
        "module_name": "olive_pass_strip_doc_strings",
        "description": "d",
        "author": "a",
        "olive_core_min_version": "0.1",
    }
    assert hook.problems(good) == []
    bad = hook.problems({**good, "class_name": "1x", "module_name": "olive"})
    assert [p.split(" ")[0] for p in bad] == ["class_name", "module_name"]


def test_olive_classifier_is_added_once_registered(render):
    # hatchling and PyPI refuse unregistered classifiers; the build hook adds it only once registered.
    pytest.importorskip("hatchling", reason="hatchling comes with olive-core[test]")
    hook = _load(render() / "hatch_build.py", "hatch_build_under_test")
    assert "Framework :: Olive" in hook.classifiers({"Framework :: Olive"})
    assert "Framework :: Olive" not in hook.classifiers(set())
    assert "Programming Language :: Python :: 3" in hook.classifiers(set())
