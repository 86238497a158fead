"""Build hook: ship the repository's pass template inside the package, for ``olive new-pass``.

The template lives at the repository root (``plugin-template/``), outside this project. A wheel or sdist
built from the repository copies it to ``olive/_template``; the sdist keeps it at
``src/olive/_template``, where a wheel built from that sdist finds it as ordinary package data.
"""

from __future__ import annotations

from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# What a render needs; the template's own tests and settings stay out.
_TEMPLATE_ITEMS = (
    "cookiecutter.json",
    "hooks/pre_gen_project.py",
    "hooks/post_gen_project.py",
    "{{cookiecutter.__folder}}",
)


class TemplateBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if version == "editable":
            return  # an editable install uses the repository's folder itself
        template = Path(self.root).parent / "plugin-template"
        if not (template / "cookiecutter.json").is_file():
            return  # building from an sdist, which already holds src/olive/_template
        prefix = "src/olive/_template" if self.target_name == "sdist" else "olive/_template"
        for item in _TEMPLATE_ITEMS:
            build_data["force_include"][str(template / item)] = f"{prefix}/{item}"
