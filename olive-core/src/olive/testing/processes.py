"""Running a command in a test until it ends, judging a hang by progress rather than by wall time.

A fixed timeout calls a slow run a hang on a busy machine (a CI runner at load 6 runs the same work three times
slower) and still waits the whole timeout for a real hang. :func:`run_watched` lets a command run as long as it
shows signs of life: output on stdout or stderr (a progress bar, a log line, a benchmark row), or a change
under the folders it writes (a cache entry per finished trial). Only a command silent in both ways for
``stalled_after`` seconds is stopped, with its whole process group, and reported with what it last printed::

    from olive.testing import run_watched

    done = run_watched(["olive", "run", "wf.json"], stalled_after=120, watch=[tmp_path / "cache"])
    assert done.returncode == 0, done.stderr
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["StalledProcessError", "run_watched"]

_POLL_S = 0.2
_SCAN_EVERY_S = 2.0
_TAIL_CHARS = 3000


class StalledProcessError(AssertionError):
    """A watched command showed no sign of progress for its ``stalled_after`` seconds and was stopped."""

    def __init__(self, args: Sequence[Any], ran_s: float, silent_s: float, stdout: str, stderr: str):
        self.cmd = list(args)
        self.ran_s = ran_s
        self.silent_s = silent_s
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(
            f"{' '.join(map(str, self.cmd))[:300]} made no progress for {silent_s:.0f} s (no output, no file written; "
            f"ran {ran_s:.0f} s in all) and was stopped\n"
            f"--- stdout (end)\n{stdout[-_TAIL_CHARS:]}\n--- stderr (end)\n{stderr[-_TAIL_CHARS:]}"
        )


def run_watched(
    args: Sequence[str | os.PathLike[str]],
    *,
    stalled_after: float = 300.0,
    watch: Iterable[str | os.PathLike[str]] = (),
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    text: bool = True,
    encoding: str = "utf-8",
    errors: str = "backslashreplace",
) -> subprocess.CompletedProcess:
    """Run ``args`` to its end, capturing stdout and stderr, unless it stalls (see the module docstring).

    :param stalled_after: seconds without output and without a change under ``watch`` that count as a hang.
    :param watch: folders (or files) whose changes count as progress; ones that do not exist yet are fine.
    :raises StalledProcessError: the command stalled; it and every process of its group were killed.
    """
    started = time.monotonic()
    proc = subprocess.Popen(
        [os.fspath(a) for a in args],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Its own group: a stalled command is stopped with the workers it started.
        start_new_session=True,
    )
    last = [started]
    chunks: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
    readers = [
        threading.Thread(target=_drain, args=(stream, chunks[name], last), daemon=True)
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr))
    ]
    for reader in readers:
        reader.start()
    if input is not None:
        _feed(proc, input.encode(encoding))
    paths = [Path(p) for p in watch]
    seen = _signature(paths)
    scanned = started
    try:
        while proc.poll() is None:
            time.sleep(_POLL_S)
            now = time.monotonic()
            if paths and now - scanned >= _SCAN_EVERY_S:
                scanned = now
                current = _signature(paths)
                if current != seen:
                    seen, last[0] = current, now
            if now - last[0] > stalled_after:
                _kill_group(proc)
                for reader in readers:
                    reader.join(timeout=5)
                out, err = (_decode(chunks[n], encoding, errors) for n in ("stdout", "stderr"))
                raise StalledProcessError(args, now - started, now - last[0], out, err)
    except BaseException:
        if proc.poll() is None:
            _kill_group(proc)
        raise
    for reader in readers:
        reader.join()
    out_bytes, err_bytes = b"".join(chunks["stdout"]), b"".join(chunks["stderr"])
    stdout: Any = out_bytes.decode(encoding, errors) if text else out_bytes
    stderr: Any = err_bytes.decode(encoding, errors) if text else err_bytes
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _drain(stream: Any, into: list[bytes], last: list[float]) -> None:
    while True:
        chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
        if not chunk:
            break
        into.append(chunk)
        last[0] = time.monotonic()
    stream.close()


def _feed(proc: subprocess.Popen, data: bytes) -> None:
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def _decode(chunks: list[bytes], encoding: str, errors: str) -> str:
    return b"".join(chunks).decode(encoding, errors)


def _signature(paths: list[Path]) -> tuple[int, int, int]:
    """How many entries the watched paths hold, their total size and latest change (ns): any write moves it."""
    count = size = latest = 0
    stack = list(paths)
    while stack:
        path = stack.pop()
        try:
            info = path.lstat()
        except OSError:
            continue
        count += 1
        size += info.st_size
        latest = max(latest, info.st_mtime_ns)
        if path.is_dir() and not path.is_symlink():
            try:
                stack.extend(path.iterdir())
            except OSError:
                continue
    return count, size, latest


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()
