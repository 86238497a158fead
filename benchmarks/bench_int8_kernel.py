"""What 7-bit int8 weights (``reduce_range``) do to agreement on this CPU: the measurement behind its default.

Dynamic int8 (per-channel weights, as Olive's passes quantize) of ``olive.testing``'s MLP and of the quickstart's
BERT-like model, with 8-bit and with 7-bit weights, each scored against its float model on seeded synthetic
inputs (``olive.measure``, as ``olive optimize`` scores without ``--data``). The CPU and what onnxruntime's int8
MatMul does on it (measured) head the table. Run it natively, and as on an AVX2-only CPU with the emulator::

    python benchmarks/bench_int8_kernel.py
    .ci/on-avx2 python benchmarks/bench_int8_kernel.py      # root, qemu-user (see .ci/on-avx2)

``--json`` prints numbers only; ``--quick`` is the same (it takes seconds). Needs olive-passes-quant.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def measure() -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from olive.cli.quickstart import MODEL_SHAPE
    from olive.hardware.cpu import describe_cpu
    from olive.measure import ReferenceOutputs, synthetic_inputs
    from olive.measure.int8_kernel import int8_matmul, int8_matmul_saturates
    from olive.model.handler import ONNXModelHandler
    from olive.testing.models import bert_like_model, mlp_model, save_model

    rows = []
    with tempfile.TemporaryDirectory(prefix="olive-bench-int8-") as tmp:
        root = Path(tmp)
        for name, proto in (
            ("test MLP (mlp_model(seed=0))", mlp_model(seed=0)),
            ("quickstart BERT-like (4 layers, hidden 128)", bert_like_model(seed=0, **MODEL_SHAPE)),
        ):
            model = save_model(proto, root / f"{len(rows)}-fp32")
            feeds = [synthetic_inputs(model.get_io_config(), seed=seed) for seed in range(4)]
            reference = ReferenceOutputs.of_model(model, feeds)
            row: dict[str, Any] = {"model": name}
            for bits, reduce_range in ((8, False), (7, True)):
                folder = root / f"{len(rows)}-int8-{bits}"
                folder.mkdir()
                quantize_dynamic(
                    str(model.model_path),
                    str(folder / "model.onnx"),
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    reduce_range=reduce_range,
                )
                scores = reference.score(ONNXModelHandler(str(folder / "model.onnx")))
                row[f"cosine_min_{bits}bit"] = scores["cosine_min"]
                row[f"max_abs_diff_{bits}bit"] = scores["max_abs_diff"]
            rows.append(row)
    kernel = int8_matmul()
    return {
        "cpu": describe_cpu(),
        "int8_matmul": kernel.describe(),
        "saturates": kernel.saturates,
        "default_reduce_range": int8_matmul_saturates(),
        "rows": rows,
    }


def table(report: dict[str, Any]) -> str:
    lines = [
        f"CPU: {report['cpu']}",
        f"onnxruntime int8 MatMul (measured): {report['int8_matmul']}; default reduce_range: "
        f"{str(report['default_reduce_range']).lower()}",
        "",
        "| model | cosine_min, 8-bit weights | cosine_min, 7-bit (reduce_range) | max_abs_diff 8-bit / 7-bit |",
        "|---|---|---|---|",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['model']} | {row['cosine_min_8bit']:.5f} | {row['cosine_min_7bit']:.5f} | "
            f"{row['max_abs_diff_8bit']:.4f} / {row['max_abs_diff_7bit']:.4f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--quick", action="store_true", help="the same run (it takes seconds): for the smoke test")
    args = parser.parse_args(argv)
    report = measure()
    print(json.dumps(report) if args.json else table(report))
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
