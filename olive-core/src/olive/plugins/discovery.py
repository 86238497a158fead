"""Reading entry points from installed distributions' metadata, and the plugin environment policy.

Nothing here imports a plugin module: it reads ``entry_points.txt`` and ``METADATA`` only, so listing,
``--help`` and ``--version`` stay fast however many plugin distributions are installed.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from importlib_metadata import EntryPoint

logger = logging.getLogger(__name__)

PASSES_GROUP = "olive.passes"
PLUGINS_GROUP = "olive.plugins"

LOAD_PLUGINS_ENV = "OLIVE_LOAD_PLUGINS"
DISABLE_PLUGINS_ENV = "OLIVE_DISABLE_PLUGINS"
STRICT_PLUGINS_ENV = "OLIVE_STRICT_PLUGINS"


def normalize_name(name: str) -> str:
    """A distribution name in PEP 503 form (``Olive_Passes.Quant`` -> ``olive-passes-quant``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# NamedTuples rather than attrs classes: this module is on the path of `olive --help`, where importing
# attrs would be a fifth of the start-up time.
class FoundEntryPoint(NamedTuple):
    """One entry point as metadata describes it: which distribution offers it, and at which version."""

    name: str
    value: str
    group: str
    distribution: str
    version: str
    entry_point: EntryPoint | Any


def iter_entry_points(group: str) -> Iterator[FoundEntryPoint]:
    """Every entry point of ``group``, each distribution counted once.

    A distribution found twice (on ``sys.path`` twice, or as both an egg-info and a dist-info) is the
    first one found, as for imports; that is not a name conflict.
    """
    import importlib_metadata

    try:
        found = list(importlib_metadata.entry_points(group=group))
    except Exception:
        # One distribution's metadata is malformed; read them one by one to skip just that one.
        found = list(_entry_points_one_by_one(group))
    seen: set[tuple[str, str]] = set()
    for ep in found:
        dist = ep.dist
        dist_name = (dist.name if dist is not None else None) or "unknown"
        version = (dist.version if dist is not None else None) or "0"
        key = (normalize_name(dist_name), ep.name)
        if key in seen:
            continue
        seen.add(key)
        yield FoundEntryPoint(ep.name, ep.value, group, dist_name, version, ep)


def _entry_points_one_by_one(group: str) -> Iterator[EntryPoint]:
    import importlib_metadata

    seen: set[str] = set()
    for dist in importlib_metadata.distributions():
        try:
            name = normalize_name(dist.name or "")
            if name in seen:
                continue
            seen.add(name)
            entry_points = list(dist.entry_points.select(group=group))
        except Exception as exc:
            where = getattr(dist, "_path", "?")
            logger.warning(
                "skipping distribution %s (%s): its entry_points.txt cannot be read (%s); reinstall it",
                dist.metadata["Name"] if dist.metadata else "?",
                where,
                describe_exception(exc),
            )
            continue
        yield from entry_points


def _env_names(variable: str) -> frozenset[str] | None:
    raw = os.environ.get(variable)
    if raw is None:
        return None
    return frozenset(normalize_name(part.strip()) for part in raw.split(",") if part.strip())


class PluginPolicy(NamedTuple):
    """Which plugin distributions may load, from ``OLIVE_LOAD_PLUGINS`` / ``OLIVE_DISABLE_PLUGINS``.

    :param allow: normalized names allowed (``None``: all; empty: none), the escape hatch for a broken
        install.
    :param block: normalized names never loaded.
    :param strict: any load failure is fatal (``OLIVE_STRICT_PLUGINS=1``, for CI).
    """

    allow: frozenset[str] | None = None
    block: frozenset[str] = frozenset()
    strict: bool = False

    @classmethod
    def from_env(cls) -> PluginPolicy:
        """The policy the environment variables describe."""
        strict = os.environ.get(STRICT_PLUGINS_ENV, "").strip().lower() in ("1", "true", "yes", "on")
        return cls(_env_names(LOAD_PLUGINS_ENV), _env_names(DISABLE_PLUGINS_ENV) or frozenset(), strict)

    def blocked_reason(self, distribution: str) -> str | None:
        """Why ``distribution`` may not load (naming the variable to change), or None when it may."""
        name = normalize_name(distribution)
        if name in self.block:
            return f"disabled by {DISABLE_PLUGINS_ENV}; remove '{distribution}' from it to use it"
        if self.allow is not None and name not in self.allow:
            return f"not in {LOAD_PLUGINS_ENV}; add '{distribution}' to it to use it"
        return None


# (variable, name) pairs already warned about in this process.
_WARNED: set[tuple[str, str]] = set()


def plugin_distributions() -> set[str]:
    """Normalized names of the installed distributions with an entry point in any ``olive.*`` group."""
    import importlib_metadata

    try:
        found = list(importlib_metadata.entry_points())
    except Exception:
        return set()
    return {normalize_name(ep.dist.name) for ep in found if ep.group.startswith("olive.") and ep.dist and ep.dist.name}


def warn_unknown_policy_names(policy: PluginPolicy) -> list[str]:
    """Warn, once per process and name, about ``OLIVE_LOAD_PLUGINS`` / ``OLIVE_DISABLE_PLUGINS`` entries that
    name no installed plugin distribution (a typo would otherwise block everything, or nothing, silently).

    Returns the messages logged by this call.
    """
    named = [(LOAD_PLUGINS_ENV, n) for n in sorted(policy.allow or ())]
    named += [(DISABLE_PLUGINS_ENV, n) for n in sorted(policy.block)]
    if not named:
        return []
    import difflib

    installed = plugin_distributions()
    messages = []
    for variable, name in named:
        if name in installed or (variable, name) in _WARNED:
            continue
        _WARNED.add((variable, name))
        effect = ""
        if variable == LOAD_PLUGINS_ENV and not (policy.allow or frozenset()) & installed:
            effect = "; as it stands no plugin distribution loads"
        message = (
            f"{variable} names '{name}', which is not an installed plugin distribution"
            f"{''.join(f' (did you mean {m!r}?)' for m in difflib.get_close_matches(name, sorted(installed), n=1))}"
            f"{effect}; "
            f"installed: {', '.join(sorted(installed)) or '(none)'}"
        )
        logger.warning(message)
        messages.append(message)
    return messages


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    message = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
