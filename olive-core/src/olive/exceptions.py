"""Error types callers can catch.

Every message names the thing that is wrong, where it is, and how to fix it; the CLI prints the message
alone (no traceback) for any :class:`OliveError`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class OliveError(Exception):
    """Base class of every error Olive raises on bad input or a failed run.

    ``OliveError(reason, owner=...)``: ``owner`` names what the message is about (``"pass 'quant'
    (OnnxDynamicQuantization)"``, a JSON path); ``str(exc)`` is ``"owner: reason"``. Code that re-raises an
    error under an owner of its own reads ``exc.reason`` instead of taking the message apart.
    """

    def __init__(self, reason: object = "", *args: object, owner: str | None = None):
        self.owner = owner
        self.reason = str(reason)
        super().__init__(f"{owner}: {reason}" if owner else reason, *args)


class PassConfigError(OliveError, ValueError):
    """A pass's configuration is invalid (unknown key, wrong type, missing required param, ...)."""


class PassParamError(PassConfigError):
    """Values of a pass's params that no run can use: a value its kernel does not take, two params that do not
    go together. Raised by a pass's ``_check_config`` (see :class:`~olive.passes.Pass`).

    ``PassParamError(reason, params=("precision", "activation_type"))``: ``reason`` names the param(s), says why
    and how to fix it; ``params`` lists them, so the engine can tell a conflict among values the workflow fixed
    (a config error) from one that involves a searched param (that search point is pruned, with the reason).
    """

    def __init__(self, reason: object = "", *args: object, params: str | Iterable[str] = (), owner: str | None = None):
        self.params = (params,) if isinstance(params, str) else tuple(params)
        super().__init__(reason, *args, owner=owner)


class SearchSpaceError(PassConfigError):
    """A search space cannot be built (a parent cycle, a parent that does not exist, ...)."""


class ModelLoadError(OliveError):
    """A model file does not exist, is not ONNX, or cannot be loaded."""


class ExecutionProviderError(OliveError):
    """None of the requested execution providers is available in the installed onnxruntime."""


def closest_match_hint(name: str, candidates: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest candidate, or an empty string."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{matches[0]}'?)" if matches else ""


class PluginLoadError(OliveError):
    """A plugin distribution's entry point failed to load (import error, not a Pass, bad config...)."""


class UnknownPassError(OliveError, KeyError):
    """No installed distribution offers a pass of that name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class AmbiguousPassError(OliveError):
    """Two distributions offer one pass name; qualify it as ``dist-name:PassName``."""


class WorkflowConfigError(OliveError, ValueError):
    """A workflow config is invalid; the message names the JSON path and the fix."""


class PassRunError(OliveError):
    """A pass raised while running; the original exception is chained."""


class TemplateError(OliveError):
    """A pass distribution cannot be created from the template (a bad name, an existing folder, ...)."""


class SettingError(OliveError, ValueError):
    """An environment variable holds a value Olive cannot use; the message names the variable and the accepted
    forms."""


class CacheError(OliveError):
    """The cache folder cannot be written (read-only, no permission, disk full...)."""
