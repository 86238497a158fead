"""Writing and building tiny plugin distributions, for tests of discovery through real installs.

A distribution here is a ``pyproject.toml`` (hatchling backend) plus a few modules, written to a folder
and built into a wheel once per process; installing the wheel into a :class:`~olive.testing.venv.Venv`
is then a second's work::

    wheel = distribution_wheel(
        "my-passes", "1.0",
        modules={"my_passes.py": PASS_SOURCE},
        entry_points={"olive.passes": {"StripDocStrings": "my_passes:StripDocStrings"}},
    )
    venv.pip_install("--no-deps", "--no-index", wheel)
"""

from __future__ import annotations

import hashlib
import json
import textwrap
import threading
from collections.abc import Mapping
from pathlib import Path

from olive.testing.scratch import scratch_dir
from olive.testing.venv import build_wheels

__all__ = ["distribution_wheel", "distribution_wheels", "write_distribution"]


def write_distribution(
    directory: str | Path,
    name: str,
    version: str,
    modules: Mapping[str, str],
    entry_points: Mapping[str, Mapping[str, str]],
    dependencies: tuple[str, ...] = (),
) -> Path:
    """Write a distribution's source tree (``pyproject.toml`` + ``modules``) into ``directory``.

    :param modules: ``{relative path: source}``; a path with a folder makes a package
        (``"pkg/__init__.py"``). Sources are dedented.
    :param entry_points: ``{group: {name: "module:attr"}}``.
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    top_level = sorted({Path(path).parts[0] for path in modules})
    lines = [
        "[build-system]",
        'requires = ["hatchling>=1.18"]',
        'build-backend = "hatchling.build"',
        "",
        "[project]",
        f"name = {json.dumps(name)}",
        f"version = {json.dumps(version)}",
        f"dependencies = {json.dumps(list(dependencies))}",
        "",
    ]
    for group, points in entry_points.items():
        lines.append(f"[project.entry-points.{json.dumps(group)}]")
        lines.extend(f"{json.dumps(ep_name)} = {json.dumps(value)}" for ep_name, value in points.items())
        lines.append("")
    lines += ["[tool.hatch.build.targets.wheel]", f"include = {json.dumps(top_level)}", ""]
    (root / "pyproject.toml").write_text("\n".join(lines))
    for path, source in modules.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(source).lstrip())
    return root


_wheels: dict[str, Path] = {}
_lock = threading.Lock()


def _key(name, version, modules, entry_points, dependencies) -> str:
    data = [name, version, dict(modules), {g: dict(e) for g, e in entry_points.items()}, list(dependencies)]
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def distribution_wheels(specs: list[dict], work_dir: str | Path | None = None) -> list[Path]:
    """Wheels of several distributions (each a dict of :func:`write_distribution`'s keyword arguments),
    built with one pip run for those not built yet in this process."""
    keys = [
        _key(s["name"], s["version"], s["modules"], s["entry_points"], tuple(s.get("dependencies", ()))) for s in specs
    ]
    with _lock:
        missing = {k: s for k, s in zip(keys, specs, strict=True) if not (k in _wheels and _wheels[k].exists())}
        if missing:
            base = Path(work_dir) if work_dir else scratch_dir("olive-dists-")
            projects = [
                write_distribution(base / f"{spec['name']}-{key[:12]}", **spec) for key, spec in missing.items()
            ]
            for key, wheel in zip(missing, build_wheels(projects, base / "wheels"), strict=True):
                _wheels[key] = wheel
        return [_wheels[k] for k in keys]


def distribution_wheel(
    name: str,
    version: str,
    modules: Mapping[str, str],
    entry_points: Mapping[str, Mapping[str, str]],
    dependencies: tuple[str, ...] = (),
    work_dir: str | Path | None = None,
) -> Path:
    """The wheel of the distribution :func:`write_distribution` describes, built once per process for
    each distinct content (so a test session builds every test distribution once)."""
    spec = {
        "name": name,
        "version": version,
        "modules": modules,
        "entry_points": entry_points,
        "dependencies": dependencies,
    }
    return distribution_wheels([spec], work_dir)[0]
