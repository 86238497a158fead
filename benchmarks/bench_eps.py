"""Where a model runs: all-MiniLM-L6-v2 (fp32 and Olive's dynamic int8 variants) on each installed execution
provider, then a workflow whose search spans the CPU provider and OpenVINO.

    python benchmarks/bench_eps.py            # the exported MiniLM of benchmarks/minilm (PyTorch env built once)
    python benchmarks/bench_eps.py --quick    # a tiny BERT-like model, seconds (what the tests run)

Every model's agreement is the cosine of its mean-pooled embeddings with PyTorch's (held-out sentences, each
alone at its real length); latency is batch 1, sequence 128, each (model, provider) row timed against fp32 on
the CPU provider in alternating rounds (``olive.measure.interleaved_runs``), reported as the median of the
per-round ratios. The CPU's flags that decide OpenVINO's default precision (AVX-512, AMX) are recorded.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "minilm"))

from environment import ensure_export, make_quick_data  # noqa: E402
from measuring import SESSION_SETTINGS, embeddings  # noqa: E402
from rows import MASK_NAME, OUTPUT_NAME  # noqa: E402

OPENVINO = "OpenVINOExecutionProvider"
# (label, provider, options): OpenVINO with its own default precision, then pinned f32 and bf16.
TARGETS = [
    ("CPU provider", "CPUExecutionProvider", {}),
    ("OpenVINO, default precision", OPENVINO, {}),
    ("OpenVINO, f32", OPENVINO, {"INFERENCE_PRECISION_HINT": "f32"}),
    ("OpenVINO, bf16", OPENVINO, {"INFERENCE_PRECISION_HINT": "bf16"}),
]
# Olive's dynamic int8 variants: onnxruntime's defaults, and this project's (per-channel weights).
INT8 = {
    "dynamic int8 (per-tensor, onnxruntime defaults)": {"per_channel": False, "quant_preprocess": False},
    "dynamic int8 (per-channel)": {"per_channel": True, "quant_preprocess": False},
}
GOALS = {"cosine_mean": 0.999, "cosine_min": 0.995}


def cpu_flags() -> dict[str, object]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "?")
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")
    return {"model": name, "cores": text.count("processor\t:"), "flags": [f for f in wanted if f in flags]}


def build_models(fp32: Path, models_dir: Path) -> dict[str, Path]:
    from olive.model.handler import ONNXModelHandler
    from olive.plugins.registry import get_registry
    from olive.testing.runner import run_pass

    models = {"fp32": fp32}
    dynamic = get_registry().get_pass_class("OnnxDynamicQuantization")
    for name, config in INT8.items():
        out = models_dir / name.split(" (")[1].rstrip(")").replace(",", "").replace(" ", "-")
        shutil.rmtree(out, ignore_errors=True)
        result = run_pass(dynamic, ONNXModelHandler(str(fp32)), config, output_dir=out)
        models[name] = Path(result.model_path)
    return models


def measure(models: dict[str, Path], export_dir: Path, runs: int, warmup: int) -> list[dict[str, object]]:
    import numpy as np

    from olive.data.calibration import check_feeds
    from olive.exceptions import OliveError
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.measure import (
        cosine_similarities,
        create_session,
        interleaved_runs,
        ratios_to_reference,
        session_runner,
        settings_on_target,
    )
    from olive.model.handler import ONNXModelHandler

    evaluation = dict(np.load(export_dir / "eval.npz"))
    reference = np.load(export_dir / "reference.npy")
    latency_input = dict(np.load(export_dir / "latency.npz"))
    rows: list[dict[str, object]] = []
    timed = []
    for model_name, path in models.items():
        io_config = ONNXModelHandler(str(path)).get_io_config()
        feeds = check_feeds(latency_input, io_config, "latency.npz", cast=True)
        for label, provider, options in TARGETS:
            spec = AcceleratorSpec("cpu", provider, provider_options=options)
            row: dict[str, object] = {"model": model_name, "provider": label}
            try:
                start = time.perf_counter()
                session = create_session(path, settings_on_target(SESSION_SETTINGS, spec))
                row["session_s"] = round(time.perf_counter() - start, 2)
                cos = cosine_similarities(embeddings(session, io_config, evaluation), reference)
            except OliveError as exc:
                row["error"] = " ".join(str(exc).split())[:200]
                rows.append(row)
                continue
            row["cosine_mean"], row["cosine_min"] = float(cos.mean()), float(cos.min())
            rows.append(row)
            timed.append((row, session_runner(session, feeds)))
    if timed:
        # The first timed row is fp32 on the CPU provider: every ratio is to it, round by round.
        rounds = interleaved_runs([run for _, run in timed], runs, warmup, per_round=5)
        for index, (row, _) in enumerate(timed):
            ratios = ratios_to_reference(rounds, model=index, reference=0)
            row["ratio_p50"] = float(np.median(ratios))
            row["latency_ms_p50"] = float(np.median([t for times in rounds for t in times[index]]) * 1000.0)
    return rows


def search(export_dir: Path, work_dir: Path, quick: bool) -> dict[str, object]:
    from olive.workflows import run as olive_run

    precisions = {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": ["f32", "bf16"]}
    workflow = {
        "workflow_id": "minilm_where_it_runs",
        "input_model": {"type": "ONNXModel", "model_path": str(export_dir / "model.onnx")},
        "systems": {
            "local": {
                "type": "LocalSystem",
                "accelerators": [
                    {
                        "device": "cpu",
                        "execution_providers": [
                            "CPUExecutionProvider",
                            [OPENVINO, {"INFERENCE_PRECISION_HINT": precisions}],
                        ],
                    }
                ],
            }
        },
        "target": "local",
        "data_configs": [
            {
                "name": "eval",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": str(export_dir / "eval.npz")},
                "dataloader_config": {"batch_size": 1},
            },
            {
                "name": "latency",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": str(export_dir / "latency.npz")},
                "dataloader_config": {"batch_size": 1},
            },
        ],
        "evaluators": {
            "common": {
                "metrics": [
                    {
                        "name": "latency",
                        "type": "latency",
                        "data_config": "latency",
                        "repeat_test_num": 10 if quick else 100,
                        "sub_types": [{"name": "ratio_p50", "priority": 1}],
                        "user_config": {"inference_settings": SESSION_SETTINGS},
                    },
                    {
                        "name": "agreement",
                        "type": "agreement",
                        "data_config": "eval",
                        "output_name": OUTPUT_NAME,
                        "pooling": "mean",
                        "mask_input": MASK_NAME,
                        "trim_padding": True,
                        "sub_types": [
                            {"name": key, "goal": {"type": "threshold", "value": value}} for key, value in GOALS.items()
                        ],
                    },
                ]
            }
        },
        "evaluator": "common",
        "passes": {"quantize": {"type": "OnnxDynamicQuantization", "quant_preprocess": False, "reduce_range": False}},
        "search_strategy": {"execution_order": "joint", "sampler": "sequential"},
        "cache_dir": str(work_dir / "cache"),
        "output_dir": str(work_dir / "search-output"),
    }
    (work_dir / "eps-search-workflow.json").write_text(json.dumps(workflow, indent=2))
    start = time.perf_counter()
    output = olive_run(workflow)
    best = output.best
    candidates = [
        {
            "model_id": n.model_id,
            "target": (n.target or {}).get("label"),
            **{k: round(v, 5) for k, v in n.metric_values().items()},
            "meets_goals": n.meets_goals,
        }
        for n in output.get_output_models()
    ]
    return {
        "seconds": round(time.perf_counter() - start, 1),
        "chosen": best.model_id if best else None,
        "target": (best.target or {}).get("label") if best else None,
        "metrics": best.metric_values() if best else None,
        "reason": output.reason,
        "candidates": candidates,
    }


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| model | provider | latency vs fp32 on the CPU provider (median of per-round ratios) | p50 ms | "
        "cosine vs PyTorch mean / worst | session s |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['provider']} | failed: {r['error']} | | | |")
            continue
        lines.append(
            f"| {r['model']} | {r['provider']} | {r.get('ratio_p50', float('nan')):.2f}x | "
            f"{r.get('latency_ms_p50', float('nan')):.2f} | {r['cosine_mean']:.5f} / {r['cosine_min']:.5f} | "
            f"{r['session_s']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny BERT-like model instead of MiniLM")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=None, help="timed runs per row (default 100; quick 5)")
    parser.add_argument("--no-search", action="store_true", help="skip the searched workflow")
    args = parser.parse_args(argv)
    work_dir = args.work_dir or HERE / "minilm" / ".work" / ("quick-eps" if args.quick else "eps")
    work_dir.mkdir(parents=True, exist_ok=True)
    export_dir = make_quick_data(work_dir) if args.quick else ensure_export(HERE / "minilm" / ".work", None)
    runs = args.runs or (5 if args.quick else 100)
    from olive.execution_providers.registry import list_providers

    providers = {p.name: p.status for p in list_providers()}
    models = build_models(export_dir / "model.onnx", work_dir / "models")
    rows = measure(models, export_dir, runs, warmup=2 if args.quick else 10)
    result = {"cpu": cpu_flags(), "providers": providers, "runs": runs, "rows": rows}
    if not args.no_search:
        result["search"] = search(export_dir, work_dir, args.quick)
    (work_dir / "eps-results.json").write_text(json.dumps(result, indent=2))
    print(f"CPU: {result['cpu']}")
    print(f"providers: {providers}")
    print(table(rows))
    if "search" in result:
        found = result["search"]
        print(f"search: chose {found['chosen']} on {found['target']}: {found['metrics']} ({found['seconds']} s)")
        if found["reason"]:
            print(f"search: {found['reason']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
