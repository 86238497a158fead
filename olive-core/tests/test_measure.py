"""olive.measure: the one definition of every number Olive measures, checked against hand-computed values
and real onnxruntime sessions."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from olive.data.config import DataConfig
from olive.evaluator.evaluator import OliveEvaluator
from olive.evaluator.metric import parse_metrics
from olive.exceptions import ModelLoadError, OliveError
from olive.measure import (
    AGREEMENT_SCORES,
    FREE_DIM_SIZE,
    ModelRunError,
    OutputVectors,
    ReferenceOutputs,
    agreement_scores,
    check_one_sample,
    concrete_shape,
    cosine_similarities,
    create_session,
    describe_session,
    first_token,
    interleaved_runs,
    latency_summary,
    mean_pool,
    paired_round_size,
    pool,
    ratios_to_reference,
    samples_at_real_length,
    session_runner,
    session_setup,
    synthetic_inputs,
    timed_runs,
    trim_right_padding,
)
from olive.testing.models import bert_like_model, mlp_model, random_inputs, save_model, write_npz_dataset

# ------------------------------------------------------------------------------------------ agreement


def test_identical_outputs_agree_exactly():
    x = np.random.default_rng(0).standard_normal((4, 7))
    naive = (x * x).sum(axis=1) / (np.linalg.norm(x, axis=1) ** 2)
    assert not np.all(naive == 1.0)  # the plain formula is off by a rounding error for some sample
    assert agreement_scores(x, x.copy()) == {"cosine_mean": 1.0, "cosine_min": 1.0, "max_abs_diff": 0.0, "top1": 1.0}
    assert set(AGREEMENT_SCORES) == {"cosine_mean", "cosine_min", "max_abs_diff", "top1"}


def test_zero_vectors_opposites_and_hand_computed_cosines():
    reference = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 2.0], [3.0, 4.0]])
    candidate = np.array([[0.0, 0.0], [0.0, 0.0], [-1.0, -2.0], [4.0, 3.0]])
    cosines = cosine_similarities(candidate, reference)
    # two zero vectors agree fully; zero against non-zero is 0; opposite vectors are -1; 24/25 by hand
    assert cosines.tolist() == pytest.approx([1.0, 0.0, -1.0, 24 / 25], abs=1e-15)
    assert np.all((cosines >= -1.0) & (cosines <= 1.0))
    scores = agreement_scores(candidate, reference)
    assert scores["cosine_min"] == pytest.approx(-1.0)
    assert scores["cosine_mean"] == pytest.approx((1.0 + 0.0 - 1.0 + 24 / 25) / 4)
    assert scores["max_abs_diff"] == 4.0  # |-2 - 2|
    assert scores["top1"] == 0.5  # argmax agrees on the zero rows' 0 and on no other


def test_agreement_of_different_shapes_or_no_sample_is_an_error():
    with pytest.raises(OliveError, match=r"shapes \[2, 3\] and \[2, 4\]"):
        agreement_scores(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(OliveError, match="no sample to compare"):
        agreement_scores(np.zeros((0, 3)), np.zeros((0, 3)))


def test_batches_of_different_shapes_are_compared_batch_by_batch():
    candidate = [np.ones((1, 2, 3)), np.full((1, 4, 3), 2.0)]
    reference = [np.ones((1, 2, 3)), np.ones((1, 4, 3))]
    scores = agreement_scores(candidate, reference)
    assert scores["cosine_min"] == pytest.approx(1.0) and scores["max_abs_diff"] == 1.0
    assert cosine_similarities(candidate, reference).shape == (2,)
    with pytest.raises(OliveError, match="2 batches of outputs against 1"):
        agreement_scores(candidate, reference[:1])
    with pytest.raises(OliveError, match="a list of batches with a list of batches"):
        agreement_scores(candidate, reference[0])


# ------------------------------------------------------------------------------------------ pooling


def test_mean_pooling_leaves_out_masked_positions():
    output = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    mask = np.array([[1, 1, 0], [0, 0, 0]])
    pooled = mean_pool(output, mask)
    assert pooled.tolist() == [[1.0, 2.0], [0.0, 0.0]]  # mean of the first two tokens; an empty mask pools to 0
    assert mean_pool(output).tolist() == output.mean(axis=1).tolist()
    assert first_token(output).tolist() == output[:, 0].tolist()
    assert pool(output, "none").dtype == np.float64 and pool(output, None).shape == (2, 3, 2)


def test_pooling_checks_the_mask_and_output_shapes():
    output = np.zeros((2, 6, 3))
    with pytest.raises(OliveError, match=r"mask_input 'attention_mask' has shape \[2, 5\] but output 'hidden' has"):
        mean_pool(output, np.ones((2, 5)), output_name="hidden", mask_name="attention_mask")
    with pytest.raises(OliveError, match=r"pooling 'mean' needs outputs shaped \[batch, sequence"):
        mean_pool(np.zeros((2, 3)))
    with pytest.raises(OliveError, match=r"pooling 'meen' is unknown \(did you mean 'mean'\?\); use mean, cls or none"):
        pool(output, "meen")


# ------------------------------------------------------------------------------------------ outputs


def test_output_vectors_keep_one_output_and_join_several():
    feeds = {"attention_mask": np.array([[1, 1, 0]])}
    tokens = np.ones((1, 3, 4))
    logits = np.arange(6.0).reshape(1, 2, 3)
    assert OutputVectors().of({"logits": logits}, feeds).shape == (1, 2, 3)  # top1 still sees the last axis
    joined = OutputVectors(["tokens", "logits"], pooling="mean", mask_input="attention_mask")
    with pytest.raises(OliveError, match=r"pooling 'mean' needs outputs shaped"):
        joined.of({"tokens": tokens, "logits": np.ones((1, 3))}, feeds)
    both = OutputVectors(["tokens", "logits"]).of({"tokens": tokens, "logits": logits}, feeds)
    assert both.shape == (1, 12 + 6)
    io_config = {"output_names": ["tokens"], "input_names": ["ids", "attention_mask"]}
    with pytest.raises(OliveError, match=r"output_name 'token' is not an output.*did you mean 'tokens'"):
        OutputVectors(["token"], owner="pass x").check(io_config)
    with pytest.raises(OliveError, match=r"mask_input 'mask' is not an input"):
        OutputVectors(pooling="mean", mask_input="mask").check(io_config)


# ------------------------------------------------------------------------------------------ padding


def test_trim_right_padding_cuts_only_trailing_padding_on_free_axes():
    io_config = {"input_names": ["ids", "attention_mask", "fixed"], "input_shapes": [["b", "s"], ["b", "s"], [1, 4]]}
    sample = {
        "ids": np.array([[5, 6, 0, 0]]),
        "attention_mask": np.array([[1, 1, 0, 0]]),
        "fixed": np.array([[1, 2, 3, 4]]),
    }
    trimmed = trim_right_padding(sample, "attention_mask", io_config)
    assert trimmed["ids"].tolist() == [[5, 6]] and trimmed["attention_mask"].tolist() == [[1, 1]]
    assert trimmed["fixed"].shape == (1, 4)  # the model fixes that axis
    left = {**sample, "attention_mask": np.array([[0, 0, 1, 1]])}
    assert trim_right_padding(left, "attention_mask", io_config)["ids"].shape == (1, 4)
    batch = {name: np.concatenate([value, value]) for name, value in sample.items()}
    batch["attention_mask"][1] = 1
    alone = samples_at_real_length([batch], "attention_mask", io_config)
    assert [s["ids"].shape[1] for s in alone] == [2, 4]


def test_check_one_sample_names_what_is_wrong():
    with pytest.raises(OliveError, match=r"^m.trim_padding: the data has no 'mask' input"):
        check_one_sample({"ids": np.ones((1, 3))}, "mask", owner="m.trim_padding")
    with pytest.raises(OliveError, match=r"batches must hold one sample.*batch_size to 1"):
        check_one_sample({"mask": np.ones((2, 3))}, "mask")
    check_one_sample({"mask": np.ones((1, 3))}, "mask")


# ------------------------------------------------------------------------------------------ synthetic inputs


def test_synthetic_inputs_follow_one_rule_for_free_dims():
    assert concrete_shape(["batch", "sequence", 8]) == [1, FREE_DIM_SIZE, 8]
    assert concrete_shape(["batch", "sequence"], {"sequence": 128}) == [1, 128]
    assert concrete_shape(["?", "?"], {"batch": 4}) == [1, FREE_DIM_SIZE]
    io_config = {
        "input_names": ["x", "ids", "flag"],
        "input_shapes": [["batch", 3], ["batch", "seq"], [2]],
        "input_types": ["float32", "int64", "bool"],
    }
    feeds = synthetic_inputs(io_config, {"seq": 5})
    assert feeds["x"].shape == (1, 3) and feeds["x"].dtype == np.float32
    assert feeds["ids"].tolist() == [[1] * 5] and feeds["flag"].tolist() == [True, True]
    assert np.array_equal(synthetic_inputs(io_config)["x"], feeds["x"])  # seeded
    with pytest.raises(OliveError, match=r"dimension 'seq' must be a positive whole number"):
        synthetic_inputs(io_config, {"seq": 0})
    with pytest.raises(OliveError, match=r"input 's' is <U1.*data_config"):
        synthetic_inputs({"input_names": ["s"], "input_shapes": [[1]], "input_types": ["<U1"]})


def test_synthetic_inputs_run_a_transformer(tmp_path):
    model = save_model(bert_like_model(num_layers=1), tmp_path / "bert")
    feeds = synthetic_inputs(model.get_io_config())
    (hidden,) = create_session(model.model_path).run(None, feeds)
    assert hidden.shape[:2] == (1, FREE_DIM_SIZE) and np.isfinite(hidden).all()


# ------------------------------------------------------------------------------------------ sessions


def test_sessions_take_every_setting(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    settings = {
        "execution_provider": "CPUExecutionProvider",
        "session_options": {
            "intra_op_num_threads": 1,
            "inter_op_num_threads": 2,
            "execution_mode": 1,
            "graph_optimization_level": "ORT_ENABLE_BASIC",
            "extra_session_config": {"session.intra_op.allow_spinning": "0"},
        },
    }
    session = create_session(model.model_path, settings)
    assert describe_session(session) == {
        "providers": ["CPUExecutionProvider"],
        "session_options": {
            "intra_op_num_threads": 1,
            "inter_op_num_threads": 2,
            "execution_mode": "ORT_PARALLEL",
            "graph_optimization_level": "ORT_ENABLE_BASIC",
        },
    }
    setup = session_setup(settings)
    assert setup.options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    # the handler makes its sessions here too, with its own settings
    model.inference_settings = {"session_options": {"graph_optimization_level": 0}}
    options = model.prepare_session().get_session_options()
    assert options.graph_optimization_level.name == "ORT_DISABLE_ALL"
    # a serialized model loads the same way
    assert create_session(model.load_model().SerializeToString()).get_providers() == ["CPUExecutionProvider"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"sesion_options": {}}, r"^inference_settings: unknown key 'sesion_options' \(did you mean 'session_options'"),
        (
            {"session_options": {"intra_op_threads": 1}},
            r"^inference_settings.session_options: unknown onnxruntime session option 'intra_op_threads' "
            r"\(did you mean 'intra_op_num_threads'",
        ),
        (
            {"session_options": {"intra_op_num_threads": "two"}},
            r"^inference_settings.session_options.intra_op_num_threads: 'two' is not a valid value; "
            r"it takes a whole number",
        ),
        (
            {"session_options": {"graph_optimization_level": "ORT_ENABLE_EVERYTHING"}},
            r"graph_optimization_level: unknown GraphOptimizationLevel 'ORT_ENABLE_EVERYTHING'",
        ),
        ({"session_options": {"execution_mode": 7}}, r"execution_mode: unknown ExecutionMode value 7; use one of"),
        ({"session_options": {"extra_session_config": ["x"]}}, r"extra_session_config: expected a dict"),
        (
            {"execution_provider": ["CPUExecutionProvider"], "provider_options": [{}, {}]},
            r"provider_options needs one dict per execution provider \(1: CPUExecutionProvider\)",
        ),
        (
            {"execution_provider": "NoSuchExecutionProvider"},
            r"none of the execution providers NoSuchExecutionProvider is available in the installed onnxruntime",
        ),
        ({"execution_provider": [42]}, r"execution provider 42 is neither a provider name"),
    ],
)
def test_bad_settings_are_errors_naming_the_setting(tmp_path, settings, message):
    model = save_model(mlp_model(), tmp_path / "m")
    with pytest.raises(ModelLoadError, match=message):
        create_session(model.model_path, settings)


def test_settings_written_by_microsoft_olives_session_tuning_are_accepted(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    olive_tuned = {
        "execution_provider": ["CPUExecutionProvider"],
        "provider_options": [{}],
        "io_bind": False,
        "tuning_op_result": None,
        "session_options": {"execution_mode": 0, "graph_optimization_level": 99, "inter_op_num_threads": None},
    }
    options = create_session(model.model_path, olive_tuned).get_session_options()
    assert options.graph_optimization_level.name == "ORT_ENABLE_ALL" and options.inter_op_num_threads == 0


def test_providers_the_install_lacks_are_dropped_while_one_remains(caplog):
    with caplog.at_level(logging.WARNING, logger="olive.measure.sessions"):
        setup = session_setup({"execution_provider": ["NoSuchExecutionProvider", "CPUExecutionProvider"]})
    assert setup.providers == ["CPUExecutionProvider"]
    assert "NoSuchExecutionProvider" in caplog.text
    inline = session_setup({"execution_provider": [["CPUExecutionProvider", {"arena_extend_strategy": "1"}]]})
    assert inline.provider_options == [{"arena_extend_strategy": "1"}]


def test_an_unloadable_model_is_a_model_load_error(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelLoadError, match=r"onnxruntime cannot load the candidate \("):
        create_session(bad, what="the candidate")


# ------------------------------------------------------------------------------------------ timing


def test_timed_runs_warm_up_then_time_each_run():
    calls = []
    seconds = timed_runs(lambda: calls.append(1), repeat=5, warmup=3, settle_s=0.0)
    assert len(calls) == 8 and len(seconds) == 5 and all(s >= 0 for s in seconds)


def test_interleaved_runs_rotate_and_warm_up_each_turn():
    calls: list[str] = []
    runs = [lambda name=name: calls.append(name) for name in "abc"]
    rounds = interleaved_runs(runs, repeat=7, warmup=2, per_round=3, settle_s=0.0)
    assert [[len(times) for times in r] for r in rounds] == [[3, 3, 3], [3, 3, 3], [1, 1, 1]]
    # first round: 2 untimed runs before each model's timed ones; later rounds 1; the order rotates
    assert "".join(calls) == "aaaaabbbbbccccc" + "bbbbccccaaaa" + "ccaabb"
    assert paired_round_size(20) == 5 and paired_round_size(200) == 20


def test_ratios_to_reference_take_each_run_against_its_rounds_median():
    rounds = [[[2.0, 4.0], [1.0, 2.0, 3.0]], [[9.0], [3.0, 3.0]]]
    assert ratios_to_reference(rounds).tolist() == [1.0, 2.0, 3.0]
    summary = latency_summary(np.arange(1.0, 101.0))
    assert (summary["avg"], summary["min"], summary["max"], summary["p50"]) == (50.5, 1.0, 100.0, 50.5)
    assert summary["p90"] == pytest.approx(90.1) and set(summary) >= {"p75", "p95", "p99", "p999"}


def test_session_runner_runs_bound_or_not_and_names_the_model_on_failure(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    session = create_session(model.model_path)
    feeds = synthetic_inputs(model.get_io_config())
    session_runner(session, feeds)()
    session_runner(session, feeds, io_bind=True)()
    wrong = {"input": np.ones((1, 3), np.float32)}
    with pytest.raises(ModelRunError, match=r"^metric 'lat': running model 'm' failed \("):
        session_runner(session, wrong, what="model 'm'", owner="metric 'lat'")()


# ------------------------------------------------------------------------------------------ reference outputs


def _perturbed_copy(proto: onnx.ModelProto, scale: float) -> onnx.ModelProto:
    copy = onnx.ModelProto.FromString(proto.SerializeToString())
    rng = np.random.default_rng(1)
    for index, init in enumerate(copy.graph.initializer):
        array = numpy_helper.to_array(init)
        if array.dtype == np.float32 and array.ndim == 2:
            noisy = (array + rng.standard_normal(array.shape) * scale).astype(np.float32)
            copy.graph.initializer[index].CopyFrom(numpy_helper.from_array(noisy, init.name))
    return copy


def test_reference_outputs_score_any_form_of_model(tmp_path):
    proto = mlp_model()
    reference_model = save_model(proto, tmp_path / "ref")
    batches = [random_inputs(reference_model, batch_size=4, seed=s) for s in range(2)]
    reference = ReferenceOutputs.of_model(reference_model, batches)
    assert reference.num_samples == 8
    same = save_model(proto, tmp_path / "same")
    for form in (same, same.model_path, proto.SerializeToString(), create_session(same.model_path)):
        assert reference.score(form) == {"cosine_mean": 1.0, "cosine_min": 1.0, "max_abs_diff": 0.0, "top1": 1.0}
    noisy = reference.score(save_model(_perturbed_copy(proto, 0.3), tmp_path / "noisy"))
    assert noisy["cosine_min"] <= noisy["cosine_mean"] < 0.999 and noisy["max_abs_diff"] > 0.01
    with pytest.raises(TypeError, match="cannot run"):
        reference.score(42)


@pytest.mark.parametrize("pooling", ["mean", "none"])
def test_evaluator_agreement_is_olive_measure_agreement(tmp_path, pooling):
    """The engine's agreement metric and olive.measure give the same numbers on the same data (unpooled,
    the samples at their real length differ in shape and are compared one by one)."""
    proto = bert_like_model(num_layers=1)
    reference_model = save_model(proto, tmp_path / "ref")
    candidate = save_model(_perturbed_copy(proto, 0.05), tmp_path / "cand")
    inputs = random_inputs(reference_model, batch_size=6, sequence_length=12, seed=3)
    for row, length in enumerate([3, 5, 7, 9, 11, 12]):
        inputs["attention_mask"][row, length:] = 0
    np.savez(tmp_path / "d.npz", **inputs)
    data = DataConfig.from_json(
        {
            "name": "d",
            "type": "NpzDataContainer",
            "load_dataset_config": {"data_path": str(tmp_path / "d.npz")},
            "dataloader_config": {"batch_size": 1},
        }
    )
    metric = {
        "name": "agree",
        "type": "agreement",
        "data_config": "d",
        "pooling": pooling,
        "trim_padding": True,
        "sub_types": ["cosine_mean", "cosine_min", "max_abs_diff", "top1"],
    }
    evaluator = OliveEvaluator(parse_metrics([metric], data_config_names={"d"}), {"d": data})
    measured = evaluator.evaluate(candidate, reference_model=reference_model)

    io_config = reference_model.get_io_config()
    samples = samples_at_real_length([inputs], "attention_mask", io_config)
    vectors = OutputVectors(pooling=pooling, mask_input="attention_mask")
    expected = ReferenceOutputs.of_model(reference_model, samples, vectors).score(candidate)
    assert expected["cosine_min"] < 0.9999
    for name, value in expected.items():
        assert measured[f"agree-{name}"].value == value, name


def test_write_npz_dataset_round_trips_through_reference_outputs(tmp_path):
    model = save_model(mlp_model(), tmp_path / "m")
    path = write_npz_dataset(tmp_path / "d.npz", model, num_samples=5)
    arrays = dict(np.load(path))
    scores = ReferenceOutputs.of_model(model, [arrays]).score(model.model_path)
    assert scores["cosine_mean"] == 1.0


# ------------------------------------------------------------------------------------------ import cost


def _modules_after(code: str) -> list[str]:
    code = f"import sys, json\n{code}\nprint('@@' + json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.rsplit("@@", 1)[1])


def test_importing_olive_measure_imports_neither_numpy_nor_onnxruntime():
    modules = _modules_after("import olive.measure")
    assert "olive.measure.timing" in modules
    assert not [m for m in modules if m.split(".")[0] in ("numpy", "onnxruntime", "onnx")]


@pytest.mark.parametrize("args", [["--help"], ["passes"]], ids=" ".join)
def test_the_cli_listing_does_not_import_olive_measure(args):
    code = f"from olive.cli.main import main\ntry:\n    main({args!r})\nexcept SystemExit:\n    pass"
    modules = _modules_after(code)
    assert "olive.cli.main" in modules
    assert not [m for m in modules if m.startswith("olive.measure")]
