"""DataConfig: the .npz container, Olive's user_script components, and config errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from olive.data.config import DataConfig
from olive.exceptions import OliveError, WorkflowConfigError


def _npz(path: Path, num: int = 10, with_labels: bool = True) -> Path:
    arrays = {"input": np.arange(num * 4, dtype=np.float32).reshape(num, 4)}
    if with_labels:
        arrays["labels"] = np.arange(num, dtype=np.int64) % 3
    np.savez(path, **arrays)
    return path


def test_npz_container_batches_samples_in_order_with_labels(tmp_path):
    _npz(tmp_path / "calib.npz")
    config = DataConfig.from_json(
        {
            "name": "calib",
            "type": "NpzDataContainer",
            "load_dataset_config": {"data_path": "calib.npz"},
            "dataloader_config": {"batch_size": 4},
        },
        base_dir=tmp_path,
    )
    batches = list(config.create_dataloader())
    assert [len(labels) for _, labels in batches] == [4, 4, 2]
    stacked = np.concatenate([inputs["input"] for inputs, _ in batches])
    np.testing.assert_array_equal(stacked, np.arange(40, dtype=np.float32).reshape(10, 4))
    np.testing.assert_array_equal(np.concatenate([lab for _, lab in batches]), np.arange(10) % 3)
    # the loader can be iterated again (calibration rewinds)
    assert len(list(config.create_dataloader())) == 3
    assert [len(lab) for _, lab in config.create_dataloader(batch_size=5)] == [5, 5]


def test_npz_relative_path_resolves_against_base_dir_and_round_trips(tmp_path, monkeypatch):
    _npz(tmp_path / "calib.npz")
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = {"name": "calib", "type": "NpzDataContainer", "load_dataset_config": {"data_path": "calib.npz"}}
    config = DataConfig.from_json(spec, base_dir=tmp_path)
    assert Path(config.load_dataset_config.params["data_path"]) == (tmp_path / "calib.npz").resolve()
    again = DataConfig.from_json(config.to_json())
    assert again.to_json() == config.to_json()
    assert len(list(again.create_dataloader())) == 10


def test_npz_max_samples_and_no_labels(tmp_path):
    _npz(tmp_path / "d.npz", with_labels=False)
    config = DataConfig.from_json(
        {
            "name": "d",
            "type": "NpzDataContainer",
            "load_dataset_config": {"data_path": str(tmp_path / "d.npz"), "max_samples": 3},
            "dataloader_config": {"batch_size": 2},
        }
    )
    batches = list(config.create_dataloader())
    assert [b[0]["input"].shape[0] for b in batches] == [2, 1]
    assert all(labels is None for _, labels in batches)


def test_npz_with_mismatched_sample_counts_is_a_clear_error(tmp_path):
    np.savez(tmp_path / "bad.npz", a=np.zeros((4, 2), np.float32), b=np.zeros((3, 2), np.float32))
    config = DataConfig.from_json(
        {"name": "bad", "type": "NpzDataContainer", "load_dataset_config": {"data_path": "bad.npz"}}, base_dir=tmp_path
    )
    with pytest.raises(OliveError, match=r"data config 'bad'.*disagree on the number of samples.*a: 4, b: 3"):
        list(config.create_dataloader())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"name": "x", "type": "NpzDataContainer", "load_dataset_config": {"data_pth": "a.npz"}}, "data_path"),
        (
            {"name": "x", "type": "NpzDataContainer", "load_dataset_config": {}},
            r"data_configs\[0\].load_dataset_config",
        ),
        (
            {"name": "x", "type": "NpzDataContainer", "load_dataset_config": {"data_path": "missing.npz"}},
            r"data_configs\[0\].load_dataset_config.data_path: '.*missing.npz' does not exist",
        ),
        ({"name": "x", "type": "NpzContainer"}, r"data_configs\[0\].type: .*did you mean 'NpzDataContainer'"),
        # An Olive container no distribution here provides (HuggingfaceContainer: test_plugin_types.py).
        (
            {"name": "x", "type": "RawDataContainer"},
            r"'RawDataContainer' is a Microsoft Olive data container that no distribution here provides; "
            r"the closest here: 'NpzDataContainer'",
        ),
        (
            {"name": "x", "dataloader_confg": {}},
            r"data_configs\[0\].dataloader_confg: .*did you mean 'dataloader_config'",
        ),
        ({"type": "NpzDataContainer"}, r"data_configs\[0\].name"),
        ({"name": "x", "type": "DataContainer"}, r"load_dataset_config: a DataContainer needs"),
        ({"name": "x", "load_dataset_config": {"type": "my_loader"}}, r"not a built-in component; set user_script"),
        ({"name": "x", "user_script": "nope.py", "load_dataset_config": {"type": "f"}}, r"user_script: .*nope.py"),
        # Found when the config is read, not when the first evaluation asks for a batch.
        (
            {"name": "x", "type": "DummyDataContainer", "dataloader_config": {"batch_size": 0}},
            r"^data_configs\[0\].dataloader_config.batch_size: expected a whole number from 1 to 1000000, got 0$",
        ),
        (
            {"name": "x", "type": "DummyDataContainer", "dataloader_config": {"params": {"batch_size": "8"}}},
            r"^data_configs\[0\].dataloader_config.batch_size: "
            r'expected a whole number from 1 to 1000000, got a string \("8"\)$',
        ),
    ],
)
def test_invalid_data_configs_name_the_json_path(tmp_path, spec, message):
    with pytest.raises(WorkflowConfigError, match=message):
        DataConfig.from_json(spec, json_path="data_configs[0]", base_dir=tmp_path)


USER_SCRIPT = """
    import numpy as np
    from olive.data.registry import Registry

    def load_pairs(data_dir, num=6):
        # a list of (inputs, label) samples, as a torch-style Dataset would give
        rng = np.random.default_rng(0)
        return [({"input": rng.standard_normal(4).astype(np.float32)}, i % 2) for i in range(num)]

    def double(dataset, factor=2.0):
        return [({k: v * factor for k, v in x.items()}, y) for x, y in dataset]

    @Registry.register_dataloader()
    def my_loader(dataset, batch_size=1):
        # yields lists [inputs, labels] like torch's default collation
        for start in range(0, len(dataset), batch_size):
            chunk = dataset[start : start + batch_size]
            yield [{"input": np.stack([x["input"] for x, _ in chunk])}, np.array([y for _, y in chunk])]

    def argmax_post(output):
        return output.argmax(axis=-1)
"""


def test_user_script_components_run_in_order(tmp_path):
    (tmp_path / "user_script.py").write_text(textwrap.dedent(USER_SCRIPT))
    spec = {
        "name": "pairs",
        "type": "DataContainer",
        "user_script": "user_script.py",
        "load_dataset_config": {"type": "load_pairs", "params": {"num": 5}},
        "pre_process_data_config": {"type": "double", "factor": 10.0},  # flat params (Olive 0.6+)
        "post_process_data_config": {"type": "argmax_post"},
        "dataloader_config": {"type": "my_loader", "params": {"batch_size": 2}},
    }
    config = DataConfig.from_json(spec, base_dir=tmp_path)
    config.check_user_script()
    batches = list(config.create_dataloader())
    assert [b[0]["input"].shape for b in batches] == [(2, 4), (2, 4), (1, 4)]
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), [0, 1, 0, 1, 0])
    rng = np.random.default_rng(0)
    expected_first = rng.standard_normal(4).astype(np.float32) * 10.0
    np.testing.assert_allclose(batches[0][0]["input"][0], expected_first)
    np.testing.assert_array_equal(config.post_process(np.array([[0.1, 0.9], [0.8, 0.2]])), [1, 0])


def test_user_script_with_default_dataloader_collates_samples(tmp_path):
    (tmp_path / "user_script.py").write_text(textwrap.dedent(USER_SCRIPT))
    config = DataConfig.from_json(
        {
            "name": "pairs",
            "user_script": "user_script.py",
            "load_dataset_config": {"type": "load_pairs"},
            "dataloader_config": {"batch_size": 4},
        },
        base_dir=tmp_path,
    )
    batches = list(config.create_dataloader())
    assert [b[0]["input"].shape[0] for b in batches] == [4, 2]
    np.testing.assert_array_equal(batches[1][1], [0, 1])


def test_missing_user_script_function_names_data_config_and_closest_name(tmp_path):
    (tmp_path / "user_script.py").write_text(textwrap.dedent(USER_SCRIPT))
    config = DataConfig.from_json(
        {"name": "pairs", "user_script": "user_script.py", "load_dataset_config": {"type": "load_pair"}},
        json_path="data_configs[2]",
        base_dir=tmp_path,
    )
    with pytest.raises(
        WorkflowConfigError, match=r"data config 'pairs' \(data_configs\[2\]\).*'load_pair'.*'load_pairs'"
    ):
        config.check_user_script()


def test_failing_user_function_is_an_olive_error_naming_the_component(tmp_path):
    (tmp_path / "user_script.py").write_text("def broken(data_dir):\n    raise RuntimeError('disk on fire')\n")
    config = DataConfig.from_json(
        {"name": "b", "user_script": "user_script.py", "load_dataset_config": {"type": "broken"}}, base_dir=tmp_path
    )
    with pytest.raises(
        OliveError, match=r"data config 'b'.*load_dataset_config function 'broken' failed.*disk on fire"
    ):
        list(config.create_dataloader())


def test_dummy_container_makes_batches_of_given_shapes():
    config = DataConfig.from_json(
        {
            "name": "dummy",
            "type": "DummyDataContainer",
            "load_dataset_config": {
                "input_shapes": [[2, 8], [2, 8]],
                "input_names": ["input_ids", "attention_mask"],
                "input_types": ["int64", "int64"],
                "max_samples": 3,
            },
        }
    )
    batches = list(config.create_dataloader())
    assert len(batches) == 3
    assert batches[0][0]["input_ids"].shape == (2, 8)
    assert batches[0][0]["attention_mask"].dtype == np.int64


def test_content_hash_follows_the_data_not_just_the_path(tmp_path):
    _npz(tmp_path / "calib.npz")
    spec = {"name": "calib", "type": "NpzDataContainer", "load_dataset_config": {"data_path": "calib.npz"}}
    before = DataConfig.from_json(spec, base_dir=tmp_path).content_hash()
    assert DataConfig.from_json(spec, base_dir=tmp_path).content_hash() == before
    _npz(tmp_path / "calib.npz", num=11)
    assert DataConfig.from_json(spec, base_dir=tmp_path).content_hash() != before
