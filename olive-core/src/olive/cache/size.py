"""How big a cache may grow: the size limit, where it is set, and how sizes are written.

Every cache has a limit: the workflow's ``cache_max_size`` when it gives one, else ``OLIVE_CACHE_MAX_SIZE``,
else :data:`DEFAULT_MAX_SIZE`. A size is a number of bytes or a number with a unit (``500MB``, ``2GB``,
``1.5GiB``), or ``unlimited``. After a run that wrote new entries, the least recently used entries go until the
cache is under its limit (see :mod:`olive.cache.eviction`).
"""

from __future__ import annotations

import os
import re

import attrs

from olive.exceptions import SettingError

MAX_SIZE_ENV = "OLIVE_CACHE_MAX_SIZE"
#: 5 GB: a new user's first hour of trying things wrote 336 MB, so this keeps about fifteen such hours; it holds
#: dozens of variants of a model the size of all-MiniLM-L6-v2 (90 MB in fp32, about 23 MB in int8) or a small
#: decoder's fp32 and int4 folders, and stays a small share of a laptop's disk. Entries of a running workflow are
#: never evicted, so a bigger run still finishes; the next run that writes brings the cache back under the limit.
DEFAULT_MAX_SIZE = 5 * 10**9
UNLIMITED = "unlimited"
#: The accepted forms, as error messages and help texts name them.
SIZE_FORMS = (
    "a number of bytes, or a number with a unit: KB, MB, GB, TB (powers of 1000: 500MB, 2GB) or KiB, MiB, GiB, "
    f"TiB (powers of 1024), or '{UNLIMITED}'"
)

_UNITS = {
    "": 1,
    "b": 1,
    **{f"{p}{b}": 1000**i for i, p in enumerate("kmgt", start=1) for b in ("", "b")},
    **{f"{p}ib": 1024**i for i, p in enumerate("kmgt", start=1)},
}
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)")


@attrs.frozen
class SizeLimit:
    """A cache's limit: ``max_bytes`` (None: unlimited) and the setting it came from, for messages."""

    max_bytes: int | None
    source: str

    def describe(self) -> str:
        return "no limit" if self.max_bytes is None else f"{format_size(self.max_bytes)} limit"


def parse_size(text: str) -> int | None:
    """The bytes ``text`` names (None for ``unlimited``); ValueError when it is not one of :data:`SIZE_FORMS`."""
    written = text.strip().lower()
    if written == UNLIMITED:
        return None
    match = _SIZE.fullmatch(written)
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(f"{text.strip()!r} is not a size")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def format_size(size: int) -> str:
    """``size`` bytes in the largest decimal unit that keeps a figure of at least 1 (``312.4 MB``)."""
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} bytes"


def configured_limit() -> SizeLimit:
    """The limit ``OLIVE_CACHE_MAX_SIZE`` sets, else the default; a value that is no size is a
    :class:`~olive.exceptions.SettingError` naming the variable and the accepted forms."""
    raw = os.environ.get(MAX_SIZE_ENV, "").strip()
    if not raw:
        return SizeLimit(DEFAULT_MAX_SIZE, "the default")
    try:
        return SizeLimit(parse_size(raw), MAX_SIZE_ENV)
    except ValueError as exc:
        raise SettingError(f"{exc}; set it to {SIZE_FORMS}", owner=MAX_SIZE_ENV) from None


def workflow_limit(value: str | int, key: str) -> SizeLimit:
    """The limit a workflow's ``key`` sets (a size string or a number of bytes); ValueError naming the forms."""
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} is not a size; use {SIZE_FORMS}")
        return SizeLimit(value, key)
    try:
        return SizeLimit(parse_size(value), key)
    except ValueError as exc:
        raise ValueError(f"{exc}; use {SIZE_FORMS}") from None
