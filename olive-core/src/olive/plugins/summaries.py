"""A pass's one-line summary read from its source file, without importing anything.

``olive passes`` shows it for passes that are not loaded. The module is located the way the import
system would (``PathFinder``, which executes no package code) and the class docstring found with a
regular expression (parsing whole modules with ``ast`` would cost more than the rest of the listing);
anything unusual (a class re-exported from another module, a module loaded by a custom import hook, a
compiled extension, a header the expression does not follow) gives None and the listing shows "-".
"""

from __future__ import annotations

import functools
import re
from importlib.machinery import PathFinder
from pathlib import Path

# Larger files are not worth parsing for a listing.
_MAX_SOURCE_BYTES = 512 * 1024


def _module_file(module: str) -> Path | None:
    search_path = None
    spec = None
    for depth, _ in enumerate(module.split(".")):
        name = ".".join(module.split(".")[: depth + 1])
        spec = PathFinder.find_spec(name, search_path)
        if spec is None:
            return None
        search_path = list(spec.submodule_search_locations or [])
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


# ``class Name(bases):`` (the bases may span lines), blank or comment lines, then the docstring's opening.
_CLASS_DOCSTRING = re.compile(
    r"^class[ \t]+(\w+)[ \t]*(?:\([^)]*\))?[ \t]*:[ \t]*(?:#[^\n]*)?\n"
    r"(?:[ \t]*(?:#[^\n]*)?\n)*"
    r"[ \t]+[rRuU]?(\"\"\"|\'\'\'|\"|\')(.*?)\2",
    re.MULTILINE | re.DOTALL,
)
_CLASS = re.compile(r"^class[ \t]+(\w+)", re.MULTILINE)


@functools.lru_cache(maxsize=256)
def _class_summaries(path: Path) -> dict[str, str | None]:
    try:
        if path.stat().st_size > _MAX_SOURCE_BYTES:
            return {}
        source = path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return {}
    found: dict[str, str | None] = dict.fromkeys(_CLASS.findall(source))
    for match in _CLASS_DOCSTRING.finditer(source):
        lines = [line.strip() for line in match.group(3).strip().splitlines()]
        found[match.group(1)] = lines[0] if lines and lines[0] else None
    return found


def source_summary(value: str) -> str | None:
    """The first docstring line of the class ``value`` (``"pkg.module:Class"``) names, or None."""
    module, _, attribute = value.partition(":")
    module, attribute = module.strip(), attribute.strip()
    if not module or not attribute or "." in attribute:
        return None
    try:
        path = _module_file(module)
    except (ImportError, ValueError):
        return None
    return _class_summaries(path).get(attribute) if path is not None else None
