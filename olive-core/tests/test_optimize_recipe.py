"""``olive optimize``'s pieces that run nothing: --keep parsing, option checks, model facts read from real ONNX
graphs (the ``olive.testing`` models), and the workflow ``build_workflow`` writes for each choice.

The workflows themselves run in ``e2e/test_optimize.py`` (the quant and graph passes are installed there).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import attrs
import numpy as np
import onnx
import pytest

from olive.exceptions import WorkflowConfigError
from olive.optimize.data import DataSource, data_source, synthetic_specs
from olive.optimize.facts import ModelFacts, model_facts_from_onnx, read_model_facts
from olive.optimize.keep import CLASSIFIER_KEEPS, EMBEDDING_KEEPS, Keep, parse_keep
from olive.optimize.options import OptimizeOptions, parse_dims, parse_latency_budget
from olive.optimize.recipe import Installed, build_workflow, guard_targets
from olive.testing.models import bert_like_model, mlp_model, save_model, write_npz_dataset

QUANT = frozenset(
    {
        "OnnxDynamicQuantization",
        "OnnxStaticQuantization",
        "OnnxBlockWiseRtnQuantization",
        "OnnxFloatToFloat16",
        "OnnxSensitivityAnalysis",
        "OnnxAccuracyGuardedQuantization",
    }
)
GRAPH = frozenset({"OrtTransformersOptimization", "OnnxPeepholeOptimizer"})
ALL = Installed(QUANT | GRAPH)


# --------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> ModelFacts:
    handler = save_model(bert_like_model(seed=0, num_layers=2), tmp_path_factory.mktemp("bert"))
    return read_model_facts(handler.model_path)


@pytest.fixture(scope="module")
def bert_npz(tmp_path_factory, bert) -> DataSource:
    path = write_npz_dataset(tmp_path_factory.mktemp("data") / "data.npz", bert_like_model(seed=0), num_samples=16)
    return data_source(path, bert, frozenset())


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> ModelFacts:
    return read_model_facts(save_model(mlp_model(seed=0), tmp_path_factory.mktemp("mlp")).model_path)


def options(tmp_path: Path, **kwargs) -> OptimizeOptions:
    return OptimizeOptions(output_dir=tmp_path / "out", cache_dir=tmp_path / "cache", **kwargs)


def metric(workflow: dict, name: str) -> dict:
    return next(m for m in workflow["evaluators"]["optimize"]["metrics"] if m["name"] == name)


def subs(workflow: dict, name: str) -> dict[str, dict]:
    return {s["name"]: s for s in metric(workflow, name)["sub_types"]}


SYNTHETIC = DataSource("synthetic")


# --------------------------------------------------------------------------------------------- --keep
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cosine_min>=0.97", Keep("cosine_min", ">=", 0.97)),
        (" cosine_mean >= 0.99 ", Keep("cosine_mean", ">=", 0.99)),
        ("top1>0.98", Keep("top1", ">", 0.98)),
        ("max_abs_diff<=0.05", Keep("max_abs_diff", "<=", 0.05)),
        ("max_abs_diff<1e-2", Keep("max_abs_diff", "<", 0.01)),
    ],
)
def test_keep_parses_metric_operator_and_value(text: str, expected: Keep) -> None:
    assert parse_keep(text) == expected


def test_a_keep_is_printed_with_every_digit_given() -> None:
    # Rounded for display, 0.99999999 read as 1: a goal no model can miss by as little as it was missed.
    assert str(parse_keep("cosine_min>=0.99999999")) == "cosine_min>=0.99999999"


def test_a_strict_keep_asks_for_more_than_its_value_and_an_inclusive_one_for_the_value() -> None:
    assert parse_keep("cosine_min>=0.97").threshold == 0.97
    assert parse_keep("cosine_min>0.97").threshold > 0.97
    assert parse_keep("max_abs_diff<0.1").threshold < 0.1
    assert parse_keep("top1>=0.99").met_by(0.99) and not parse_keep("top1>0.99").met_by(0.99)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("cosine_min", "not 'metric=value'"),
        ("cosin_min>=0.9", "did you mean 'cosine_min'"),
        ("cosine_min<=0.9", "higher-is-better"),
        ("max_abs_diff>=0.1", "lower-is-better"),
        ("cosine_min==0.9", "operator '=='"),
        ("cosine_min>=high", "'high' is not a number"),
        ("cosine_min>=1.5", "between -1 and 1"),
        ("top1>=2", "from 0 to 1"),
        ("max_abs_diff<=-1", "never negative"),
        ("cosine_mean>1", "no model can be above 1"),
        ("cosine_min>=nan", "finite"),
    ],
)
def test_a_bad_keep_is_one_error_owned_by_the_option(text: str, words: str) -> None:
    with pytest.raises(WorkflowConfigError, match="--keep") as caught:
        parse_keep(text)
    assert words in str(caught.value)


def test_guard_targets_run_from_the_keep_towards_a_perfect_score() -> None:
    assert guard_targets(Keep("cosine_min", ">=", 0.97)) == [0.97, 0.98, 0.99, 0.992, 0.994, 0.996, 0.998]
    lower = guard_targets(Keep("max_abs_diff", "<=", 0.3))
    assert lower[0] == 0.3 and all(b < a for a, b in itertools.pairwise(lower)) and lower[-1] > 0


# --------------------------------------------------------------------------------------------- options
def test_latency_budget_is_fastest_or_a_positive_ratio() -> None:
    assert parse_latency_budget("fastest") is None and parse_latency_budget(None) is None
    assert parse_latency_budget("0.6") == 0.6 and parse_latency_budget("0.6x") == 0.6
    for bad in ("quick", "0", "-1"):
        with pytest.raises(WorkflowConfigError, match="--latency-budget"):
            parse_latency_budget(bad)


def test_dims_pair_names_with_sizes() -> None:
    assert parse_dims("batch_size, sequence_length", "1,128") == {"batch_size": 1, "sequence_length": 128}
    assert parse_dims(None, None) == {}
    with pytest.raises(WorkflowConfigError, match=r"--dim_value.*needs --dim_param|--dim_param needs"):
        parse_dims(None, "1")
    with pytest.raises(WorkflowConfigError, match=r"2 name.*1 size"):
        parse_dims("a,b", "1")
    with pytest.raises(WorkflowConfigError, match="whole number"):
        parse_dims("a", "x")


@pytest.mark.parametrize(
    ("kwargs", "owner", "words"),
    [
        ({"precision": "nf4"}, "--precision", "use int4"),
        ({"precision": "int3"}, "--precision", "use one of auto, int8"),
        ({"algorithm": "gptq"}, "--algorithm", "supports 'rtn'"),
        ({"algorithm": "magic"}, "--algorithm", "use one of rtn"),
        ({"implementation": "bnb"}, "--implementation", "onnxruntime's quantizers"),
        ({"act_precision": "int8"}, "--act_precision", "--use_qdq_format"),
        ({"act_precision": "int16", "use_qdq_format": True}, "--act_precision", "use one of int8, uint8"),
        ({"act_precision": "uint8", "precision": "int4"}, "--act_precision", "int8 weights"),
        ({"use_qdq_format": True, "precision": "fp16"}, "--use_qdq_format", "int8"),
        ({"block_size": 32, "precision": "int8"}, "--block_size", "--precision int4"),
        ({"block_size": -1, "precision": "int4"}, "--block_size", "per-channel"),
        ({"block_size": 48, "precision": "int4"}, "--block_size", "power of two"),
        ({"device": "tpu"}, "--device", "cpu, gpu, npu"),
        ({"max_time": 0}, "--max-time", "positive"),
        ({"max_samples": 0}, "--max_samples", ">= 1"),
        ({"batch_sizes": (0,)}, "--batch-size", ">= 1"),
        ({"keeps": (Keep("top1", ">=", 0.9), Keep("top1", ">=", 0.8))}, "--keep", "top1 given twice"),
        ({"quantize_only": True, "precision": "fp32"}, "--precision", "nothing to do"),
        ({"quantize_only": True, "fusion": True}, "--fusion", "run olive optimize --fusion"),
    ],
)
def test_an_option_no_pass_can_honour_is_an_error_naming_what_is_supported(tmp_path, kwargs, owner, words) -> None:
    with pytest.raises(WorkflowConfigError) as caught:
        options(tmp_path, **kwargs)
    assert caught.value.owner == owner
    assert words in caught.value.reason


# --------------------------------------------------------------------------------------------- model facts
def test_facts_of_a_bert_like_graph(bert: ModelFacts) -> None:
    assert bert.is_onnx and bert.transformer and not bert.fused
    assert bert.attention_blocks == 2  # one per layer
    assert [name for name, _, _ in bert.inputs] == ["input_ids", "attention_mask", "token_type_ids"]
    assert bert.mask_input == "attention_mask"
    assert bert.sequence_output and not bert.classifier
    assert bert.tokenizer_dir is None


def test_facts_of_a_model_that_is_no_transformer(mlp: ModelFacts) -> None:
    assert not mlp.transformer and mlp.attention_blocks == 0 and mlp.mask_input is None
    assert mlp.first_output_rank == 2 and not mlp.classifier


def _renamed(proto: onnx.ModelProto, old: str, new: str) -> onnx.ModelProto:
    for value in [*proto.graph.input, *proto.graph.output]:
        if value.name == old:
            value.name = new
    for node in proto.graph.node:
        node.input[:] = [new if n == old else n for n in node.input]
        node.output[:] = [new if n == old else n for n in node.output]
    return proto


def test_class_scores_fused_attention_past_inputs_and_a_tokenizer_beside_the_model(tmp_path) -> None:
    scores = model_facts_from_onnx(_renamed(mlp_model(), "output", "logits"), tmp_path / "m.onnx")
    assert scores.classifier
    fused = bert_like_model()
    fused.graph.node.append(onnx.helper.make_node("Attention", ["x"], ["y"], domain="com.microsoft"))
    assert model_facts_from_onnx(fused, tmp_path / "f.onnx").fused
    assert not model_facts_from_onnx(fused, tmp_path / "f.onnx").transformer
    past = model_facts_from_onnx(_renamed(mlp_model(), "input", "past_key_values.0.key"), tmp_path / "p.onnx")
    assert past.decoder_with_past
    (tmp_path / "tokenizer.json").write_text("{}")
    assert model_facts_from_onnx(mlp_model(), tmp_path / "m.onnx").tokenizer_dir == tmp_path


def test_a_model_path_that_cannot_be_read_says_what_to_give(tmp_path) -> None:
    with pytest.raises(WorkflowConfigError, match="does not exist"):
        read_model_facts(tmp_path / "missing.onnx")
    (tmp_path / "notes.onnx").write_text("not a model")
    with pytest.raises(WorkflowConfigError, match="cannot be read as an ONNX model"):
        read_model_facts(tmp_path / "notes.onnx")
    two = tmp_path / "two"
    save_model(mlp_model(), two, "a.onnx")
    save_model(mlp_model(), two, "b.onnx")
    with pytest.raises(WorkflowConfigError, match=r"holds 2 .onnx files"):
        read_model_facts(two)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(WorkflowConfigError, match=r"neither an .onnx file nor a Hugging Face config.json"):
        read_model_facts(empty)
    with pytest.raises(WorkflowConfigError, match="--task is for a Hugging Face model folder"):
        read_model_facts(two / "a.onnx", task="feature-extraction")
    one = tmp_path / "one"
    saved = save_model(mlp_model(), one)
    assert read_model_facts(one).path == Path(saved.model_path)  # a folder holding one model is that model


# --------------------------------------------------------------------------------------------- --data
def test_data_an_npz_keyed_by_input_name(tmp_path, bert) -> None:
    np.savez(tmp_path / "wrong.npz", ids=np.ones((2, 4), dtype=np.int64))
    with pytest.raises(WorkflowConfigError, match=r"does not provide input.*input_ids") as caught:
        data_source(tmp_path / "wrong.npz", bert, frozenset())
    assert caught.value.owner == "--data"
    with pytest.raises(WorkflowConfigError, match="is not a file"):
        data_source(tmp_path / "missing.npz", bert, frozenset())
    for name in ("wikitext/wikitext-2", "squad"):
        with pytest.raises(WorkflowConfigError, match=r"hub datasets are not downloaded here: give a local file.*npz"):
            data_source(Path(name), bert, frozenset())
    (tmp_path / "data.parquet").write_text("")
    with pytest.raises(WorkflowConfigError, match=r"a \.parquet is not read"):
        data_source(tmp_path / "data.parquet", bert, frozenset())


def test_text_data_needs_the_text_container_and_a_tokenizer(tmp_path, bert) -> None:
    (tmp_path / "s.txt").write_text("hello\n" * 16)
    with pytest.raises(
        WorkflowConfigError,
        match=r"^--data: 's.txt' is text, which is read and tokenized by the data container TextDataContainer of "
        r"olive-passes-torch, which is not installed \(install it with: ",
    ):
        data_source(tmp_path / "s.txt", bert, frozenset())
    with pytest.raises(WorkflowConfigError, match="no tokenizer beside it; give --tokenizer DIR"):
        data_source(tmp_path / "s.txt", bert, frozenset({"TextDataContainer"}))
    with pytest.raises(WorkflowConfigError, match="not a folder holding a tokenizer") as caught:
        data_source(tmp_path / "s.txt", bert, frozenset({"TextDataContainer"}), tokenizer=tmp_path)
    assert caught.value.owner == "--tokenizer"
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    source = data_source(tmp_path / "s.txt", bert, frozenset({"TextDataContainer"}), tokenizer=tmp_path)
    assert source.kind == "text" and source.tokenizer == tmp_path
    with pytest.raises(WorkflowConfigError, match="a tokenizer is for text data"):
        data_source(None, bert, frozenset(), tokenizer=tmp_path)


def test_dims_size_the_synthetic_inputs_and_must_name_free_dimensions(bert) -> None:
    # The batch, not named, takes the measurement module's rule (1).
    assert synthetic_specs(bert, {"sequence": 32})["input_shapes"] == [[1, 32]] * 3
    assert synthetic_specs(bert, {}) is None
    with pytest.raises(WorkflowConfigError, match="no free dimension 'height'; its free dimensions: batch, sequence"):
        synthetic_specs(bert, {"height": 4})


# --------------------------------------------------------------------------------------------- the workflow
def dynamic_steps(guard: dict) -> list:
    """The guard's searched targets in dynamic mode (a served batch size above 1 adds static int8 beside it)."""
    target = guard["target_value"]
    if target["type"] == "Categorical":
        return target["support"]
    return next(entry["value"]["support"] for entry in target["support"] if entry["key"] == ["dynamic"])


def test_defaults_on_a_transformer_with_data_guard_int8_unfused_and_pick_the_fastest(tmp_path, bert, bert_npz):
    recipe = build_workflow(bert, options(tmp_path), ALL, bert_npz)
    workflow = recipe.workflow
    # int8 on the CPU: the unfused graph measured faster than the fused one (benchmarks/bench_optimize.py)
    assert list(workflow["passes"]) == ["quantize"]
    assert any("no transformer fusion" in note for note in recipe.notes)
    guard = workflow["passes"]["quantize"]
    assert guard["type"] == "OnnxAccuracyGuardedQuantization"
    assert guard["target_metric"] == ["cosine_min", "cosine_mean"]
    # The keeps' own targets first, then every keep tightened alike towards 1, until a model keeps them on the
    # judging half: the search stops at the first that does.
    steps = dynamic_steps(guard)
    assert steps[0] == [0.97, 0.99] and steps[-1][0] > 0.99 and steps[-1][1] > 0.995
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(steps))
    assert workflow["search_strategy"]["stop_when_goals_met"] is True
    assert any(note.startswith("--data: half to fit (passes), half to judge") for note in recipe.notes)
    assert guard["pooling"] == "mean" and guard["mask_input"] == "attention_mask" and guard["trim_padding"] is True
    assert guard["quantize_embeddings"] is True and guard["data_config"] == "data"
    assert subs(workflow, "latency")["ratio_p50"] == {"name": "ratio_p50", "priority": 1}
    agreement = subs(workflow, "agreement")
    assert agreement["cosine_min"]["goal"] == {"type": "threshold", "value": 0.97}
    assert agreement["cosine_mean"]["priority"] == 3
    assert metric(workflow, "agreement")["pooling"] == "mean"
    assert workflow["data_configs"][0]["type"] == "NpzDataContainer"
    assert workflow["data_configs"][0]["load_dataset_config"]["max_samples"] == 64
    assert workflow["systems"]["target"]["accelerators"] == [
        {"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}
    ]
    assert recipe.keeps == EMBEDDING_KEEPS and recipe.latency_budget is None and not recipe.synthetic
    assert "fastest" in recipe.objective and "max_time" not in workflow["search_strategy"]


def test_fusion_is_searched_against_the_unfused_graph_where_it_may_pay(tmp_path, bert, bert_npz):
    for precision in ("fp32", "fp16", "int4"):
        workflow = build_workflow(bert, options(tmp_path, precision=precision), ALL, bert_npz).workflow
        # Fused against unfused (onnxruntime's basic optimization only): the paired latency decides.
        assert workflow["passes"]["fuse"] == {
            "type": "OrtTransformersOptimization",
            "opt_level": 1,
            "model_type": "bert",
            "only_onnxruntime": {
                "olive_parameter_type": "SearchParameter",
                "type": "Categorical",
                "support": [False, True],
            },
        }
    fused = build_workflow(bert, options(tmp_path, fusion=True), ALL, bert_npz).workflow["passes"]
    assert list(fused) == ["fuse", "quantize"] and "only_onnxruntime" not in fused["fuse"]
    plugin = Installed(ALL.passes, plugin_providers={"OpenVINOExecutionProvider": ()})
    chosen = options(tmp_path, precision="fp16", providers=("OpenVINOExecutionProvider",))
    recipe = build_workflow(bert, chosen, plugin, bert_npz)
    assert list(recipe.workflow["passes"]) == ["quantize"] and any("plugin provider" in n for n in recipe.notes)


def test_a_latency_budget_searches_the_guard_target_after_one_sensitivity_analysis(tmp_path, bert, bert_npz):
    recipe = build_workflow(bert, options(tmp_path, latency_budget=0.6), ALL, bert_npz)
    workflow = recipe.workflow
    assert list(workflow["passes"]) == ["sensitivity", "quantize"]
    assert workflow["passes"]["sensitivity"]["metric"] == "cosine_min"
    target = workflow["passes"]["quantize"]["target_value"]
    assert target["type"] == "Categorical"
    assert target["support"][0] == [0.97, 0.99] and target["support"][-1] == [0.998, 0.99]
    ratio = subs(workflow, "latency")["ratio_p50"]
    assert ratio["goal"] == {"type": "threshold", "value": 0.6} and ratio["priority"] == 3
    assert subs(workflow, "agreement")["cosine_min"]["priority"] == 1
    assert recipe.latency_budget == 0.6 and "within 0.6x" in recipe.objective


def test_without_data_agreement_is_on_synthetic_inputs_and_int8_is_plain_dynamic(tmp_path, bert):
    recipe = build_workflow(bert, options(tmp_path, dim_values={}), ALL, SYNTHETIC)
    workflow = recipe.workflow
    assert workflow["passes"]["quantize"] == {
        "type": "OnnxDynamicQuantization",
        "precision": "int8",
        "per_channel": True,
        "reduce_range": False,
        "quant_preprocess": False,
    }
    assert workflow["data_configs"] == []
    assert "data_config" not in metric(workflow, "agreement") and "trim_padding" not in metric(workflow, "agreement")
    assert recipe.synthetic and any("synthetic inputs" in note for note in recipe.notes)


def test_int8_weights_are_7_bit_where_the_cpus_int8_matmul_saturates(tmp_path, bert, bert_npz):
    """The rule, both branches: which one this CPU takes is read from it by ``installed_now``."""
    saturating = attrs.evolve(ALL, int8_saturates=True)
    plain = build_workflow(bert, options(tmp_path, dim_values={}), ALL, SYNTHETIC)
    assert plain.workflow["passes"]["quantize"]["reduce_range"] is False
    assert not any("reduce_range" in note for note in plain.notes)
    for data, pass_name in ((SYNTHETIC, "OnnxDynamicQuantization"), (bert_npz, "OnnxAccuracyGuardedQuantization")):
        recipe = build_workflow(bert, options(tmp_path, dim_values={}), saturating, data)
        quantize = recipe.workflow["passes"]["quantize"]
        assert quantize["type"] == pass_name and quantize["reduce_range"] is True
        (note,) = [note for note in recipe.notes if "reduce_range" in note]
        assert "adds pairs of uint8 x int8 products in 16 bits" in note and "without VNNI" in note
    static = build_workflow(bert, options(tmp_path, act_precision="uint8"), saturating, bert_npz)
    assert static.workflow["passes"]["quantize"]["reduce_range"] is True
    # uint8 weights take a kernel that does not saturate; a plugin provider runs kernels of its own.
    uint8 = build_workflow(bert, options(tmp_path, precision="uint8"), saturating, bert_npz)
    assert uint8.workflow["passes"]["quantize"]["reduce_range"] is False
    plugin = attrs.evolve(saturating, plugin_providers={"OpenVINOExecutionProvider": ()})
    elsewhere = build_workflow(bert, options(tmp_path, providers=("OpenVINOExecutionProvider",)), plugin, bert_npz)
    assert elsewhere.workflow["passes"]["quantize"]["reduce_range"] is False


def test_dims_go_into_the_metrics_input_specs(tmp_path, bert):
    recipe = build_workflow(bert, options(tmp_path, dim_values={"batch": 8, "sequence": 8}), ALL, SYNTHETIC)
    for name in ("latency", "agreement"):
        user = metric(recipe.workflow, name)["user_config"]
        assert user["input_names"] == ["input_ids", "attention_mask", "token_type_ids"]
        assert all(shape == [8, 8] for shape in user["input_shapes"])


def test_a_model_that_is_no_transformer_is_not_fused_unless_asked(tmp_path, mlp):
    assert list(build_workflow(mlp, options(tmp_path), ALL, SYNTHETIC).workflow["passes"]) == ["quantize"]
    forced = build_workflow(mlp, options(tmp_path, fusion=True), ALL, SYNTHETIC).workflow["passes"]
    assert list(forced) == ["fuse", "quantize"] and "only_onnxruntime" not in forced["fuse"]


def test_quantize_only_and_no_fusion_leave_the_graph_alone(tmp_path, bert, bert_npz):
    for kwargs in ({"quantize_only": True}, {"fusion": False}):
        passes = build_workflow(bert, options(tmp_path, **kwargs), ALL, bert_npz).workflow["passes"]
        assert list(passes) == ["quantize"]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"precision": "int4"}, {"type": "OnnxBlockWiseRtnQuantization", "bits": 4, "block_size": 32}),
        ({"precision": "int4", "block_size": 16}, {"block_size": 16, "accuracy_level": 4}),
        ({"precision": "fp16"}, {"type": "OnnxFloatToFloat16", "keep_io_types": True}),
        ({"precision": "uint8"}, {"type": "OnnxAccuracyGuardedQuantization", "precision": "uint8"}),
        (
            {"act_precision": "uint8"},
            {"type": "OnnxStaticQuantization", "quant_format": "QOperator", "activation_type": "uint8"},
        ),
        (
            {"use_qdq_format": True},
            {"type": "OnnxStaticQuantization", "quant_format": "QDQ", "activation_type": "int8"},
        ),
        ({"device": "npu"}, {"type": "OnnxStaticQuantization", "quant_format": "QDQ"}),
        ({"device": "gpu"}, {"type": "OnnxFloatToFloat16"}),
    ],
)
def test_each_precision_maps_onto_its_pass(tmp_path, bert, bert_npz, kwargs, expected):
    quantize = build_workflow(bert, options(tmp_path, **kwargs), ALL, bert_npz).workflow["passes"]["quantize"]
    assert {k: quantize.get(k) for k in expected} == expected


def test_fp32_only_fuses_a_transformer_and_peephole_optimizes_anything_else(tmp_path, bert, mlp, bert_npz):
    assert list(build_workflow(bert, options(tmp_path, precision="fp32"), ALL, bert_npz).workflow["passes"]) == ["fuse"]
    passes = build_workflow(mlp, options(tmp_path, precision="fp32"), ALL, SYNTHETIC).workflow["passes"]
    assert passes == {"optimize": {"type": "OnnxPeepholeOptimizer"}}
    with pytest.raises(WorkflowConfigError, match=r"nothing to optimize: 'model\.onnx' is not a transformer"):
        build_workflow(mlp, options(tmp_path, precision="fp32"), Installed(QUANT), SYNTHETIC)
    # A transformer without the fusion pass is told what to install, not that it is no transformer.
    with pytest.raises(WorkflowConfigError, match="fp32 on a transformer needs OrtTransformersOptimization") as caught:
        build_workflow(bert, options(tmp_path, precision="fp32"), Installed(QUANT), bert_npz)
    assert "olive-passes-graph" in caught.value.reason and "pip install" in caught.value.reason
    assert caught.value.owner == "--precision"
    with pytest.raises(WorkflowConfigError, match="a transformer that --no-fusion leaves alone"):
        build_workflow(bert, options(tmp_path, precision="fp32", fusion=False), Installed(QUANT), bert_npz)


def test_static_quantization_needs_data(tmp_path, bert):
    with pytest.raises(WorkflowConfigError, match="calibrates activation ranges on data; give --data") as caught:
        build_workflow(bert, options(tmp_path, act_precision="uint8"), ALL, SYNTHETIC)
    assert caught.value.owner == "--act_precision"


def test_classifiers_keep_their_predicted_class_without_the_guard(tmp_path):
    facts = model_facts_from_onnx(_renamed(mlp_model(), "output", "logits"), tmp_path / "m.onnx")
    npz = DataSource("npz", tmp_path / "d.npz")
    recipe = build_workflow(facts, options(tmp_path), ALL, npz)
    assert recipe.keeps == CLASSIFIER_KEEPS
    assert recipe.workflow["passes"]["quantize"]["type"] == "OnnxDynamicQuantization"
    assert subs(recipe.workflow, "agreement")["top1"]["goal"]["value"] == 0.99
    assert any("top1" in note for note in recipe.notes)


def test_a_missing_graph_distribution_is_a_note_with_its_install_line(tmp_path, bert, bert_npz):
    recipe = build_workflow(bert, options(tmp_path, precision="fp16"), Installed(QUANT), bert_npz)
    assert list(recipe.workflow["passes"]) == ["quantize"]
    note = next(n for n in recipe.notes if "fusion left out" in n)
    assert "olive-passes-graph" in note and "pip install" in note
    with pytest.raises(WorkflowConfigError, match=r"olive-passes-graph.*pip install") as caught:
        build_workflow(bert, options(tmp_path, fusion=True), Installed(QUANT), bert_npz)
    assert caught.value.owner == "--fusion"


def test_a_missing_quantization_distribution_is_an_error_with_its_install_line(tmp_path, bert, bert_npz):
    for kwargs in ({}, {"precision": "int4"}, {"precision": "fp16"}, {"act_precision": "uint8"}):
        with pytest.raises(WorkflowConfigError, match="olive-passes-quant; install it with: pip install") as caught:
            build_workflow(bert, options(tmp_path, **kwargs), Installed(GRAPH), bert_npz)
        assert caught.value.owner == "--precision"


def test_plugin_providers_are_targets_with_their_searched_options(tmp_path, bert, bert_npz):
    installed = Installed(QUANT | GRAPH, plugin_providers={"OpenVINOExecutionProvider": ("INFERENCE_PRECISION_HINT",)})
    chosen = options(tmp_path, providers=("CPUExecutionProvider", "OpenVINOExecutionProvider"))
    accelerators = build_workflow(bert, chosen, installed, bert_npz).workflow["systems"]["target"]["accelerators"]
    assert accelerators == [
        {
            "device": "cpu",
            "execution_providers": [
                "CPUExecutionProvider",
                ["OpenVINOExecutionProvider", {"INFERENCE_PRECISION_HINT": "SEARCHABLE_VALUES"}],
            ],
        }
    ]
    gpu = build_workflow(bert, options(tmp_path, device="gpu"), ALL, bert_npz).workflow
    assert gpu["systems"]["target"]["accelerators"][0]["execution_providers"] == ["CUDAExecutionProvider"]


def test_max_time_limits_the_search(tmp_path, bert, bert_npz):
    workflow = build_workflow(bert, options(tmp_path, max_time=30.0), ALL, bert_npz).workflow
    assert workflow["search_strategy"]["max_time"] == 30.0


def test_the_workflow_names_the_cache_it_was_given_and_otherwise_shares_the_per_user_one(tmp_path, bert, bert_npz):
    given = build_workflow(bert, options(tmp_path), ALL, bert_npz).workflow
    assert given["cache_dir"] == str(tmp_path / "cache")
    default = OptimizeOptions(output_dir=tmp_path / "out", cache_dir=None)
    # No key at all: `olive run` of the written workflow then uses the same per-user cache as the command did.
    assert "cache_dir" not in build_workflow(bert, default, ALL, bert_npz).workflow


def test_batch_size_and_max_samples_reach_the_data_and_the_guard(tmp_path, bert, bert_npz):
    workflow = build_workflow(bert, options(tmp_path, batch_sizes=(4,), max_samples=8), ALL, bert_npz).workflow
    assert workflow["data_configs"][0]["dataloader_config"] == {"batch_size": 4}
    guard = workflow["passes"]["quantize"]
    assert guard["batch_size"] == 4 and guard["max_samples"] == 8
    # Batches of several samples are not run at each sample's real length.
    assert "trim_padding" not in guard and "trim_padding" not in metric(workflow, "agreement")


def test_a_hugging_face_model_is_converted_first_by_the_plugin_that_takes_it(tmp_path):
    facts = ModelFacts(
        "HfModel",
        tmp_path,
        inputs=(("input_ids", ("batch_size", "sequence_length"), "int64"),),
        outputs=(("last_hidden_state", (), "float32"),),
        mask_input="attention_mask",
        task="feature-extraction",
        tokenizer_dir=tmp_path,
    )
    text = DataSource("text", tmp_path / "s.txt", tmp_path)
    installed = Installed(
        QUANT | GRAPH | {"OnnxConversion"}, frozenset({"TextDataContainer"}), {}, {"HfModel": "OnnxConversion"}
    )
    workflow = build_workflow(facts, options(tmp_path), installed, text).workflow
    assert list(workflow["passes"]) == ["convert", "quantize"]
    assert workflow["passes"]["convert"] == {"type": "OnnxConversion", "data_config": "data"}
    fused = build_workflow(facts, options(tmp_path, precision="fp16"), installed, text).workflow["passes"]
    assert list(fused) == ["convert", "fuse", "quantize"]
    assert "model_type" not in fused["fuse"]  # the conversion records it
    assert workflow["input_model"] == {"type": "HfModel", "model_path": str(tmp_path), "task": "feature-extraction"}
    assert workflow["data_configs"][0]["pre_process_data_config"]["tokenizer"] == str(tmp_path)
    with pytest.raises(WorkflowConfigError, match=r"no installed pass converts a HfModel.*olive-passes-torch"):
        build_workflow(facts, options(tmp_path), ALL, text)


def test_a_decoder_with_a_generation_cache_is_refused(tmp_path):
    facts = model_facts_from_onnx(_renamed(mlp_model(), "input", "past_key_values.0.key"), tmp_path / "p.onnx")
    with pytest.raises(WorkflowConfigError, match="past key/values"):
        build_workflow(facts, options(tmp_path), ALL, SYNTHETIC)


def test_keeps_given_replace_the_defaults(tmp_path, bert, bert_npz):
    keeps = (Keep("cosine_mean", ">=", 0.995), Keep("max_abs_diff", "<", 0.5))
    recipe = build_workflow(bert, options(tmp_path, keeps=keeps), ALL, bert_npz)
    guard = recipe.workflow["passes"]["quantize"]
    assert guard["target_metric"] == ["cosine_mean", "max_abs_diff"]
    steps = dynamic_steps(guard)
    assert steps[0] == [0.995, 0.5] and steps[1][0] > 0.995 and steps[1][1] < 0.5
    agreement = subs(recipe.workflow, "agreement")
    assert set(agreement) == {"cosine_mean", "max_abs_diff"}
    assert agreement["max_abs_diff"]["goal"]["value"] == math.nextafter(0.5, -math.inf)


def test_text_is_cut_to_128_tokens_or_the_models_longest_input(tmp_path):
    facts = ModelFacts(
        "HfModel", tmp_path, mask_input="attention_mask", task="feature-extraction", max_sequence_length=64
    )
    text = DataSource("text", tmp_path / "s.txt", tmp_path)
    installed = Installed(ALL.passes | {"OnnxConversion"}, converters={"HfModel": "OnnxConversion"})

    def max_length(**kwargs) -> int:
        workflow = build_workflow(facts, options(tmp_path, **kwargs), installed, text).workflow
        return workflow["data_configs"][0]["pre_process_data_config"]["max_length"]

    assert max_length() == 64
    assert max_length(max_length=32) == 32
    assert max_length() == 64
    with pytest.raises(WorkflowConfigError, match="takes at most 64; give --max-length 64 or less") as caught:
        max_length(max_length=100)
    assert caught.value.owner == "--max-length"
    unlimited = attrs.evolve(facts, max_sequence_length=None)
    workflow = build_workflow(unlimited, options(tmp_path), installed, text).workflow
    assert workflow["data_configs"][0]["pre_process_data_config"]["max_length"] == 128


def test_validation_data_judges_and_all_of_data_fits(tmp_path, bert):
    model = bert_like_model(seed=0)
    fit = write_npz_dataset(tmp_path / "fit.npz", model, num_samples=4, seed=1)
    judge = write_npz_dataset(tmp_path / "judge.npz", model, num_samples=4, seed=2)
    source = data_source(fit, bert, frozenset(), validation=judge, max_samples=64)
    assert not source.split and source.validation is not None and source.validation.path == judge.resolve()
    recipe = build_workflow(bert, options(tmp_path, data=fit, validation_data=judge), ALL, source)
    workflow = recipe.workflow
    names = [config["name"] for config in workflow["data_configs"]]
    assert names == ["data", "validation"]
    assert workflow["data_configs"][1]["load_dataset_config"]["data_path"] == str(judge.resolve())
    assert workflow["passes"]["quantize"]["data_config"] == "data"
    assert metric(workflow, "agreement")["data_config"] == "validation"
    assert metric(workflow, "latency")["data_config"] == "validation"
    assert any("measured on --validation-data" in note for note in recipe.notes)
    # Without --validation-data, four samples cannot be split.
    with pytest.raises(WorkflowConfigError, match=r"--data: 'fit.npz' gives 4 sample\(s\).*at least 16"):
        data_source(fit, bert, frozenset(), max_samples=64)
    with pytest.raises(WorkflowConfigError, match=r"--validation-data: .*give --data FILE too"):
        options(tmp_path, validation_data=judge)
    with pytest.raises(WorkflowConfigError, match=r"^--validation-data: '.*nope.npz' is not a file"):
        data_source(fit, bert, frozenset(), validation=tmp_path / "nope.npz")


def test_text_records_say_which_field_and_how_many_samples_are_used(tmp_path, bert) -> None:
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    containers = frozenset({"TextDataContainer"})
    csv_file = tmp_path / "s.csv"
    csv_file.write_text("sentence\n" + "".join(f"sentence number {i}\n" for i in range(40)))
    source = data_source(csv_file, bert, containers, tokenizer=tmp_path, max_samples=32)
    # The header names the field; it is not a sample.
    assert (source.samples, source.text_field) == (40, "sentence")
    recipe = build_workflow(bert, options(tmp_path, max_samples=32), ALL, source)
    assert recipe.workflow["data_configs"][0]["load_dataset_config"]["text_field"] == "sentence"
    assert "--data: 's.csv' holds 40 samples; the first 32 are used (--max_samples)" in recipe.notes
    assert "--data: the text of each sample is its field 'sentence' (its only field)" in recipe.notes
    two = tmp_path / "two.csv"
    two.write_text("label,txt\n" + "".join(f"{i % 2},sentence {i}\n" for i in range(20)))
    with pytest.raises(WorkflowConfigError, match=r"^--data: 'two.csv' has no 'text' field \(did you mean 'txt'\?\)"):
        data_source(two, bert, containers, tokenizer=tmp_path)
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text("".join(f'{{"text": "sentence {i}"}}\n' for i in range(20)))
    source = data_source(jsonl, bert, containers, tokenizer=tmp_path, max_samples=64)
    assert (source.samples, source.text_field) == (20, "text")
    assert not any("holds" in n for n in build_workflow(bert, options(tmp_path), ALL, source).notes)


# --------------------------------------------------------------------------------------------- decoders
GENAI = frozenset({"ModelBuilder", "OnnxGuardedInt4", "OnnxKQuantQuantization", "OnnxGptqQuantization"})


def decoder(tmp_path: Path) -> ModelFacts:
    """What read_model_facts says of a Hugging Face causal language model folder (olive-passes-torch's HfModel)."""
    folder = tmp_path / "qwen2"
    folder.mkdir(exist_ok=True)
    return ModelFacts(
        model_type="HfModel",
        path=folder,
        inputs=(("input_ids", ("batch_size", "sequence_length"), "int64"),),
        outputs=(("logits", (), "float32"),),
        mask_input="attention_mask",
        classifier=True,
        tokenizer_dir=folder,
        task="text-generation",
        max_sequence_length=512,
    )


def text(tmp_path: Path, lines: int = 40) -> DataSource:
    path = tmp_path / "text.txt"
    path.write_text("".join(f"line {i} of the text\n" for i in range(lines)))
    return DataSource("text", path, tmp_path / "qwen2", samples=lines)


@pytest.mark.parametrize(
    ("spelled", "expected", "goal"),
    [
        ("perplexity<=1.02x", Keep("perplexity", "<=", 1.02, relative=True), ("percent-max-degradation", 2.0)),
        ("perplexity <= 1.1X", Keep("perplexity", "<=", 1.1, relative=True), ("percent-max-degradation", 10.0)),
        ("perplexity<=30", Keep("perplexity", "<=", 30.0), ("threshold", 30.0)),
        ("top1_agreement>=0.98", Keep("top1_agreement", ">=", 0.98), ("threshold", 0.98)),
        ("next_token_kl<=0.05", Keep("next_token_kl", "<=", 0.05), ("threshold", 0.05)),
    ],
)
def test_a_decoders_keeps_are_spelled_as_the_others_with_x_for_a_ratio_to_the_float_model(spelled, expected, goal):
    keep = parse_keep(spelled)
    assert keep == expected and keep.generative
    assert (keep.goal()["type"], keep.goal()["value"]) == goal
    assert parse_keep(str(keep)) == keep


def test_a_ratio_keep_is_met_against_the_float_models_value():
    keep = parse_keep("perplexity<=1.02x")
    assert keep.met_by(10.2, baseline=10.0) and not keep.met_by(10.21, baseline=10.0)
    # Without the float model's value there is nothing to hold a ratio against.
    assert not keep.met_by(10.0)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("top1_agreement>=0.98x", "only perplexity takes a ratio"),
        ("perplexity<=0.9x", "below 1 asks the quantized model to beat it"),
        ("perplexity>=1.02x", "lower-is-better"),
        ("perplexity<=0.5", "a perplexity is at least 1"),
        ("perplexity<=1.02y", "'1.02y' is not a number"),
        ("top1_agreement>=1.5", "from 0 to 1"),
        ("next_token_kl<=-1", "never negative"),
        ("perplexty<=1.02x", "did you mean 'perplexity'"),
    ],
)
def test_a_bad_decoder_keep_is_one_error_owned_by_the_option(text: str, words: str) -> None:
    with pytest.raises(WorkflowConfigError, match="--keep") as caught:
        parse_keep(text)
    assert words in str(caught.value)


def test_a_decoder_is_built_by_modelbuilder_and_guarded_to_int4_on_the_fitting_half_of_its_text(tmp_path):
    facts = decoder(tmp_path)
    recipe = build_workflow(facts, options(tmp_path), Installed(GENAI), text(tmp_path))
    workflow = recipe.workflow
    assert recipe.decoder and recipe.keeps == (Keep("perplexity", "<=", 1.02, relative=True),)
    assert list(workflow["passes"]) == ["build", "quantize"]
    build, quantize = workflow["passes"]["build"], workflow["passes"]["quantize"]
    # The float build is the reference every figure compares with: one model, nothing of it searched.
    assert build["type"] == "ModelBuilder" and build["precision"] == "fp32"
    assert build["int4_block_size"] == build["int4_algo_config"] == "DEFAULT_VALUE"
    assert quantize["type"] == "OnnxGuardedInt4" and quantize["data_config"] == "data"
    assert quantize["goal_metric"] == "perplexity_ratio"
    assert quantize["goal_value"]["support"] == [1.02, 1.013333, 1.006667]
    assert workflow["search_strategy"]["stop_when_goals_met"] is True
    # The guard and the metrics name one data config: the engine splits it, so the figures are on text the guard
    # never saw.
    assert [d["name"] for d in workflow["data_configs"]] == ["data"]
    assert workflow["data_configs"][0]["type"] == "TextDataContainer"
    assert all(metric(workflow, name)["data_config"] == "data" for name in ("speed", "perplexity", "top1_agreement"))
    speed = subs(workflow, "speed")
    assert speed["ratio_decode_tokens_per_s"]["priority"] == 1
    assert subs(workflow, "perplexity")["perplexity"]["goal"] == {"type": "percent-max-degradation", "value": 2.0}
    assert "goal" not in subs(workflow, "top1_agreement")["top1_agreement"]
    assert any("the guard fits on its half" in n for n in recipe.notes)
    assert "perplexity<=1.02x against the float model on held-out text" in recipe.objective


def test_a_block_size_with_precision_auto_applies_to_a_decoder_and_the_summary_says_what_auto_chose(tmp_path):
    recipe = build_workflow(decoder(tmp_path), options(tmp_path, block_size=128), Installed(GENAI), text(tmp_path))
    assert recipe.workflow["passes"]["quantize"]["block_size"] == 128
    assert any(n.startswith("--precision auto: int4 for a decoder (block size 128") for n in recipe.notes)
    plain = build_workflow(decoder(tmp_path), options(tmp_path, block_size=64), Installed(GENAI), SYNTHETIC)
    assert plain.workflow["passes"]["quantize"]["block_size"] == 64


def test_a_block_size_with_precision_auto_on_an_encoder_says_auto_means_int8_there(tmp_path, bert, bert_npz):
    with pytest.raises(WorkflowConfigError) as caught:
        build_workflow(bert, options(tmp_path, block_size=32), ALL, bert_npz)
    assert caught.value.owner == "--block_size"
    assert "--precision auto means int8" in caught.value.reason and "add --precision int4" in caught.value.reason


def test_a_top1_agreement_keep_is_what_the_guard_aims_at(tmp_path):
    keeps = (parse_keep("top1_agreement>=0.97"), parse_keep("next_token_kl<=0.1"))
    recipe = build_workflow(decoder(tmp_path), options(tmp_path, keeps=keeps), Installed(GENAI), text(tmp_path))
    quantize = recipe.workflow["passes"]["quantize"]
    assert quantize["goal_metric"] == "top1_agreement" and quantize["goal_value"]["support"][0] == 0.97
    assert subs(recipe.workflow, "next_token_kl")["next_token_kl"]["goal"] == {"type": "threshold", "value": 0.1}
    assert subs(recipe.workflow, "top1_agreement")["top1_agreement"]["goal"]["value"] == 0.97


def test_without_text_a_decoder_is_plain_int4_judged_on_random_tokens_and_says_what_that_is_worth(tmp_path):
    recipe = build_workflow(decoder(tmp_path), options(tmp_path), Installed(GENAI), SYNTHETIC)
    quantize = recipe.workflow["passes"]["quantize"]
    # k-quant fits an offset to every block: no is_symmetric, which it would ignore
    assert quantize["type"] == "OnnxKQuantQuantization" and quantize["bits"] == 4 and "is_symmetric" not in quantize
    assert recipe.keeps == () and recipe.synthetic
    assert recipe.workflow["data_configs"] == []
    names = [m["name"] for m in recipe.workflow["evaluators"]["optimize"]["metrics"]]
    assert names == ["speed", "top1_agreement", "size"]
    assert metric(recipe.workflow, "top1_agreement")["user_config"]["synthetic"] is True
    said = " ".join(recipe.notes)
    assert "says little" in said and "give --data FILE" in said
    with pytest.raises(WorkflowConfigError, match=r"^--keep: perplexity<=1.02x is measured on text; give --data"):
        build_workflow(
            decoder(tmp_path), options(tmp_path, keeps=(parse_keep("perplexity<=1.02x"),)), Installed(GENAI), SYNTHETIC
        )


def test_int8_and_fp32_decoders(tmp_path):
    int8 = build_workflow(decoder(tmp_path), options(tmp_path, precision="int8"), Installed(GENAI), text(tmp_path))
    assert int8.workflow["passes"]["quantize"]["bits"] == 8
    fp32 = build_workflow(decoder(tmp_path), options(tmp_path, precision="fp32"), Installed(GENAI), text(tmp_path))
    assert list(fp32.workflow["passes"]) == ["build"]


def test_a_decoder_without_olive_passes_genai_is_one_error_naming_the_distribution(tmp_path):
    with pytest.raises(WorkflowConfigError) as caught:
        build_workflow(decoder(tmp_path), options(tmp_path), ALL, text(tmp_path))
    assert caught.value.owner == "MODEL"
    assert "ModelBuilder is offered by olive-passes-genai; install it with: pip install" in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "owner", "words"),
    [
        ({"keeps": (Keep("cosine_min", ">=", 0.97),)}, "--keep", "is a decoder, which keeps what it says on text"),
        ({"precision": "uint8"}, "--precision", "not a decoder precision"),
        ({"precision": "fp16"}, "--precision", "fp16 decoders need a GPU provider"),
        ({"latency_budget": 0.5}, "--latency-budget", "leave --latency-budget out"),
        ({"fusion": True}, "--fusion", "GroupQueryAttention"),
        ({"max_length": 1024}, "--max-length", "takes at most 512"),
    ],
)
def test_what_a_decoder_cannot_take_is_one_error_owned_by_the_option(tmp_path, kwargs, owner, words):
    with pytest.raises(WorkflowConfigError) as caught:
        build_workflow(decoder(tmp_path), options(tmp_path, **kwargs), Installed(GENAI), text(tmp_path))
    assert caught.value.owner == owner and words in str(caught.value)


def test_a_decoders_keep_on_an_encoder_is_refused(tmp_path, bert, bert_npz):
    with pytest.raises(WorkflowConfigError, match=r"^--keep: perplexity<=1.02x: a decoder's keep"):
        build_workflow(bert, options(tmp_path, keeps=(parse_keep("perplexity<=1.02x"),)), ALL, bert_npz)


def test_a_decoder_judged_on_validation_text_fits_its_guard_on_all_of_data(tmp_path):
    source = attrs.evolve(text(tmp_path), validation=DataSource("text", tmp_path / "judge.txt", tmp_path / "qwen2"))
    recipe = build_workflow(decoder(tmp_path), options(tmp_path), Installed(GENAI), source)
    assert [d["name"] for d in recipe.workflow["data_configs"]] == ["data", "validation"]
    assert recipe.workflow["passes"]["quantize"]["data_config"] == "data"
    assert metric(recipe.workflow, "perplexity")["data_config"] == "validation"
    assert "the guard fits on --data; perplexity and agreement are measured on --validation-data" in recipe.notes


@pytest.mark.parametrize(
    ("samples", "max_samples", "kept"), [(40, 64, 0.97), (20, 64, 0.95), (100, 64, 0.98), (400, 200, 0.99)]
)
def test_a_classifiers_default_keep_allows_one_flip_on_fewer_than_100_judged_samples(
    tmp_path, samples, max_samples, kept
) -> None:
    # top1>=0.99 on 40 samples allows no flipped prediction: the first run of a classifier had no model.
    proto = _renamed(mlp_model(), "output", "logits")
    facts = read_model_facts(save_model(proto, tmp_path / "m").model_path)
    assert facts.classifier
    path = write_npz_dataset(tmp_path / "data.npz", proto, num_samples=samples)
    recipe = build_workflow(facts, options(tmp_path, max_samples=max_samples), ALL, recipe_data(path, facts))
    assert recipe.keeps == (Keep("top1", ">=", kept),)
    relaxed = [n for n in recipe.notes if n.startswith("top1 is kept at")]
    assert bool(relaxed) == (kept != CLASSIFIER_KEEPS[0].value), recipe.notes
    # Dynamic quantization fits on nothing: every sample judges, and the note says so, not "half to fit".
    assert "--data: every sample judges (metrics and keeps): no pass here fits on data, so it is not split" in (
        recipe.notes
    )
    assert not any("half to fit" in n for n in recipe.notes)
    # A keep given is the user's: never relaxed.
    given = build_workflow(facts, options(tmp_path, keeps=(Keep("top1", ">=", 0.99),)), ALL, recipe_data(path, facts))
    assert given.keeps == (Keep("top1", ">=", 0.99),)


def recipe_data(path: Path, facts: ModelFacts) -> DataSource:
    return data_source(path, facts, frozenset())


def test_a_decoder_with_adapters_is_built_once_with_their_inputs_and_measured_with_each_active(tmp_path):
    facts = decoder(tmp_path)
    adapters = (("legal", tmp_path / "legal"), ("chat", tmp_path / "chat"))
    recipe = build_workflow(facts, options(tmp_path, adapters=adapters), Installed(GENAI), text(tmp_path))
    workflow = recipe.workflow
    assert recipe.adapters == ("legal", "chat")
    assert workflow["input_model"]["adapters"] == {"legal": str(tmp_path / "legal"), "chat": str(tmp_path / "chat")}
    # One build, whose output (the float model every figure compares with) runs every adapter and none.
    assert list(workflow["passes"]) == ["build", "quantize"]
    assert workflow["passes"]["build"]["extract_adapters"] is True
    for name in ("legal", "chat"):
        adapter = {"adapter": name, "adapter_path": str(tmp_path / name), "base_model": str(facts.path)}
        for kind in ("perplexity", "top1_agreement"):
            entry = metric(workflow, f"{kind}@{name}")
            assert entry["type"] == kind and entry["data_config"] == "data"
            assert adapter.items() <= entry["user_config"].items()
            assert "goal" not in entry["sub_types"][0] and "priority" not in entry["sub_types"][0]
        speed = metric(workflow, f"speed@{name}")
        assert speed["type"] == "decode_tokens_per_s" and adapter.items() <= speed["user_config"].items()
    # The base's own metrics, goals and objective are as without adapters.
    assert subs(workflow, "perplexity")["perplexity"]["goal"] == {"type": "percent-max-degradation", "value": 2.0}
    assert subs(workflow, "speed")["ratio_decode_tokens_per_s"]["priority"] == 1
    assert any(n.startswith("2 adapter(s) (legal, chat): the base is built once") for n in recipe.notes)
    # Without adapters nothing of them is written.
    plain = build_workflow(facts, options(tmp_path), Installed(GENAI), text(tmp_path)).workflow
    assert "adapters" not in plain["input_model"] and "extract_adapters" not in plain["passes"]["build"]
    # Without text: no perplexity, agreement on random token ids.
    synthetic = build_workflow(facts, options(tmp_path, adapters=adapters[:1]), Installed(GENAI), SYNTHETIC).workflow
    names = {m["name"] for m in synthetic["evaluators"]["optimize"]["metrics"]}
    assert {"top1_agreement@legal", "speed@legal"} <= names and "perplexity@legal" not in names
    assert metric(synthetic, "top1_agreement@legal")["user_config"]["synthetic"] is True


def test_a_text_files_blank_lines_are_said_to_be_skipped(tmp_path, bert) -> None:
    # 274 lines, every other one blank: 137 samples, and the note says where the other lines went.
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    text = tmp_path / "text.txt"
    text.write_text("".join(f"sentence number {i}\n\n" for i in range(137)))
    source = data_source(text, bert, frozenset({"TextDataContainer"}), tokenizer=tmp_path, max_samples=32)
    assert (source.samples, source.blank_lines) == (137, 137)
    recipe = build_workflow(bert, options(tmp_path, max_samples=32), ALL, source)
    assert (
        "--data: 'text.txt' holds 137 samples (one per line; 137 blank line(s) skipped); the first 32 are used "
        "(--max_samples)" in recipe.notes
    ), recipe.notes
