"""Olive's log output: which loggers are Olive's, and keeping repeated messages down.

Olive's loggers are ``olive`` and the top-level package of every installed plugin (``olive_passes_quant``,
``olive_passes_torch``, a third party's package): :func:`olive_logger_names`. :func:`olive_logs` sets their
level (and a handler, for the CLI) for the length of a block, so a pass distribution's INFO records show
wherever Olive's own do.

onnxruntime's own log lines go to our loggers at debug level (:func:`onnxruntime_logs`).

Libraries that log the same advice on every call (onnxruntime's quantizer asks for pre-processing on every
model; its transformer fusions report once per layer) would otherwise repeat it once per search point or
layer. :class:`OnceFilter` is the one filter for that, and :func:`once_per_message` applies it to some
loggers for the length of a block.

onnxruntime's tools log on the root logger (``logging.warning(...)``, which also installs a handler printing
``WARNING:root:...`` into the user's output when none is there) and on their ``onnxruntime.*`` loggers, about
things our passes already handle ("Please consider to run pre-processing before quantization", "Model
producer not matched"). Inside :func:`onnxruntime_logs` every such record is logged again on the pass's own
logger at debug level, in our words where the user can act on it, and goes nowhere else.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from olive.plugins.discovery import iter_entry_points

#: Entry-point groups whose targets are Olive plugins (their packages' loggers are Olive's).
_PLUGIN_GROUPS = ("olive.passes", "olive.models", "olive.data_containers", "olive.plugins")


# (sys.path and the modification time of each of its folders) -> the names found then: installing or removing a
# distribution changes its folder, and then the entry points are read again.
_NAMES_SEEN: tuple[tuple[tuple[str, int | None], ...], list[str]] | None = None


def olive_logger_names() -> list[str]:
    """``olive``, then the top-level package of every installed plugin's entry points (read from metadata; nothing
    is imported, and the metadata once while no folder of ``sys.path`` changes)."""
    global _NAMES_SEEN
    fingerprint = tuple((entry, _mtime_ns(entry)) for entry in sys.path)
    if _NAMES_SEEN is not None and _NAMES_SEEN[0] == fingerprint:
        return list(_NAMES_SEEN[1])
    names = ["olive"]
    for value in _plugin_targets():
        package = value.split(":", 1)[0].split(".", 1)[0].strip()
        if package and package not in names:
            names.append(package)
    _NAMES_SEEN = (fingerprint, names)
    return list(names)


def _plugin_targets() -> list[str]:
    """The ``module:attr`` of every entry point in the plugin groups: one reading of the metadata, no
    distribution's name or version (which would parse each one's METADATA file)."""
    import importlib_metadata

    try:
        return [ep.value for ep in importlib_metadata.entry_points() if ep.group in _PLUGIN_GROUPS]
    except Exception:
        # One distribution's metadata is malformed: discovery reads them one by one and skips just that one.
        return [found.value for group in _PLUGIN_GROUPS for found in iter_entry_points(group)]


def _mtime_ns(folder: str) -> int | None:
    try:
        return Path(folder or ".").stat().st_mtime_ns
    except OSError:
        return None


@contextlib.contextmanager
def olive_logs(level: int, handler: logging.Handler | None = None, keep_debug: bool = False) -> Iterator[None]:
    """Inside the block, Olive's loggers (:func:`olive_logger_names`) pass records at ``level`` and above; with
    ``handler``, to it alone (not on to the root logger's handlers). ``keep_debug``: a logger already at DEBUG
    (``--verbose``) stays there. Everything is restored on exit."""
    loggers = [logging.getLogger(name) for name in olive_logger_names()]
    saved = [(logger, logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        if not (keep_debug and logger.level == logging.DEBUG):
            logger.setLevel(level)
        if handler is not None:
            logger.addHandler(handler)
            logger.propagate = False
    try:
        yield
    finally:
        for logger, old_level, propagate in saved:
            if handler is not None:
                logger.removeHandler(handler)
            logger.setLevel(old_level)
            logger.propagate = propagate


class OnceFilter(logging.Filter):
    """Lets each distinct message through once; a later record with the same logger, level and text is dropped.

    :param min_level: only records at this level or above are de-duplicated (lower ones always pass).
    :param max_level: records at this level or above always pass (errors are never hidden); None: no limit.
    """

    def __init__(self, min_level: int = logging.NOTSET, max_level: int | None = None) -> None:
        super().__init__()
        self.min_level = min_level
        self.max_level = max_level
        self._seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < self.min_level or (self.max_level is not None and record.levelno >= self.max_level):
            return True
        key = (record.name, record.levelno, record.getMessage())
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


@contextlib.contextmanager
def once_per_message(*loggers: logging.Logger, once: OnceFilter | None = None) -> Iterator[OnceFilter]:
    """Inside the block, each distinct message of ``loggers`` (the root logger when none is named) shows once.

    A filter on a logger sees only what is logged on that logger itself, not what its children pass up, so
    name every logger that repeats itself.
    """
    targets = loggers or (logging.getLogger(),)
    once = once if once is not None else OnceFilter()
    for target in targets:
        target.addFilter(once)
    try:
        yield once
    finally:
        for target in targets:
            target.removeFilter(once)


# onnxruntime's advice, in words that name what the user can change here.
_OUR_WORDS = {
    "Please consider to run pre-processing before quantization": (
        "onnxruntime advises quantization pre-processing for this model; quant_preprocess: true runs it"
    ),
}


def _onnxruntime_dir() -> str | None:
    spec = importlib.util.find_spec("onnxruntime")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return os.path.realpath(locations[0]) + os.sep if locations else None


def _in_our_words(message: str) -> str:
    for prefix, ours in _OUR_WORDS.items():
        if message.startswith(prefix):
            return ours
    return f"onnxruntime: {message}"


@contextlib.contextmanager
def onnxruntime_logs(target: logging.Logger, loggers: Iterable[str] = ()) -> Iterator[None]:
    """Inside the block, records onnxruntime logs go to ``target`` at DEBUG instead of the user's output.

    Caught: records logged on the root logger from onnxruntime's files, everything on the ``onnxruntime``
    loggers, and everything on ``loggers`` (onnxruntime's transformer tools import their modules under bare
    names such as ``fusion_attention``).
    """
    ort_dir = _onnxruntime_dir()

    class _FromOnnxruntime(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            if ort_dir is None or not os.path.realpath(record.pathname).startswith(ort_dir):
                return True
            target.debug("%s", _in_our_words(record.getMessage()))
            return False

    class _Forward(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            target.debug("%s", _in_our_words(record.getMessage()))

    root = logging.getLogger()
    drop, forward = _FromOnnxruntime(), _Forward()
    # logging.warning() configures a printing handler on a root logger that has none; give it one that does
    # nothing for as long as the block runs.
    placeholder = logging.NullHandler() if not root.handlers else None
    if placeholder is not None:
        root.addHandler(placeholder)
    root.addFilter(drop)
    diverted = [logging.getLogger(name) for name in dict.fromkeys(("onnxruntime", *loggers))]
    saved = [(logger, logger.propagate) for logger in diverted]
    for logger in diverted:
        logger.addHandler(forward)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, propagate in saved:
            logger.propagate = propagate
            logger.removeHandler(forward)
        root.removeFilter(drop)
        if placeholder is not None:
            root.removeHandler(placeholder)
