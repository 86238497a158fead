"""One per-user default home for the cache: ``OLIVE_CACHE_DIR``, else the platform's user cache folder; a
workflow's ``cache_dir`` wins, and ``olive cache info|clean`` use the default when given no folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from engine_support import base_workflow

import olive
from olive.cache.location import default_cache_dir
from olive.cli.main import cli
from olive.workflows.config import load_workflow_config


def test_olive_cache_dir_is_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLIVE_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    workflow = base_workflow(tmp_path)
    del workflow["cache_dir"]
    assert load_workflow_config(workflow).cache_dir == tmp_path / "mine"


def test_without_the_variable_the_platforms_user_cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from platformdirs import user_cache_path

    monkeypatch.delenv("OLIVE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == user_cache_path("olive", appauthor=False)
    assert str(default_cache_dir()).startswith(str(tmp_path / "xdg"))


def test_a_workflows_cache_dir_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLIVE_CACHE_DIR", str(tmp_path / "default"))
    assert load_workflow_config(base_workflow(tmp_path)).cache_dir == tmp_path / "cache"


@pytest.mark.usefixtures("engine_registry")
def test_workflows_without_cache_dir_share_the_default_and_olive_cache_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user-cache"
    monkeypatch.setenv("OLIVE_CACHE_DIR", str(home))
    for name in ("one", "two"):
        workflow = base_workflow(tmp_path / name)
        del workflow["cache_dir"]
        olive.run(workflow)
    runner = CliRunner()
    info = json.loads(runner.invoke(cli, ["cache", "info", "--json"]).stdout)
    assert info["cache_dir"] == str(home) and info["exists"]
    # Two workflows, one model and one pass: the second run was served by the first's entry.
    assert info["runs"] == 1
    cleaned = runner.invoke(cli, ["cache", "clean"])
    assert cleaned.exit_code == 0, cleaned.output
    assert not home.exists()
    assert "no cache here yet" in runner.invoke(cli, ["cache", "info"]).stdout


def test_a_cache_dir_in_the_home_of_no_user_is_one_config_error(tmp_path: Path) -> None:
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(base_workflow(tmp_path, cache_dir="~no-such-user-here/cache")))
    result = CliRunner().invoke(cli, ["run", "--dry-run", str(config)])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "Error: cache_dir: '~no-such-user-here/cache' cannot be a path: ~no-such-user-here is the home folder of no "
        "user here; fix the path\n"
    )
