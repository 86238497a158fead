"""CalibrationDataReader: onnxruntime's calibration interface over a data config, with input checks."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from olive.data.calibration import CalibrationDataReader
from olive.data.config import DataConfig
from olive.exceptions import PassConfigError
from olive.testing.models import bert_like_model, mlp_model, save_model, write_npz_dataset


def _npz_config(path, name="calib", batch_size=4):
    return DataConfig.from_json(
        {
            "name": name,
            "type": "NpzDataContainer",
            "load_dataset_config": {"data_path": str(path)},
            "dataloader_config": {"batch_size": batch_size},
        }
    )


def test_reader_is_an_onnxruntime_reader_and_rewinds(tmp_path):
    from onnxruntime.quantization import CalibrationDataReader as OrtReader

    model = save_model(mlp_model(), tmp_path / "m")
    write_npz_dataset(tmp_path / "calib.npz", model, num_samples=10)
    reader = CalibrationDataReader(_npz_config(tmp_path / "calib.npz"), max_samples=7)
    assert isinstance(reader, OrtReader)
    reader.check_against(model)
    sizes = []
    while (batch := reader.get_next()) is not None:
        assert set(batch) == {"input"}
        sizes.append(batch["input"].shape[0])
    assert sizes == [4, 3]
    reader.rewind()
    assert reader.get_next()["input"].shape == (4, 16)


def test_reader_accepts_an_npz_path_and_json(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    path = write_npz_dataset(tmp_path / "calib.npz", model, num_samples=3)
    from_path = CalibrationDataReader(str(path))
    from_json = CalibrationDataReader(
        {"name": "c", "type": "NpzDataContainer", "load_dataset_config": {"data_path": str(path)}}
    )
    np.testing.assert_array_equal(from_path.get_next()["input"], from_json.get_next()["input"])


def test_static_quantization_runs_on_the_reader(tmp_path):
    from onnxruntime.quantization import QuantFormat, quantize_static

    model = save_model(mlp_model(), tmp_path / "m")
    write_npz_dataset(tmp_path / "calib.npz", model, num_samples=16)
    reader = CalibrationDataReader(_npz_config(tmp_path / "calib.npz")).check_against(model)
    out = tmp_path / "q.onnx"
    quantize_static(model.model_path, str(out), reader, quant_format=QuantFormat.QDQ)
    ops = {node.op_type for node in onnx.load(str(out)).graph.node}
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops


def test_missing_input_names_the_data_config_and_the_close_name(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    np.savez(tmp_path / "bad.npz", inputs=np.zeros((4, 16), np.float32))
    reader = CalibrationDataReader(_npz_config(tmp_path / "bad.npz", name="calib_bad"))
    with pytest.raises(
        PassConfigError,
        match=r"data config 'calib_bad'.*does not provide input\(s\) 'input'.*is 'inputs' meant to be 'input'\?",
    ):
        reader.check_against(model)


def test_wrong_rank_and_dtype_are_reported(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    np.savez(tmp_path / "rank.npz", input=np.zeros((4, 2, 16), np.float32))
    with pytest.raises(
        PassConfigError, match=r"data config 'calib'.*'input' has shape \[4, 2, 16\] \(rank 3\).*rank 2"
    ):
        CalibrationDataReader(_npz_config(tmp_path / "rank.npz")).check_against(model)
    np.savez(tmp_path / "dtype.npz", input=np.zeros((4, 16), np.float64))
    with pytest.raises(PassConfigError, match=r"'input' is float64 but model 'model.onnx' takes float32"):
        CalibrationDataReader(_npz_config(tmp_path / "dtype.npz")).check_against(model)
    np.savez(tmp_path / "dim.npz", input=np.zeros((4, 15), np.float32))
    with pytest.raises(PassConfigError, match=r"size 15 on axis 1 .*fixes it to 16"):
        CalibrationDataReader(_npz_config(tmp_path / "dim.npz")).check_against(model)


def test_int32_ids_for_an_int64_model_are_refused(tmp_path):
    model = save_model(bert_like_model(num_layers=1), tmp_path / "b")
    path = write_npz_dataset(tmp_path / "ok.npz", model, num_samples=4)
    arrays = dict(np.load(path))
    arrays["input_ids"] = arrays["input_ids"].astype(np.int32)
    np.savez(tmp_path / "int32.npz", **arrays)
    CalibrationDataReader(str(path)).check_against(model)  # the right dtypes pass
    with pytest.raises(PassConfigError, match=r"'input_ids' is int32 .*takes int64.*astype\('int64'\)"):
        CalibrationDataReader(str(tmp_path / "int32.npz")).check_against(model)


def test_extra_arrays_are_dropped_once_checked(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    np.savez(tmp_path / "extra.npz", input=np.zeros((2, 16), np.float32), notes=np.zeros((2, 3), np.float32))
    reader = CalibrationDataReader(str(tmp_path / "extra.npz")).check_against(model)
    assert set(reader.get_next()) == {"input"}


def test_single_positional_input_from_user_script_is_bound_to_the_model_input(tmp_path):
    (tmp_path / "us.py").write_text(
        "import numpy as np\ndef load(data_dir):\n    return [(np.full(16, i, np.float32), i) for i in range(3)]\n"
    )
    model = save_model(mlp_model(), tmp_path / "m")
    config = DataConfig.from_json(
        {"name": "pos", "user_script": "us.py", "load_dataset_config": {"type": "load"}}, base_dir=tmp_path
    )
    reader = CalibrationDataReader(config).check_against(model)
    first = reader.get_next()
    assert list(first) == ["input"] and first["input"].shape == (1, 16)


def test_importing_data_modules_stays_light():
    code = (
        "import sys\nimport olive.data, olive.data.config, olive.data.calibration\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'onnxruntime', 'onnx'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_fixed_batch_model_rejects_a_larger_batch(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "fixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    model = save_model(proto, tmp_path / "f")
    np.savez(tmp_path / "x.npz", x=np.zeros((8, 4), np.float32))
    with pytest.raises(PassConfigError, match=r"size 4 on axis 0 .*fixes it to 1"):
        CalibrationDataReader(_npz_config(tmp_path / "x.npz")).check_against(model)
    CalibrationDataReader(_npz_config(tmp_path / "x.npz", batch_size=1)).check_against(model)


def test_olive_style_data_container_gives_a_calibration_reader(tmp_path):
    from onnxruntime.quantization import CalibrationDataReader as OrtReader

    model = save_model(mlp_model(), tmp_path / "m")
    write_npz_dataset(tmp_path / "calib.npz", model, num_samples=6)
    container = _npz_config(tmp_path / "calib.npz").to_data_container()
    reader = container.create_calibration_dataloader(max_samples=5)
    assert isinstance(reader, OrtReader)
    assert [b["input"].shape[0] for b in iter(reader.get_next, None)] == [4, 1]
    assert [b[0]["input"].shape[0] for b in container.create_dataloader(batch_size=3)] == [3, 3]
