"""Run-to-run spread of Olive's metrics, the measurement behind the default ranking ``tolerance``.

The quickstart's input model and its dynamic int8 quantization are evaluated again and again with the
quickstart's own metrics (latency p50 alone, and the p50 ratio to the input model timed in alternating rounds;
size; output agreement). For each model and metric the script reports the median, the range, and the relative
difference between two evaluations (90th percentile and largest over every pair): two measurements of one
model that differ by that much cannot tell two models apart either, so a smaller difference is a tie.

Run ``python benchmarks/bench_ranking_tolerance.py`` (``--repeats N``, default 10; ``--quick`` for a smoke run,
``--json`` for numbers only). Needs olive-passes-quant.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

KEYS = ("latency-p50", "latency-ratio_p50", "size-bytes", "agreement-cosine_mean", "agreement-cosine_min")


def measure(repeats: int) -> list[dict[str, Any]]:
    from olive.cli.quickstart import quickstart_workflow, write_quickstart_files
    from olive.evaluator.evaluator import OliveEvaluator
    from olive.model.handler import ONNXModelHandler
    from olive.testing.runner import run_pass
    from olive.workflows.config import load_workflow_config
    from olive_passes_quant.dynamic import OnnxDynamicQuantization

    with tempfile.TemporaryDirectory(prefix="olive-bench-tolerance-") as tmp:
        root = Path(tmp)
        workflow_path = write_quickstart_files(root / "quickstart")
        workflow = load_workflow_config(workflow_path)
        evaluator = OliveEvaluator(list(workflow.evaluator.metrics), workflow.data_configs, base_dir=root)
        reference = ONNXModelHandler(model_path=str(root / "quickstart" / "model" / "model.onnx"))
        int8 = run_pass(OnnxDynamicQuantization, reference, {"per_channel": False}, output_dir=root / "int8")
        assert quickstart_workflow()["passes"]["quantize"][0]["type"] == "OnnxDynamicQuantization"
        rows = []
        for name, model in (("input model", reference), ("dynamic int8", int8)):
            values: dict[str, list[float]] = {key: [] for key in KEYS}
            for _ in range(repeats):
                result = evaluator.evaluate(
                    model, reference_model=reference, execution_providers=["CPUExecutionProvider"]
                )
                for key in KEYS:
                    values[key].append(result[key].value)
            for key, series in values.items():
                rows.append({"model": name, "metric": key, **_spread(series)})
        return rows


def _spread(series: list[float]) -> dict[str, float]:
    median = statistics.median(series)
    pairs = [abs(a - b) / max(abs(a), abs(b)) for a, b in itertools.combinations(series, 2) if max(abs(a), abs(b))]
    pairs.sort()
    return {
        "runs": len(series),
        "median": median,
        "min": min(series),
        "max": max(series),
        "max_abs_diff": max(series) - min(series),
        "p90_rel_diff": pairs[int(0.9 * (len(pairs) - 1))] if pairs else 0.0,
        "max_rel_diff": pairs[-1] if pairs else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="two evaluations per model (a smoke run)")
    parser.add_argument("--json", action="store_true", help="print JSON rows only")
    args = parser.parse_args(argv)
    rows = measure(2 if args.quick else args.repeats)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"{'model':<14} {'metric':<24} {'runs':>4} {'median':>10} {'min':>10} {'max':>10} "
        f"{'p90 rel diff':>13} {'max rel diff':>13}"
    )
    for row in rows:
        print(
            f"{row['model']:<14} {row['metric']:<24} {row['runs']:>4} {row['median']:>10.4g} {row['min']:>10.4g} "
            f"{row['max']:>10.4g} {row['p90_rel_diff'] * 100:>12.2f}% {row['max_rel_diff'] * 100:>12.2f}%"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
