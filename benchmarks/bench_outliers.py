"""int4 on a decoder with massive-activation channels: held-out perplexity and size per build.

Models: the tiny decoder trained by olive.testing.decoders as it is, and the same decoder given outlier input
channels by olive.testing.outliers.inject_outliers (16 channels of each RMSNorm in front of a MatMul x100, the
matching input columns of the MatMuls /100: PyTorch outputs unchanged up to fp32 rounding).

Rows, each built from the Hugging Face folder or from an fp32 build: ``fp32`` (ModelBuilder), ``builder int4``
(ModelBuilder, the builder's int4 defaults), ``builder int8`` (ModelBuilder int8), ``RTN int4``
(OnnxBlockWiseRtnQuantization on the fp32 build, block 32, symmetric), ``k-quant int4`` (OnnxKQuantQuantization
on the fp32 build, block 32, its fitted offsets), ``scale migration + builder int4`` (HfScaleMigration on the
Hugging Face folder, fitted on 16 windows of olive.testing's calibration text, then ModelBuilder int4 with the
builder's defaults), ``scale migration fp32`` (its fp32 build: the same function, so the same perplexity) and
``scale migration + RTN int4`` (RTN int4 as above, on that fp32 build).

Columns: held-out perplexity (16 windows of 128 tokens, teacher-forced through onnxruntime-genai), its change
against the model's own fp32, top-1 agreement with fp32, and size on disk; for the scale-migrated build (unless
``--quick``), decode tokens/s as a ratio to the builder's int4 of the same model, timed in alternating rounds
through onnxruntime_genai.Generator.

    python benchmarks/bench_outliers.py [--quick] [--json out.json] [--workdir DIR]

``--quick``: the outlier decoder only, 4 windows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

#: (row, pass, params, built from): "hf" is the Hugging Face folder, "fp32" the row of that name
ROWS = (
    ("fp32", "ModelBuilder", {"precision": "fp32"}, "hf"),
    ("builder int4", "ModelBuilder", {"precision": "int4"}, "hf"),
    ("builder int8", "ModelBuilder", {"precision": "int8"}, "hf"),
    ("RTN int4", "OnnxBlockWiseRtnQuantization", {"block_size": 32, "is_symmetric": True}, "fp32"),
    ("k-quant int4", "OnnxKQuantQuantization", {"block_size": 32}, "fp32"),
    ("scale migration + builder int4", "ModelBuilder", {"precision": "int4"}, "scaled-hf"),
    ("scale migration fp32", "ModelBuilder", {"precision": "fp32"}, "scaled-hf"),
    (
        "scale migration + RTN int4",
        "OnnxBlockWiseRtnQuantization",
        {"block_size": 32, "is_symmetric": True},
        "scale-migration-fp32",
    ),
)


def _build(kind: str, source: Path, out: Path, params: dict) -> None:
    from olive.hardware import DEFAULT_CPU_ACCELERATOR
    from olive.model.types import handler_from_config
    from olive.plugins.registry import get_registry

    shutil.rmtree(out, ignore_errors=True)
    model_type = "HfModel" if kind in ("ModelBuilder", "HfScaleMigration") else "GenAIModel"
    model = handler_from_config({"type": model_type, "model_path": str(source)})
    get_registry().get_pass_class(kind)(DEFAULT_CPU_ACCELERATOR, params).run(model, str(out))


def _rows(name: str, source: Path, work: Path, text: Path, calibration: Path, windows: int, speed: bool) -> list[dict]:
    from olive_passes_genai import metrics
    from olive_passes_genai.genai_model import GenAIModelHandler

    _build("HfScaleMigration", source, work / "scaled-hf", {"data_path": str(calibration)})
    metric = {"name": "bench", "user_config": {"data_path": str(text), "max_windows": windows}}
    rows: list[dict] = []
    for row, kind, params, start in ROWS:
        out = work / row.replace(" ", "-")
        _build(kind, source if start == "hf" else work / start, out, params)
        model = GenAIModelHandler(out)
        quality = metrics._teacher_forced(model, metric, None, GenAIModelHandler(work / "fp32"))
        fp32 = rows[0]["perplexity"] if rows else quality["perplexity"]
        rows.append(
            {
                "model": name,
                "row": row,
                "perplexity": round(quality["perplexity"], 2),
                "perplexity_change": f"{quality['perplexity'] / fp32 - 1:+.1%}",
                "top1_vs_fp32": round(quality["top1_agreement"], 4),
                "size_mb": round(model.size_on_disk / 1e6, 2),
            }
        )
        if speed and row == "scale migration + builder int4":
            # The same graph as the builder's int4 with other weights: timed against it in alternating rounds.
            timing = {"name": "bench", "user_config": {"data_path": str(text), "repeat": 20, "prompt_tokens": 64}}
            against = metrics._speed(model, timing, None, GenAIModelHandler(work / "builder-int4"))
            rows[-1]["decode_ratio_to_builder_int4"] = round(against["decode_ratio"], 3)
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the outlier decoder only, 4 held-out windows")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--workdir", help="keep the builds here (default: a temporary folder)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from olive.testing.decoders import calibration_text, held_out_text, trained_decoder
    from olive.testing.outliers import inject_outliers

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-outliers-"))
    work.mkdir(parents=True, exist_ok=True)
    text = work / "held_out.txt"
    text.write_text(held_out_text(40_000).replace("\n\n", "\n") + "\n", encoding="utf-8")
    calibration = work / "calibration.txt"
    calibration.write_text(calibration_text(60_000).replace("\n\n", "\n") + "\n", encoding="utf-8")
    print(f"# CPU: {_cpu()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}", flush=True)
    trained = trained_decoder()
    outliers = work / "outlier-hf"
    if not (outliers / "model.safetensors").is_file():
        shutil.rmtree(outliers, ignore_errors=True)
        inject_outliers(trained, outliers)
    windows = 4 if args.quick else 16
    rows = []
    if not args.quick:
        rows += _rows("trained tiny", trained, work / "plain", text, calibration, windows, True)
    rows += _rows(
        "trained tiny + outliers (16 ch x100)", outliers, work / "outliers", text, calibration, windows, not args.quick
    )
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
