"""``passes``: one entry per pass key, each a config (or a list of alternative configs) of one pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

# Keys of a pass entry that are not the pass's params (params sit beside them, or under ``config``).
PASS_RESERVED_KEYS = ("type", "config", "user_script", "script_dir", "disable_search")


@attrs.frozen
class PassSpec:
    """One configuration of a pass as the workflow gives it (before the pass class is loaded)."""

    key: str
    type: str
    params: dict[str, Any]
    json_path: str
    params_path: str
    user_script: Path | None = None
    script_dir: Path | None = None
    disable_search: bool = False
