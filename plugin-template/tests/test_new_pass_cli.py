"""``olive new-pass``: scripted and interactive use, one-line errors, and where the template comes from."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, TEMPLATE, olive_cli

from olive.cli.new_pass import find_template, new_pass_command


def _entry_points(project: Path) -> dict:
    return tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]


def test_no_input_derives_every_name(tmp_path):
    result = CliRunner().invoke(
        new_pass_command, ["--no-input", "--name", "Strip Doc Strings", "--output-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    project = tmp_path / "olive-pass-strip-doc-strings"
    assert _entry_points(project)["olive.passes"] == {
        "StripDocStrings": "olive_pass_strip_doc_strings.onnx_pass:StripDocStrings"
    }
    assert f"Created {project}" in result.output


def test_options_override_and_text_comes_out_as_typed(tmp_path):
    result = CliRunner().invoke(
        new_pass_command,
        [
            "--no-input",
            "--name",
            "Strip",
            "--class-name",
            "DocStripper",
            "--distribution-name",
            "acme-strip",
            "--module-name",
            "acme_strip",
            "--description",
            "Uses {{ braces }} and {% percent %}",
            "--license",
            "BSD-3-Clause",
            "-o",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    project = tmp_path / "acme-strip"
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert pyproject["description"] == "Uses {{ braces }} and {% percent %}"
    assert pyproject["license"] == "BSD-3-Clause"
    assert pyproject["entry-points"]["olive.passes"] == {"DocStripper": "acme_strip.onnx_pass:DocStripper"}


def test_interactive_offers_derived_defaults(tmp_path):
    # Answers: pass name, class name (override), then Enter for every derived default.
    answers = "Größe Prüfen\nSizeCheck\n\n\n\n\n\n\n"
    result = CliRunner().invoke(new_pass_command, ["--output-dir", str(tmp_path)], input=answers)
    assert result.exit_code == 0, result.output
    assert "[olive-pass-grosse-prufen]" in result.output
    project = tmp_path / "olive-pass-grosse-prufen"
    assert _entry_points(project)["olive.passes"] == {"SizeCheck": "olive_pass_grosse_prufen.onnx_pass:SizeCheck"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--name", "x", "--distribution-name", "../escape"],
            "--distribution-name '../escape' would be written outside",
        ),
        (["--name", "Olive Core", "--module-name", "olive_core"], "--module-name 'olive_core' is olive-core's own"),
        (["--name", "3D"], "--class-name '3D' is not allowed"),
        (["--name", "Strip", "--license", "GPL"], "--license 'GPL' is not one of MIT, Apache-2.0, BSD-3-Clause"),
        (["--description", "no name"], "--no-input needs --name"),
    ],
)
def test_bad_input_is_one_error_line_exit_2_and_writes_nothing(tmp_path, args, message):
    output = tmp_path / "out"
    output.mkdir()
    result = subprocess.run(
        olive_cli("new-pass", "--no-input", "--output-dir", str(output), *args), capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert message in lines[0]
    assert list(output.iterdir()) == []
    assert not (tmp_path / "escape").exists()


def test_existing_folder_is_left_alone(tmp_path):
    existing = tmp_path / "olive-pass-strip"
    existing.mkdir()
    (existing / "mine.txt").write_text("keep me")
    result = subprocess.run(
        olive_cli("new-pass", "--no-input", "--name", "Strip", "-o", str(tmp_path)), capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "already exists" in result.stderr and str(existing) in result.stderr
    assert [p.name for p in existing.iterdir()] == ["mine.txt"]


def test_missing_cookiecutter_names_the_extra(tmp_path):
    # A None entry in sys.modules makes "import cookiecutter" fail exactly as if it were not installed.
    code = "import sys; sys.modules['cookiecutter'] = None; from olive.cli.main import main; main()"
    result = subprocess.run(
        [sys.executable, "-c", code, "new-pass", "--no-input", "--name", "Strip", "-o", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    # The extra, with a line that installs it from where this olive-core came from.
    from olive.plugins.install_hints import install_line

    assert install_line("olive-core", "template") in result.stderr
    assert "[template]" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_editable_install_uses_the_repository_template():
    assert find_template() == TEMPLATE


def test_wheel_ships_the_template(tmp_path):
    """A wheel of olive-core carries the template, and ``olive new-pass`` renders from that copy."""
    from olive.testing.venv import build_wheel

    wheel = build_wheel(REPO / "olive-core", tmp_path / "wheels")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "unpacked")
    assert "olive/_template/cookiecutter.json" in names, (
        "the olive-core wheel has no template: olive-core/pyproject.toml needs [tool.hatch.build.hooks.custom], "
        "which runs olive-core/hatch_build.py"
    )
    assert "olive/_template/hooks/pre_gen_project.py" in names
    assert "olive/_template/hooks/post_gen_project.py" in names
    assert any(n.startswith("olive/_template/{{cookiecutter.__folder}}/src/") for n in names)
    assert not any(n.startswith("olive/_template/tests/") for n in names)

    # The unpacked wheel comes first on the path, so its olive (and its template) is the one used.
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "unpacked")}
    where = subprocess.run(
        [sys.executable, "-c", "from olive.cli.new_pass import find_template; print(find_template())"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert Path(where.stdout.strip()) == tmp_path / "unpacked" / "olive" / "_template"
    result = subprocess.run(
        olive_cli("new-pass", "--no-input", "--name", "From Wheel", "-o", str(tmp_path / "out")),
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "olive-pass-from-wheel" / "src" / "olive_pass_from_wheel" / "onnx_pass.py").is_file()


def test_hook_failure_of_another_template_is_one_error_line(tmp_path):
    """A template whose hook only runs as a script still fails as one line, via cookiecutter's hook error."""
    import shutil

    template = tmp_path / "template"
    shutil.copytree(TEMPLATE, template, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    (template / "hooks" / "pre_gen_project.py").write_text(
        'import sys\nif __name__ == "__main__":\n    print("nope", file=sys.stderr)\n    sys.exit(3)\n'
    )
    output = tmp_path / "out"
    result = subprocess.run(
        olive_cli("new-pass", "--no-input", "--name", "Strip", "--template", str(template), "-o", str(output)),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "pre_gen_project hook rejected" in errors[0], result.stderr
    assert not output.exists() or list(output.iterdir()) == []
