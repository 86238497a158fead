"""The tool never deletes or overwrites a file it did not create: cache folders, pass outputs, output folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from engine_support import base_workflow, count_matmuls, write_mlp

from olive.cache.store import CacheStore
from olive.cli.main import cli
from olive.engine.output_writer import claimed_files
from olive.exceptions import PassConfigError
from olive.passes.onnx.common import model_proto_to_file
from olive.paths import system_folder_reason

pytestmark = pytest.mark.usefixtures("engine_registry")


def _invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, env=env)


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


def _user_files(folder: Path) -> dict[str, str]:
    """A user's project inside what they then name as cache_dir, including names the cache also uses."""
    files = {
        "tmp/my-project/src/main.py": "print('mine')\n",
        "tmp/draft.txt": "draft",
        "runs/results.csv": "a,b\n1,2\n",
        "runs/ab/notes.md": "# not a cache entry",
        "evals/summary.json": "{}",
        "locks/keep.lock": "",
    }
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return files


def _assert_intact(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        assert (folder / rel).read_text() == text, rel


# ------------------------------------------------------------------------------------------------- cache_dir


def test_a_cache_dir_holding_user_files_keeps_them_through_runs_cleans_and_stale_temp_cleanup(tmp_path: Path) -> None:
    project = tmp_path / "project"
    files = _user_files(project)
    data = base_workflow(tmp_path, cache_dir=str(project))
    # A temp folder of a run that was killed (its pid is gone) is the cache's own, and is removed.
    stale = project / "tmp" / f"{2**22 + 12345}-{'0' * 16}-{'1' * 8}"
    (stale / "output").mkdir(parents=True)
    config = _write(tmp_path / "wf.json", data)
    assert _invoke("run", str(config)).exit_code == 0
    _assert_intact(project, files)
    assert not stale.exists()
    assert list((project / "runs").glob("*/" + "?" * 64)), "the run is cached among the user's files"

    rerun = _invoke("run", str(_write(tmp_path / "wf.json", {**data, "clean_cache": True})))
    assert rerun.exit_code == 0, rerun.output
    _assert_intact(project, files)

    cleaned = _invoke("cache", "clean", "--cache-dir", str(project))
    assert cleaned.exit_code == 0, cleaned.output
    _assert_intact(project, files)
    assert f"kept {len(files)} item(s) in {project} that the cache did not create" in cleaned.stdout
    assert "runs/results.csv" in cleaned.stdout
    assert not (project / "olive-cache.json").exists()
    assert not list((project / "runs").glob("*/" + "?" * 64))


def test_clean_removes_a_symlinked_entry_without_following_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep")
    cache = CacheStore(tmp_path / "cache")
    cache.ensure()
    key = "ab" + "0" * 62
    (cache.root / "runs" / "ab").mkdir(parents=True)
    (cache.root / "runs" / "ab" / key).symlink_to(victim, target_is_directory=True)
    (cache.root / "tmp").rmdir()
    (cache.root / "tmp").symlink_to(victim, target_is_directory=True)
    kept = cache.clean()
    assert (victim / "precious.txt").read_text() == "keep"
    assert kept == ["tmp"]
    assert not (cache.root / "runs").exists()


def test_clean_and_stale_cleanup_touch_nothing_in_a_folder_that_is_not_a_cache(tmp_path: Path) -> None:
    files = _user_files(tmp_path / "mine")
    store = CacheStore(tmp_path / "mine")
    assert store.clean() == [] and store.clean_stale_tmp() == 0
    _assert_intact(tmp_path / "mine", files)


@pytest.mark.parametrize("where", ["/", "~", "/usr", "/tmp"])
def test_a_system_or_home_folder_as_cache_dir_is_exit_2_before_anything_is_written(tmp_path: Path, where: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    data = base_workflow(tmp_path, cache_dir=where)
    config = _write(tmp_path / "wf.json", data)
    for args in (("run", str(config), "--dry-run"), ("run", str(config))):
        result = _invoke(*args, env={"HOME": str(home)})
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("Error: cache_dir: '"), result.stderr
        assert "cannot hold a cache" in result.stderr and "point cache_dir at a folder of its own" in result.stderr
    assert not list(home.iterdir()) and not (tmp_path / "out").exists()


def test_system_folder_reason_names_root_system_and_home_folders(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    assert system_folder_reason("/") == "it is the root of the file system"
    assert system_folder_reason("/etc") == "it is a system folder"
    assert system_folder_reason("/usr/../var") == "it is a system folder"
    assert system_folder_reason("~") == "it is your home folder"
    assert system_folder_reason(tmp_path) == "it holds your home folder"
    assert system_folder_reason(tmp_path / "me" / "project") is None
    assert system_folder_reason("/usr/local/share/olive-out") is None


# ------------------------------------------------------------------------------------------------- pass outputs


@pytest.mark.parametrize("name", ["../../../../victim.txt", "ABSOLUTE", "sub/weights.data", "..", "a\\b"])
def test_external_data_name_outside_the_output_folder_is_a_config_error_and_deletes_nothing(
    tmp_path: Path, name: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    if name == "ABSOLUTE":
        name = str(victim)
    passes = {"add": {"type": "AddMatMuls", "save_as_external_data": True, "external_data_name": name}}
    config = _write(tmp_path / "wf.json", base_workflow(tmp_path, passes=passes))
    for args in (("run", str(config), "--dry-run"), ("run", str(config))):
        result = _invoke(*args)
        assert result.exit_code == 2, result.output
        assert "param 'external_data_name' expects a plain file name" in result.stderr, result.stderr
    assert victim.read_text() == "keep me"
    assert not (tmp_path / "cache" / "runs").exists()

    # The writer every pass saves through checks it too, for passes that call it directly.
    from olive.testing.models import mlp_model

    out = tmp_path / "direct" / "deep" / "er"
    with pytest.raises(PassConfigError, match="external_data_name"):
        model_proto_to_file(mlp_model(), out / "model.onnx", save_as_external_data=True, external_data_name=name)
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("name", ["model.onnx", "MODEL.onnx"])
def test_external_data_named_as_the_model_file_is_refused_before_writing(tmp_path: Path, name: str) -> None:
    from olive.testing.models import mlp_model

    out = tmp_path / "direct"
    with pytest.raises(PassConfigError, match="is the name of the model file itself"):
        model_proto_to_file(mlp_model(), out / "model.onnx", save_as_external_data=True, external_data_name=name)
    assert not out.exists() or not any(out.iterdir())

    passes = {"add": {"type": "AddMatMuls", "n": 1, "save_as_external_data": True, "external_data_name": name}}
    config = _write(tmp_path / "wf.json", base_workflow(tmp_path, passes=passes))
    result = _invoke("run", str(config))
    # Before: the weights went over the model file and onnxruntime failed on the result (or run-pass exited 0).
    assert result.exit_code == 2 and "is the name of the model file itself" in result.stderr, result.output
    assert not (tmp_path / "out" / "model.onnx").exists()


def test_a_plain_external_data_name_is_written_inside_the_output_folder(tmp_path: Path) -> None:
    passes = {"add": {"type": "AddMatMuls", "n": 1, "save_as_external_data": True, "external_data_name": "w.bin"}}
    config = _write(tmp_path / "wf.json", base_workflow(tmp_path, passes=passes))
    result = _invoke("run", str(config))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "w.bin").is_file() and count_matmuls(tmp_path / "out" / "model.onnx") == 3


# ------------------------------------------------------------------------------------------------- output_dir


@pytest.mark.parametrize("where", ["~", "/", "/etc"])
def test_a_home_or_system_output_dir_is_exit_2_in_dry_run_and_run(tmp_path: Path, where: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "model.onnx").write_text("the user's own model")
    config = _write(tmp_path / "wf.json", base_workflow(tmp_path, output_dir=where))
    for args in (("run", str(config), "--dry-run"), ("run", str(config))):
        result = _invoke(*args, env={"HOME": str(home)})
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("Error: output_dir: '") and "cannot hold a run's outputs" in result.stderr
    assert (home / "model.onnx").read_text() == "the user's own model"
    assert sorted(p.name for p in home.iterdir()) == ["model.onnx"]


def test_an_output_dir_holding_a_file_the_tool_did_not_write_is_refused_and_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.json").write_text("my own notes")
    (out / "other.txt").write_text("unrelated")
    config = _write(tmp_path / "wf.json", base_workflow(tmp_path))
    for args in (("run", str(config), "--dry-run"), ("run", str(config))):
        result = _invoke(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == (
            f"Error: output_dir: '{out}' already holds metrics.json, which Olive did not write; move it away or "
            "choose another output_dir (Olive never overwrites a file it did not create)"
        )
    assert (out / "metrics.json").read_text() == "my own notes"
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "other.txt"]
    assert not (tmp_path / "cache").exists()

    # Once the user moves it away, the run writes there, and a second run may replace its own files.
    (out / "metrics.json").unlink()
    assert _invoke("run", str(config)).exit_code == 0
    manifest = json.loads((out / ".olive-output.json").read_text())
    assert "model.onnx" in manifest["files"] and "other.txt" not in manifest["files"]
    again = _write(tmp_path / "wf.json", base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 2}}))
    assert _invoke("run", str(again)).exit_code == 0
    assert count_matmuls(out / "model.onnx") == 4
    assert (out / "other.txt").read_text() == "unrelated"


def test_a_manifest_naming_outside_files_claims_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / ".olive-output.json").write_text(json.dumps({"files": ["../victim.txt", "/etc/passwd", 3, "model.onnx"]}))
    assert claimed_files(out) == {"model.onnx"}


def test_run_pass_never_overwrites_a_file_it_did_not_write(tmp_path: Path) -> None:
    model = write_mlp(tmp_path / "in")
    target = tmp_path / "mine"
    target.mkdir()
    (target / "model.onnx").write_text("not a model of the tool's")
    result = _invoke("run-pass", "--pass-name", "AddMatMuls", "-m", str(model), "-o", str(target))
    assert result.exit_code == 2, result.output
    assert "already holds model.onnx, which Olive did not write" in result.stderr
    assert (target / "model.onnx").read_text() == "not a model of the tool's"
    assert sorted(p.name for p in target.iterdir()) == ["model.onnx"]
    home = tmp_path / "home"
    home.mkdir()
    refused = _invoke("run-pass", "--pass-name", "AddMatMuls", "-m", str(model), "-o", "~", env={"HOME": str(home)})
    assert refused.exit_code == 2 and "cannot hold the output model: it is your home folder" in refused.stderr
    assert not list(home.iterdir())
    # Into a folder of its own, twice: the second run replaces what the first wrote.
    fresh = tmp_path / "fresh"
    for n in ("1", "2"):
        ok = _invoke(
            "run-pass",
            "--pass-name",
            "AddMatMuls",
            "--pass-config",
            f'{{"n": {n}}}',
            "-m",
            str(model),
            "-o",
            str(fresh),
        )
        assert ok.exit_code == 0, ok.output
        assert count_matmuls(fresh / "model.onnx") == 2 + int(n)
    assert not [p for p in fresh.iterdir() if p.name.startswith(".olive-run-pass")]
    assert (fresh / ".olive-output.json").exists()
