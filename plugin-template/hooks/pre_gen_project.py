"""Check the names before cookiecutter renders a single file.

Cookiecutter renders this script with the answers, then runs it; a non-zero exit stops the render and
removes the (still empty) project folder. ``olive new-pass`` imports the unrendered file and calls
:func:`problems` itself, so that it can refuse bad names before cookiecutter creates anything at all.
"""

from __future__ import annotations

import json
import keyword
import re
import sys

# The JSON text of the answers; a raw triple-quoted string holds any JSON text unchanged (JSON never
# contains three unescaped quotes in a row, nor ends with a backslash).
_ANSWERS = r"""{{ cookiecutter | jsonify }}"""

_CLASS_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_DISTRIBUTION_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_MODULE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_VERSION = re.compile(r"\d+(?:\.\d+)*")
# olive-core's own names (and Microsoft Olive's, which installs the same import package).
_RESERVED_DISTRIBUTIONS = {"olive", "olive-core", "olive-ai"}
_RESERVED_MODULES = {"olive", "olive_core", "olive_ai"}


def _escapes_output_folder(name: str) -> bool:
    return bool(name.startswith((".", "/", "\\", "~")) or "/" in name or "\\" in name or re.match(r"[A-Za-z]:", name))


def problems(answers: dict) -> list[str]:
    """Every reason the answers cannot become a pass distribution; empty when they can."""
    found: list[str] = []
    pass_name = str(answers.get("pass_name", ""))
    class_name = str(answers.get("class_name", ""))
    distribution = str(answers.get("distribution_name", ""))
    module = str(answers.get("module_name", ""))

    if not pass_name.strip() or not class_name:
        found.append(
            f"pass_name {pass_name!r} has no letters or digits that can be written in ASCII; use a name with "
            "letters (non-ASCII letters are transliterated, e.g. 'Größe Prüfen' -> GrossePrufen) or give "
            "class_name, distribution_name and module_name explicitly"
        )
    elif not _CLASS_NAME.fullmatch(class_name) or keyword.iskeyword(class_name):
        found.append(
            f"class_name {class_name!r} is not allowed: use ASCII letters, digits and underscores, starting "
            "with a letter and not a Python keyword (e.g. StripDocStrings); unless given, it is derived from "
            "the pass name"
        )

    normalized = re.sub(r"[-_.]+", "-", distribution).lower()
    if normalized in _RESERVED_DISTRIBUTIONS:
        found.append(
            f"distribution_name {distribution!r} is olive-core's own name; choose another, e.g. "
            "olive-pass-strip-doc-strings"
        )
    elif _escapes_output_folder(distribution):
        found.append(
            f"distribution_name {distribution!r} would be written outside the output folder; it is also the "
            "project's folder name, so use lowercase ASCII letters, digits and single hyphens only "
            "(e.g. olive-pass-strip-doc-strings) and choose the location with the output folder option"
        )
    elif not _DISTRIBUTION_NAME.fullmatch(distribution):
        found.append(
            f"distribution_name {distribution!r} is not allowed: use lowercase ASCII letters, digits and single "
            "hyphens, starting and ending with a letter or digit (e.g. olive-pass-strip-doc-strings)"
        )

    if module in _RESERVED_MODULES or module.split(".")[0] in _RESERVED_MODULES:
        found.append(f"module_name {module!r} is olive-core's own package; choose another, e.g. olive_pass_strip")
    elif not _MODULE_NAME.fullmatch(module) or keyword.iskeyword(module):
        found.append(
            f"module_name {module!r} is not allowed: use lowercase ASCII letters, digits and underscores, "
            "starting with a letter or underscore (e.g. olive_pass_strip_doc_strings)"
        )
    elif module in sys.stdlib_module_names:
        found.append(f"module_name {module!r} would shadow Python's standard library module; choose another")

    for field in ("description", "author"):
        value = str(answers.get(field, ""))
        if "\n" in value or "\r" in value:
            found.append(f"{field} must be one line (it goes into the package metadata)")
    version = str(answers.get("olive_core_min_version", ""))
    if not _VERSION.fullmatch(version):
        found.append(f"olive_core_min_version {version!r} is not allowed: use a release number such as 0.1")
    return found


def main() -> int:
    found = problems(json.loads(_ANSWERS))
    for problem in found:
        print(f"ERROR: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
