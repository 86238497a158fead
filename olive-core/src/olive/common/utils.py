"""``olive.common.utils``: the helpers of Microsoft Olive's module of that name that its passes import.

- :func:`hardlink_copy_file` / :func:`hardlink_copy_dir`: copy by hard link where the file system allows,
  else by copying, as Olive does (a pass that copies its input model's folder into its output folder without
  doubling the weights on disk). As in Olive, a file of the same name at the destination is replaced; call them
  on a pass's own output folder.
- :class:`StrEnumBase`: the ``str`` enum base of Olive's constants.
"""

from __future__ import annotations

import logging
import os
import shutil
from enum import StrEnum
from pathlib import Path
from typing import Any

__all__ = ["StrEnumBase", "hardlink_copy_dir", "hardlink_copy_file"]

logger = logging.getLogger(__name__)


class StrEnumBase(StrEnum):
    """A ``str`` enum whose members print as their values (Microsoft Olive's base of its constants)."""


def hardlink_copy_file(src: str | Path, dst: str | Path, *, follow_symlinks: bool = True) -> Path:
    """Copy file ``src`` to ``dst`` (a file path, or a folder to copy into under the same name) as a hard link,
    or by copying where linking fails (across file systems); returns the destination file.

    Raises ``ValueError`` when ``src`` does not exist or is not a file.
    """
    source = Path(src).resolve()
    target = Path(dst).resolve()
    if not source.exists():
        raise ValueError(f"'{source}' does not exist; give the file to copy")
    if not source.is_file():
        raise ValueError(f"'{source}' is not a file; hardlink_copy_dir copies a folder")
    if target.is_dir():
        target = target / source.name
    if target == source:
        return target
    if target.exists() or target.is_symlink():
        target.unlink()
    try:
        os.link(source, target, follow_symlinks=follow_symlinks)
    except OSError as exc:
        logger.debug("hard link %s -> %s failed (%s); copying", source, target, exc)
        shutil.copy2(source, target, follow_symlinks=follow_symlinks)
    return target


def hardlink_copy_dir(src_dir: str | Path, dst_dir: str | Path, **kwargs: Any) -> Path:
    """Copy folder ``src_dir`` into ``dst_dir`` recursively, each file by :func:`hardlink_copy_file`; returns
    ``dst_dir``. The keyword arguments are :func:`shutil.copytree`'s (``ignore``, ``symlinks``...), less
    ``copy_function`` and ``dirs_exist_ok``, which are fixed (a folder that exists is merged into)."""
    for fixed in ("copy_function", "dirs_exist_ok"):
        if kwargs.pop(fixed, None) is not None:
            logger.warning("hardlink_copy_dir: %s cannot be changed; ignored", fixed)
    source, target = Path(src_dir).resolve(), Path(dst_dir).resolve()
    if target == source or target.is_relative_to(source):
        raise ValueError(f"cannot copy '{source}' into itself ('{target}'); give a folder outside it")
    shutil.copytree(source, target, copy_function=hardlink_copy_file, dirs_exist_ok=True, **kwargs)
    return target
