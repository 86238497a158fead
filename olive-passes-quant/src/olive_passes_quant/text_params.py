"""The params of the passes that fit on text (``OnnxGptqQuantization`` here, olive-passes-genai's
``OnnxGuardedInt4``): where the text comes from and how it is cut into windows.

- ``data_config``: the workflow's text data config (a ``TextDataContainer`` over a ``.txt`` or ``.jsonl`` file), as
  other passes name theirs. When the workflow's metrics judge on the same config, the engine gives the pass the
  fitting part of its samples and the metrics the judging part (:mod:`olive.data.split`).
- ``data_path``: a text file read whole (direct use, and workflows written before ``data_config``).
- ``window`` and ``max_windows``: the samples are joined by newlines, tokenized once with the model's own tokenizer
  and cut into windows of ``window`` tokens, at most ``max_windows``.

Reading the text and tokenizing it is the model type's (olive-passes-genai's ``GenAIModel``); these are the
params and their checks only, light enough for listing and validating configs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from olive.exceptions import PassParamError
from olive.passes import PassConfigParam
from olive.passes.pass_config import ParamCategory
from olive_passes_quant._params import DATA_CONFIG_TYPE

if TYPE_CHECKING:
    from olive.passes.pass_config import BasePassConfig

__all__ = ["DEFAULT_MAX_WINDOWS", "DEFAULT_WINDOW", "check_text_params", "text_params"]

DEFAULT_WINDOW = 128
DEFAULT_MAX_WINDOWS = 16


def text_params(use: str, max_windows_help: str = "Windows read from the text.") -> dict[str, PassConfigParam]:
    """``data_config``, ``data_path``, ``window`` and ``max_windows``; ``use`` says what the text is for."""
    return {
        "data_config": PassConfigParam(
            type_=DATA_CONFIG_TYPE,
            default_value=None,
            description=f"{use}: the name of one of the workflow's data_configs (a TextDataContainer over a .txt or "
            ".jsonl file), a DataConfig or its JSON form. Where the workflow's metrics judge on the same config, "
            "this pass fits on its fitting part only.",
        ),
        "data_path": PassConfigParam(
            type_=str | None,
            default_value=None,
            category=ParamCategory.PATH,
            description=f"{use}, instead of data_config: a .txt file (one sample per line) or .jsonl (field "
            "'text'), read whole.",
        ),
        "window": PassConfigParam(type_=int, default_value=DEFAULT_WINDOW, description="Tokens per window."),
        "max_windows": PassConfigParam(type_=int, default_value=DEFAULT_MAX_WINDOWS, description=max_windows_help),
    }


def check_text_params(config: BasePassConfig, min_windows: int = 1) -> None:
    """One source of text, and windows that hold a next token to predict."""
    given = [name for name in ("data_config", "data_path") if config[name] is not None]
    if not given:
        raise PassParamError(
            "no text to fit on; give data_config (the name of the workflow's text data config) or data_path (a .txt "
            "or .jsonl file)",
            params="data_config",
        )
    if len(given) == 2:
        raise PassParamError("data_config and data_path both given; give one source of text", params="data_path")
    if config.window < 2:
        raise PassParamError(f"param 'window' is {config.window}; give at least 2 tokens", params="window")
    if config.max_windows < min_windows:
        raise PassParamError(
            f"param 'max_windows' is {config.max_windows}; give at least {min_windows}", params="max_windows"
        )
