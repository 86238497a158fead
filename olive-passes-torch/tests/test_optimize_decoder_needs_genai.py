"""``olive optimize`` on a decoder folder where olive-passes-genai is not installed (as in this environment): one
exit-2 line naming the distribution and the line that installs it, before anything is built or written. A decoder
is no longer exported without its KV cache, which no one could serve."""

from __future__ import annotations

import importlib.util

import pytest
from click.testing import CliRunner

from olive.cli.main import cli


@pytest.mark.skipif(
    importlib.util.find_spec("olive_passes_genai") is not None, reason="olive-passes-genai is installed here"
)
def test_a_decoder_without_olive_passes_genai_is_one_exit_2_line_naming_it(tmp_path) -> None:
    from olive.testing.decoders import save_decoder

    folder = save_decoder(tmp_path / "qwen2", "qwen2")
    text = tmp_path / "text.txt"
    text.write_text("".join(f"line {i} of some text to fit and judge on\n" for i in range(40)))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["optimize", str(folder), "--data", str(text), "-o", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: MODEL: 'qwen2' is a decoder"), result.stderr
    assert "ModelBuilder is offered by olive-passes-genai; install it with: pip install" in lines[0]
    assert not out.exists()
