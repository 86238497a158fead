"""The ``.npz`` check reads headers without numpy: the same shapes, dtypes and verdicts as numpy's own reading
and :func:`check_feeds` on real arrays, and a data check that imports no numpy for plain arrays."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from olive.data.feeds import check_feed_specs, check_feeds
from olive.data.npz import read_npz_headers
from olive.exceptions import OliveError, PassConfigError

DTYPES = [
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    ">f4",
    ">i8",
]


def test_headers_match_numpys_reading_for_every_dtype(tmp_path):
    arrays = {f"a{i}": np.zeros((3, i + 1), dtype=dtype) for i, dtype in enumerate(DTYPES)}
    arrays["scalar_rows"] = np.arange(4, dtype="int64")
    np.savez(tmp_path / "d.npz", **arrays)
    headers = read_npz_headers(tmp_path / "d.npz")
    assert headers == {key: (value.shape, str(value.dtype)) for key, value in arrays.items()}


@pytest.mark.filterwarnings("ignore:Stored array in format 2.0")
def test_a_header_past_version_1_is_read(tmp_path):
    # numpy writes format 2.0 when the header does not fit in 64 KiB: a structured dtype with many fields.
    wide = np.zeros((2,), dtype=[(f"f{i}", "<f4") for i in range(6000)])
    np.savez(tmp_path / "wide.npz", x=wide, y=np.zeros((2, 3), "float32"))
    headers = read_npz_headers(tmp_path / "wide.npz")
    assert headers["y"] == ((2, 3), "float32") and headers["x"][0] == (2,)


def test_objects_and_non_arrays_are_refused_without_unpickling(tmp_path):
    np.savez(tmp_path / "objects.npz", x=np.array([{"a": 1}, None], dtype=object))
    with pytest.raises(OliveError, match="holds Python objects") as caught:
        read_npz_headers(tmp_path / "objects.npz")
    assert "allow_pickle" not in str(caught.value)
    import zipfile

    with zipfile.ZipFile(tmp_path / "junk.npz", "w") as archive:
        archive.writestr("x.npy", b"\x93NUMPY\x01\x00\xff\xffnot a header")
    with pytest.raises(OliveError, match=r"member 'x\.npy' is not a numpy array"):
        read_npz_headers(tmp_path / "junk.npz")


@pytest.mark.parametrize("cast", [False, True])
@pytest.mark.parametrize("want", ["float32", "float16", "int64", "int32", "bool"])
@pytest.mark.parametrize("got", DTYPES)
def test_the_header_check_gives_check_feeds_verdict(got, want, cast):
    io_config = {"input_names": ["x"], "input_shapes": [["batch", 4]], "input_types": [want]}
    array = np.zeros((2, 4), dtype=got)
    try:
        check_feeds({"x": array}, io_config, "data", cast=cast)
        expected = None
    except PassConfigError as exc:
        expected = exc.reason
    try:
        check_feed_specs({"x": (array.shape, str(array.dtype))}, io_config, "data", cast=cast)
        verdict = None
    except PassConfigError as exc:
        verdict = exc.reason
    assert verdict == expected


_CHECK = """
import json, sys
from olive.workflows.config import load_workflow_config
from olive.data.check import check_workflow_data
workflow = load_workflow_config(json.loads(sys.argv[1]))
check_workflow_data(workflow)
print(json.dumps(sorted(m for m in ("numpy", "onnx", "onnxruntime") if m in sys.modules)))
"""


def test_a_workflows_data_check_imports_no_numpy(tmp_path):
    from olive.testing.models import bert_like_model, save_model, write_npz_dataset

    model = save_model(bert_like_model(num_layers=1, hidden_size=32, num_heads=2), tmp_path / "m")
    data = write_npz_dataset(tmp_path / "d.npz", model, num_samples=2)
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": model.model_path},
        "data_configs": [{"name": "d", "type": "NpzDataContainer", "load_dataset_config": {"data_path": str(data)}}],
        "evaluators": {
            "e": {
                "metrics": [
                    {
                        "name": "agreement",
                        "type": "agreement",
                        "data_config": "d",
                        "sub_types": [{"name": "cosine_mean"}],
                    }
                ]
            }
        },
        "evaluator": "e",
        # Parsed, never resolved: the check needs no pass installed.
        "passes": {"quantize": {"type": "OnnxDynamicQuantization"}},
        "output_dir": str(tmp_path / "out"),
    }
    result = subprocess.run([sys.executable, "-c", _CHECK, json.dumps(workflow)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout) == []
