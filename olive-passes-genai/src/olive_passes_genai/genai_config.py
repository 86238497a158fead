"""``genai_config.json``, the file that makes a folder an onnxruntime-genai model: its name and how it is read.

Apart from the model handler so that what only reads the file (the metrics, the builder) does not import the
handler, whose methods reach back into the passes' helpers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from olive.exceptions import ModelLoadError

__all__ = ["GENAI_CONFIG", "decoder_file_name", "read_genai_config"]

GENAI_CONFIG = "genai_config.json"


def read_genai_config(folder: str | Path) -> dict[str, Any]:
    """The folder's ``genai_config.json``; a :class:`ModelLoadError` naming the file when it is missing or bad."""
    path = Path(folder) / GENAI_CONFIG
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelLoadError(
            f"'{folder}' has no {GENAI_CONFIG}: it is not an onnxruntime-genai model folder; build one with the "
            "ModelBuilder pass"
        ) from None
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot read '{path}' ({exc}); rebuild the folder with ModelBuilder") from exc
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise ModelLoadError(f"'{path}' has no \"model\" object; rebuild the folder with ModelBuilder")
    return data


def decoder_file_name(config: Mapping[str, Any]) -> str:
    """The decoder's ONNX file name ``genai_config.json`` gives (``model.decoder.filename``)."""
    name = (config.get("model", {}).get("decoder") or {}).get("filename")
    return str(name) if name else "model.onnx"
