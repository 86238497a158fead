"""Paths that users give and that the tool reads back from disk: where they point and where they may point.

The rules live here so that every reader and writer applies them the same way:

- a path a user writes (in a workflow, a data or metric config, a pass param of category ``PATH`` or
  ``DATA``) resolves by :func:`resolve_user_path`;
- the tool writes and deletes only inside folders it was pointed at (``cache_dir``, ``output_dir``) and, in
  them, only what it can prove it made: a folder the system or the user's account depends on (``/``,
  ``/usr``, the home folder...) is never used as a cache or output folder, whatever the workflow says;
- a name that should stay inside a folder (a file a pass writes, a path read from cache metadata) is
  checked to resolve inside it before anything is opened, written or deleted;
- a path no file system call can take (a NUL character, text that is not valid Unicode, a name longer than
  255 bytes, a symlink loop) is refused where it enters, by :func:`resolve_user_path`, with the reason
  (:class:`UnusablePath`), instead of failing later inside whatever first touches it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from olive.exceptions import WorkflowConfigError

# Folders at the top of a POSIX file system (FHS) that hold the system or every user's files.
_SYSTEM_TOP_LEVEL = frozenset(
    {
        "bin",
        "boot",
        "dev",
        "etc",
        "home",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "media",
        "mnt",
        "opt",
        "proc",
        "root",
        "run",
        "sbin",
        "srv",
        "sys",
        "tmp",
        "usr",
        "var",
        "Users",
        "System",
        "Library",
        "Applications",
        "Volumes",
        "private",
    }
)


# Limits of common file systems (ext4, APFS, NTFS, XFS): bytes per name, and per path on Linux.
NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4095


class UnusablePath(WorkflowConfigError):
    """A path no file system call can take; the message says why. Callers re-raise it naming where the path
    came from (:func:`olive.config_errors.user_path`); one that does not still stops the run as a config error."""


def unusable_reason(value: str | os.PathLike[str]) -> str | None:
    """Why ``value`` cannot be a path on any file system, judged from its text alone, or None.

    Refused: a NUL character, a lone surrogate (text that decoding a file name or a JSON ``\\udXXX`` escape left
    behind, which no file system can store), a name (between separators) longer than 255 bytes, a whole path
    longer than 4095 bytes.
    """
    text = os.fspath(value)
    if isinstance(text, bytes):
        return "it is bytes, not text"
    if "\0" in text:
        return "it holds a NUL character"
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        return "it holds a lone surrogate character, which is not valid text"
    if any(len(part) > NAME_MAX_BYTES for part in encoded.replace(b"\\", b"/").split(b"/")):
        return f"a name in it is longer than {NAME_MAX_BYTES} bytes"
    if len(encoded) > PATH_MAX_BYTES:
        return f"it is longer than {PATH_MAX_BYTES} bytes"
    return None


def _system_refusal(path: Path) -> str | None:
    # What the file system says about the path itself; a missing file is the caller's to judge.
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "it leads into a symlink loop"
        if exc.errno == errno.ENAMETOOLONG:
            return "it is longer than the file system allows"
    except ValueError as exc:  # pragma: no cover - unusable_reason catches what raises this
        return str(exc)
    return None


def resolve_user_path(value: str | os.PathLike[str], base_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where a path a user wrote points; the one rule for every path in a workflow.

    - ``~`` is expanded;
    - a relative path starts at ``base_dir``: the workflow file's folder (the current folder for a workflow
      given as a dict, and in direct use of a pass, where ``base_dir`` is None);
    - the result is absolute with ``.`` and ``..`` collapsed, and symlinks kept: a model file reached
      through a link still finds its external data beside the link, and a link named like a system folder
      is judged by its name.

    Data paths (params of category ``DATA``, ``data_path``/``data_dir`` of a data config) follow the same
    rule: a workflow has no separate data root. Whether the path must exist is the caller's to say
    (:func:`olive.config_errors.user_path` reports a missing one with its JSON path).

    :raises UnusablePath: no file system call can take the path (see :func:`unusable_reason`), or it leads
        into a symlink loop.
    """
    reason = unusable_reason(value)
    if reason is not None:
        raise UnusablePath(reason)
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # `~name` of a user this system does not know
        raise UnusablePath(f"{Path(value).parts[0]} is the home folder of no user here") from None
    if not path.is_absolute():
        path = Path(base_dir if base_dir is not None else Path.cwd()).expanduser() / path
    resolved = Path(os.path.normpath(path.absolute()))
    reason = unusable_reason(resolved) or _system_refusal(resolved)
    if reason is not None:
        raise UnusablePath(reason)
    return resolved


def system_folder_reason(path: str | Path) -> str | None:
    """Why ``path`` must not be a cache or output folder, or None when it may be.

    Refused: the file system's root, a top-level system folder (``/usr``, ``/tmp``, ``/home``...), the
    user's home folder and the folders directly above it.
    """
    resolved = resolve_user_path(path)
    if resolved == Path(resolved.anchor):
        return "it is the root of the file system"
    if resolved.parent == Path(resolved.anchor) and resolved.name in _SYSTEM_TOP_LEVEL:
        return "it is a system folder"
    home = resolve_user_path(Path.home())
    if resolved == home:
        return "it is your home folder"
    if resolved in home.parents:
        return "it holds your home folder"
    return None


class OutputFileName(str):
    """The type of a pass param that names a file the pass writes into its output folder
    (``PassConfigParam(type_=OutputFileName | None, ...)``): a plain file name, checked when the workflow is
    resolved, so a name with a folder part, ``..`` or an absolute path is a config error before any run."""


class UnsafeName(ValueError):
    """A name that would leave the folder it is meant for."""


def check_plain_name(name: str) -> str:
    """``name`` if it is a plain file name (no folder part, not ``.``/``..``, not absolute); raises
    :class:`UnsafeName` saying why otherwise."""
    if not isinstance(name, str) or not name:
        raise UnsafeName("it is empty")
    reason = unusable_reason(name)
    if reason is not None:
        raise UnsafeName(reason)
    if name in (".", ".."):
        raise UnsafeName(f"'{name}' is a folder reference")
    if Path(name).is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise UnsafeName("it is an absolute path")
    if "/" in name or "\\" in name:
        raise UnsafeName("it holds a folder separator")
    return name


def inside(folder: str | Path, relative: str | Path) -> Path:
    """``folder / relative`` when it stays inside ``folder`` once resolved (symlinks included); raises
    :class:`UnsafeName` otherwise."""
    relative = str(relative)
    reason = unusable_reason(relative)
    if reason is not None:
        raise UnsafeName(reason)
    if Path(relative).is_absolute() or relative.startswith(("/", "\\")):
        raise UnsafeName("it is an absolute path")
    try:
        base = Path(folder).resolve()
        target = (base / relative).resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        raise UnsafeName(f"'{relative}' cannot be resolved ({exc})") from None
    if target != base and base not in target.parents:
        raise UnsafeName(f"'{relative}' leads outside '{base}'")
    return base / relative
