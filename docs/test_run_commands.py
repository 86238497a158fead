"""docs/run_commands.py catches what a reader would hit: a block that fails, a quoting mistake bash takes for a
redirection (which exits 0 and leaves a file named ``=0.97``), and a marker without its reason. Blocks run under
real bash."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_commands import DocsError, extract_blocks, main, run_block, unquoted_comparisons


def _page(tmp_path: Path, text: str, name: str = "page.md") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _scratch(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


def test_an_unquoted_keep_leaves_a_file_and_fails_the_block(tmp_path: Path) -> None:
    # The command itself succeeds: only the file bash created tells the mistake.
    [block] = extract_blocks(_page(tmp_path, "```bash\necho --keep cosine_min>=0.97\n```\n"))
    scratch = _scratch(tmp_path)
    with pytest.raises(DocsError, match=r"=0\.97.*quote the argument"):
        run_block(block, scratch)
    assert (scratch / "=0.97").read_text() == "--keep cosine_min\n"


def test_the_quoted_keep_runs_clean(tmp_path: Path) -> None:
    [block] = extract_blocks(_page(tmp_path, "```bash\necho --keep 'cosine_min>=0.97' > said.txt\n```\n"))
    scratch = _scratch(tmp_path)
    run_block(block, scratch)
    assert (scratch / "said.txt").read_text() == "--keep cosine_min>=0.97\n"
    assert unquoted_comparisons(block.code) == []


def test_a_reading_redirection_fails_on_its_exit_code(tmp_path: Path) -> None:
    [block] = extract_blocks(_page(tmp_path, "```bash\necho --keep perplexity<=1.02x\n```\n"))
    with pytest.raises(DocsError, match="exited 1"):
        run_block(block, _scratch(tmp_path))


def test_a_failing_line_fails_the_block_even_when_later_lines_pass(tmp_path: Path) -> None:
    [block] = extract_blocks(_page(tmp_path, "```bash\nfalse\necho fine\n```\n"))
    with pytest.raises(DocsError, match=r"page\.md:1: the block exited 1"):
        run_block(block, _scratch(tmp_path))


def test_unquoted_comparisons_are_found_outside_quotes_comments_and_heredocs() -> None:
    code = (
        'olive optimize m --keep top1>=0.99 --keep "cosine_mean>=0.99"  # keep cosine_min>=0.97\n'
        "cat > w.json <<'EOF'\n{\"note\": x>=1}\nEOF\n"
        "pip install tox>=4.11 'ruff>=0.6'\n"
    )
    assert unquoted_comparisons(code) == ["top1>=0.99", "tox>=4.11"]


def test_setup_markers_run_first_and_not_run_markers_skip(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "<!-- setup: printf 1 > a.txt -->\n<!-- setup: printf 2 >> a.txt -->\n"
        '```bash\ntest "$(cat a.txt)" = 12\n```\n\n'
        "<!-- not-run: takes minutes; tox -e e2e runs it -->\n```bash\nfalse\n```\n",
    )
    first, second = extract_blocks(page)
    assert first.setup == ["printf 1 > a.txt", "printf 2 >> a.txt"] and first.not_run is None
    assert second.not_run == "takes minutes; tox -e e2e runs it"
    assert main([str(page), "--scratch", str(tmp_path / "runs")]) == 0


def test_a_not_run_marker_needs_a_reason(tmp_path: Path) -> None:
    with pytest.raises(DocsError, match="needs a reason"):
        extract_blocks(_page(tmp_path, "<!-- not-run: -->\n```bash\ntrue\n```\n"))


def test_a_marker_must_stand_just_before_its_block(tmp_path: Path) -> None:
    with pytest.raises(DocsError, match="just before a block"):
        extract_blocks(_page(tmp_path, "<!-- not-run: slow -->\nSome text.\n\n```bash\ntrue\n```\n"))


def test_a_block_without_a_language_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DocsError, match=r"page\.md:3: a code block without a language"):
        extract_blocks(_page(tmp_path, "Install:\n\n```\npip install onnxruntime-ep-openvino\n```\n"))


def test_blocks_in_lists_and_other_languages(tmp_path: Path) -> None:
    page = _page(tmp_path, "- a step:\n\n  ```bash\n  echo indented\n  ```\n\n```text\nolive --help\n```\n")
    [block] = extract_blocks(page)
    assert block.code == "echo indented\n" and block.line == 3


def test_main_fails_on_a_stray_file_and_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    page = _page(tmp_path, "Intro.\n\n```bash\necho ok\n```\n\n```bash\necho x > '=0.97'\n```\n")
    assert main([str(page), "--scratch", str(tmp_path / "runs")]) == 1
    captured = capsys.readouterr()
    assert "page.md:7: the block left =0.97" in captured.err
    assert "1 block(s) ran, 0 marked not-run, 1 problem(s)" in captured.out


def test_main_refuses_an_unquoted_comparison_even_in_a_block_not_run(tmp_path: Path, capsys) -> None:
    page = _page(tmp_path, "<!-- not-run: needs torch -->\n```bash\nolive optimize m --keep top1>=0.98\n```\n")
    assert main([str(page)]) == 1
    assert "'top1>=0.98' is unquoted" in capsys.readouterr().err


def test_blocks_run_with_this_environment_first_on_path_and_private_user_folders(tmp_path: Path) -> None:
    code = f'test "$(command -v python)" -ef "{sys.executable}"\ntest "$OLIVE_CACHE_DIR" = "$PWD/.user/cache/olive"\n'
    [block] = extract_blocks(_page(tmp_path, f"```bash\n{code}```\n"))
    run_block(block, _scratch(tmp_path))


def test_the_unquoted_keep_of_a_real_olive_command_fails(tmp_path: Path) -> None:
    # Bash hands olive `--keep cosine_min` and sends its output to a file named `=0.97`: the block fails, whether
    # on olive's exit code or on the stray file, and the file is there to say why.
    setup = "python -c \"from olive.testing.models import mlp_model, save_model; save_model(mlp_model(), '.')\""
    page = _page(
        tmp_path,
        f"<!-- setup: {setup} -->\n```bash\nolive optimize model.onnx --keep cosine_min>=0.97 --dry-run\n```\n",
    )
    [block] = extract_blocks(page)
    scratch = _scratch(tmp_path)
    with pytest.raises(DocsError, match=r"exited|left =0\.97"):
        run_block(block, scratch)
    assert (scratch / "=0.97").is_file()
    assert unquoted_comparisons(block.code) == ["cosine_min>=0.97"]
