"""Hugging Face hub names given where a local folder is expected: recognised, and answered with how to save one.

Models are never downloaded here; the message shows the command that does it once, elsewhere. huggingface-hub
1.x and later ship the ``hf`` command only (``huggingface-cli`` is gone), so that is the one shown.
"""

from __future__ import annotations

import re

__all__ = ["looks_like_hub_name", "not_downloaded_message"]

_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def looks_like_hub_name(value: object) -> bool:
    """Whether ``value`` reads as ``owner/name`` on the Hugging Face hub (and not as a path)."""
    return isinstance(value, str) and _HUB_NAME.match(value) is not None


def not_downloaded_message(name: str) -> str:
    """Why the hub name ``name`` is refused, with the commands that make a local folder of it."""
    folder = name.rsplit("/", 1)[-1]
    return (
        f"'{name}' is not a local folder; models are not downloaded from the Hugging Face hub here. Save it once "
        f"where it can be downloaded (hf download {name} --local-dir {folder}, or save_pretrained) and give that "
        "folder"
    )
