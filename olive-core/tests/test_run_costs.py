"""What a run reads and what it keeps: a file's digest is computed once and reused while the file is unchanged
(never once it changed), a search lets go of each trial's sessions and, when it ends, of the reference outputs
its trials shared, and nothing that only needs a model's graph parses its weights."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time

import onnx
import onnxruntime as ort
import pytest
from engine_support import edit_in_place, ran_passes, search_workflow, write_mlp

from olive.cache import store
from olive.evaluator.evaluator import OliveEvaluator
from olive.model.onnx_scan import _FACTS
from olive.plugins import hookimpl
from olive.plugins.manager import new_plugin_manager, use_plugin_manager
from olive.testing.models import bert_like_model, mlp_model, save_model
from olive.workflows import run

pytestmark = pytest.mark.usefixtures("engine_registry")


def _new_process() -> None:
    """Forget what this process remembers of files, as a new ``olive run`` would."""
    store._HASH_MEMO.clear()
    _FACTS.clear()


def test_a_rerun_reuses_the_input_models_digest_until_its_content_changes(tmp_path, run_log, monkeypatch):
    model = write_mlp(tmp_path / "input")
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(model)},
        "passes": {"add": {"type": "AddMatMuls", "n": 1}},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    # Files changed in the last seconds are hashed every time (a same-tick rewrite could go unseen); the clock
    # is moved past that window instead of waiting.
    monkeypatch.setattr(store, "_now", lambda: time.time() + 60)
    key = str(model.resolve())
    reads = store.HASH_READS[key]
    _new_process()
    run(workflow)
    assert store.HASH_READS[key] == reads + 1
    assert len(ran_passes(run_log)) == 1
    kept = [json.loads(r.read_text())["signature"][0] for r in (tmp_path / "cache" / "digests").glob("*/*.json")]
    assert key in kept

    _new_process()
    run(workflow)  # a cached rerun: the digest kept by the first run stands for the file
    assert store.HASH_READS[key] == reads + 1
    assert len(ran_passes(run_log)) == 1

    # Same path, inode, size and mtime, other weights: the ctime moved, so the file is hashed again and the
    # pass runs on the new content instead of reusing the entry of the old one.
    edit_in_place(model, mlp_model(seed=1).SerializeToString())
    _new_process()
    run(workflow)
    assert store.HASH_READS[key] == reads + 2
    assert len(ran_passes(run_log)) == 2
    out = onnx.load(tmp_path / "out" / "model.onnx")
    expected = {i.name: i for i in mlp_model(seed=1).graph.initializer}
    assert any(i.raw_data == expected[i.name].raw_data for i in out.graph.initializer if i.name in expected)


def test_a_file_changed_just_now_is_hashed_every_time(tmp_path):
    model = write_mlp(tmp_path / "input")
    key = str(model.resolve())
    reads = store.HASH_READS[key]
    with store.CacheStore(tmp_path / "cache").keeping_digests():
        store.hash_file(model)
        store.hash_file(model)
    assert store.HASH_READS[key] == reads + 2
    assert not (tmp_path / "cache" / "digests").exists()


def test_a_digest_kept_for_another_signature_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "_now", lambda: time.time() + 60)
    model = write_mlp(tmp_path / "input")
    cache = store.CacheStore(tmp_path / "cache")
    with cache.keeping_digests():
        first = store.hash_file(model)
        (record,) = (tmp_path / "cache" / "digests").glob("*/*.json")
        # A record that claims another digest for this very file signature is what it is trusted as; one for an
        # older signature of the file (here: another inode) is not.
        stored = json.loads(record.read_text())
        stored["signature"][1] += 1
        stored["sha256"] = "0" * 64
        record.write_text(json.dumps(stored))
        _new_process()
        assert store.hash_file(model) == first


class _Watcher:
    """Counts live onnxruntime sessions whenever an evaluation is recorded, and the reference outputs the
    evaluators hold then and when the workflow ends."""

    def __init__(self) -> None:
        self.sessions: list[int] = []
        self.references: list[int] = []
        self.references_at_end: int | None = None

    @staticmethod
    def _live(kind: type) -> list:
        gc.collect()
        return [o for o in gc.get_objects() if isinstance(o, kind)]

    @hookimpl
    def olive_evaluation_end(self, model_id, model, metrics):
        self.sessions.append(len(self._live(ort.InferenceSession)))
        self.references.append(sum(len(e.sources.reference_outputs) for e in self._live(OliveEvaluator)))

    @hookimpl
    def olive_workflow_end(self, workflow, output, error):
        self.references_at_end = sum(len(e.sources.reference_outputs) for e in self._live(OliveEvaluator))


def test_a_search_releases_each_trials_sessions_and_its_reference_outputs_when_it_ends(tmp_path):
    watcher = _Watcher()
    pm = new_plugin_manager(entry_points=False)
    pm.register_checked(watcher, "watcher-dist:watcher")
    with use_plugin_manager(pm):
        output = run(search_workflow(tmp_path, "release", None))
    assert len(watcher.sessions) >= 4
    # No session of a finished evaluation (the candidate's or the reference model's) outlives it.
    assert watcher.sessions == [0] * len(watcher.sessions)
    # The reference outputs are shared by the trials of the search (computed once), then let go.
    assert all(count == 1 for count in watcher.references[1:])
    assert watcher.references_at_end == 0
    assert output.best is not None


_NO_ONNX = """
import json, sys
from olive.cache.store import hash_model
from olive.engine.footprint import FootprintNode
from olive.engine.output_writer import _model_files
from olive.model.handler import ONNXModelHandler
found = {}
for path in sys.argv[1:]:
    model = ONNXModelHandler(path)
    model.validate()
    node = FootprintNode(model_id="m", model_path=path, model_json=model.to_json())
    found[path] = {
        "io": model.get_io_config()["input_names"],
        "size": model.size_on_disk,
        "hash": hash_model(model),
        "files": [rel for _, rel in _model_files(node)[1]],
    }
print(json.dumps({"found": found, "imported": sorted(m for m in ("onnx", "onnxruntime", "numpy") if m in sys.modules)}))
"""


def test_what_needs_only_the_graph_parses_no_weights(tmp_path):
    """Validation, io config, size, content hash and the output writer's file list of a model, inline or with
    external data, in a fresh process: none of them imports onnx (whose parse would decode every weight)."""
    inline = save_model(bert_like_model(num_layers=1, hidden_size=64, num_heads=2), tmp_path / "inline").model_path
    proto = bert_like_model(num_layers=1, hidden_size=64, num_heads=2)
    external = tmp_path / "external" / "model.onnx"
    external.parent.mkdir()
    onnx.save_model(proto, external, save_as_external_data=True, location="weights.bin", size_threshold=0)
    (external.parent / "notes.txt").write_text("a file beside the model that is not its data")
    result = subprocess.run(
        [sys.executable, "-c", _NO_ONNX, inline, str(external)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["imported"] == []
    assert report["found"][inline]["files"] == ["model.onnx"]
    assert report["found"][str(external)]["files"] == ["model.onnx", "weights.bin"]
    weights = external.parent / "weights.bin"
    assert report["found"][str(external)]["size"] == external.stat().st_size + weights.stat().st_size
    assert report["found"][inline]["io"] == [i.name for i in onnx.load(inline).graph.input]
