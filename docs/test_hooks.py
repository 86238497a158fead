"""Links on the site lead where they lead in the repository: a docs page's link to a package README reaches that
README's page under ``repo/``, a README's link to a docs page reaches it, and a README's link to a source file
(which only the repository has) keeps its words."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hooks import on_page_markdown


def _render(src_uri: str, markdown: str) -> str:
    page = SimpleNamespace(file=SimpleNamespace(src_uri=src_uri))
    return on_page_markdown(markdown, page=page, config={}, files=None)


def test_a_docs_page_reaches_a_package_readme_on_the_site() -> None:
    text = _render("how-to/decoders.md", "[genai](../../olive-passes-genai/README.md#metrics)")
    assert text == "[genai](../repo/olive-passes-genai/README.md#metrics)"


def test_a_readme_reaches_a_docs_page_and_a_sibling_readme() -> None:
    text = _render("repo/benchmarks/README.md", "[d](../docs/distributed.md) and [m](minilm/README.md)")
    assert text == "[d](../../distributed.md) and [m](minilm/README.md)"


def test_a_readme_link_to_a_source_file_keeps_its_words() -> None:
    text = _render(
        "repo/olive-passes-genai/README.md", "see [the hook specs](../olive-core/src/olive/plugins/hookspecs.py)"
    )
    assert text == "see the hook specs (`olive-core/src/olive/plugins/hookspecs.py`)"


def test_external_links_and_a_docs_page_link_to_nowhere_are_left_as_written() -> None:
    # mkdocs --strict then names the broken one.
    markdown = "[o](https://onnxruntime.ai) [x](missing.md)"
    assert _render("index.md", markdown) == markdown
