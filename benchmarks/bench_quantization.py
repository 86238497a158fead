"""Quantization passes on the tiny BERT-like model: size, latency and output agreement.

    python benchmarks/bench_quantization.py            # full run (about a minute)
    python benchmarks/bench_quantization.py --quick    # a few repeats, for smoke tests
    python benchmarks/bench_quantization.py --json out.json

Each variant is produced by the real pass (olive-passes-quant), then timed in one onnxruntime session
(one intra-op thread, so numbers are comparable across machines' core counts) on seeded batch-1 inputs.
Agreement is the cosine similarity of the variant's outputs to fp32's, mean and worst over samples. Both
are measured with ``olive.measure``, as the engine measures them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

VARIANTS: list[tuple[str, str, dict[str, Any]]] = [
    ("fp32", "", {}),
    ("dynamic int8, per-tensor", "OnnxDynamicQuantization", {"per_channel": False}),
    ("dynamic int8, per-channel", "OnnxDynamicQuantization", {}),
    ("static QDQ int8", "OnnxStaticQuantization", {"quant_format": "QDQ"}),
    (
        "static QOperator uint8",
        "OnnxStaticQuantization",
        {"quant_format": "QOperator", "precision": "uint8", "activation_type": "uint8"},
    ),
    ("4-bit MatMulNBits, block 32", "OnnxBlockWiseRtnQuantization", {"block_size": 32, "accuracy_level": 4}),
    ("8-bit MatMulNBits, block 32", "OnnxBlockWiseRtnQuantization", {"block_size": 32, "bits": 8, "accuracy_level": 4}),
    ("fp16 (fp32 io)", "OnnxFloatToFloat16", {"keep_io_types": True}),
]


def _pass_class(name: str) -> Any:
    from olive.plugins.registry import get_registry

    return get_registry().get_pass_class(name)


def run(quick: bool, workdir: Path, seq_len: int = 64) -> list[dict[str, Any]]:
    from olive.hardware import DEFAULT_CPU_ACCELERATOR
    from olive.measure import ReferenceOutputs, create_session, latency_summary, timed_runs
    from olive.testing.models import bert_like_model, random_inputs, save_model, write_npz_dataset

    model = save_model(bert_like_model(hidden_size=128, intermediate_size=512, num_layers=2), workdir / "fp32")
    calib = write_npz_dataset(workdir / "calib.npz", model, num_samples=16, sequence_length=seq_len, seed=1)
    samples = [random_inputs(model, batch_size=1, sequence_length=seq_len, seed=100 + i) for i in range(8)]
    warmup, repeats = (2, 10) if quick else (20, 200)
    settings = {"session_options": {"intra_op_num_threads": 1, "inter_op_num_threads": 1}}
    reference = ReferenceOutputs.of_model(model.model_path, samples, inference_settings=settings)

    rows = []
    for label, pass_name, config in VARIANTS:
        if pass_name:
            cls = _pass_class(pass_name)
            if pass_name == "OnnxStaticQuantization":
                config = {"data_config": str(calib), **config}
            generated = cls.generate_config(DEFAULT_CPU_ACCELERATOR, config, disable_search=True)
            variant = cls(DEFAULT_CPU_ACCELERATOR, generated).run(model, workdir / label.replace(" ", "_"))
        else:
            variant = model
        session = create_session(variant.model_path, settings)
        agreement = reference.score(session, what=label)
        turn = itertools.count()

        def run_next_sample(session: Any = session, turn: Any = turn) -> None:
            # Each run takes the next sample, so the timing covers every sample alike.
            session.run(None, samples[next(turn) % len(samples)])

        latency = latency_summary([s * 1000 for s in timed_runs(run_next_sample, repeats, warmup)])
        rows.append(
            {
                "variant": label,
                "pass": pass_name or "-",
                "size_bytes": variant.size_on_disk,
                "latency_ms_p50": latency["p50"],
                "latency_ms_p90": latency["p90"],
                "cosine_mean": agreement["cosine_mean"],
                "cosine_min": agreement["cosine_min"],
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    base = rows[0]
    lines = [
        "| variant | size (KB) | size vs fp32 | latency p50 (ms) | p90 (ms) | vs fp32 | cosine mean | cosine min |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {r['size_bytes'] / 1024:.0f} | {r['size_bytes'] / base['size_bytes']:.2f}x "
            f"| {r['latency_ms_p50']:.3f} | {r['latency_ms_p90']:.3f} "
            f"| {r['latency_ms_p50'] / base['latency_ms_p50']:.2f}x | {r['cosine_mean']:.4f} | {r['cosine_min']:.4f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats (smoke test)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    import logging

    logging.disable(logging.WARNING)  # onnxruntime's quantizer logs advice on every run
    with tempfile.TemporaryDirectory(prefix="bench-quant-") as tmp:
        rows = run(args.quick, Path(tmp))
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
