"""What ``olive optimize`` says at the end, from a run's footprint (nodes as the engine records them): the chosen
model against the input, why nothing was chosen, and whether ``--max-time`` cut the search short.

The same lines from real runs are checked in ``e2e/test_optimize.py``.
"""

from __future__ import annotations

from olive.engine.footprint import FootprintNode
from olive.engine.output import WorkflowOutput
from olive.engine.results import Status
from olive.optimize.keep import DECODER_KEEPS, EMBEDDING_KEEPS, Keep, parse_keep
from olive.optimize.summary import (
    adapter_lines,
    adapter_usage,
    closest_miss,
    comparison_lines,
    decoder_lines,
    decoder_miss,
    search_cut_short,
)

INPUT = FootprintNode(model_id="input", metrics={"latency-ratio_p50": 1.0, "size-bytes": 3 * 2**20})


def candidate(model_id: str, ratio: float, cosine_min: float, cosine_mean: float, **fields) -> FootprintNode:
    return FootprintNode(
        model_id=model_id,
        parent_model_id="input",
        pass_key="quantize",
        pass_name="OnnxAccuracyGuardedQuantization",
        is_candidate=True,
        metrics={
            "latency-ratio_p50": ratio,
            "agreement-cosine_min": cosine_min,
            "agreement-cosine_mean": cosine_mean,
            "size-bytes": 2**20 + 2**19,
        },
        **fields,
    )


def test_sizes_are_in_the_tables_unit() -> None:
    best = candidate("q", 0.6, 0.99, 0.995)
    lines = comparison_lines(WorkflowOutput([INPUT, best], best=best), EMBEDDING_KEEPS)
    assert "size: 3 MiB -> 1.5 MiB (2.00x smaller)" in lines


def test_a_missed_budget_whose_keeps_were_met_says_so_and_suggests_a_larger_budget() -> None:
    output = WorkflowOutput([INPUT, candidate("a", 0.834, 0.99, 0.995), candidate("b", 0.7012, 0.98, 0.993)])
    line = closest_miss(output, EMBEDDING_KEEPS, 0.5)
    assert line.startswith("2 candidate(s) keep cosine_min>=0.97 and cosine_mean>=0.99, but none ran within 0.5x")
    assert "the fastest of them (OnnxAccuracyGuardedQuantization) ran at 0.70x" in line
    assert "raise --latency-budget to 0.71 or more" in line
    assert "loosen --keep" not in line


def test_a_missed_keep_still_suggests_loosening_it() -> None:
    output = WorkflowOutput([INPUT, candidate("a", 0.4, 0.9, 0.95)])
    for budget in (None, 0.5):
        line = closest_miss(output, (Keep("cosine_min", ">=", 0.97),), budget)
        assert line.startswith("no candidate keeps cosine_min>=0.97") and "loosen --keep" in line


def test_max_time_that_stopped_the_search_is_said_with_how_many_candidates_ran() -> None:
    ran = [candidate("a", 0.8, 0.99, 0.995), candidate("b", 0.7, 0.99, 0.995, status=Status.FAILED)]
    output = WorkflowOutput([INPUT, *ran])
    assert search_cut_short(output, 7, 30.0) == (
        "--max-time 30 s stopped the search after 2 of its 7 candidate(s); a larger --max-time runs the rest "
        "(finished runs come from the cache)"
    )
    assert "after 0 of its 7" in (search_cut_short(WorkflowOutput([INPUT]), 7, 30.0) or "")
    # Every point ran, or the rest were pruned, or no limit was set: nothing to say.
    assert search_cut_short(output, 2, 30.0) is None
    pruned = FootprintNode(model_id="c", parent_model_id="input", pass_key="quantize", status=Status.PRUNED)
    assert search_cut_short(WorkflowOutput([INPUT, *ran, pruned]), 3, 30.0) is None
    assert search_cut_short(output, 7, None) is None


# --------------------------------------------------------------------------------------------- decoders
HF = FootprintNode(model_id="hf")
FLOAT = FootprintNode(
    model_id="build",
    parent_model_id="hf",
    pass_key="build",
    pass_name="ModelBuilder",
    metrics={
        "speed-ratio_decode_tokens_per_s": 1.0,
        "perplexity-perplexity": 20.0,
        "top1_agreement-top1_agreement": 1.0,
        "size-bytes": 4 * 2**20,
    },
)


def int4(model_id: str, perplexity: float, top1: float, guard: dict | None = None) -> FootprintNode:
    attributes = {"guarded_int4": guard} if guard else {}
    return FootprintNode(
        model_id=model_id,
        parent_model_id="build",
        pass_key="quantize",
        pass_name="OnnxGuardedInt4",
        is_candidate=True,
        metrics={
            "speed-ratio_decode_tokens_per_s": 3.5,
            "perplexity-perplexity": perplexity,
            "top1_agreement-top1_agreement": top1,
            "size-bytes": 2**20,
        },
        model_json={"config": {"model_attributes": attributes}},
    )


def test_a_decoder_is_said_against_its_float_build_with_the_guards_own_check_beside_the_held_out_figures() -> None:
    guard = {
        "goal": {"metric": "perplexity_ratio", "value": 1.02, "held": True},
        "held_out_value": 1.004,
        "kept_at_8_bits": ["/model/layers.0/mlp/down_proj/MatMul"],
        "matmuls": 11,
    }
    best = int4("q", 20.3, 0.97, guard)
    output = WorkflowOutput([HF, FLOAT, best], best=best, reference_model_id="build")
    lines = decoder_lines(output, DECODER_KEEPS)
    assert lines[0] == "chosen: ModelBuilder > OnnxGuardedInt4 (against the float build, ModelBuilder fp32)"
    assert "decode: 3.50x the float model's tokens/s (the two timed in alternating rounds)" in lines
    assert "size: 4 MiB -> 1 MiB (4.00x smaller)" in lines
    assert (
        "perplexity: 20 -> 20.3 (1.0150x the float model's; keep <= 1.02x) on held-out text (the half of --data the "
        "guard did not fit on)" in lines
    )
    assert "top1_agreement: 0.9700 on held-out text (the half of --data the guard did not fit on)" in lines
    assert lines[-1] == (
        "the guard's own check on the text it fit on: perplexity_ratio 1.0040 (its goal <= 1.02), 1 of 11 MatMuls "
        "kept at 8 bits"
    )
    synthetic = decoder_lines(output, (), synthetic=True)
    assert "top1_agreement: 0.9700 on random token ids (no --data)" in synthetic


def test_a_decoder_that_misses_its_keeps_names_the_closest_and_its_ratio_to_the_float_model() -> None:
    output = WorkflowOutput([HF, FLOAT, int4("a", 21.0, 0.95), int4("b", 20.6, 0.96)], reference_model_id="build")
    line = decoder_miss(output, (parse_keep("perplexity<=1.02x"), Keep("top1_agreement", ">=", 0.98)))
    assert line.startswith("no candidate keeps perplexity<=1.02x and top1_agreement>=0.98 on held-out text")
    assert "reached perplexity 1.0300x the float model's, top1_agreement 0.9600" in line
    assert "loosen --keep" in line


SERVED = {
    "agreement": {
        "served": [1, 32],
        "worst_at": {"cosine_min": 32, "cosine_mean": 32},
        "by_batch_size": {
            "1": {"cosine_min": 0.9746, "cosine_mean": 0.9929},
            "32": {"cosine_min": 0.9676, "cosine_mean": 0.9922},
        },
        "largest_batch": {"1": 1, "32": 16},
    }
}


def test_the_figures_say_at_which_batch_sizes_they_were_measured() -> None:
    best = candidate("q", 0.5, 0.9876, 0.9931, samples={"agreement": 16}, batch_sizes=SERVED)
    lines = comparison_lines(WorkflowOutput([INPUT, best], best=best), EMBEDDING_KEEPS)
    assert (
        "agreement with the input on 16 held-out sample(s), the worst over batch sizes 1 and 32 (at 32: one batch "
        "of 16, every sample): cosine_min 0.9876 (keep >= 0.97), cosine_mean 0.9931 (keep >= 0.99)"
    ) in lines
    assert "by batch size: 1: cosine_min 0.9746, cosine_mean 0.9929; 32: cosine_min 0.9676, cosine_mean 0.9922" in lines


def test_a_miss_names_the_closest_candidates_figures_at_each_batch_size() -> None:
    closest = candidate("q", 0.5, 0.9676, 0.9922, samples={"agreement": 16}, batch_sizes=SERVED)
    line = closest_miss(WorkflowOutput([INPUT, closest]), EMBEDDING_KEEPS, None)
    assert (
        "reached cosine_min 0.9676, cosine_mean 0.9922 on 16 held-out sample(s), the worst over batch sizes 1 and"
        in line
    )
    assert (
        "(by batch size: 1: cosine_min 0.9746, cosine_mean 0.9929; 32: cosine_min 0.9676, cosine_mean 0.9922)" in line
    )


def test_each_adapter_is_said_with_it_active_against_the_float_build_with_it(tmp_path) -> None:
    guard = {
        "goal": {"metric": "perplexity_ratio", "value": 1.02, "held": True},
        "held_out_value": 1.004,
        "kept_at_8_bits": [],
        "matmuls": 11,
        "adapters": {"legal": {"held_out_value": 1.011}},
    }
    figures = {"perplexity@legal-perplexity": 18.0, "top1_agreement@legal-top1_agreement": 1.0}
    base = FootprintNode(
        model_id="build",
        parent_model_id="hf",
        pass_key="build",
        pass_name="ModelBuilder",
        metrics={**FLOAT.metrics, **figures},
    )
    best = int4("q", 20.3, 0.97, guard)
    best.metrics.update(
        {
            "perplexity@legal-perplexity": 18.18,
            "top1_agreement@legal-top1_agreement": 0.955,
            "speed@legal-ratio_decode_tokens_per_s": 0.93,
        }
    )
    output = WorkflowOutput([HF, base, best], best=best, reference_model_id="build")
    assert adapter_lines(output, ("legal", "medical")) == [
        "legal: perplexity 18 -> 18.18 (1.0100x the float model's with it); top1_agreement 0.9550 with PyTorch with it "
        "merged; decode 0.93x the tokens/s with no adapter (alternating rounds) on held-out text",
        "medical: no figure (its metrics failed; see the run's log)",
    ]
    # The guard's goal held with the adapter active too: its value is beside the base's.
    assert decoder_lines(output, DECODER_KEEPS)[-1].startswith(
        "the guard's own check on the text it fit on: perplexity_ratio 1.0040, with legal active 1.0110 (its goal"
    )
    (tmp_path / "legal.onnx_adapter").write_bytes(b"x" * 2048)
    usage = adapter_usage(tmp_path, ("legal", "medical"))
    assert usage[0] == f"Adapter:  {tmp_path / 'legal.onnx_adapter'} (2 KiB)"
    assert usage[1] == f"Adapter:  {tmp_path / 'medical.onnx_adapter'} (missing)"
    assert f"          adapters.load('{tmp_path / 'medical.onnx_adapter'}', 'medical')" in usage
    assert usage[-1].startswith("          generator.set_active_adapter(adapters, 'legal')")
