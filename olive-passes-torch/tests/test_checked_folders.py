"""A Hugging Face folder checked once is not checked again while its content, settings and library versions stay
the same: a rerun reads the record and imports neither transformers nor torch (seconds saved on every cached
``olive optimize`` / ``olive run``); any change to the folder is a new check."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FACTS = (
    "import sys, json; from olive.optimize.facts import read_model_facts;"
    "f = read_model_facts(sys.argv[1]);"
    "print(json.dumps({'task': f.task, 'inputs': [i[0] for i in f.inputs], 'mask': f.mask_input,"
    " 'positions': f.max_sequence_length,"
    " 'imported': sorted(m for m in ('torch', 'transformers') if m in sys.modules)}))"
)


def _facts(folder: Path, records: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", FACTS, str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "OLIVE_HF_CHECKS_DIR": str(records)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def folder(bert_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "model"
    shutil.copytree(bert_dir, copy)
    return copy


def test_a_folder_checked_before_is_read_from_its_record_without_transformers(folder: Path, tmp_path: Path) -> None:
    records = tmp_path / "records"
    first = _facts(folder, records)
    assert first["imported"] == ["torch", "transformers"]
    assert first["task"] == "feature-extraction" and "input_ids" in first["inputs"] and first["mask"]
    assert len(list(records.glob("*.json"))) == 1
    again = _facts(folder, records)
    assert again["imported"] == []
    assert {k: v for k, v in again.items() if k != "imported"} == {k: v for k, v in first.items() if k != "imported"}


def test_a_changed_folder_or_a_malformed_record_is_checked_again(folder: Path, tmp_path: Path) -> None:
    records = tmp_path / "records"
    _facts(folder, records)
    [record] = records.glob("*.json")
    record.write_text('{"version": 1, "task": 3}')
    assert _facts(folder, records)["imported"] == ["torch", "transformers"]
    assert json.loads(record.read_text())["task"] == "feature-extraction"  # rewritten by the new check
    config = json.loads((folder / "config.json").read_text())
    # A change that keeps config and weights of one model (a smaller position table than the weights' is refused
    # as the config of another model).
    config["layer_norm_eps"] = 1e-5
    (folder / "config.json").write_text(json.dumps(config))
    changed = _facts(folder, records)
    assert (
        changed["imported"] == ["torch", "transformers"] and changed["positions"] == config["max_position_embeddings"]
    )
    assert len(list(records.glob("*.json"))) == 2
