"""Graph passes on a BERT-like model: node count, session load time, latency and output drift.

    python benchmarks/bench_graph.py            # full run (about a minute)
    python benchmarks/bench_graph.py --quick    # a few repeats, for smoke tests
    python benchmarks/bench_graph.py --json out.json

Each variant is produced by the real pass (olive-passes-graph). Load time is the median time to build an
onnxruntime session with the variant's own ``inference_settings`` (offline-optimized graphs skip
onnxruntime's optimizer at load). Latency is the median batch-1 run time with one intra-op thread, so
numbers compare across core counts. Drift is the largest absolute output difference from the input model.
Timing and drift are measured with ``olive.measure``, as the engine measures them.
The last table is OrtSessionParamsTuning's own measurements on the input model.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

VARIANTS: list[tuple[str, str, dict[str, Any]]] = [
    ("input model", "", {}),
    ("OnnxPeepholeOptimizer", "OnnxPeepholeOptimizer", {}),
    ("OrtGraphOptimization basic", "OrtGraphOptimization", {"graph_optimization_level": "basic"}),
    ("OrtGraphOptimization all", "OrtGraphOptimization", {"graph_optimization_level": "all"}),
    ("OrtTransformersOptimization", "OrtTransformersOptimization", {"model_type": "bert", "opt_level": 0}),
    (
        "OrtTransformersOptimization + OrtGraphOptimization all",
        "OrtTransformersOptimization>OrtGraphOptimization",
        {"model_type": "bert", "opt_level": 0},
    ),
]


def _pass_class(name: str) -> Any:
    from olive.plugins.registry import get_registry

    return get_registry().get_pass_class(name)


def _run_pass(name: str, model: Any, config: dict[str, Any], out: Path) -> Any:
    from olive.hardware import DEFAULT_CPU_ACCELERATOR

    cls = _pass_class(name)
    return cls(DEFAULT_CPU_ACCELERATOR, config).run(model, out)


def run(quick: bool, workdir: Path, seq_len: int = 64) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from olive.measure import ReferenceOutputs, latency_summary, session_runner, timed_runs
    from olive.testing.models import bert_like_model, random_inputs, save_model

    model = save_model(
        bert_like_model(num_layers=4, hidden_size=256, num_heads=4, intermediate_size=1024), workdir / "input"
    )
    inputs = random_inputs(model, batch_size=1, sequence_length=seq_len)
    reference = ReferenceOutputs.of_model(model, [inputs])
    loads, repeats = (3, 10) if quick else (10, 100)
    rows = []
    for label, passes, config in VARIANTS:
        variant = model
        for index, name in enumerate(p for p in passes.split(">") if p):
            variant = _run_pass(name, variant, config if index == 0 else {}, workdir / f"{label}-{index}")
        settings = dict(variant.inference_settings or {})
        timed = {**settings, "session_options": {**settings.get("session_options", {}), "intra_op_num_threads": 1}}

        def load(v: Any = variant, s: dict[str, Any] = settings) -> None:
            v.prepare_session(inference_settings=s or None)

        load_ms = latency_summary([t * 1000 for t in timed_runs(load, loads, settle_s=0.0)])["p50"]
        session = variant.prepare_session(inference_settings=timed)
        latency_ms = latency_summary([t * 1000 for t in timed_runs(session_runner(session, inputs), repeats, 3)])["p50"]
        rows.append(
            {
                "variant": label,
                "nodes": len(variant.load_model(load_external_data=False).graph.node),
                "load_ms": round(load_ms, 2),
                "latency_ms": round(latency_ms, 3),
                "max_abs_diff": reference.score(session, what=label)["max_abs_diff"],
            }
        )
    tuned = _run_pass(
        "OrtSessionParamsTuning",
        model,
        {"dynamic_dim_values": {"sequence": seq_len}, "warmup_num": 3, "repeat_test_num": 10 if quick else 50},
        workdir / "tuned",
    )
    table = tuned.model_attributes["session_params_tuning"]["table"]
    return rows, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats (smoke test)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="olive-bench-graph-") as tmp:
        rows, table = run(args.quick, Path(tmp))
    print(f"{'variant':<56} {'nodes':>6} {'load ms':>8} {'latency ms':>11} {'max |diff|':>11}")
    for row in rows:
        print(
            f"{row['variant']:<56} {row['nodes']:>6} {row['load_ms']:>8.2f} {row['latency_ms']:>11.3f} "
            f"{row['max_abs_diff']:>11.2e}"
        )
    print("\nOrtSessionParamsTuning (input model, batch 1):")
    for row in table:
        print(
            f"  intra={row['intra_op_num_threads']} mode={row['execution_mode']} "
            f"level={row['graph_optimization_level']} p50={row.get('latency_ms_p50', float('nan')):.3f} ms"
        )
    if args.json:
        args.json.write_text(json.dumps({"variants": rows, "session_tuning": table}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
