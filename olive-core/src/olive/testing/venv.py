"""Throwaway virtual environments for testing plugin discovery with real ``pip install``.

With ``system_site_packages=True`` the new environment also sees every package the current interpreter
sees (olive-core, onnx, onnxruntime, pip...), even when the current interpreter is itself a virtual
environment, so installing a small plugin distribution into it takes a second or two.
"""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
import sysconfig
import venv
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from olive.exceptions import OliveError

__all__ = ["Venv", "VenvError", "build_wheel", "build_wheels", "make_venv"]


class VenvError(OliveError):
    """A command in a test virtual environment failed; the message holds its output."""


@attrs.frozen
class Venv:
    """A virtual environment at ``path``."""

    path: Path

    @property
    def python(self) -> Path:
        """Its interpreter."""
        return self.bin("python")

    def bin(self, name: str) -> Path:
        """The path of script ``name`` in its ``bin`` (``Scripts`` on Windows) folder."""
        folder = self.path / ("Scripts" if os.name == "nt" else "bin")
        suffix = ".exe" if os.name == "nt" and not name.endswith(".exe") else ""
        return folder / f"{name}{suffix}"

    @property
    def site_packages(self) -> Path:
        """Where packages installed into it go."""
        return Path(sysconfig.get_path("purelib", vars={"base": str(self.path), "platbase": str(self.path)}))

    def environ(self, env: Mapping[str, str | None] | None = None) -> dict[str, str]:
        """The environment its commands run with: the current one, activated, updated with ``env``
        (a None value removes that variable)."""
        merged = dict(os.environ)
        merged.pop("PYTHONHOME", None)
        merged["VIRTUAL_ENV"] = str(self.path)
        merged["PATH"] = os.pathsep.join([str(self.bin("python").parent), merged.get("PATH", "")])
        for key, value in (env or {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return merged

    def run(
        self, args: Sequence[str | os.PathLike[str]], env: Mapping[str, str | None] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run ``args`` (e.g. ``[venv.python, "-c", code]``) with this environment activated.

        With ``check`` a non-zero exit raises :class:`VenvError` holding the command's output.
        """
        result = subprocess.run(
            [str(a) for a in args], env=self.environ(env), capture_output=True, text=True, check=False
        )
        if check and result.returncode != 0:
            raise VenvError(
                f"command {' '.join(str(a) for a in args)} exited with {result.returncode}\n"
                f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
            )
        return result

    def python_run(self, code: str, env: Mapping[str, str | None] | None = None, check: bool = True):
        """Run Python ``code`` in this environment."""
        return self.run([self.python, "-c", code], env=env, check=check)

    def pip_install(self, *args: str | os.PathLike[str], env: Mapping[str, str | None] | None = None) -> str:
        """``pip install *args`` into this environment; raises :class:`VenvError` with pip's output."""
        return self.pip("install", "--no-input", *args, env=env).stdout

    def pip_uninstall(self, *names: str) -> str:
        """``pip uninstall -y *names``."""
        return self.pip("uninstall", "-y", *names).stdout

    def pip(
        self, *args: str | os.PathLike[str], env: Mapping[str, str | None] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run pip against this environment: the current interpreter's pip with ``--python``, so the
        environment needs no pip of its own."""
        return self.run(
            [sys.executable, "-m", "pip", "--python", self.python, "--disable-pip-version-check", *args],
            env=env,
            check=check,
        )


def _visible_site_dirs() -> list[str]:
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if Path(d).is_dir()]


def make_venv(path: str | os.PathLike[str], system_site_packages: bool = True) -> Venv:
    """Create a virtual environment at ``path``.

    :param system_site_packages: make everything the current interpreter can import visible to it,
        behind its own packages; otherwise it sees the standard library only.
    """
    path = Path(path)
    # No pip inside: Venv.pip runs this interpreter's pip against it, which is much faster than ensurepip.
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt", clear=True).create(path)
    env = Venv(path)
    if system_site_packages:
        site_packages = env.site_packages
        site_packages.mkdir(parents=True, exist_ok=True)
        # addsitedir (not a bare path line) so the parent's own .pth files, e.g. editable installs, apply.
        lines = [f"import site; site.addsitedir({d!r})" for d in _visible_site_dirs()]
        (site_packages / "_olive_parent_site.pth").write_text("\n".join(lines) + "\n")
    return env


def build_wheel(project_dir: str | os.PathLike[str], wheel_dir: str | os.PathLike[str]) -> Path:
    """Build a wheel of ``project_dir`` into ``wheel_dir`` with the current interpreter's pip.

    The build backend is used from the current environment when it is importable (fast, offline);
    otherwise pip fetches it into an isolated build environment.
    """
    return build_wheels([project_dir], wheel_dir)[0]


def build_wheels(project_dirs: Sequence[str | os.PathLike[str]], wheel_dir: str | os.PathLike[str]) -> list[Path]:
    """Build wheels of several projects with one pip run (much faster than one run each); returns them in
    the order of ``project_dirs``."""
    import tomllib

    dirs = [Path(p) for p in project_dirs]
    wheel_dir = Path(wheel_dir)
    wheel_dir.mkdir(parents=True, exist_ok=True)
    isolation = ["--no-build-isolation"]
    for project in dirs:
        pyproject = tomllib.loads((project / "pyproject.toml").read_text())
        backend = pyproject.get("build-system", {}).get("build-backend", "setuptools.build_meta")
        try:
            __import__(backend.split(":")[0])
        except ImportError:
            isolation = []
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--disable-pip-version-check",
            *isolation,
            "-w",
            str(wheel_dir),
            *map(str, dirs),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise VenvError(f"building wheels of {', '.join(map(str, dirs))} failed\n{result.stdout}\n{result.stderr}")
    wheels = []
    for project in dirs:
        name = tomllib.loads((project / "pyproject.toml").read_text())["project"]["name"]
        prefix = re.sub(r"[-_.]+", "_", name).lower() + "-"
        found = [w for w in wheel_dir.glob("*.whl") if w.name.lower().startswith(prefix)]
        if not found:
            raise VenvError(f"pip reported success but no wheel of {name} is in {wheel_dir}\n{result.stdout}")
        wheels.append(max(found, key=lambda w: w.stat().st_mtime))
    return wheels
