"""The generative metrics: perplexity equal to PyTorch's on the same windows, agreement exact against itself and
far off against another model, speed through onnxruntime-genai's Generator; registered through the hook."""

from __future__ import annotations

import math

import pytest
from conftest import build
from olive_passes_genai import metrics

from olive.exceptions import OliveError


def _metric(path, **options):
    return {"name": "m", "user_config": {"data_path": str(path), **options}}


def _torch_perplexity(folder, ids, window, stride, max_windows):
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    nll, count = 0.0, 0
    starts = list(range(0, len(ids) - window + 1, stride))[:max_windows]
    with torch.no_grad():
        for s in starts:
            chunk = torch.tensor([ids[s : s + window]])
            logp = torch.log_softmax(model(input_ids=chunk).logits[0, :-1].double(), -1)
            nll -= float(logp.gather(1, chunk[0, 1:, None]).sum())
            count += window - 1
    return math.exp(nll / count)


@pytest.mark.parametrize(("window", "stride"), [(128, 128), (64, 32)])
def test_perplexity_is_pytorchs_on_the_same_windows(trained_dir, trained_fp32, held_out_file, window, stride):
    import onnxruntime_genai as og

    metric = _metric(held_out_file, window=window, stride=stride, max_windows=6)
    ours = metrics.perplexity(trained_fp32, metric, None)["perplexity"]
    text = "\n".join(line for line in held_out_file.read_text().splitlines() if line.strip())
    ids = list(og.Tokenizer(og.Model(str(trained_fp32.folder))).encode(text))
    assert ours == pytest.approx(_torch_perplexity(trained_dir, ids, window, stride, 6), rel=1e-3)


def test_the_trained_decoder_has_a_far_lower_perplexity_than_a_random_one(trained_fp32, qwen2_fp32, held_out_file):
    metric = _metric(held_out_file, max_windows=4)
    trained = metrics.perplexity(trained_fp32, metric, None)["perplexity"]
    random = metrics.perplexity(qwen2_fp32, metric, None)["perplexity"]
    assert trained < random / 3, (trained, random)


def test_a_model_against_itself_agrees_exactly(qwen2_fp32, held_out_file):
    metric = _metric(held_out_file, max_windows=2, num_prompts=2, max_new_tokens=4, repeat=5)
    assert metrics.next_token_kl(qwen2_fp32, metric, None, qwen2_fp32) == {"next_token_kl": 0.0}
    assert metrics.top1_agreement(qwen2_fp32, metric, None, qwen2_fp32) == {"top1_agreement": 1.0}
    assert metrics.greedy_match(qwen2_fp32, metric, None, qwen2_fp32) == {"greedy_match": 1.0, "greedy_prefix": 1.0}
    speed = metrics.decode_tokens_per_s(qwen2_fp32, metric, None, qwen2_fp32)
    assert speed["ratio_decode_tokens_per_s"] == 1.0 and speed["decode_tokens_per_s"] > 10


def test_another_model_disagrees_and_the_metrics_say_so(qwen2_fp32, held_out_file, tmp_path, cpu):
    from olive.testing.decoders import save_decoder

    # Same tokenizer (trained on the same text), other weights.
    other = build(save_decoder(tmp_path / "hf", "qwen2", seed=7), tmp_path / "out", cpu, precision="fp32")
    metric = _metric(held_out_file, max_windows=2, num_prompts=3, max_new_tokens=8)
    assert metrics.next_token_kl(other, metric, None, qwen2_fp32)["next_token_kl"] > 0.01
    assert metrics.top1_agreement(other, metric, None, qwen2_fp32)["top1_agreement"] < 0.5
    assert metrics.greedy_match(other, metric, None, qwen2_fp32)["greedy_match"] < 1.0


def test_speed_is_measured_against_the_reference_in_alternating_rounds(trained_fp32, held_out_file, tmp_path):
    from olive.testing import run_pass
    from olive_passes_quant.k_quant import OnnxKQuantQuantization

    int4 = run_pass(OnnxKQuantQuantization, trained_fp32, {"block_size": 32}, output_dir=tmp_path)
    metric = _metric(held_out_file, repeat=10, prompt_tokens=32, max_new_tokens=8)
    decode = metrics.decode_tokens_per_s(int4, metric, None, trained_fp32)
    prefill = metrics.prefill_ms(int4, metric, None, trained_fp32)
    assert decode["decode_tokens_per_s"] > 10 and 0.1 < decode["ratio_decode_tokens_per_s"] < 10
    assert prefill["prefill_ms"] > 0 and 0.1 < prefill["ratio_prefill_ms"] < 10


def test_the_metrics_are_registered_through_the_hook_with_their_directions():
    from olive.evaluator.metric import parse_metric
    from olive.evaluator.metrics.plugin import PluginMetric
    from olive.evaluator.metrics.registry import metric_types

    registered = metric_types()
    assert set(metrics.METRICS) <= set(registered)
    assert all(isinstance(registered[name], PluginMetric) for name in metrics.METRICS)
    parsed = parse_metric({"name": "ppl", "type": "perplexity", "sub_types": [{"name": "perplexity"}]})
    assert parsed.sub_types[0].higher_is_better is False
    parsed = parse_metric({"name": "tps", "type": "decode_tokens_per_s", "sub_types": ["ratio_decode_tokens_per_s"]})
    assert parsed.sub_types[0].higher_is_better is True


def test_without_text_or_on_a_model_that_is_not_a_genai_folder_the_error_says_what_to_give(qwen2_fp32, tmp_path):
    with pytest.raises(OliveError, match="no text to measure on; give data_config"):
        metrics.perplexity(qwen2_fp32, {"name": "m"}, None)
    from olive.model.handler import ONNXModelHandler
    from olive.testing import mlp_model, save_model

    plain = save_model(mlp_model(), tmp_path / "mlp")
    with pytest.raises(OliveError, match="not an onnxruntime-genai folder"):
        metrics.perplexity(ONNXModelHandler(plain.model_path), _metric(tmp_path / "x.txt"), None)
