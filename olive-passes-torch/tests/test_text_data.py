"""Text data without a hub: local .txt / .jsonl files tokenized with the model's own tokenizer."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import transformers
from conftest import SENTENCES

from olive.data.calibration import CalibrationDataReader
from olive.data.config import DataConfig
from olive.data.containers import bind_input_model, find_container
from olive.exceptions import OliveError, WorkflowConfigError
from olive_passes_torch.text_data import HuggingfaceContainer, TextDataContainer


def _write(tmp_path, name, rows):
    path = tmp_path / name
    if name.endswith(".txt"):
        path.write_text("\n".join(rows) + "\n")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _text_config(tmp_path, data_path, tokenizer=None, batch_size=2, **pre):
    spec = {
        "name": "text",
        "type": "TextDataContainer",
        "load_dataset_config": {"data_path": str(data_path)},
        "pre_process_data_config": {**({"tokenizer": str(tokenizer)} if tokenizer else {}), **pre},
        "dataloader_config": {"batch_size": batch_size},
    }
    return spec


def test_the_containers_come_from_this_distribution():
    assert find_container("TextDataContainer") is TextDataContainer
    assert find_container("HuggingfaceContainer") is HuggingfaceContainer


def test_a_txt_file_is_tokenized_with_the_models_tokenizer(bert_dir, tmp_path):
    data = _write(tmp_path, "s.txt", SENTENCES[:5])
    config = DataConfig.from_json(_text_config(tmp_path, data, bert_dir, max_length=12), base_dir=tmp_path)
    batches = list(config.create_dataloader())
    assert [len(b[0]["input_ids"]) for b in batches] == [2, 2, 1]
    inputs, labels = batches[0]
    assert set(inputs) == {"input_ids", "token_type_ids", "attention_mask"} and labels is None
    assert all(v.dtype == np.int64 and v.shape == (2, 12) for v in inputs.values())  # padded to max_length

    expected = transformers.AutoTokenizer.from_pretrained(bert_dir)(
        SENTENCES[:2], padding="max_length", max_length=12, truncation=True, return_tensors="np"
    )
    np.testing.assert_array_equal(inputs["input_ids"], expected["input_ids"])
    np.testing.assert_array_equal(inputs["attention_mask"], expected["attention_mask"])


def test_padding_longest_pads_each_batch_and_truncation_cuts(bert_dir, tmp_path):
    data = _write(tmp_path, "s.txt", ["the cat", "the bridge was closed for repairs after the storm", "hello world"])
    config = DataConfig.from_json(
        _text_config(tmp_path, data, bert_dir, padding="longest", max_length=6), base_dir=tmp_path
    )
    first, second = (b[0] for b in config.create_dataloader())
    assert first["input_ids"].shape == (2, 6)  # the long sentence, cut to max_length, sets the batch's length
    assert first["attention_mask"][0].tolist() == [1, 1, 1, 1, 0, 0]  # [CLS] the cat [SEP] + 2 pads
    assert second["input_ids"].shape == (1, 4)  # [CLS] hello world [SEP]: no padding needed
    config = DataConfig.from_json(
        _text_config(tmp_path, data, bert_dir, padding="longest", max_length=6, truncation=False), base_dir=tmp_path
    )
    assert next(iter(config.create_dataloader()))[0]["input_ids"].shape[1] > 6


def test_jsonl_with_pairs_and_labels(bert_dir, tmp_path):
    rows = [{"q": s, "a": t, "y": i % 2} for i, (s, t) in enumerate(zip(SENTENCES, reversed(SENTENCES), strict=True))]
    data = _write(tmp_path, "pairs.jsonl", rows)
    spec = _text_config(tmp_path, data, bert_dir, batch_size=3, max_length=32)
    spec["load_dataset_config"].update(text_field="q", text_pair_field="a", label_field="y", max_samples=5)
    config = DataConfig.from_json(spec, base_dir=tmp_path)
    batches = list(config.create_dataloader())
    assert [b[1].tolist() for b in batches] == [[0, 1, 0], [1, 0]]
    # The pair is the second segment: token type 1 after the first [SEP].
    assert batches[0][0]["token_type_ids"][0].max() == 1


def test_it_feeds_calibration(bert_dir, tmp_path):
    data = _write(tmp_path, "s.txt", SENTENCES)
    config = DataConfig.from_json(_text_config(tmp_path, data, bert_dir, max_length=16), base_dir=tmp_path)
    reader = CalibrationDataReader(config, max_samples=5)
    feeds = list(iter(reader.get_next, None))  # as onnxruntime's calibration reads it
    assert sum(len(f["input_ids"]) for f in feeds) == 5


def test_the_input_models_tokenizer_is_used_when_none_is_given(gpt2_dir, tmp_path):
    data = _write(tmp_path, "s.txt", SENTENCES[:3])
    config = DataConfig.from_json(_text_config(tmp_path, data, padding="longest"), base_dir=tmp_path)
    with pytest.raises(WorkflowConfigError, match=r"pre_process_data_config\.tokenizer: missing"):
        list(config.create_dataloader())
    bound = bind_input_model(config, str(gpt2_dir))
    inputs, _ = next(iter(bound.create_dataloader()))
    assert set(inputs) == {"input_ids", "attention_mask"}  # GPT-2's tokenizer; its pad token is end-of-text
    assert inputs["attention_mask"].min() == 0


def test_content_hash_follows_the_text_and_the_tokenizer(bert_dir, tmp_path):
    shutil.copytree(bert_dir, tmp_path / "tok")
    data = _write(tmp_path, "s.txt", SENTENCES)
    spec = _text_config(tmp_path, data, tmp_path / "tok")
    before = DataConfig.from_json(spec, base_dir=tmp_path).content_hash()
    assert DataConfig.from_json(spec, base_dir=tmp_path).content_hash() == before
    (tmp_path / "tok" / "tokenizer_config.json").write_text(
        (tmp_path / "tok" / "tokenizer_config.json").read_text().replace("}", ', "model_max_length": 7}', 1)
    )
    assert DataConfig.from_json(spec, base_dir=tmp_path).content_hash() != before


@pytest.mark.parametrize(
    ("load", "pre", "owner", "reason"),
    [
        ({"data_path": "nope.txt"}, {}, "load_dataset_config.data_path", "does not exist"),
        ({"data_path": "s.parquet"}, {}, "load_dataset_config.data_path", "not one of .txt"),
        ({"data_path": "s.txt", "label_field": "y"}, {}, "load_dataset_config.label_field", "use a .jsonl"),
        ({"data_path": "s.txt", "text_fild": "t"}, {}, "load_dataset_config.text_fild", "did you mean 'text_field'"),
        ({"data_path": "s.txt"}, {"padding": "max"}, "pre_process_data_config.padding", "max_length, longest"),
        ({"data_path": "s.txt"}, {"max_length": 0}, "pre_process_data_config.max_length", "1 or more"),
        (
            {"data_path": "s.txt"},
            {"tokenizer": "bert-base-uncased/x"},
            "pre_process_data_config.tokenizer",
            "not downloaded",
        ),
    ],
)
def test_bad_text_configs_name_the_key(tmp_path, load, pre, owner, reason):
    _write(tmp_path, "s.txt", SENTENCES)
    (tmp_path / "s.parquet").write_bytes(b"PAR1")
    spec = {"name": "t", "type": "TextDataContainer", "load_dataset_config": load, "pre_process_data_config": pre}
    with pytest.raises(WorkflowConfigError) as caught:
        DataConfig.from_json(spec, json_path="data_configs[1]", base_dir=tmp_path)
    assert caught.value.owner == f"data_configs[1].{owner}" and reason in caught.value.reason, caught.value


def test_a_field_the_file_does_not_have_is_named_when_read(bert_dir, tmp_path):
    data = _write(tmp_path, "s.jsonl", [{"sentence": s} for s in SENTENCES])
    config = DataConfig.from_json(_text_config(tmp_path, data, bert_dir), base_dir=tmp_path)
    with pytest.raises(WorkflowConfigError, match=r"'text' is not a field of .*its fields: sentence"):
        list(config.create_dataloader())


# ------------------------------------------------------------------------------ Olive's HuggingfaceContainer


def _hf_config(tmp_path, load, pre, json_path="data_configs[0]"):
    spec = {"name": "glue", "type": "HuggingfaceContainer", "load_dataset_config": load, "pre_process_data_config": pre}
    return DataConfig.from_json(spec, json_path=json_path, base_dir=tmp_path)


def test_huggingface_keys_read_a_local_folder_by_split(bert_dir, tmp_path):
    folder = tmp_path / "sst2"
    folder.mkdir()
    _write(folder, "train.jsonl", [{"sentence": s, "label": 1} for s in SENTENCES])
    _write(folder, "validation.jsonl", [{"sentence": s, "label": i % 2} for i, s in enumerate(SENTENCES)])
    config = _hf_config(
        tmp_path,
        {"data_name": "sst2", "split": "validation[1:5]"},
        {
            "model_name": str(bert_dir),
            "input_cols": ["sentence"],
            "label_col": "label",
            "max_length": 10,
            "max_samples": 3,
        },
    )
    batches = list(DataConfig.from_json(config.to_json()).create_dataloader(batch_size=2))
    assert [b[1].tolist() for b in batches] == [[1, 0], [1]]  # validation rows 1..3, not train's labels
    assert batches[0][0]["input_ids"].shape == (2, 10)


def test_huggingface_data_files_and_model_from_the_input_model(bert_dir, tmp_path):
    _write(tmp_path, "rows.jsonl", [{"text": s} for s in SENTENCES])
    config = _hf_config(tmp_path, {"data_files": "rows.jsonl"}, {"max_length": 8})
    bound = bind_input_model(config, str(bert_dir))
    assert bound.pre_process_data_config.params["model_name"] == str(bert_dir)
    assert len(next(iter(bound.create_dataloader(batch_size=4)))[0]["input_ids"]) == 4


@pytest.mark.parametrize(
    ("load", "pre", "owner", "reason"),
    [
        ({"data_name": "glue", "subset": "sst2"}, {}, "load_dataset_config.subset", "not downloaded"),
        ({"data_name": "glue"}, {}, "load_dataset_config.data_name", "not a local file or folder"),
        ({"data_name": "rows.jsonl", "streaming": True}, {}, "load_dataset_config.streaming", "leave streaming out"),
        ({"data_name": "rows.jsonl", "revision": "main"}, {}, "load_dataset_config.revision", "valid keys"),
        (
            {"data_name": "rows.jsonl"},
            {"model_name": "bert-base-uncased"},
            "pre_process_data_config.model_name",
            "is not a folder",
        ),
        (
            {"data_name": "rows.jsonl"},
            {"model_name": "google/bert_uncased"},
            "pre_process_data_config.model_name",
            "not downloaded",
        ),
        ({"data_name": "rows.jsonl"}, {"input_cols": ["a", "b", "c"]}, "pre_process_data_config.input_cols", "two"),
        ({}, {}, "load_dataset_config.data_name", "missing"),
    ],
)
def test_huggingface_keys_that_need_the_hub_are_named(tmp_path, load, pre, owner, reason):
    _write(tmp_path, "rows.jsonl", [{"text": s} for s in SENTENCES])
    with pytest.raises(WorkflowConfigError) as caught:
        _hf_config(tmp_path, load, pre)
    assert caught.value.owner == f"data_configs[0].{owner}" and reason in caught.value.reason, caught.value


def test_labels_must_be_numbers(bert_dir, tmp_path):
    _write(tmp_path, "rows.jsonl", [{"text": s, "label": "positive"} for s in SENTENCES])
    config = _hf_config(tmp_path, {"data_name": "rows.jsonl"}, {"model_name": str(bert_dir), "label_col": "label"})
    with pytest.raises(OliveError, match=r"label 'positive'; labels must be numbers"):
        list(config.create_dataloader())
