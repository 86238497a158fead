"""The README's journey: `olive quickstart DIR`, then `olive run` on the workflow it wrote.

Needs olive-core, olive-passes-quant and olive-passes-graph installed (tox -e e2e). Runs the real `olive`
command in a subprocess, as a user would.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from journey import olive


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _value(metrics: dict[str, Any], key: str) -> float:
    entry = metrics[key]
    return float(entry["value"] if isinstance(entry, dict) else entry)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    directory = tmp_path_factory.mktemp("journey") / "my-first-run"
    start = time.perf_counter()
    result = olive("quickstart", str(directory))
    # Speed is measured in benchmarks/, not asserted here; printed for whoever reads the log.
    print(f"olive quickstart took {time.perf_counter() - start:.1f} s")
    return directory, result


def test_quickstart_succeeds_and_writes_its_files(quickstart: tuple[Path, subprocess.CompletedProcess]) -> None:
    directory, result = quickstart
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("quickstart.json", "model/model.onnx", "data.npz"):
        assert (directory / name).is_file(), name
    for name in ("model.onnx", "model_config.json", "metrics.json", "footprint.json", "run_history.txt", "report.html"):
        assert (directory / "output" / name).is_file(), name
    assert "Traceback" not in result.stderr


def test_chosen_model_is_faster_or_smaller_and_meets_the_goal(
    quickstart: tuple[Path, subprocess.CompletedProcess],
) -> None:
    directory, _ = quickstart
    workflow = _read(directory / "quickstart.json")
    metrics = _read(directory / "output" / "metrics.json")
    best, baseline = metrics["best"], metrics["input_model"]
    faster = _value(best, "latency-p50") < _value(baseline, "latency-p50")
    smaller = _value(best, "size-bytes") < _value(baseline, "size-bytes")
    assert faster or smaller, (best, baseline)
    # The goal as the JSON states it, read back rather than repeated here.
    agreement = next(m for m in workflow["evaluators"]["common"]["metrics"] if m["type"] == "agreement")
    sub = next(s for s in agreement["sub_types"] if "goal" in s)
    assert sub["goal"]["type"] == "threshold"
    assert _value(best, f"{agreement['name']}-{sub['name']}") >= sub["goal"]["value"]
    footprint = _read(directory / "output" / "footprint.json")
    chosen = next(n for n in footprint["nodes"] if n["model_id"] == footprint["best_model_id"])
    assert chosen["meets_goals"] is True and chosen["is_candidate"]
    # the model written out is the chosen one, and it is quantized (int8 weights)
    import onnx

    model = onnx.load(directory / "output" / "model.onnx")
    assert any(i.data_type == onnx.TensorProto.INT8 for i in model.graph.initializer)
    # both distributions took part in the chain
    dists = set(_read(directory / "output" / "model_config.json")["distributions"])
    assert dists == {"olive-passes-graph", "olive-passes-quant"}


def test_quickstart_prints_the_table_and_the_chosen_path(quickstart: tuple[Path, subprocess.CompletedProcess]) -> None:
    directory, result = quickstart
    footprint = _read(directory / "output" / "footprint.json")
    out = result.stdout
    assert "input model" in out
    for node in footprint["nodes"]:
        if node["is_candidate"]:
            assert node["model_id"] in out
    assert f"Chosen model: {directory / 'output' / 'model.onnx'}" in out
    # The latency comparison is the paired one (both models timed in alternating rounds), with its measured spread.
    paired = (
        r"latency-ratio_p50: [0-9.]+ \([0-9.]+x (faster|slower), timed alternately with the input model, "
        r"±[0-9]+% between rounds\)"
    )
    assert re.search(paired, out), out
    # The models' own p50s were timed apart: never an arrow between them beside the ratio, and the table says so.
    assert not re.search(r"p50 [0-9.]+ → [0-9.]+ ms", out), out
    assert "latency-p50: each model timed apart" in " ".join(out.split())
    assert f"olive run --config {directory / 'quickstart.json'}" in out
    # What set the chosen model before the next best, with values to the digits that differ (the table rounds).
    because = footprint["chosen_because"]
    assert because.startswith("chosen over ")
    assert "decided (" in because or "tied on every objective" in because
    assert because in " ".join(out.split()), out
    # the progress bar went to stderr
    assert "search" in result.stderr and "6/6" in result.stderr


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def test_report_charts_every_candidate(quickstart: tuple[Path, subprocess.CompletedProcess]) -> None:
    directory, _ = quickstart
    text = (directory / "output" / "report.html").read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(text)
    points = [a for t, a in parser.tags if t == "circle" and "candidate" in a.get("class", "").split()]
    footprint = _read(directory / "output" / "footprint.json")
    candidates = {n["model_id"] for n in footprint["nodes"] if n["is_candidate"] and n["metrics"]}
    assert len(candidates) == 6
    assert {p["data-model-id"] for p in points} == candidates
    assert "http://" not in text and "https://" not in text
    assert "olive-passes-quant" in text and "olive-passes-graph" in text
    assert "Chosen over " in text


def test_olive_run_on_the_written_json_reuses_the_cache(quickstart: tuple[Path, subprocess.CompletedProcess]) -> None:
    directory, _ = quickstart
    first = _read(directory / "output" / "footprint.json")
    result = olive("run", "--config", str(directory / "quickstart.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    again = _read(directory / "output" / "footprint.json")
    runs = [n for n in again["nodes"] if n["pass_key"]]
    assert runs and all(n["cached"] for n in runs)
    # evaluations are cached too, so the same model wins
    assert again["best_model_id"] == first["best_model_id"]


def test_an_edited_workflow_runs_with_olive_run(quickstart: tuple[Path, subprocess.CompletedProcess]) -> None:
    directory, _ = quickstart
    workflow = _read(directory / "quickstart.json")
    workflow["passes"]["fuse"]["opt_level"] = 99
    workflow["passes"]["quantize"] = workflow["passes"]["quantize"][0]  # dynamic only
    workflow["output_dir"] = "output-edited"
    edited = directory / "edited.json"
    edited.write_text(json.dumps(workflow, indent=2))
    result = olive("run", "--config", str(edited))
    assert result.returncode == 0, result.stdout + result.stderr
    footprint = _read(directory / "output-edited" / "footprint.json")
    candidates = [n for n in footprint["nodes"] if n["is_candidate"]]
    assert len(candidates) == 2  # per_channel True / False
    assert all(n["pass_name"] == "OnnxDynamicQuantization" for n in candidates)
    parents = {n["parent_model_id"] for n in candidates}
    assert all(
        next(p for p in footprint["nodes"] if p["model_id"] == pid)["config"]["opt_level"] == 99 for pid in parents
    )


def test_quickstart_again_in_the_same_folder_reuses_everything(
    quickstart: tuple[Path, subprocess.CompletedProcess],
) -> None:
    directory, _ = quickstart
    result = olive("quickstart", str(directory))
    assert result.returncode == 0, result.stdout + result.stderr
    runs = [n for n in _read(directory / "output" / "footprint.json")["nodes"] if n["pass_key"]]
    assert runs and all(n["cached"] for n in runs)


def test_quickstart_no_run_only_writes_the_files(tmp_path: Path) -> None:
    directory = tmp_path / "qs"
    result = olive("quickstart", str(directory), "--no-run")
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in directory.iterdir()) == ["data.npz", "model", "quickstart.json"]
    assert f"olive run --config {directory / 'quickstart.json'}" in result.stdout


def test_quickstart_refuses_to_overwrite_an_edited_workflow(tmp_path: Path) -> None:
    directory = tmp_path / "qs"
    directory.mkdir()
    (directory / "quickstart.json").write_text('{"workflow_id": "mine"}')
    result = olive("quickstart", str(directory))
    # A file in the folder given that the quickstart did not write: an input to change, as for output_dir (exit 2).
    assert result.returncode == 2
    assert "--force" in result.stderr and "Traceback" not in result.stderr
    assert (directory / "quickstart.json").read_text() == '{"workflow_id": "mine"}'
    assert sorted(p.name for p in directory.iterdir()) == ["quickstart.json"]


def test_quickstart_without_the_graph_passes_names_the_distribution(tmp_path: Path) -> None:
    directory = tmp_path / "qs"
    result = olive("quickstart", str(directory), env={"OLIVE_DISABLE_PLUGINS": "olive-passes-graph"})
    assert result.returncode == 1
    assert "olive-passes-graph" in result.stderr and "Traceback" not in result.stderr
    assert not directory.exists()


def test_readme_quickstart_command_is_the_one_tested() -> None:
    readme = Path(__file__).resolve().parents[1] / "README.md"
    assert readme.is_file(), "the repository's README.md is missing"
    assert "olive quickstart" in readme.read_text(encoding="utf-8")


def test_quickstart_without_a_folder_writes_to_the_user_data_folder_not_here(tmp_path: Path) -> None:
    here = tmp_path / "a-clone"
    here.mkdir()
    data_home = tmp_path / "data"
    result = olive("quickstart", "--no-run", cwd=here, env={"XDG_DATA_HOME": str(data_home)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(here.iterdir()) == []
    written = data_home / "olive" / "quickstart"
    assert sorted(p.name for p in written.iterdir()) == ["data.npz", "model", "quickstart.json"]
    assert f"olive run --config {written / 'quickstart.json'}" in result.stdout


def test_quickstart_caches_in_the_per_user_cache(quickstart: tuple[Path, subprocess.CompletedProcess]) -> None:
    import os

    directory, _ = quickstart
    assert "cache_dir" not in _read(directory / "quickstart.json")
    assert not (directory / ".olive-cache").exists()
    info = olive("cache", "info", "--json")
    assert json.loads(info.stdout)["cache_dir"] == os.environ["OLIVE_CACHE_DIR"]
    assert json.loads(info.stdout)["runs"] > 0


def _read_only(folder: Path) -> list[str] | None:
    """A command prefix that runs with ``folder`` read-only: a read-only bind mount in a mount namespace of its own
    for root (whom folder permissions do not stop), folder permissions otherwise; None where neither works."""
    import os
    import shutil

    if os.geteuid() != 0:
        folder.chmod(0o555)
        return []
    if shutil.which("unshare") is None:
        return None
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
    if probe.returncode != 0:
        return None
    mount = f'mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && exec "$@"'
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", mount, "sh"]


def test_quickstart_into_a_read_only_folder_is_exit_2_naming_it(tmp_path: Path) -> None:
    import sys

    folder = tmp_path / "read-only"
    folder.mkdir()
    prefix = _read_only(folder)
    if prefix is None:
        pytest.skip("cannot make a read-only folder here (root without a mount namespace)")
    script = Path(sys.executable).with_name("olive")
    try:
        result = subprocess.run(
            [*prefix, str(script), "quickstart", str(folder / "qs"), "--no-run"], capture_output=True, text=True
        )
    finally:
        folder.chmod(0o755)
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: DIRECTORY: cannot write the quickstart files into '{folder / 'qs'}'"), line
    assert "name a folder you can write in" in line
    assert not any(folder.iterdir())
