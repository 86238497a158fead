"""Metrics for generative models, measured through ``onnxruntime_genai`` as a server runs the folder.

Registered by the distribution through ``olive_register_metrics``; each takes a ``GenAIModel`` folder (a
``ModelBuilder`` output or a weight-only pass's), its text from the metric's ``data_config`` (a
``TextDataContainer``: a local ``.txt`` file, one sample per line, or ``.jsonl`` with ``text_field``) or from
``user_config.data_path``, and writes its numbers under the sub type names below. Options go in
``user_config``. A data config the workflow's passes fit on too gives the metrics its judging part only
(:mod:`olive_passes_genai.text_windows`). ``user_config.synthetic: true`` measures the teacher-forced metrics
and the speed on seeded random token ids instead of text (what ``olive optimize`` does without ``--data``):
agreement on them says little about agreement on text.

===================== ============================================ ==========================================
metric type           sub types                                    how
===================== ============================================ ==========================================
``perplexity``        ``perplexity`` (lower is better)             The samples joined by newlines and tokenized
                                                                   once, cut into fixed windows of ``window``
                                                                   tokens (default 128) starting every
                                                                   ``stride`` tokens (default: ``window``, so
                                                                   no overlap), at most ``max_windows``
                                                                   (default 16). Each window is one prefill;
                                                                   exp of the mean next-token NLL over every
                                                                   predicted position.
``next_token_kl``     ``next_token_kl`` (lower)                    The same windows through the model and the
                                                                   reference model (the workflow's input model
                                                                   or its stand-in): mean KL(reference || model)
                                                                   of the next-token distributions, in nats.
``top1_agreement``    ``top1_agreement`` (higher)                  The same windows: the share of positions
                                                                   whose most likely next token is the same.
``greedy_match``      ``greedy_match``, ``greedy_prefix`` (higher) The first ``num_prompts`` samples (default
                                                                   8) as prompts, ``max_new_tokens`` (default
                                                                   16) greedy tokens each: the share of prompts
                                                                   whose tokens equal the reference's, and the
                                                                   mean share of tokens before the first
                                                                   difference.
``decode_tokens_per_s``  ``decode_tokens_per_s``,                  Greedy decoding of ``max_new_tokens``
                      ``ratio_decode_tokens_per_s`` (higher)       (default 32) after a prompt of
                                                                   ``prompt_tokens`` (default 64), per token,
                                                                   median over ``repeat`` runs (default 20);
                                                                   the ratio is timed in alternating rounds
                                                                   with the reference model (olive.measure's
                                                                   rule: settle, warm up, rotate).
``prefill_ms``        ``prefill_ms``, ``ratio_prefill_ms`` (lower) One prefill of ``prompt_tokens`` tokens (time
                                                                   to first token), timed as above.
===================== ============================================ ==========================================

**With an adapter active** (``user_config.adapter: NAME``, on a folder ``ExtractAdapters`` wrote): the model is
measured as a server runs it with that adapter (``onnxruntime_genai.Adapters``, ``set_active_adapter``), its file
the one the model records for the name (``model_attributes["adapters"]``), or ``user_config.adapter_file``.
``perplexity`` is the model's with the adapter active. ``next_token_kl``, ``top1_agreement`` and
``greedy_match`` compare it with PyTorch running the base with the same adapter merged (peft's
``merge_and_unload``; ``user_config.adapter_path``, the PEFT folder, defaults to the one the model records,
``user_config.base_model`` to the folder the adapter names as its base), on the same token ids; the workflow's
reference model is not used. ``decode_tokens_per_s`` and ``prefill_ms`` time the model with the adapter active
against the same model with none, in alternating rounds: the ratio is what the adapter costs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import OliveError
from olive.measure.timing import LATENCY_SETTLE_S, paired_round_size, ratios_to_reference
from olive_passes_genai.genai_model import GENAI_CONFIG, read_genai_config
from olive_passes_genai.text_windows import read_samples, windows

if TYPE_CHECKING:
    import numpy as np

RATIO = "ratio_"


# ---------------------------------------------------------------------------------------------- inputs


def _folder(model: Any, what: str) -> Path:
    """The onnxruntime-genai folder of a model handler (a GenAIModel, or an ONNX model beside a genai_config)."""
    path = Path(str(model.model_path))
    folder = path if path.is_dir() else path.parent
    if not (folder / GENAI_CONFIG).is_file():
        raise OliveError(
            f"{what} '{path}' is not an onnxruntime-genai folder (no {GENAI_CONFIG} beside it); generative metrics "
            "measure a ModelBuilder output (or a weight-only pass run on one)"
        )
    return folder


def _options(metric: Mapping[str, Any]) -> dict[str, Any]:
    return dict(metric.get("user_config") or {})


def _int(options: Mapping[str, Any], key: str, default: int, metric: Mapping[str, Any]) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OliveError(f"metric '{metric.get('name')}': user_config.{key} must be a whole number >= 1, got {value!r}")
    return value


def text_samples(metric: Mapping[str, Any], data: Any) -> list[str]:
    """The metric's text samples: ``user_config.data_path`` (``.txt``: one per line; ``.jsonl``: ``text_field``)
    or the metric's data config (a ``TextDataContainer``; its judging part where passes fit on the rest)."""
    options = _options(metric)
    return read_samples(
        data, options.get("data_path"), f"metric '{metric.get('name')}'", options.get("text_field", "text")
    )


class _Decoder:
    """One onnxruntime-genai model loaded from its folder, with its tokenizer; with an adapter active in every
    generator when :meth:`with_adapter` made it."""

    def __init__(self, folder: Path):
        import onnxruntime_genai as og

        self.og = og
        self.folder = folder
        self.model = og.Model(str(folder))
        self.tokenizer = og.Tokenizer(self.model)
        self.adapters: Any = None
        self.adapter: str | None = None

    def with_adapter(self, name: str, file: Path) -> _Decoder:
        """The same loaded model (and tokenizer) with the adapter ``name`` from ``file`` active."""
        adapters = self.og.Adapters(self.model)
        adapters.load(str(file), name)
        return self._sharing(adapters, name)

    def without_adapter(self) -> _Decoder:
        """The same loaded model with no adapter active (the base)."""
        return self._sharing(None, None)

    def _sharing(self, adapters: Any, adapter: str | None) -> _Decoder:
        other = object.__new__(_Decoder)
        other.__dict__.update(self.__dict__, adapters=adapters, adapter=adapter)
        return other

    def encode(self, text: str) -> np.ndarray:
        import numpy as np

        return np.asarray(self.tokenizer.encode(text), dtype=np.int32)

    def generator(self, max_length: int, greedy: bool = True) -> Any:
        params = self.og.GeneratorParams(self.model)
        options: dict[str, Any] = {"max_length": max_length}
        if greedy:
            options["do_sample"] = False
        params.set_search_options(**options)
        generator = self.og.Generator(self.model, params)
        if self.adapter is not None:
            generator.set_active_adapter(self.adapters, self.adapter)
        return generator

    def window_logits(self, tokens: np.ndarray) -> np.ndarray:
        """Float64 logits ``[len(tokens), vocab]`` of one prefill of ``tokens`` (teacher-forced)."""
        import numpy as np

        generator = self.generator(len(tokens) + 1)
        generator.append_tokens(tokens)
        logits = np.asarray(generator.get_output("logits"), dtype=np.float64)
        return logits.reshape(-1, logits.shape[-1])[-len(tokens) :]

    def greedy(self, prompt: np.ndarray, new_tokens: int) -> list[int]:
        generator = self.generator(len(prompt) + new_tokens)
        generator.append_tokens(prompt)
        out: list[int] = []
        while not generator.is_done() and len(out) < new_tokens:
            generator.generate_next_token()
            out.append(int(generator.get_next_tokens()[0]))
        return out


def _adapter_name(metric: Mapping[str, Any]) -> str | None:
    name = _options(metric).get("adapter")
    if name is not None and (not isinstance(name, str) or not name):
        raise OliveError(f"metric '{metric.get('name')}': user_config.adapter must be an adapter's name, got {name!r}")
    return name


def _adapter_record(model: Any, name: str, metric: Mapping[str, Any]) -> Mapping[str, Any]:
    records = (getattr(model, "model_attributes", None) or {}).get("adapters") or {}
    record = records.get(name)
    if isinstance(record, Mapping):
        return record
    if _options(metric).get("adapter_file"):
        return {}
    have = ", ".join(sorted(records)) or "none"
    raise OliveError(
        f"metric '{metric.get('name')}': the model has no adapter '{name}' (its adapters: {have}); name one of them "
        "in user_config.adapter, or give user_config.adapter_file"
    )


def _loaded(model: Any, metric: Mapping[str, Any]) -> _Decoder:
    """The model's decoder, with ``user_config.adapter`` active when the metric names one."""
    decoder = _Decoder(_folder(model, "the model"))
    name = _adapter_name(metric)
    return decoder if name is None else decoder.with_adapter(name, _adapter_file(model, decoder.folder, name, metric))


def _adapter_file(model: Any, folder: Path, name: str, metric: Mapping[str, Any]) -> Path:
    given = _options(metric).get("adapter_file")
    record = _adapter_record(model, name, metric)
    path = Path(given) if given else folder / str(record.get("file") or f"{name}.onnx_adapter")
    if not path.is_file() or path.suffix != ".onnx_adapter":
        raise OliveError(
            f"metric '{metric.get('name')}': adapter '{name}' has no .onnx_adapter file ({path}); onnxruntime_genai "
            "loads that format only: run ExtractAdapters with save_format onnx_adapter, or olive convert-adapters"
        )
    return path


class _Merged:
    """PyTorch running the base with a PEFT adapter merged (``merge_and_unload``): the reference an adapter's
    agreement is measured against."""

    def __init__(self, base: Path, adapter: Path, what: str):
        try:
            import peft
            import torch
            import transformers
        except ImportError as exc:
            raise OliveError(
                f"{what}: its agreement is measured against PyTorch with it merged, which needs {exc.name}; install "
                "it (pip install olive-passes-genai[adapters])"
            ) from None
        self.torch = torch
        model = transformers.AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True)
        # In float32 whatever the checkpoint's dtype: the float build it is compared with is fp32.
        self.model = peft.PeftModel.from_pretrained(model, str(adapter)).merge_and_unload().float().eval()

    def window_logits(self, tokens: np.ndarray) -> np.ndarray:
        import numpy as np

        torch = self.torch
        with torch.no_grad():
            logits = self.model(input_ids=torch.tensor(tokens[None, :].astype(np.int64))).logits
        return logits[0].to(torch.float64).numpy()

    def greedy(self, prompt: np.ndarray, new_tokens: int) -> list[int]:
        import numpy as np

        torch = self.torch
        with torch.no_grad():
            out = self.model.generate(
                torch.tensor(prompt[None, :].astype(np.int64)),
                max_new_tokens=new_tokens,
                do_sample=False,
                attention_mask=torch.ones((1, len(prompt)), dtype=torch.long),
            )
        return out[0, len(prompt) :].tolist()


def _merged_reference(model: Any, name: str, metric: Mapping[str, Any]) -> _Merged:
    """PyTorch with the metric's adapter merged: its PEFT folder (``user_config.adapter_path``, or the model's record)
    and base (``user_config.base_model``, or the folder the adapter's config names)."""
    import json

    options = _options(metric)
    what = f"metric '{metric.get('name')}': adapter '{name}'"
    folder = options.get("adapter_path") or _adapter_record(model, name, metric).get("path")
    if not folder or not (Path(folder) / "adapter_config.json").is_file():
        raise OliveError(
            f"{what}: its PEFT folder is not known ({folder or 'the model records none'}), and the agreement is "
            "measured against PyTorch with it merged; give user_config.adapter_path (the folder "
            "PeftModel.save_pretrained wrote)"
        )
    base = options.get("base_model")
    if not base:
        base = json.loads((Path(folder) / "adapter_config.json").read_text(encoding="utf-8")).get(
            "base_model_name_or_path"
        )
    if not base or not (Path(base) / "config.json").is_file():
        raise OliveError(
            f"{what}: its base model '{base}' is not a local Hugging Face folder; give user_config.base_model (the "
            "folder the adapter was trained on)"
        )
    return _Merged(Path(base), Path(folder), what)


def _tokens(decoder: _Decoder, metric: Mapping[str, Any], data: Any, count: int) -> np.ndarray:
    """The metric's text, tokenized; with ``user_config.synthetic`` (no text given), ``count`` seeded random token
    ids from the model's vocabulary instead, which say how closely two models agree on nonsense, not on text."""
    import numpy as np

    if not _options(metric).get("synthetic"):
        return decoder.encode("\n".join(text_samples(metric, data)))
    vocab = int(read_genai_config(decoder.folder)["model"].get("vocab_size") or 0)
    if vocab < 2:
        raise OliveError(f"metric '{metric.get('name')}': {GENAI_CONFIG} gives no vocab_size to draw tokens from")
    return np.random.default_rng(0).integers(0, vocab, size=count).astype(np.int32)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    import numpy as np

    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _teacher_forced(model: Any, metric: Mapping[str, Any], data: Any, reference: Any | None) -> dict[str, float]:
    """Perplexity of ``model`` and, with ``reference``, next-token KL and top-1 agreement against it."""
    import numpy as np

    options = _options(metric)
    window = _int(options, "window", 128, metric)
    stride = _int(options, "stride", window, metric)
    max_windows = _int(options, "max_windows", 16, metric)
    candidate = _loaded(model, metric)
    tokens = _tokens(candidate, metric, data, window * max_windows)
    cut = windows(tokens, window, stride, max_windows)
    if not cut:
        raise OliveError(f"metric '{metric.get('name')}': the text is under 2 tokens long; give more text")
    against: _Decoder | _Merged | None = None
    if reference is not None and candidate.adapter is not None:
        against = _merged_reference(model, candidate.adapter, metric)
    elif reference is not None and _folder(reference, "the reference model") != candidate.folder:
        against = _Decoder(_folder(reference, "the reference model"))
    nll, kl, agree, count = 0.0, 0.0, 0, 0
    for tokens_w in cut:
        log_p = _log_softmax(candidate.window_logits(tokens_w))
        targets = tokens_w[1:]
        nll -= float(log_p[np.arange(len(targets)), targets].sum())
        if against is not None:
            log_q = _log_softmax(against.window_logits(tokens_w))[:-1]
            log_p = log_p[:-1]
            kl += float((np.exp(log_q) * (log_q - log_p)).sum())
            agree += int((log_q.argmax(axis=-1) == log_p.argmax(axis=-1)).sum())
        count += len(targets)
    result = {"perplexity": math.exp(nll / count), "positions": float(count), "windows": float(len(cut))}
    if reference is not None:
        result["next_token_kl"] = kl / count if against is not None else 0.0
        result["top1_agreement"] = agree / count if against is not None else 1.0
    return result


# ---------------------------------------------------------------------------------------------- metric types


def perplexity(model: Any, metric: Mapping[str, Any], data: Any) -> dict[str, float]:
    """``perplexity`` of the model on the text (see the module docstring)."""
    values = _teacher_forced(model, metric, data, None)
    return {"perplexity": values["perplexity"]}


def next_token_kl(model: Any, metric: Mapping[str, Any], data: Any, reference_model: Any = None) -> dict[str, float]:
    values = _teacher_forced(model, metric, data, reference_model or model)
    return {"next_token_kl": values["next_token_kl"]}


def top1_agreement(model: Any, metric: Mapping[str, Any], data: Any, reference_model: Any = None) -> dict[str, float]:
    values = _teacher_forced(model, metric, data, reference_model or model)
    return {"top1_agreement": values["top1_agreement"]}


def greedy_match(model: Any, metric: Mapping[str, Any], data: Any, reference_model: Any = None) -> dict[str, float]:
    options = _options(metric)
    prompts = text_samples(metric, data)[: _int(options, "num_prompts", 8, metric)]
    new_tokens = _int(options, "max_new_tokens", 16, metric)
    candidate = _loaded(model, metric)
    reference = reference_model or model
    against: _Decoder | _Merged
    if candidate.adapter is not None:
        against = _merged_reference(model, candidate.adapter, metric)
    elif _folder(reference, "the reference model") == candidate.folder:
        against = candidate
    else:
        against = _Decoder(_folder(reference, "the reference model"))
    full, prefix = 0, 0.0
    for prompt in prompts:
        ids = candidate.encode(prompt)
        ours, theirs = candidate.greedy(ids, new_tokens), against.greedy(ids, new_tokens)
        full += int(ours == theirs)
        common = next(
            (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), min(len(ours), len(theirs))
        )
        prefix += common / max(1, len(theirs))
    return {"greedy_match": full / len(prompts), "greedy_prefix": prefix / len(prompts)}


def _prompt(decoder: _Decoder, metric: Mapping[str, Any], data: Any, length: int) -> np.ndarray:
    import numpy as np

    tokens = _tokens(decoder, metric, data, length)
    if len(tokens) < length:
        tokens = np.resize(tokens, length)  # short text: repeated to the prompt length
    return tokens[:length]


def _speed(model: Any, metric: Mapping[str, Any], data: Any, reference: Any | None) -> dict[str, Any]:
    """Prefill seconds and per-token decode seconds of the model, and of the reference in alternating rounds."""
    import numpy as np

    options = _options(metric)
    prompt_len = _int(options, "prompt_tokens", 64, metric)
    new_tokens = _int(options, "max_new_tokens", 32, metric)
    repeat = _int(options, "repeat", 20, metric)
    warmup = _int(options, "warmup", 2, metric)
    candidate = _loaded(model, metric)
    decoders = [candidate]
    if candidate.adapter is not None:
        # What the adapter costs: the same loaded model with none active is the reference.
        decoders.append(candidate.without_adapter())
    elif reference is not None and _folder(reference, "the reference model") != candidate.folder:
        decoders.append(_Decoder(_folder(reference, "the reference model")))
    prompt = _prompt(candidate, metric, data, prompt_len)

    def once(decoder: _Decoder) -> tuple[float, float]:
        generator = decoder.generator(prompt_len + new_tokens)
        start = time.perf_counter()
        generator.append_tokens(prompt)  # the prefill computes the first token's logits
        prefill = time.perf_counter() - start
        start = time.perf_counter()
        steps = 0
        while steps < new_tokens and not generator.is_done():
            generator.generate_next_token()
            steps += 1
        return prefill, (time.perf_counter() - start) / max(1, steps)

    # olive.measure's paired rule: rounds of a few runs per model, in rotating order, each after a settle pause
    # and an untimed run; a ratio takes each run against the reference's median in the same round.
    per_round = paired_round_size(repeat) if len(decoders) > 1 else repeat
    prefill_rounds: list[list[list[float]]] = []
    decode_rounds: list[list[list[float]]] = []
    done, untimed = 0, warmup
    while done < repeat:
        count = min(per_round, repeat - done)
        prefills: list[list[float]] = [[] for _ in decoders]
        decodes: list[list[float]] = [[] for _ in decoders]
        shift = len(prefill_rounds) % len(decoders)
        for index in [*range(shift, len(decoders)), *range(shift)]:
            time.sleep(LATENCY_SETTLE_S)
            for _ in range(untimed):
                once(decoders[index])
            for _ in range(count):
                p, d = once(decoders[index])
                prefills[index].append(p)
                decodes[index].append(d)
        prefill_rounds.append(prefills)
        decode_rounds.append(decodes)
        done += count
        untimed = 1
    prefill = np.concatenate([r[0] for r in prefill_rounds])
    decode = np.concatenate([r[0] for r in decode_rounds])
    result: dict[str, Any] = {"prefill_s": float(np.median(prefill)), "decode_s": float(np.median(decode))}
    if len(decoders) > 1:
        result["prefill_ratio"] = float(np.median(ratios_to_reference(prefill_rounds)))
        # tokens/s ratio is the inverse of the per-token time ratio
        result["decode_ratio"] = float(1.0 / np.median(ratios_to_reference(decode_rounds)))
    else:
        result["prefill_ratio"] = result["decode_ratio"] = 1.0
    return result


def decode_tokens_per_s(
    model: Any, metric: Mapping[str, Any], data: Any, reference_model: Any = None
) -> dict[str, float]:
    values = _speed(model, metric, data, reference_model)
    return {"decode_tokens_per_s": 1.0 / values["decode_s"], RATIO + "decode_tokens_per_s": values["decode_ratio"]}


def prefill_ms(model: Any, metric: Mapping[str, Any], data: Any, reference_model: Any = None) -> dict[str, float]:
    values = _speed(model, metric, data, reference_model)
    return {"prefill_ms": 1000.0 * values["prefill_s"], RATIO + "prefill_ms": values["prefill_ratio"]}


perplexity.higher_is_better = {"perplexity": False}
next_token_kl.higher_is_better = {"next_token_kl": False}
top1_agreement.higher_is_better = {"top1_agreement": True}
greedy_match.higher_is_better = {"greedy_match": True, "greedy_prefix": True}
decode_tokens_per_s.higher_is_better = {"decode_tokens_per_s": True, RATIO + "decode_tokens_per_s": True}
prefill_ms.higher_is_better = {"prefill_ms": False, RATIO + "prefill_ms": False}

#: Metric type name -> evaluate(model, metric_json, data_config[, reference_model]).
METRICS: dict[str, Callable[..., dict[str, float]]] = {
    "perplexity": perplexity,
    "next_token_kl": next_token_kl,
    "top1_agreement": top1_agreement,
    "greedy_match": greedy_match,
    "decode_tokens_per_s": decode_tokens_per_s,
    "prefill_ms": prefill_ms,
}
