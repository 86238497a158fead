"""LoRA adapters served by onnxruntime-genai: decode speed with an adapter active, adapter file size and load time.

A decoder and a rank-16 LoRA adapter of it on q/k/v/o (olive.testing.adapters, a few training steps) go through
ModelBuilder fp32 + ExtractAdapters; the same decoder built without adapters is the plain base. Rows: ``plain``
(the base built without adapters), ``no adapter`` (the ExtractAdapters base, none active: the empty default inputs)
and ``adapter active`` (``generator.set_active_adapter``). Columns: decode tokens/s (greedy tokens after a 64-token
prompt, through onnxruntime_genai.Generator) as ratios, timed in alternating rounds with olive.measure's paired rule
(each run against the other's median in the same round); the ``.onnx_adapter`` size and the time of
``Adapters.load``. Greedy tokens with the adapter active are checked against PyTorch with it merged (the tiny
decoder; the big one in fp32 too, unless --quick).

Model: the ~100M-parameter Qwen2 of bench_genai.py (random weights: speed only), or with ``--quick`` a tiny
Qwen2 of olive.testing.decoders. ``--precision int4``: both bases built by ModelBuilder int4 (the adapter one with
``extract_adapters``, its adapter MatMuls float beside the int4 base, as ``olive optimize --adapter`` serves it);
the PyTorch token check is for fp32 only.

    python benchmarks/bench_adapters.py [--quick] [--precision fp32|int4] [--json out.json] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_genai import _big_decoder, _cpu

RANK = 16
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
PROMPT_TOKENS, NEW_TOKENS = 64, 32


def _build(base: Path, adapter: Path | None, out: Path, precision: str = "fp32") -> Path:
    from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
    from olive.model.types import handler_from_config
    from olive.plugins.registry import get_registry

    registry = get_registry()
    fields = {"type": "HfModel", "model_path": str(base)}
    if adapter is not None:
        fields["adapters"] = {"a": str(adapter)}
    model = handler_from_config(fields)
    model.validate()
    if precision != "fp32":
        params = {"precision": precision, "extract_adapters": adapter is not None}
        return Path(registry.get_pass_class("ModelBuilder")(CPU, params).run(model, str(out / "built")).folder)
    built = registry.get_pass_class("ModelBuilder")(CPU, {"precision": "fp32"}).run(model, str(out / "built"))
    if adapter is None:
        return Path(built.model_path).parent
    return Path(
        registry.get_pass_class("ExtractAdapters")(CPU, {}).run(built, str(out / "extracted")).model_path
    ).parent


def _timings(plain: Path, extracted: Path, repeat: int) -> dict:
    import onnxruntime_genai as og

    from olive.measure.timing import LATENCY_SETTLE_S, paired_round_size, ratios_to_reference

    models = {"plain": og.Model(str(plain)), "lora": og.Model(str(extracted))}
    start = time.perf_counter()
    adapters = og.Adapters(models["lora"])
    adapters.load(str(extracted / "a.onnx_adapter"), "a")
    load_ms = (time.perf_counter() - start) * 1000
    tokenizer = og.Tokenizer(models["plain"])
    ids = list(tokenizer.encode(" ".join(["the file and the name of the path"] * 16)))[:PROMPT_TOKENS]
    variants = {"plain": ("plain", False), "no adapter": ("lora", False), "adapter active": ("lora", True)}

    def once(name: str) -> float:
        model, active = models[variants[name][0]], variants[name][1]
        params = og.GeneratorParams(model)
        total = len(ids) + NEW_TOKENS + 1
        params.set_search_options(max_length=total, min_length=total, do_sample=False)
        generator = og.Generator(model, params)
        if active:
            generator.set_active_adapter(adapters, "a")
        generator.append_tokens(ids)
        generator.generate_next_token()
        begin = time.perf_counter()
        for _ in range(NEW_TOKENS):
            generator.generate_next_token()
        return (time.perf_counter() - begin) / NEW_TOKENS

    names = list(variants)
    per_round = paired_round_size(repeat)
    rounds: list[list[list[float]]] = []
    done = 0
    while done < repeat:
        runs: list[list[float]] = [[] for _ in names]
        shift = len(rounds) % len(names)
        for index in [*range(shift, len(names)), *range(shift)]:
            time.sleep(LATENCY_SETTLE_S)
            once(names[index])  # untimed
            runs[index] = [once(names[index]) for _ in range(per_round)]
        rounds.append(runs)
        done += per_round

    def ratio(model: int, reference: int) -> float:
        # Seconds per token of the reference over the model's: the model's tokens/s as a ratio.
        return round(1 / float(statistics.median(ratios_to_reference(rounds, model, reference))), 3)

    plain_s = statistics.median(t for r in rounds for t in r[0])
    return {
        "decode_tok_s_plain": round(1 / plain_s, 1),
        "ratio_no_adapter_vs_plain": ratio(1, 0),
        "ratio_active_vs_no_adapter": ratio(2, 1),
        "ratio_active_vs_plain": ratio(2, 0),
        "adapter_load_ms": round(load_ms, 2),
        "adapter_file_mb": round((extracted / "a.onnx_adapter").stat().st_size / 1e6, 3),
        "rounds": len(rounds),
        "runs_per_round": per_round,
    }


def _matches_pytorch(base: Path, adapter: Path, extracted: Path) -> bool:
    import onnxruntime_genai as og

    from olive.testing.adapters import merged_greedy

    model = og.Model(str(extracted))
    ids = [int(i) for i in og.Tokenizer(model).encode("Return the path of the file and the name")]
    adapters = og.Adapters(model)
    adapters.load(str(extracted / "a.onnx_adapter"), "a")
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + 12, min_length=len(ids) + 12, do_sample=False)
    generator = og.Generator(model, params)
    generator.set_active_adapter(adapters, "a")
    generator.append_tokens(ids)
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    return tokens == merged_greedy(base, adapter, ids, 12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny decoder, fewer timed runs")
    parser.add_argument("--precision", choices=("fp32", "int4"), default="fp32", help="the bases' precision")
    parser.add_argument("--json", help="write the row here")
    parser.add_argument("--workdir", help="keep the builds here (default: a temporary folder)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from olive.testing.adapters import save_adapter
    from olive.testing.decoders import save_decoder

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-adapters-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"# CPU: {_cpu()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.quick:
        name, base = "Qwen2 tiny (random)", save_decoder(work / "base", "qwen2")
    else:
        name, base = "Qwen2 ~100M (random)", _big_decoder(work / "base")
    start = time.perf_counter()
    adapter = save_adapter(
        work / "adapter", base, seed=0, rank=RANK, target_modules=TARGETS, steps=2 if not args.quick else 30
    )
    train_s = time.perf_counter() - start
    plain = _build(base, None, work / f"plain-{args.precision}", args.precision)
    extracted = _build(base, adapter, work / f"lora-{args.precision}", args.precision)
    row = {"model": name, "precision": args.precision, "rank": RANK, "targets": "/".join(TARGETS)}
    row["adapter_train_s"] = round(train_s, 1)
    # int4 changes the tokens by design: the check is fp32's.
    fp32 = args.precision == "fp32"
    row["tokens_equal_pytorch_merged"] = _matches_pytorch(base, adapter, extracted) if fp32 else None
    row.update(_timings(plain, extracted, repeat=20 if args.quick else 60))
    print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": _cpu(), "rows": [row]}, indent=1))


if __name__ == "__main__":
    main()
