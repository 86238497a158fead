"""What checking a Hugging Face folder found, kept by the folder's content digest so that a rerun skips the check.

Checking a folder (``HfModelHandler.validate``: its config, weights, task and the inputs its tokenizer offers)
imports transformers and torch, seconds on every ``olive run`` and ``olive optimize`` even when every result is
cached. The digest covers the folder's files, the handler's settings and the versions of torch, transformers and
tokenizers (``HfModelHandler.content_hash``), so a record is only ever found for the very folder it was made
for; a record that is not of the shape written here is ignored (read from disk: untrusted), and one that cannot
be written costs only the next check.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any

__all__ = ["CheckedFolder", "recall", "remember"]

logger = logging.getLogger(__name__)

# 2: the checks read the checkpoint files' headers and the tokenizer against the config (checkpoint_files)
RECORD_VERSION = 2
#: ``OLIVE_HF_CHECKS_DIR`` moves the records (tests; a read-only home)
DIR_VARIABLE = "OLIVE_HF_CHECKS_DIR"


class CheckedFolder(dict):
    """``{"task": str, "input_names": [...], "output_names": [...], "max_position_embeddings": int | None}``."""


def _folder() -> Path:
    override = os.environ.get(DIR_VARIABLE)
    if override:
        return Path(override)
    from platformdirs import user_cache_path

    return user_cache_path("olive", appauthor=False) / "hf-checks"


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def recall(digest: str) -> CheckedFolder | None:
    """The record of an earlier successful check of the folder with ``digest``, or None."""
    path = _folder() / f"{digest}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    positions = data.get("max_position_embeddings") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("version") != RECORD_VERSION
        or not isinstance(data.get("task"), str)
        or not _names(data.get("input_names"))
        or not _names(data.get("output_names"))
        or not (positions is None or (isinstance(positions, int) and not isinstance(positions, bool)))
    ):
        logger.debug("ignoring the malformed folder check record '%s'", path)
        return None
    return CheckedFolder({k: data[k] for k in ("task", "input_names", "output_names", "max_position_embeddings")})


def remember(digest: str, record: CheckedFolder) -> None:
    """Keep ``record`` for the folder with ``digest`` (atomically; a folder that cannot be written is skipped)."""
    folder = _folder()
    target = folder / f"{digest}.json"
    tmp = folder / f".{digest}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"version": RECORD_VERSION, **record}), encoding="utf-8")
        tmp.replace(target)
    except OSError as exc:
        logger.debug("could not keep the folder check in '%s': %s", folder, exc)
        tmp.unlink(missing_ok=True)
