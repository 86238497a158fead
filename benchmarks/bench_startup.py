"""How long `olive --help` and `olive passes` take with 1 and with 50 plugin distributions installed.

Each case gets a fresh virtual environment (seeing the current interpreter's packages, so passes
installed there are listed too: see "passes listed") into which generated pass distributions, one pass
each, are installed with pip. Every command runs `--repeats`
times in a new interpreter; the table shows the median wall time, next to a bare `python -c pass` for
scale.

    python benchmarks/bench_startup.py            # 1 and 50 plugins, 15 runs each
    python benchmarks/bench_startup.py --quick    # 1 and 3 plugins, 3 runs each
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "`python -c pass`": ["-c", "pass"],
    "`olive --help`": ["-m", "olive.cli.main", "--help"],
    "`olive passes`": ["-m", "olive.cli.main", "passes"],
}
# The benchmark measures discovery, so a strict-mode or allowlist setting of the caller must not apply.
CLEAN_ENV = {"OLIVE_LOAD_PLUGINS": None, "OLIVE_DISABLE_PLUGINS": None, "OLIVE_STRICT_PLUGINS": None}


def _time_ms(venv, args: list[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        [str(venv.python), *args], env=venv.environ(CLEAN_ENV), capture_output=True, text=True, check=False
    )
    elapsed = (time.perf_counter() - start) * 1000
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{result.stderr}")
    return elapsed


def run_benchmark(plugin_counts: list[int], repeats: int, work_dir: Path) -> list[dict[str, object]]:
    """Measure every command for every plugin count; returns one row per count (median ms per command)."""
    from olive.testing.sample_distributions import generated_pass_wheels
    from olive.testing.venv import make_venv

    wheels = generated_pass_wheels(max(plugin_counts), work_dir / "dists")
    venvs = {}
    listed_total: dict[int, int] = {}
    for count in plugin_counts:
        venv = make_venv(work_dir / f"venv-{count}")
        venv.pip_install("--no-deps", "--no-index", *wheels[:count])
        listed = subprocess.run(
            [str(venv.python), "-m", "olive.cli.main", "passes", "--json"],
            env=venv.environ(CLEAN_ENV),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        passes = listed.count('"distribution": "olive-gen-pass-')
        if passes != count:
            raise SystemExit(f"expected {count} generated passes in `olive passes`, found {passes}")
        listed_total[count] = listed.count('"distribution": ')
        for args in COMMANDS.values():
            _time_ms(venv, args)  # warm the file system cache and write .pyc files
        venvs[count] = venv
    # Interleave the cases so a change in machine load affects them alike.
    samples: dict[tuple[int, str], list[float]] = {(c, label): [] for c in plugin_counts for label in COMMANDS}
    for _ in range(repeats):
        for count, venv in venvs.items():
            for label, args in COMMANDS.items():
                samples[(count, label)].append(_time_ms(venv, args))
    return [
        {
            "plugins": count,
            "listed": listed_total[count],
            **{label: statistics.median(samples[(count, label)]) for label in COMMANDS},
        }
        for count in plugin_counts
    ]


def markdown_table(rows: list[dict[str, object]], repeats: int) -> str:
    header = ["generated plugin distributions", "passes listed", *COMMANDS]
    lines = [
        f"Median wall time of {repeats} runs (ms), Python {sys.version.split()[0]}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---:" for _ in header) + "|",
    ]
    for row in rows:
        cells = [str(row["plugins"]), str(row["listed"]), *(f"{row[c]:.0f}" for c in COMMANDS)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 3 plugins, 3 runs each (for tests)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per command (default 15; 3 with --quick)")
    parser.add_argument("--plugins", type=int, nargs="+", default=None, help="plugin counts (default 1 50)")
    args = parser.parse_args(argv)
    counts = args.plugins or ([1, 3] if args.quick else [1, 50])
    repeats = args.repeats or (3 if args.quick else 15)
    with tempfile.TemporaryDirectory(prefix="olive-bench-startup-") as tmp:
        rows = run_benchmark(counts, repeats, Path(tmp))
    table = markdown_table(rows, repeats)
    print(table)
    return table


if __name__ == "__main__":
    main()
