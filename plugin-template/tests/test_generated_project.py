"""Render, ``pip install`` into a fresh environment, and run: the generated project's own tests pass,
``olive passes`` lists the pass right after install, and ``olive run`` uses it from a workflow file.

Two renders cover the code paths: the default name through cookiecutter, and a name with non-ASCII
letters and digits through ``olive new-pass``. A core change that breaks generated projects fails here.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import olive_cli


def _install(project: Path, tmp_path: Path):
    """A fresh environment (seeing this one's olive-core) with ``project`` built and pip-installed."""
    from olive.testing.venv import build_wheel, make_venv

    wheel = build_wheel(project, tmp_path / "wheels")
    venv = make_venv(tmp_path / "venv", system_site_packages=True)
    venv.pip_install(str(wheel))
    return venv


def _documented_model(directory: Path) -> Path:
    from olive.testing.models import mlp_model, save_model

    proto = mlp_model(seed=1)
    proto.graph.doc_string = "graph doc"
    for node in proto.graph.node:
        node.doc_string = "node doc"
    return Path(save_model(proto, directory).model_path)


@pytest.fixture(
    params=[
        ("cookiecutter", "Strip Doc Strings", "StripDocStrings", "olive-pass-strip-doc-strings"),
        ("olive new-pass", "Größe Prüfen 4bit", "GrossePrufen4bit", "olive-pass-grosse-prufen-4bit"),
    ],
    ids=["cookiecutter-default", "new-pass-unicode-digits"],
)
def installed(request, render, tmp_path):
    how, pass_name, class_name, distribution = request.param
    if how == "cookiecutter":
        project = render(pass_name=pass_name)
    else:
        subprocess.run(
            olive_cli("new-pass", "--no-input", "--name", pass_name, "-o", str(tmp_path / "out")),
            check=True,
            capture_output=True,
        )
        project = tmp_path / "out" / distribution
    return project, class_name, distribution, _install(project, tmp_path)


def test_generated_project_installs_is_listed_and_runs(installed, tmp_path):
    project, class_name, distribution, venv = installed

    # Its own tests, against the installed distribution (not the source folder).
    tests = venv.run(
        [venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", project, project / "tests"],
        check=False,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout and "skipped" not in tests.stdout, tests.stdout

    # Listed with its distribution and version, from metadata alone.
    listing = json.loads(venv.run([venv.python, *olive_cli("passes", "--json")[1:]]).stdout)
    entries = [entry for entry in listing if entry["name"] == class_name]
    assert [(e["distribution"], e["version"]) for e in entries] == [(distribution, "0.1.0")]

    # The built metadata: classifiers from hatch_build.py, the entry point from pyproject.toml.
    code = (
        "import json, importlib.metadata as m; d = m.distribution(DIST); "
        "print(json.dumps([d.metadata.get_all('Classifier'), [e.name for e in d.entry_points]]))"
    ).replace("DIST", repr(distribution))
    metadata = json.loads(venv.python_run(code).stdout)
    assert "Programming Language :: Python :: 3" in metadata[0]
    assert metadata[1] == [class_name]

    # Used from a workflow file by `olive run`.
    model_path = _documented_model(tmp_path / "model")
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(model_path)},
        "passes": {"strip": {"type": class_name, "keep_graph_doc_string": True}},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "run-out"),
    }
    config = tmp_path / "workflow.json"
    config.write_text(json.dumps(workflow), encoding="utf-8")
    run = venv.run([venv.python, *olive_cli("run", "--config", str(config))[1:]], check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    import onnx

    best = onnx.load(str(tmp_path / "run-out" / "model.onnx"))
    assert best.graph.doc_string == "graph doc"
    assert all(node.doc_string == "" for node in best.graph.node)
