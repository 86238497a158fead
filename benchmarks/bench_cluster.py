"""Past one machine: searches on 1 and 2 Ray nodes that share no folder, and a second machine served by a remote cache.

Two workloads, each point a real dynamic int8 quantization (bench_parallel's ``QuantizeWork``) evaluated for size and
agreement:

- ``quickstart``: a 16-point search on the quickstart model (``olive quickstart``'s BERT-like encoder);
- ``large``: a 4-point search on an MLP of ~134 MB of float weights (``--large-mb`` changes it; the default keeps the
  run short, ``--large-mb 512`` is the 0.5 GB test model, about 11 s per point on a 2-core Xeon).

Rows per workload, every one on an empty local cache:

- ``process x1`` / ``process x2``: local worker processes (the baseline);
- ``ray 1 node`` / ``ray 2 nodes``: a Ray head (1 CPU) alone, then with a second node (1 CPU) started in its own
  mount namespace with an empty tmpfs over the engine's cache folder, so its trials run node-local and their
  results travel back through Ray (needs root for ``unshare``; without it the 2-node row is skipped);
- ``remote upload``: a sequential run with ``remote_cache`` on moto's S3 server (loopback), then ``second
  machine``: the same workflow on a fresh local cache, served by the remote (no pass work).

Reported: wall time, bytes through Ray (models put once for node-local workers; entries shipped back), bytes to and
from storage, and per-trial overhead against the process executor with as many workers: ``(wall_ray - wall_process)
/ trials`` as a share of one trial's time (``wall_process x workers / trials``). The CPU is named beside every
figure. Run ``python benchmarks/bench_cluster.py`` (``--quick`` for a 4-point smoke run on small models, ``--json``
for numbers only, ``--workload large --large-mb 512`` for the 0.5 GB model alone). It needs ``olive-core[ray,remote]``
and ``moto[server]`` (``tox -e cluster`` has them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLUSTER_TESTS = HERE.parent / "olive-core" / "tests" / "cluster"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ({os.cpu_count()} cores)"
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


WORKLOADS = ("quickstart", "large")


def _models(root: Path, quick: bool, large_mb: int) -> dict[str, tuple[Path, Path, int]]:
    """workload -> (model file, data file, points)."""
    import numpy as np

    from olive.cli.quickstart import MODEL_SHAPE
    from olive.testing.models import bert_like_model, mlp_model, random_inputs, save_model

    shape = dict(MODEL_SHAPE)
    if quick:
        shape.update(num_layers=1)
    qs = save_model(bert_like_model(seed=0, **shape), root / "quickstart")
    qs_data = root / "quickstart.npz"
    np.savez(qs_data, **random_inputs(qs, batch_size=4, sequence_length=16, seed=0))
    # Two square-ish layers: (in*hidden + hidden*out) * 4 bytes of weights.
    width = 256 if quick else max(256, int((large_mb * (1 << 20) / 4 / 8) ** 0.5))
    large = save_model(mlp_model(seed=0, in_features=width, hidden=4 * width, out_features=width), root / "large")
    large_data = root / "large.npz"
    np.savez(large_data, input=np.random.default_rng(0).standard_normal((8, width)).astype(np.float32))
    # Warms Ray's workers (their first tasks import onnxruntime) on a model of its own, so no timed row reuses its
    # runs (a node-local worker keeps its node's cache between searches).
    warm = save_model(mlp_model(seed=1, in_features=64, hidden=64, out_features=8), root / "warm")
    warm_data = root / "warm.npz"
    np.savez(warm_data, input=np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32))
    return {
        "warm-up": (Path(warm.model_path), warm_data, 2),
        "quickstart": (Path(qs.model_path), qs_data, 4 if quick else 16),
        "large": (Path(large.model_path), large_data, 2 if quick else 4),
    }


def _size_mb(model: Path) -> float:
    return round(sum(p.stat().st_size for p in model.parent.iterdir() if p.is_file()) / 1e6, 1)


def measure(quick: bool, large_mb: int, workloads: tuple[str, ...] = WORKLOADS) -> dict[str, Any]:
    conftest = _load("olive_cluster_harness", CLUSTER_TESTS / "conftest.py")
    parallel = _load("bench_parallel", HERE / "bench_parallel.py")

    import olive
    from olive.cache import remote as remote_module
    from olive.engine import executors
    from olive.plugins.registry import PassRegistry, use_registry

    registry = PassRegistry(entry_points=False)
    registry.register(parallel._define_pass(), name="QuantizeWork")
    rows: list[dict[str, Any]] = []
    cpu = cpu_name()
    two_nodes = conftest.unshare_reason() is None
    with tempfile.TemporaryDirectory() as tmp, use_registry(registry):
        root = Path(tmp)
        caches = root / "caches"
        caches.mkdir()
        (root / "log").mkdir()
        models = _models(root, quick, large_mb)
        timed = [name for name in models if name in workloads]
        s3 = conftest.S3Server(conftest._free_port())
        s3.start()
        os.environ.update({**conftest.CREDENTIALS, "AWS_ENDPOINT_URL": s3.endpoint})
        import fsspec.config

        fsspec.config.conf.setdefault("s3", {})["endpoint_url"] = s3.endpoint
        s3.client().create_bucket(Bucket=conftest.BUCKET)

        def run(workload: str, row: str, executor: dict | None, workers: int, **extra: Any) -> dict[str, Any]:
            model, data, points = models[workload]
            tag = f"{workload}-{row.replace(' ', '-')}"
            workflow = parallel._workflow(root, model, data, tag, points, executor)
            workflow["cache_dir"] = str(caches / tag)
            workflow.update(extra)
            before = dict(remote_module.TRANSFERRED)
            executors.RAY_TRANSFER.update(models_out=0, data_out=0, entries_back=0, entries_via_remote=0)
            begin = time.perf_counter()
            output = olive.run(workflow)
            wall = time.perf_counter() - begin
            on_ray = executor is not None and executor["type"] == "ray"
            errors = [n.error for n in output.footprint if n.status == "failed"]
            assert not errors, (tag, errors)
            result = {
                "workload": workload,
                "model_mb": _size_mb(model),
                "row": row,
                "workers": workers,
                "points": points,
                "wall_s": round(wall, 2),
                "ray_bytes_out": executors.RAY_TRANSFER["models_out"] if on_ray else 0,
                "ray_bytes_back": executors.RAY_TRANSFER["entries_back"] if on_ray else 0,
                "storage_bytes_up": remote_module.TRANSFERRED["up"] - before["up"],
                "storage_bytes_down": remote_module.TRANSFERRED["down"] - before["down"],
                "pass_runs": sum(1 for n in output.footprint[1:] if n.status == "ok" and not n.cached),
                "best": output.best.model_id,
                "cpu": cpu,
            }
            rows.append(result)
            return result

        try:
            with conftest.launch_cluster(caches, root / "log" / "runs.log", root, nodes=1) as cluster:
                ray_executor = {"type": "ray", "address": cluster.address, "num_cpus_per_trial": 1}
                run("warm-up", "ray 1 node", ray_executor, 1)
                rows.pop()
                for workload in timed:
                    run(workload, "process x1", {"type": "process", "max_workers": 1}, 1)
                    run(workload, "ray 1 node", ray_executor, 1)
                if two_nodes:
                    cluster.start_node2()
                    cluster.wait_nodes(2)
                    run("warm-up", "ray 2 nodes", ray_executor, 2)
                    rows.pop()
                    for workload in timed:
                        run(workload, "process x2", {"type": "process", "max_workers": 2}, 2)
                        run(workload, "ray 2 nodes", ray_executor, 2)
            for workload in timed:
                url = f"s3://{conftest.BUCKET}/{workload}"
                run(workload, "remote upload", None, 1, remote_cache=url)
                run(workload, "second machine", None, 1, remote_cache=url)
        finally:
            s3.stop()
    _overheads(rows)
    return {"cpu": cpu, "two_nodes": two_nodes, "rows": rows}


def _overheads(rows: list[dict[str, Any]]) -> None:
    """Per-trial overhead of each Ray row against the process row with as many workers."""
    by = {(r["workload"], r["row"]): r for r in rows}
    for row in rows:
        base_name = {"ray 1 node": "process x1", "ray 2 nodes": "process x2"}.get(row["row"])
        base = by.get((row["workload"], base_name)) if base_name else None
        if base is None:
            continue
        trial_s = base["wall_s"] * base["workers"] / base["points"]
        extra_s = (row["wall_s"] - base["wall_s"]) / row["points"]
        row["overhead_per_trial_s"] = round(extra_s, 3)
        row["overhead_share_of_trial"] = round(extra_s / trial_s, 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small models, few points (a smoke run)")
    parser.add_argument("--large-mb", type=int, default=128, help="weights of the large model in MiB (default 128)")
    parser.add_argument(
        "--workload", action="append", choices=WORKLOADS, help="run only this workload (repeatable; default: both)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args(argv)
    # onnxruntime's quantizer asks for pre-processing on every call, through the root logger
    logging.getLogger().setLevel(logging.ERROR)
    report = measure(args.quick, args.large_mb, tuple(args.workload or WORKLOADS))
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"CPU: {report['cpu']}")
    for row in report["rows"]:
        overhead = (
            f"  overhead/trial {row['overhead_per_trial_s']:+.3f} s ({100 * row['overhead_share_of_trial']:+.1f}%)"
            if "overhead_per_trial_s" in row
            else ""
        )
        print(
            f"  {row['workload']:<10} {row['model_mb']:>6} MB  {row['row']:<15} {row['points']:>2} pts "
            f"{row['wall_s']:7.2f} s  ray out {row['ray_bytes_out'] / 1e6:7.1f} MB back "
            f"{row['ray_bytes_back'] / 1e6:7.1f} MB  storage up {row['storage_bytes_up'] / 1e6:7.1f} MB down "
            f"{row['storage_bytes_down'] / 1e6:7.1f} MB  pass runs {row['pass_runs']:>2}{overhead}"
        )
    if not report["two_nodes"]:
        print("  (no 2-node rows: the second node's own mount namespace needs root)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
