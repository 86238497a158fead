"""OliveEvaluator on real onnxruntime sessions: every metric type measured on small real models."""

from __future__ import annotations

import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from olive.data.config import DataConfig
from olive.evaluator.evaluator import OliveEvaluator
from olive.evaluator.metric import parse_metrics
from olive.exceptions import OliveError, PassConfigError, WorkflowConfigError
from olive.measure.int8_kernel import int8_matmul_saturates, reduce_range_for
from olive.model.handler import ONNXModelHandler
from olive.testing.models import bert_like_model, mlp_model, random_inputs, save_model, write_npz_dataset


def _evaluator(metrics, data_configs=None, **kwargs):
    data_configs = data_configs or {}
    return OliveEvaluator(parse_metrics(metrics, data_config_names=set(data_configs)), data_configs, **kwargs)


def _npz_config(name, path, batch_size=4):
    return DataConfig.from_json(
        {
            "name": name,
            "type": "NpzDataContainer",
            "load_dataset_config": {"data_path": str(path)},
            "dataloader_config": {"batch_size": batch_size},
        }
    )


def _identity_classifier(tmp_path, num_classes=5):
    graph = helper.make_graph(
        [helper.make_node("Identity", ["logits"], ["scores"])],
        "identity_classifier",
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", num_classes])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", num_classes])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    return save_model(proto, tmp_path / "identity")


def _perturbed(proto, initializer, scale, seed=1):
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    rng = np.random.default_rng(seed)
    for index, init in enumerate(proto.graph.initializer):
        if init.name == initializer:
            array = numpy_helper.to_array(init)
            noisy = (array + rng.standard_normal(array.shape) * scale).astype(array.dtype)
            proto.graph.initializer[index].CopyFrom(numpy_helper.from_array(noisy, init.name))
            return proto
    raise AssertionError(f"no initializer {initializer}")


# ------------------------------------------------------------------------------------------ latency


def test_latency_grows_with_compute_and_throughput_shrinks(tmp_path):
    small = save_model(mlp_model(in_features=16, hidden=32, out_features=8), tmp_path / "small")
    big = save_model(mlp_model(in_features=512, hidden=2048, out_features=512), tmp_path / "big")  # ~2700x the MACs
    evaluator = _evaluator(
        [
            {
                "name": "latency",
                "type": "latency",
                "sub_types": ["avg", "p50", "min", "max", "p99"],
                "user_config": {"warmup_num": 3, "repeat_test_num": 30},
            },
            {"name": "throughput", "type": "throughput", "sub_types": ["p50"], "warmup_num": 3, "repeat_test_num": 30},
        ]
    )
    fast, slow = evaluator.evaluate(small), evaluator.evaluate(big)
    assert slow["latency-p50"].value > 3 * fast["latency-p50"].value
    assert fast["throughput-p50"].value > 3 * slow["throughput-p50"].value
    lat = {k.split("-")[1]: v.value for k, v in fast.items() if k.startswith("latency")}
    assert 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"]
    assert lat["min"] <= lat["avg"] <= lat["max"]
    assert fast["latency-avg"].higher_is_better is False and fast["throughput-p50"].higher_is_better is True
    meta = fast.metadata["latency"]
    assert meta["synthetic_inputs"] is True and meta["repeat_test_num"] == 30 and meta["unit"] == "ms"


def test_ratio_sub_types_time_the_model_against_the_reference_in_alternating_rounds(tmp_path):
    light = save_model(mlp_model(in_features=64, hidden=32, out_features=8), tmp_path / "light")
    heavy = save_model(mlp_model(in_features=64, hidden=8192, out_features=8), tmp_path / "heavy")  # ~200x the MACs
    evaluator = _evaluator(
        [
            {
                "name": "latency",
                "type": "latency",
                "sub_types": ["p50", "ratio_p50", "ratio_avg"],
                "warmup_num": 2,
                "repeat_test_num": 20,
            },
            {"name": "tp", "type": "throughput", "sub_types": ["ratio_p50"], "warmup_num": 2, "repeat_test_num": 10},
        ]
    )
    result = evaluator.evaluate(heavy, reference_model=light)
    paired = result.metadata["latency"]["paired_with"]
    assert paired["model"] == str(light.model_path)
    # Each run is taken against the reference's median in its own round, so the ratio tracks p50 / p50.
    assert result["latency-ratio_p50"].value == pytest.approx(result["latency-p50"].value / paired["p50"], rel=0.5)
    assert result["latency-ratio_p50"].higher_is_better is False
    assert result["latency-ratio_p50"].value > 3
    # Throughput ratios point the other way: the heavy model serves a fraction of the light one's rate.
    assert result["tp-ratio_p50"].higher_is_better is True and result["tp-ratio_p50"].value < 1 / 3
    assert evaluator.evaluate(light, reference_model=heavy)["latency-ratio_p50"].value < 1 / 3
    # Against itself the ratio is 1 and nothing else is timed.
    alone = evaluator.evaluate(light)
    assert alone["latency-ratio_p50"].value == 1.0 and "paired_with" not in alone.metadata["latency"]


def test_latency_uses_the_first_batch_of_the_data(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    write_npz_dataset(tmp_path / "d.npz", model, num_samples=20)
    evaluator = _evaluator(
        [{"name": "tp", "type": "throughput", "data_config": "d", "warmup_num": 1, "repeat_test_num": 3}],
        {"d": _npz_config("d", tmp_path / "d.npz", batch_size=8)},
    )
    result = evaluator.evaluate(model)
    assert result.metadata["tp"]["batch_size"] == 8 and result.metadata["tp"]["synthetic_inputs"] is False


def test_latency_with_io_binding(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    evaluator = _evaluator(
        [{"name": "latency", "type": "latency", "user_config": {"io_bind": True, "repeat_test_num": 5}}]
    )
    result = evaluator.evaluate(model)
    assert result["latency-avg"].value > 0 and result.metadata["latency"]["io_bind"] is True


def test_sessions_use_the_models_inference_settings(tmp_path):
    path = save_model(mlp_model(), tmp_path / "m").model_path
    tuned = ONNXModelHandler(
        path,
        inference_settings={
            "execution_provider": ["CPUExecutionProvider"],
            "session_options": {
                "intra_op_num_threads": 1,
                "graph_optimization_level": "ORT_DISABLE_ALL",
                "execution_mode": "ORT_PARALLEL",
                "inter_op_num_threads": 2,
            },
        },
    )
    evaluator = _evaluator(
        [
            {
                "name": "latency",
                "type": "latency",
                "warmup_num": 0,
                "repeat_test_num": 2,
                "user_config": {"inference_settings": {"session_options": {"intra_op_num_threads": 3}}},
            }
        ]
    )
    tuned_meta = evaluator.evaluate(tuned).metadata["latency"]
    assert tuned_meta["session_options"] == {
        "intra_op_num_threads": 1,
        "inter_op_num_threads": 2,
        "execution_mode": "ORT_PARALLEL",
        "graph_optimization_level": "ORT_DISABLE_ALL",
    }
    assert tuned_meta["providers"] == ["CPUExecutionProvider"]
    # the model's session options win key by key over the metric's
    partial = ONNXModelHandler(path, inference_settings={"session_options": {"inter_op_num_threads": 2}})
    partial_meta = evaluator.evaluate(partial).metadata["latency"]
    assert partial_meta["session_options"]["intra_op_num_threads"] == 3
    assert partial_meta["session_options"]["inter_op_num_threads"] == 2
    # without model settings, the metric's own inference_settings apply
    plain_meta = evaluator.evaluate(ONNXModelHandler(path)).metadata["latency"]
    assert plain_meta["session_options"]["intra_op_num_threads"] == 3
    assert plain_meta["session_options"]["graph_optimization_level"] == "ORT_ENABLE_ALL"
    # Microsoft Olive's form keys them by framework
    olive_style = _evaluator(
        [
            {
                "name": "latency",
                "type": "latency",
                "warmup_num": 0,
                "repeat_test_num": 2,
                "user_config": {"inference_settings": {"onnx": {"session_options": {"intra_op_num_threads": 2}}}},
            }
        ]
    )
    assert (
        olive_style.evaluate(ONNXModelHandler(path)).metadata["latency"]["session_options"]["intra_op_num_threads"] == 2
    )


def test_bad_inference_settings_are_an_olive_error(tmp_path):
    model = ONNXModelHandler(
        save_model(mlp_model(), tmp_path / "m").model_path,
        inference_settings={"session_options": {"intra_op_threads": 1}},
    )
    with pytest.raises(OliveError, match="unknown onnxruntime session option 'intra_op_threads'"):
        _evaluator([{"name": "latency", "type": "latency"}]).evaluate(model)


# ------------------------------------------------------------------------------------------ accuracy


def test_identity_classifier_is_fully_accurate_and_shuffled_labels_are_not(tmp_path):
    model = _identity_classifier(tmp_path)
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((40, 5)).astype(np.float32)
    labels = logits.argmax(axis=1)
    np.savez(tmp_path / "right.npz", logits=logits, labels=labels)
    np.savez(tmp_path / "shuffled.npz", logits=logits, labels=rng.permutation(labels))
    metrics = [
        {
            "name": "acc",
            "type": "accuracy",
            "data_config": "right",
            "sub_types": ["accuracy_score", "f1_score", "precision", "recall"],
        },
        {"name": "acc_shuffled", "type": "accuracy", "data_config": "shuffled", "sub_types": ["accuracy_score"]},
    ]
    result = _evaluator(
        metrics,
        {
            "right": _npz_config("right", tmp_path / "right.npz", 8),
            "shuffled": _npz_config("shuffled", tmp_path / "shuffled.npz", 8),
        },
    ).evaluate(model)
    for sub in ("accuracy_score", "f1_score", "precision", "recall"):
        assert result[f"acc-{sub}"].value == 1.0
    assert result["acc_shuffled-accuracy_score"].value < 0.6
    assert result.metadata["acc"]["num_samples"] == 40


def test_precision_recall_f1_match_hand_computed_values(tmp_path):
    model = _identity_classifier(tmp_path, num_classes=3)
    preds = np.array([0, 1, 1, 2, 2, 2])
    labels = np.array([0, 1, 2, 2, 2, 0])
    np.savez(tmp_path / "d.npz", logits=np.eye(3, dtype=np.float32)[preds], labels=labels)
    subs = [{"name": "accuracy_score"}, {"name": "precision"}, {"name": "recall"}, {"name": "f1_score"}]
    metrics = [
        {"name": "macro", "type": "accuracy", "data_config": "d", "sub_types": subs},
        {
            "name": "micro",
            "type": "accuracy",
            "data_config": "d",
            "sub_types": [{"name": "precision", "metric_config": {"average": "micro"}}],
        },
        {
            "name": "weighted",
            "type": "accuracy",
            "data_config": "d",
            "sub_types": [{"name": "precision", "metric_config": {"average": "weighted"}}],
        },
    ]
    result = _evaluator(metrics, {"d": _npz_config("d", tmp_path / "d.npz", 4)}).evaluate(model)
    assert result["macro-accuracy_score"].value == pytest.approx(4 / 6)
    assert result["macro-precision"].value == pytest.approx((1 + 0.5 + 2 / 3) / 3)
    assert result["macro-recall"].value == pytest.approx((0.5 + 1 + 2 / 3) / 3)
    assert result["macro-f1_score"].value == pytest.approx(2 / 3)
    assert result["micro-precision"].value == pytest.approx(4 / 6)
    assert result["weighted-precision"].value == pytest.approx((1 * 2 + 0.5 * 1 + 2 / 3 * 3) / 6)


def test_accuracy_without_labels_says_how_to_add_them(tmp_path):
    model = _identity_classifier(tmp_path)
    np.savez(tmp_path / "d.npz", logits=np.zeros((4, 5), np.float32))
    evaluator = _evaluator(
        [{"name": "acc", "type": "accuracy", "data_config": "d"}], {"d": _npz_config("d", tmp_path / "d.npz")}
    )
    # A WorkflowConfigError, so `olive run` exits 2 as for any other data that does not fit the workflow.
    with pytest.raises(WorkflowConfigError, match=r"metric 'acc'.*needs labels.*data config 'd'.*'labels' array"):
        evaluator.evaluate(model)


# ------------------------------------------------------------------------------------------ agreement


def test_agreement_with_itself_is_perfect_and_with_a_perturbed_copy_is_not(tmp_path):
    proto = mlp_model()
    reference = save_model(proto, tmp_path / "ref")
    same = save_model(proto, tmp_path / "same")
    noisy = save_model(_perturbed(proto, "fc2.weight", 0.3), tmp_path / "noisy")
    write_npz_dataset(tmp_path / "d.npz", reference, num_samples=32)
    evaluator = _evaluator(
        [
            {
                "name": "agree",
                "type": "agreement",
                "data_config": "d",
                "sub_types": ["cosine_mean", "cosine_min", "max_abs_diff", "top1"],
            }
        ],
        {"d": _npz_config("d", tmp_path / "d.npz", 8)},
    )
    perfect = evaluator.evaluate(same, reference_model=reference)
    assert perfect["agree-cosine_mean"].value == 1.0
    assert perfect["agree-cosine_min"].value == 1.0
    assert perfect["agree-max_abs_diff"].value == 0.0
    assert perfect["agree-top1"].value == 1.0
    worse = evaluator.evaluate(noisy, reference_model=reference)
    assert worse["agree-cosine_min"].value <= worse["agree-cosine_mean"].value < 0.999
    assert worse["agree-max_abs_diff"].value > 0.01
    assert worse["agree-top1"].value < 1.0
    assert worse.metadata["agree"]["reference_model"] == reference.model_path
    # reference outputs are computed once per reference and data
    assert len(evaluator.sources.reference_outputs) == 1


def test_agreement_against_a_float16_copy_casts_the_feeds(tmp_path):
    from onnx import numpy_helper as nh

    proto = mlp_model()
    reference = save_model(proto, tmp_path / "ref")
    half = onnx.ModelProto.FromString(proto.SerializeToString())
    for index, init in enumerate(half.graph.initializer):
        half.graph.initializer[index].CopyFrom(nh.from_array(nh.to_array(init).astype(np.float16), init.name))
    for value in (*half.graph.input, *half.graph.output):
        value.type.tensor_type.elem_type = TensorProto.FLOAT16
    candidate = save_model(half, tmp_path / "half")
    write_npz_dataset(tmp_path / "d.npz", reference, num_samples=8)  # float32 data
    evaluator = _evaluator(
        [{"name": "agree", "type": "agreement", "data_config": "d", "sub_types": ["cosine_min", "max_abs_diff"]}],
        {"d": _npz_config("d", tmp_path / "d.npz")},
    )
    result = evaluator.evaluate(candidate, reference_model=reference)
    assert 0.999 < result["agree-cosine_min"].value < 1.0
    assert 0 < result["agree-max_abs_diff"].value < 0.05


def test_agreement_mean_pools_with_the_attention_mask(tmp_path):
    proto = bert_like_model(num_layers=1)
    reference = save_model(proto, tmp_path / "ref")
    candidate = save_model(_perturbed(proto, proto.graph.initializer[-3].name, 0.5), tmp_path / "cand")
    inputs = random_inputs(reference, batch_size=6, sequence_length=12, seed=3)
    inputs["attention_mask"][:, 7:] = 0  # padding the pooling must ignore
    np.savez(tmp_path / "d.npz", **inputs)
    evaluator = _evaluator(
        [
            {
                "name": "agree",
                "type": "agreement",
                "data_config": "d",
                "pooling": "mean",
                "output_name": "last_hidden_state",
                "sub_types": ["cosine_mean", "cosine_min"],
            }
        ],
        {"d": _npz_config("d", tmp_path / "d.npz", 4)},
    )
    result = evaluator.evaluate(candidate, reference_model=reference)

    def pooled(model):
        out = model.prepare_session().run(["last_hidden_state"], inputs)[0]
        mask = inputs["attention_mask"][..., None].astype(np.float64)
        return (out * mask).sum(axis=1) / mask.sum(axis=1)

    a, b = pooled(candidate), pooled(reference)
    cosine = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert result["agree-cosine_mean"].value == pytest.approx(cosine.mean(), abs=1e-6)
    assert result["agree-cosine_min"].value == pytest.approx(cosine.min(), abs=1e-6)
    assert cosine.min() < 0.9999


def _dynamic_int8(reference, path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    path.mkdir(parents=True)
    # As Olive's int8 passes quantize on this CPU: 7-bit weights where onnxruntime's int8 MatMul saturates.
    reduce_range = reduce_range_for("CPUExecutionProvider")
    quantize_dynamic(
        str(reference.model_path), str(path / "model.onnx"), weight_type=QuantType.QInt8, reduce_range=reduce_range
    )
    return ONNXModelHandler(model_path=str(path / "model.onnx"))


def _trim_metric(**options):
    return {
        "name": "agree",
        "type": "agreement",
        "data_config": "d",
        "pooling": "mean",
        "output_name": "last_hidden_state",
        "sub_types": ["cosine_mean", "cosine_min"],
        **options,
    }


@pytest.mark.int8_kernel
def test_agreement_trim_padding_scores_each_sample_at_its_real_length(tmp_path):
    """Dynamic int8 takes activation ranges over padding too; trimmed, a sample scores as it would served alone."""
    proto = bert_like_model(num_layers=1)
    # Like a real tokenizer's [PAD], token 0 stands out after the embedding LayerNorm (one large feature), so
    # padded positions widen the activation ranges dynamic int8 takes over the whole sequence.
    table = next(init for init in proto.graph.initializer if init.name == "embeddings.word_embeddings.weight")
    weights = numpy_helper.to_array(table).copy()
    weights[0] = 0.0
    weights[0, 0] = 10.0
    table.CopyFrom(numpy_helper.from_array(weights, table.name))
    reference = save_model(proto, tmp_path / "ref")
    candidate = _dynamic_int8(reference, tmp_path / "int8")
    inputs = random_inputs(reference, batch_size=6, sequence_length=12, seed=3)
    lengths = [3, 5, 7, 9, 11, 12]
    inputs["input_ids"] = np.maximum(inputs["input_ids"], 1)
    for row, length in enumerate(lengths):
        inputs["attention_mask"][row, length:] = 0
        inputs["input_ids"][row, length:] = 0
    np.savez(tmp_path / "d.npz", **inputs)
    data = {"d": _npz_config("d", tmp_path / "d.npz", 1)}
    trimmed = _evaluator([_trim_metric(trim_padding=True)], data).evaluate(candidate, reference_model=reference)
    padded = _evaluator([_trim_metric()], data).evaluate(candidate, reference_model=reference)

    def pooled_alone(model):
        session = model.prepare_session()
        rows = []
        for row, length in enumerate(lengths):
            alone = {name: value[row : row + 1, :length] for name, value in inputs.items()}
            rows.append(session.run(["last_hidden_state"], alone)[0][0].mean(axis=0))
        return np.asarray(rows, dtype=np.float64)

    a, b = pooled_alone(candidate), pooled_alone(reference)
    cosine = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert trimmed["agree-cosine_min"].value == pytest.approx(cosine.min(), abs=1e-6)
    assert trimmed["agree-cosine_mean"].value == pytest.approx(cosine.mean(), abs=1e-6)
    # Scored padded, the [PAD] positions enter the int8 activation ranges: another measurement.
    gap = trimmed["agree-cosine_min"].value - padded["agree-cosine_min"].value
    assert abs(gap) > 1e-5, (padded, trimmed)
    if not int8_matmul_saturates():
        # Where int8 sums are exact, the wider ranges only cost the real tokens precision. Where onnxruntime's
        # int8 MatMul saturates (x86-64 without VNNI), the 7-bit weights' own error is as large and the sign of
        # the gap varies with the samples.
        assert gap > 1e-5, (padded, trimmed)


def test_agreement_trim_padding_needs_batches_of_one_and_agreement(tmp_path):
    reference = save_model(bert_like_model(num_layers=1), tmp_path / "ref")
    write_npz_dataset(tmp_path / "d.npz", reference, num_samples=4, sequence_length=8)
    data = {"d": _npz_config("d", tmp_path / "d.npz", 4)}
    with pytest.raises(OliveError, match=r"trim_padding: .*batches must hold one sample.*batch_size to 1"):
        _evaluator([_trim_metric(trim_padding=True)], data).evaluate(reference, reference_model=reference)
    data = {"d": _npz_config("d", tmp_path / "d.npz", 1)}
    with pytest.raises(OliveError, match=r"trim_padding: the data has no 'mask' input"):
        _evaluator([_trim_metric(trim_padding=True, mask_input="mask")], data).evaluate(reference)
    with pytest.raises(WorkflowConfigError, match=r"trim_padding.*agreement metrics only"):
        _evaluator([{"name": "lat", "type": "latency", "trim_padding": True}])
    with pytest.raises(WorkflowConfigError, match=r"trim_padding.*expected true or false"):
        _evaluator([_trim_metric(trim_padding="yes")], data)


def test_agreement_without_reference_compares_with_itself_and_bad_output_name_is_named(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    result = _evaluator([{"name": "agree", "type": "agreement"}]).evaluate(model)
    assert result["agree-cosine_mean"].value == pytest.approx(1.0)
    assert result.metadata["agree"]["reference_model"] == "self"
    with pytest.raises(OliveError, match=r"output_name: model .* has no output 'ouput' \(did you mean 'output'\?\)"):
        _evaluator([{"name": "agree", "type": "agreement", "output_name": "ouput"}]).evaluate(model)


# ------------------------------------------------------------------------------------------ size


def test_size_on_disk_counts_external_data(tmp_path):
    proto = mlp_model(in_features=64, hidden=128)
    inline = save_model(proto, tmp_path / "inline")
    external_dir = tmp_path / "external"
    external_dir.mkdir()
    onnx.save_model(
        proto,
        str(external_dir / "model.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
        size_threshold=0,
    )
    evaluator = _evaluator([{"name": "size", "type": "size_on_disk"}])
    assert evaluator.evaluate(inline)["size-bytes"].value == (tmp_path / "inline" / "model.onnx").stat().st_size
    external = ONNXModelHandler(str(external_dir))
    expected = (external_dir / "model.onnx").stat().st_size + (external_dir / "model.onnx.data").stat().st_size
    assert (external_dir / "model.onnx.data").stat().st_size > 64 * 128 * 4
    assert evaluator.evaluate(external)["size-bytes"].value == expected


# ------------------------------------------------------------------------------------------ custom and plugin

CUSTOM_SCRIPT = """
    import numpy as np

    def mean_output(model, data, execution_providers=None, scale=1.0):
        session = model.prepare_session(execution_providers=execution_providers)
        total, count = 0.0, 0
        for inputs, _ in data:
            out = session.run(None, inputs)[0]
            total += float(out.sum())
            count += out.size
        return {"mean": scale * total / count, "count": count}

    def olive_style(model, device, execution_providers, **kwargs):
        # Microsoft Olive's evaluate_func signature
        return float(kwargs["offset"]) + (1.0 if device == "cpu" else 0.0)

    def matches(model_output, targets):
        preds, logits = model_output
        return float((preds == targets).mean())

    def broken(model, data):
        raise ValueError("no GPU here")
"""


def test_custom_metric_from_a_real_user_script(tmp_path):
    (tmp_path / "user_script.py").write_text(textwrap.dedent(CUSTOM_SCRIPT))
    model = save_model(mlp_model(), tmp_path / "m")
    write_npz_dataset(tmp_path / "d.npz", model, num_samples=12, with_labels=True)
    data = {"d": _npz_config("d", tmp_path / "d.npz", 5)}
    evaluator = _evaluator(
        [
            {
                "name": "stats",
                "type": "custom",
                "data_config": "d",
                "sub_types": [
                    {"name": "mean", "higher_is_better": True, "priority": 1},
                    {"name": "count", "higher_is_better": True},
                ],
                "user_config": {
                    "user_script": "user_script.py",
                    "evaluate_func": "mean_output",
                    "evaluate_func_kwargs": {"scale": 2.0},
                },
            },
            {
                "name": "legacy",
                "type": "custom",
                "sub_types": [{"name": "score", "higher_is_better": False}],
                "user_config": {"evaluate_func": "olive_style", "evaluate_func_kwargs": {"offset": 41}},
            },
            {
                "name": "match",
                "type": "custom",
                "data_config": "d",
                "sub_types": [{"name": "rate", "higher_is_better": True}],
                "user_config": {"metric_func": "matches"},
            },
        ],
        data,
        user_script="user_script.py",
        base_dir=tmp_path,
    )
    result = evaluator.evaluate(model)
    arrays = np.load(tmp_path / "d.npz")
    out = model.prepare_session().run(None, {"input": arrays["input"]})[0]
    assert result["stats-mean"].value == pytest.approx(2.0 * out.mean(), rel=1e-5)
    assert result["stats-count"].value == out.size
    assert result["legacy-score"].value == 42.0 and result["legacy-score"].higher_is_better is False
    assert result["match-rate"].value == 1.0  # labels are the model's own predictions


def test_custom_metric_function_missing_or_failing(tmp_path):
    (tmp_path / "user_script.py").write_text(textwrap.dedent(CUSTOM_SCRIPT))
    model = save_model(mlp_model(), tmp_path / "m")
    missing = _evaluator(
        [
            {
                "name": "c",
                "type": "custom",
                "sub_types": [{"name": "v", "higher_is_better": True}],
                "user_config": {"user_script": "user_script.py", "evaluate_func": "mean_outputs"},
            }
        ],
        base_dir=tmp_path,
    )
    with pytest.raises(
        WorkflowConfigError,
        match=r"metrics\[0\].user_config.evaluate_func: function 'mean_outputs' is not "
        r"defined in user script .*\(did you mean 'mean_output'\?\)",
    ):
        missing.validate()
    no_script = _evaluator(
        [
            {
                "name": "c",
                "type": "custom",
                "sub_types": [{"name": "v", "higher_is_better": True}],
                "user_config": {"evaluate_func": "mean_output"},
            }
        ]
    )
    with pytest.raises(
        WorkflowConfigError,
        match=r"user_config.user_script: metric 'c' names function 'mean_output' but no user_script",
    ):
        no_script.evaluate(model)
    failing = _evaluator(
        [
            {
                "name": "c",
                "type": "custom",
                "sub_types": [{"name": "v", "higher_is_better": True}],
                "user_config": {"evaluate_func": "broken"},
            }
        ],
        user_script=tmp_path / "user_script.py",
    )
    with pytest.raises(
        OliveError, match=r"metric 'c' \(evaluators.common.metrics\[0\]\): evaluate_func raised ValueError: no GPU here"
    ):
        failing.evaluate(model)


def test_plugin_metric_registered_through_the_hook(tmp_path):
    from olive.plugins.manager import new_plugin_manager, use_plugin_manager

    class NodeCountPlugin:
        def olive_register_metrics(self, register):
            def evaluate(model, metric, data):
                assert metric["type"] == "node_count"
                seen.append(data.name if data is not None else None)
                return {"nodes": float(len(model.load_model().graph.node))}

            evaluate.higher_is_better = False
            register("node_count", evaluate)

    seen: list = []
    pm = new_plugin_manager(entry_points=False)
    pm.register_checked(NodeCountPlugin(), "test:node_count")
    model = save_model(mlp_model(), tmp_path / "m")
    write_npz_dataset(tmp_path / "d.npz", model, num_samples=2)
    with use_plugin_manager(pm):
        evaluator = _evaluator(
            [
                {
                    "name": "graph",
                    "type": "node_count",
                    "data_config": "d",
                    "sub_types": [{"name": "nodes", "priority": 1}],
                }
            ],
            {"d": _npz_config("d", tmp_path / "d.npz")},
        )
        result = evaluator.evaluate(model)
        with pytest.raises(
            WorkflowConfigError, match=r"unknown metric type 'node_cont' \(did you mean 'node_count'\?\)"
        ):
            parse_metrics([{"name": "g", "type": "node_cont"}])
    assert result["graph-nodes"].value == 5.0 and result["graph-nodes"].higher_is_better is False
    assert seen == ["d"]


# ------------------------------------------------------------------------------------------ data errors


def test_data_that_does_not_fit_the_model_names_the_data_config_and_metric(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    np.savez(tmp_path / "bad.npz", x=np.zeros((4, 16), np.float32))
    evaluator = _evaluator(
        [{"name": "latency", "type": "latency", "data_config": "calib"}],
        {"calib": _npz_config("calib", tmp_path / "bad.npz")},
    )
    with pytest.raises(
        PassConfigError,
        match=r"data config 'calib' \(data_configs\[0\]\) \(used by metric 'latency'\) does not provide "
        r"input\(s\) 'input' of model 'model.onnx' \(the data has 'x'; the model takes 'input'\); key",
    ):
        evaluator.evaluate(model)


def test_unknown_data_config_is_caught_when_the_evaluator_is_built():
    metrics = parse_metrics([{"name": "latency", "type": "latency", "data_config": "calib"}], "evaluators.e.metrics")
    with pytest.raises(
        WorkflowConfigError, match=r"evaluators.e.metrics\[0\].data_config: no data config named 'calib'"
    ):
        OliveEvaluator(metrics, {})
