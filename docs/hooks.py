"""mkdocs hooks (``hooks:`` in mkdocs.yml): generate the reference pages, and serve the repository's own READMEs.

The package READMEs document their packages; the site links to them rather than copying them. They live outside
the docs folder, so they are added to the site under ``repo/`` at their repository paths, and every relative link
is rewritten to where its target lands on the site: a link written as ``../../olive-passes-genai/README.md`` in a
docs page (which works when the page is read in the repository) reaches ``repo/olive-passes-genai/README.md``, and
a README's link to ``../docs/distributed.md`` reaches that docs page.
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
MIRROR = "repo"
#: Files outside the docs folder that the site serves, as repository paths (globs).
MIRRORED = (
    "README.md",
    "benchmarks/README.md",
    "benchmarks/*.png",
    "benchmarks/minilm/*.md",
    "olive-passes-*/README.md",
    "plugin-template/README.md",
)
_LINK = re.compile(r"(?P<label>!?\[[^\]]*\])\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?\)")


def _mirrored_paths() -> list[str]:
    found = {p.relative_to(REPO).as_posix() for pattern in MIRRORED for p in REPO.glob(pattern) if p.is_file()}
    return sorted(found)


def on_pre_build(config: Any) -> None:
    sys.path.insert(0, str(DOCS))
    try:
        from gen_reference import write_reference
    finally:
        sys.path.remove(str(DOCS))
    write_reference(Path(config["docs_dir"]))


def on_files(files: Files, config: Any) -> Files:
    for path in _mirrored_paths():
        files.append(File.generated(config, f"{MIRROR}/{path}", abs_src_path=str(REPO / path)))
    return files


def _repo_path_of(src_uri: str) -> str:
    """The repository path of the page at ``src_uri`` on the site."""
    if src_uri.startswith(MIRROR + "/"):
        return src_uri[len(MIRROR) + 1 :]
    return f"{DOCS.name}/{src_uri}"


def _site_path_of(repo_path: str, mirrored: set[str]) -> str | None:
    if repo_path.startswith(DOCS.name + "/"):
        return repo_path[len(DOCS.name) + 1 :]
    if repo_path in mirrored:
        return f"{MIRROR}/{repo_path}"
    return None


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    mirrored = set(_mirrored_paths())
    here = _repo_path_of(page.file.src_uri)
    site_here = page.file.src_uri
    mirrored_page = site_here.startswith(MIRROR + "/")

    def rewrite(match: re.Match) -> str:
        label, target, anchor = match.group("label"), match.group("target"), match.group("anchor") or ""
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return match.group(0)
        repo_target = posixpath.normpath(posixpath.join(posixpath.dirname(here), target))
        site_target = _site_path_of(repo_target, mirrored)
        if site_target is None:
            if mirrored_page and (REPO / repo_target).exists() and not label.startswith("!"):
                # A package README's link to a source file works in the repository, not on the site: keep the words.
                return f"{label[1:-1]} (`{repo_target}`)"
            return match.group(0)  # left as written: mkdocs --strict names it if it leads nowhere
        relative = posixpath.relpath(site_target, posixpath.dirname(site_here) or ".")
        return f"{label}({relative}{anchor})"

    return _LINK.sub(rewrite, markdown)
