"""``olive quickstart`` in fresh folders with empty caches, then one rerun from the cache: what it chooses each time.

    python benchmarks/bench_quickstart.py               # 6 fresh runs and a cached rerun (about 30 s a run)
    python benchmarks/bench_quickstart.py --quick       # 1 fresh run and its cached rerun (what the tests run)

Each fresh run is ``olive quickstart DIR`` with a new ``DIR`` and ``OLIVE_CACHE_DIR`` pointed at a new folder,
timed with interpreter start. From each run's ``output/footprint.json`` it reads the chosen model's searched
params (its lineage), its p50 ratio to the input model (timed in alternating rounds) with the ratio's measured
spread, its size and agreement, and the candidates the ranking tied with it. The last line says how many
different winners the fresh runs chose: with the ranking's ties, candidates that only latency noise separates
give the same winner each time.

Prints a markdown table headed by the CPU and the load average; ``--json FILE`` writes every number.
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
from typing import Any

from olive.hardware.cpu import describe_cpu


def _olive() -> list[str]:
    script = Path(sys.executable).with_name("olive")
    return [str(script)] if script.exists() else [sys.executable, "-m", "olive.cli.main"]


def quickstart(folder: Path, cache: Path) -> tuple[float, dict[str, Any]]:
    """One ``olive quickstart`` run: its wall time and its footprint."""
    start = time.perf_counter()
    done = subprocess.run(
        [*_olive(), "quickstart", str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "OLIVE_CACHE_DIR": str(cache), "COLUMNS": "200"},
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"olive quickstart {folder} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return wall, json.loads((folder / "output" / "footprint.json").read_text())


def chosen(footprint: dict[str, Any]) -> dict[str, Any]:
    """The chosen model's searched params, p50 ratio (and its spread), size, cosine, and the candidates tied with it."""
    nodes = {n["model_id"]: n for n in footprint["nodes"]}
    best = nodes[footprint["best_model_id"]]
    searched = footprint.get("searched_params") or {}
    params, node = [], best
    while node is not None and node.get("pass_key"):
        names = searched.get(node["pass_key"], [])
        params.insert(0, f"{node['pass_key']}: " + ", ".join(f"{k}={node['config'][k]}" for k in names))
        node = nodes.get(node.get("parent_model_id"))
    metrics = best["metrics"]
    ratio = metrics["latency-ratio_p50"]
    return {
        "winner": "; ".join(params),
        "ratio_p50": ratio["value"],
        "ratio_spread": ratio.get("noise", 0.0),
        "size_bytes": metrics["size-bytes"]["value"],
        "cosine_mean": metrics["agreement-cosine_mean"]["value"],
        "tied": len(footprint.get("tied_model_ids") or []),
        "candidates": sum(1 for n in footprint["nodes"] if n.get("is_candidate")),
    }


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6, help="fresh runs (default 6)")
    parser.add_argument("--quick", action="store_true", help="one fresh run and its cached rerun")
    parser.add_argument("--json", type=Path, help="write every number to this file")
    args = parser.parse_args(argv)
    runs = 1 if args.quick else args.runs
    work = Path(tempfile.mkdtemp(prefix="bench-quickstart-"))
    rows = []
    try:
        for index in range(runs):
            load = os.getloadavg()[0]
            wall, footprint = quickstart(work / f"run{index}", work / f"cache{index}")
            rows.append({"run": str(index + 1), "load": load, "wall_s": wall, **chosen(footprint)})
            print(f"run {index + 1}: {wall:.1f} s, {rows[-1]['winner']}", flush=True)
        last = runs - 1
        shutil.rmtree(work / f"run{last}" / "output")
        load = os.getloadavg()[0]
        wall, footprint = quickstart(work / f"run{last}", work / f"cache{last}")
        rows.append({"run": f"{runs} again (cache)", "load": load, "wall_s": wall, **chosen(footprint)})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cpu = describe_cpu()
    lines = [
        f"CPU: {cpu}",
        "",
        "| run | load | wall | chosen (searched params) | p50 ratio (spread) | size MB | cosine mean | tied with it |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['run']} | {r['load']:.2f} | {r['wall_s']:.1f} s | {r['winner']} | "
            f"{r['ratio_p50']:.4f} (±{r['ratio_spread'] * 100:.1f}%) | {r['size_bytes'] / 1e6:.2f} | "
            f"{r['cosine_mean']:.4f} | {r['tied']} of {r['candidates'] - 1} |"
        )
    fresh = {r["winner"] for r in rows[:runs]}
    lines += ["", f"{len(fresh)} different winner(s) in {runs} fresh run(s)"]
    table = "\n".join(lines)
    print(table)
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu, "rows": rows, "winners": sorted(fresh)}, indent=2))
    return table


if __name__ == "__main__":
    main()
