"""Generative models: fp32 and int4 builds of a decoder, served by onnxruntime-genai, side by side.

Rows: ``fp32`` (ModelBuilder), ``builder CLI int4`` (onnxruntime-genai's own builder command with its int4
defaults, outside our engine), ``ModelBuilder int4`` (our pass, its defaults), ``k-quant int4`` (fp32 build ->
OnnxKQuantQuantization, block 32, symmetric) and ``guarded int4`` (fp32 build -> OnnxGuardedInt4, top-1 agreement
>= 0.98 on held-out windows; the trained model only, where agreement means something). Columns: decode tokens/s
and prefill time as ratios to fp32 (timed in alternating rounds through onnxruntime_genai.Generator), size, held-out
perplexity and top-1 agreement with fp32, build wall time and the build's peak RSS (each build runs in its own
process) against the float weights' bytes; and for ``ModelBuilder int4``, whether it wrote the builder command's
files byte for byte (``same_file_as_builder_cli``) and its decode tokens/s timed in alternating rounds against the
command's int4 itself (``decode_ratio_to_builder_cli``).

Models: the tiny decoder trained by olive.testing.decoders and, unless ``--quick``, a ~100M-parameter Qwen2 with
random weights (speed and memory only: its perplexity says nothing).

``olive optimize`` rows (unless ``--quick``): the whole command on the ~100M decoder with ``--data`` (fp32 build,
int4 guard, evaluation), in a process of its own: wall time as a multiple of the builder command's int4 build of the
same folder, peak RSS against the float weights, decode tokens/s of the chosen model against fp32 (the command's own
alternating rounds) and against the builder command's int4 (timed here in alternating rounds).

``--large``: the same rows for a decoder of Qwen2.5-0.5B's shapes (24 layers, hidden 896, MLP 4864, 14 heads, 2 KV
heads, vocabulary 151,936, tied embeddings) saved in bf16 with random weights: time and memory only.

    python benchmarks/bench_genai.py [--quick] [--large] [--json out.json] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUILD = """
import json, sys
from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive.model.types import handler_from_config
from olive.plugins.registry import get_registry
kind, source, out, params = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
cls = get_registry().get_pass_class(kind)
if kind == "ModelBuilder":
    model = handler_from_config({"type": "HfModel", "model_path": source})
else:
    model = handler_from_config({"type": "GenAIModel", "model_path": source})
cls(CPU, params).run(model, out)
"""

# Runs a build (BUILD, or a module as ``python -m`` would) and writes the process's own peak RSS (VmHWM, kB) to
# the file named first. Not the rusage of the child: a child started by vfork or fork counts the parent's peak
# into its ru_maxrss, so every build would seem to take at least what this process holds.
MEASURED = """
import atexit, runpy, sys
peak_file, what = sys.argv[1], sys.argv[2]
def _write_peak():
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(peak_file, "w") as out:
        out.write(peak)
atexit.register(_write_peak)
if what == "-m":
    sys.argv = [sys.argv[3], *sys.argv[4:]]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = ["-c", *sys.argv[3:]]
    exec(compile(what, "<build>", "exec"))
"""


def _child(args: list[str]) -> tuple[float, float]:
    """Run a build in a child process to completion: ``(wall seconds, its own peak RSS in MB)``."""
    with tempfile.NamedTemporaryFile(prefix="peak-", suffix=".kb", delete=False) as peak_file:
        peak_path = Path(peak_file.name)
    try:
        start = time.perf_counter()
        process = subprocess.run(
            [sys.executable, "-c", MEASURED, str(peak_path), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        wall = time.perf_counter() - start
        if process.returncode != 0:
            raise SystemExit(f"{' '.join(args[:3])[:200]} failed: {process.stderr.decode()[-2000:]}")
        return wall, int(peak_path.read_text()) / 1024
    finally:
        peak_path.unlink(missing_ok=True)


def _build(kind: str, source: Path, out: Path, **params) -> tuple[float, float]:
    return _child([BUILD, kind, str(source), str(out), json.dumps(params)])


def _builder_cli(source: Path, out: Path, scratch: Path) -> tuple[float, float]:
    command = ["-m", "onnxruntime_genai.models.builder", "-i", str(source), "-o", str(out), "-p", "int4"]
    return _child([*command, "-e", "cpu", "-c", str(scratch)])


def _random_qwen2(folder: Path, dtype: str | None = None, **sizes: object) -> Path:
    """A Qwen2 with seeded random weights and an 8k-token BPE tokenizer, saved in ``dtype`` (default fp32)."""
    import torch
    import transformers

    from olive.testing.decoders import save_tokenizer

    tokenizer = save_tokenizer(folder, 8192)
    sizes.setdefault("vocab_size", len(tokenizer))
    config = transformers.Qwen2Config(**sizes, bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    if dtype is not None:
        model = model.to(getattr(torch, dtype))
        model.config.torch_dtype = getattr(torch, dtype)
    model.save_pretrained(folder)
    return folder


def _big_decoder(folder: Path) -> Path:
    """A Qwen2 of about 100M parameters (hidden 768, 12 layers, 8k vocabulary), random weights."""
    return _random_qwen2(
        folder,
        hidden_size=768,
        intermediate_size=3072,
        num_hidden_layers=12,
        num_attention_heads=12,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
    )


def _qwen25_05b_shaped(folder: Path) -> Path:
    """A decoder of Qwen2.5-0.5B's sizes and files (bf16 safetensors, tied embeddings), random weights."""
    return _random_qwen2(
        folder,
        "bfloat16",
        vocab_size=151_936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32_768,
        rope_theta=1_000_000.0,
        tie_word_embeddings=True,
    )


def _optimize_row(name: str, source: Path, work: Path, text: Path) -> dict:
    """``olive optimize`` on ``source`` with ``--data``, against the builder command's int4 of the same folder."""
    from olive_passes_genai import metrics
    from olive_passes_genai.genai_model import GenAIModelHandler

    float_bytes = sum(p.stat().st_size for p in source.glob("*.safetensors"))
    cli = work / "cli-int4"
    if str(cli) in _builds_seen:  # built and timed for the rows above
        cli_wall, cli_rss = _builds_seen[str(cli)]
    else:
        for folder in (cli, work / "cli-scratch"):
            shutil.rmtree(folder, ignore_errors=True)
        cli_wall, cli_rss = _builder_cli(source, cli, work / "cli-scratch")
    out = work / "optimized"
    command = ["-m", "olive.cli.main", "optimize", str(source), "--data", str(text)]
    wall, rss = _child([*command, "-o", str(out), "--cache-dir", str(work / "optimize-cache")])
    recorded = json.loads((out / "metrics.json").read_text())
    best = {k: v["value"] for k, v in recorded["best"].items()}
    reference = {k: v["value"] for k, v in recorded["reference"]["metrics"].items()}
    metric = {"name": "bench", "user_config": {"data_path": str(text), "repeat": 20, "prompt_tokens": 64}}
    against_cli = metrics._speed(GenAIModelHandler(out), metric, None, GenAIModelHandler(cli))
    guard = json.loads((out / "model_config.json").read_text()).get("config", {}).get("model_attributes", {})
    kept = (guard.get("guarded_int4") or {}).get("kept_at_8_bits")
    row = {
        "model": name,
        "row": "olive optimize --data",
        "wall_s": round(wall, 1),
        "builder_cli_int4_s": round(cli_wall, 1),
        "wall_over_builder_cli_int4": round(wall / cli_wall, 1),
        "peak_rss_mb": round(rss, 1),
        "peak_over_float_weights": round(rss * 2**20 / max(1, float_bytes), 2),
        "builder_cli_int4_peak_over_float_weights": round(cli_rss * 2**20 / max(1, float_bytes), 2),
        "decode_ratio_to_fp32": round(best.get("speed-ratio_decode_tokens_per_s", float("nan")), 3),
        "decode_ratio_to_builder_cli": round(against_cli["decode_ratio"], 3),
        "perplexity_ratio": round(best["perplexity-perplexity"] / reference["perplexity-perplexity"], 4),
        "size_mb": round(GenAIModelHandler(out).size_on_disk / 1e6, 2),
        "kept_at_8_bits": None if kept is None else len(kept),
    }
    print(json.dumps(row), flush=True)
    return row


#: builds already timed by _rows, by output folder: (wall, peak MB)
_builds_seen: dict[str, tuple[float, float]] = {}


def _rows(name: str, source: Path, work: Path, text: Path, quick: bool, guarded: bool) -> list[dict]:
    from olive_passes_genai import metrics
    from olive_passes_genai.genai_model import GenAIModelHandler

    float_bytes = sum(p.stat().st_size for p in source.glob("*.safetensors"))
    builds = {}
    builds["fp32"] = _build("ModelBuilder", source, work / "fp32", precision="fp32")
    builds["builder CLI int4"] = _builder_cli(source, work / "cli-int4", work / "cli-scratch")
    _builds_seen[str(work / "cli-int4")] = builds["builder CLI int4"]
    builds["ModelBuilder int4"] = _build("ModelBuilder", source, work / "mb-int4", precision="int4")
    builds["k-quant int4"] = _build(
        "OnnxKQuantQuantization", work / "fp32", work / "kquant", block_size=32, is_symmetric=True
    )
    if guarded:
        builds["guarded int4"] = _build(
            "OnnxGuardedInt4", work / "fp32", work / "guarded", data_path=str(text), goal_value=0.98
        )
    folders = {
        "fp32": work / "fp32",
        "builder CLI int4": work / "cli-int4",
        "ModelBuilder int4": work / "mb-int4",
        "k-quant int4": work / "kquant",
        "guarded int4": work / "guarded",
    }
    # Our pass runs the builder's own quantizing step on weights it reads from disk: the same file as the command's.
    same = all(
        (folders["ModelBuilder int4"] / f).read_bytes() == (folders["builder CLI int4"] / f).read_bytes()
        for f in ("model.onnx", "model.onnx.data", "genai_config.json")
    )
    print(f"# {name}: ModelBuilder int4 writes the builder CLI's files byte for byte: {'yes' if same else 'NO'}")
    reference = GenAIModelHandler(folders["fp32"])
    repeat = 10 if quick else 30
    metric = {
        "name": "bench",
        "user_config": {"data_path": str(text), "repeat": repeat, "prompt_tokens": 64, "max_new_tokens": 32},
    }
    rows = []
    for row, (wall, rss) in builds.items():
        model = GenAIModelHandler(folders[row])
        speed = metrics._speed(model, metric, None, reference)
        quality = metrics._teacher_forced(model, {**metric, "user_config": {"data_path": str(text)}}, None, reference)
        rows.append(
            {
                "model": name,
                "row": row,
                "decode_ratio": round(speed["decode_ratio"], 3),
                "decode_tok_s": round(1 / speed["decode_s"], 1),
                "prefill_ratio": round(speed["prefill_ratio"], 3),
                "size_mb": round(model.size_on_disk / 1e6, 2),
                "perplexity": round(quality["perplexity"], 2),
                "top1_vs_fp32": round(quality["top1_agreement"], 4),
                "build_s": round(wall, 1),
                "peak_rss_mb": round(rss, 1),
                "peak_over_float_weights": round(rss * 2**20 / max(1, float_bytes), 2),
            }
        )
        if row == "ModelBuilder int4":
            # Timed in alternating rounds against the builder's own int4 itself, not through two ratios to fp32:
            # that comparison is what the target is stated in.
            cli = metrics._speed(model, metric, None, GenAIModelHandler(folders["builder CLI int4"]))
            rows[-1].update(same_file_as_builder_cli=same, decode_ratio_to_builder_cli=round(cli["decode_ratio"], 3))

        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the trained tiny decoder only, fewer timed runs")
    parser.add_argument("--large", action="store_true", help="also a decoder of Qwen2.5-0.5B's shapes (bf16, tied)")
    parser.add_argument("--only-optimize", action="store_true", help="only the olive optimize rows")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--workdir", help="keep the builds here (default: a temporary folder)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from olive.testing.decoders import held_out_text, trained_decoder

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-genai-"))
    work.mkdir(parents=True, exist_ok=True)
    text = work / "held_out.txt"
    text.write_text(held_out_text(40_000).replace("\n\n", "\n") + "\n", encoding="utf-8")
    print(f"# CPU: {_cpu()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    if not args.only_optimize:
        rows += _rows("trained tiny (0.5M params)", trained_decoder(), work / "tiny", text, args.quick, guarded=True)
    if not args.quick:
        big = work / "big-hf"
        if not (big / "config.json").is_file():
            _big_decoder(big)
        if not args.only_optimize:
            rows += _rows("Qwen2 ~100M (random)", big, work / "big", text, args.quick, guarded=False)
        rows.append(_optimize_row("Qwen2 ~100M (random)", big, work / "big", text))
    if args.large:
        large = work / "qwen2.5-0.5b-shaped"
        if not (large / "config.json").is_file():
            _qwen25_05b_shaped(large)
        rows.append(_optimize_row("Qwen2.5-0.5B-shaped (random, bf16, tied)", large, work / "large", text))
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": _cpu(), "rows": rows}, indent=1))


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
