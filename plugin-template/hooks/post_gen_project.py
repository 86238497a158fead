"""Record, in the new project's tox.ini, which olive-core its tests install by default: the one that rendered
the project (read from olive-core's installed metadata), so that a plain ``tox`` works before any olive-core
is published. ``OLIVE_CORE=... tox`` still picks another; without olive-core here the default is the package
index's ``olive-core``. The README's setup gets the line that installs the same olive-core.
"""

from __future__ import annotations

import shlex
from pathlib import Path

PLACEHOLDER = "{OLIVE_CORE_OF_THE_RENDER}"
INSTALL_PLACEHOLDER = "{OLIVE_CORE_INSTALL_OF_THE_RENDER}"
#: olive-core is not on a package index: without a known source the README names the usual one
INSTALL_FROM_A_CLONE = 'pip install -e "/path/to/olive/olive-core"   # olive-core from a clone of the Olive repository'

try:
    from olive.plugins.install_hints import olive_core_requirement, olive_core_source

    requirement = olive_core_requirement() or ""
    source = olive_core_source()
    if source is None:
        install = INSTALL_FROM_A_CLONE
    else:
        # The very folder or wheel file this olive-core came from, quoted for the shell.
        install = f"pip install {'-e ' if source.kind == 'folder' else ''}{shlex.quote(str(source.path))}"
except Exception:  # cookiecutter run by an interpreter without olive-core
    requirement = ""
    install = INSTALL_FROM_A_CLONE

for name, placeholder, value in (("tox.ini", PLACEHOLDER, requirement), ("README.md", INSTALL_PLACEHOLDER, install)):
    path = Path(name)
    path.write_text(path.read_text(encoding="utf-8").replace(placeholder, value), encoding="utf-8")
