"""Run every ```bash block of the README and the docs under bash, as a reader would paste it.

Each markdown file gets its own scratch folder (holding a copy of the repository's ``examples/``), and its blocks run
there in order, each in a fresh ``bash -e -o pipefail`` with this environment's tools first on PATH. The per-user
folders (cache, data) are the run's own, shared by its scratch folders.

A block fails the run when it exits nonzero, and when it leaves a file named like the tail of a shell redirection
(``=0.97``, ``=1.02x``): an unquoted ``--keep cosine_min>=0.97`` exits 0 and writes the command's output into a
file named ``=0.97``. Every block, run or not, is also checked for an unquoted ``name>=value`` or ``name<=value``.

Every code block names its language (```bash, ```text...): an unlabelled one would hide a command from the check.

Markers, an HTML comment on the line(s) just before a block (invisible on the page):

- ``<!-- not-run: REASON -->`` skips the block (the reason is required: say what runs it instead);
- ``<!-- setup: COMMAND -->`` runs COMMAND first, in the same folder (to make the ``model.onnx`` or ``samples.npz`` a
  block names, with ``olive.testing``); several may stand before one block.

``python docs/run_commands.py README.md docs`` runs them all; ``--list`` prints what would run and what is skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Copied into every scratch folder: the workflows the docs run by their repository paths.
COPIED = ("examples",)
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
MARKER = re.compile(r"^\s*<!--\s*(?P<kind>[a-z-]+)\s*:(?P<text>.*?)-->\s*$")
MARKER_KINDS = ("not-run", "setup")
SHELLS = ("bash", "sh", "shell")
#: A file a redirection leaves: `--keep cosine_min>=0.97` writes `=0.97`; `perplexity<=1.02x` reads `=1.02x`.
STRAY = re.compile(r"^(=|[<>]|&\d)")
DEFAULT_TIMEOUT = 300


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    code: str
    not_run: str | None = None
    setup: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        try:
            name = self.path.resolve().relative_to(REPO)
        except ValueError:
            name = self.path
        return f"{name}:{self.line}"


class DocsError(Exception):
    """A block that failed, or a marker that is wrong; the message names the file and line."""


def extract_blocks(path: Path) -> list[Block]:
    """The shell blocks of the markdown file ``path``, with the markers just before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    pending: list[tuple[str, str, int]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = MARKER.match(line)
        fence = FENCE.match(line)
        if marker and marker.group("kind") in MARKER_KINDS:
            pending.append((marker.group("kind"), marker.group("text").strip(), i + 1))
            i += 1
            continue
        if not fence:
            if line.strip() and pending:
                raise DocsError(f"{path}:{pending[0][2]}: a {pending[0][0]} marker must stand just before a block")
            i += 1
            continue
        # A fenced block: find its end (same fence characters, at least as long).
        indent, ticks, info = fence.group("indent"), fence.group("fence"), fence.group("info").strip()
        end = i + 1
        while end < len(lines) and not re.match(rf"^[ \t]*{re.escape(ticks[0])}{{{len(ticks)},}}\s*$", lines[end]):
            end += 1
        body = [text[len(indent) :] if text.startswith(indent) else text.lstrip() for text in lines[i + 1 : end]]
        language = info.split()[0].lower() if info else ""
        if not language:
            # An unlabelled block could hold a command the check would never run: each block says what it holds.
            raise DocsError(f"{path}:{i + 1}: a code block without a language; write ```bash, ```text, ```json...")
        if language in SHELLS:
            block = Block(path, i + 1, "\n".join(body) + "\n")
            for kind, text, at in pending:
                if kind == "not-run":
                    if not text:
                        raise DocsError(
                            f"{path}:{at}: a not-run marker needs a reason: <!-- not-run: why; what runs it -->"
                        )
                    block.not_run = text
                elif not text:
                    raise DocsError(f"{path}:{at}: a setup marker needs a command: <!-- setup: python -c '...' -->")
                else:
                    block.setup.append(text)
            blocks.append(block)
        elif pending:
            raise DocsError(f"{path}:{pending[0][2]}: a {pending[0][0]} marker stands before a block that is not bash")
        pending = []
        i = end + 1
    if pending:
        raise DocsError(f"{path}:{pending[0][2]}: a {pending[0][0]} marker is followed by no block")
    return blocks


def unquoted_comparisons(code: str) -> list[str]:
    """Words such as ``cosine_min>=0.97`` outside quotes, comments and heredoc bodies: bash reads them as a
    redirection, not as one argument."""
    found: list[str] = []
    heredoc_end: str | None = None
    for raw in code.splitlines():
        if heredoc_end is not None:
            if raw.strip() == heredoc_end:
                heredoc_end = None
            continue
        outside = []
        quote = None
        escaped = False
        for position, char in enumerate(raw):
            if escaped:
                escaped = False
                outside.append(" ")
                continue
            if char == "\\" and quote != "'":
                escaped = True
                outside.append(" ")
                continue
            if quote:
                if char == quote:
                    quote = None
                outside.append(" ")
                continue
            if char in "'\"":
                quote = char
                outside.append(" ")
                continue
            if char == "#" and (position == 0 or raw[position - 1] in " \t;|&("):
                break
            outside.append(char)
        text = "".join(outside)
        found += re.findall(r"[A-Za-z_][\w.-]*[<>]=\S*", text)
        heredoc = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", raw)
        if heredoc:
            heredoc_end = heredoc.group(1)
    return found


def _environment(user: Path) -> dict[str, str]:
    env = dict(os.environ)
    # This interpreter's environment first: `olive`, `python` and `pip` are the ones the docs env installed.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for name, sub in (("XDG_CACHE_HOME", "cache"), ("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config")):
        env[name] = str(user / sub)
    env["OLIVE_CACHE_DIR"] = str(user / "cache" / "olive")
    env["COLUMNS"] = "120"
    env.pop("OLIVE_LOAD_PLUGINS", None)
    env.pop("OLIVE_DISABLE_PLUGINS", None)
    return env


def _files(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*")}


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_block(block: Block, scratch: Path, timeout: float = DEFAULT_TIMEOUT, user: Path | None = None) -> float:
    """Run ``block`` (its setup first) in ``scratch``; return its seconds, or raise :class:`DocsError`.

    ``user`` holds the per-user folders (the cache, the data folder); default: ``scratch/.user``. One run shares
    them across its scratch folders, as one reader's machine would: a workflow two pages run is served from the
    cache the second time.
    """
    env = _environment(user if user is not None else scratch / ".user")
    before = _files(scratch)
    started = time.perf_counter()
    for step, code in [*(("setup", s) for s in block.setup), ("block", block.code)]:
        try:
            result = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", code],
                cwd=scratch,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            message = f"{block.where}: the {step} ran past {timeout:.0f} s; mark it not-run with the reason"
            raise DocsError(message) from exc
        if result.returncode != 0:
            raise DocsError(
                f"{block.where}: the {step} exited {result.returncode}:\n{code.rstrip()}\n--- output ---\n"
                + _tail(result.stdout + result.stderr)
            )
    stray = sorted(str(p) for p in _files(scratch) - before if STRAY.match(p.name))
    if stray:
        raise DocsError(
            f"{block.where}: the block left {', '.join(stray)}: an unquoted > or < in it is a shell redirection "
            "(quote the argument: --keep 'cosine_min>=0.97')"
        )
    return time.perf_counter() - started


def markdown_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found += sorted(path.rglob("*.md")) if path.is_dir() else [path]
    return found


def _scratch_for(root: Path, markdown: Path, index: int) -> Path:
    folder = root / f"{index:02d}-{markdown.stem}"
    folder.mkdir(parents=True)
    for name in COPIED:
        shutil.copytree(REPO / name, folder / name, ignore=shutil.ignore_patterns("output"))
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="markdown files, or folders to search for *.md")
    parser.add_argument("--list", action="store_true", help="list the blocks and what is skipped; run nothing")
    parser.add_argument("--scratch", type=Path, help="where the scratch folders go (default: a new temp folder)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds a block may run")
    args = parser.parse_args(argv)

    problems: list[str] = []
    plan: list[tuple[Path, list[Block]]] = []
    for markdown in markdown_files(args.paths):
        try:
            blocks = extract_blocks(markdown)
        except DocsError as exc:
            problems.append(str(exc))
            continue
        for block in blocks:
            for word in unquoted_comparisons(block.code):
                problems.append(f"{block.where}: '{word}' is unquoted: bash reads it as a redirection; quote it")
        if blocks:
            plan.append((markdown, blocks))
    ran = skipped = 0
    if args.list:
        for _, blocks in plan:
            for block in blocks:
                print(f"{block.where}: " + (f"not run ({block.not_run})" if block.not_run else "run"))
    elif not problems:
        root = args.scratch or Path(tempfile.mkdtemp(prefix="olive-docs-"))
        root.mkdir(parents=True, exist_ok=True)
        for index, (markdown, blocks) in enumerate(plan):
            scratch = _scratch_for(root, markdown, index)
            for block in blocks:
                if block.not_run:
                    skipped += 1
                    print(f"skip {block.where}: {block.not_run}", flush=True)
                    continue
                try:
                    seconds = run_block(block, scratch, args.timeout, user=root / ".user")
                except DocsError as exc:
                    problems.append(str(exc))
                    print(f"FAIL {block.where}", flush=True)
                    continue
                ran += 1
                print(f"ok   {block.where} ({seconds:.1f} s)", flush=True)
        if args.scratch is None and not problems:
            shutil.rmtree(root, ignore_errors=True)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not args.list:
        print(f"{ran} block(s) ran, {skipped} marked not-run, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
