"""Record, in the new project's tox.ini, which olive-core its tests install by default: the one that rendered
the project (read from olive-core's installed metadata), so that a plain ``tox`` works before any olive-core
is published. ``OLIVE_CORE=... tox`` still picks another; without olive-core here the default is the package
index's ``olive-core``.
"""

from __future__ import annotations

from pathlib import Path

PLACEHOLDER = "{OLIVE_CORE_OF_THE_RENDER}"

try:
    from olive.plugins.install_hints import olive_core_requirement

    requirement = olive_core_requirement() or ""
except Exception:  # cookiecutter run by an interpreter without olive-core
    requirement = ""

tox_ini = Path("tox.ini")
tox_ini.write_text(tox_ini.read_text(encoding="utf-8").replace(PLACEHOLDER, requirement), encoding="utf-8")
