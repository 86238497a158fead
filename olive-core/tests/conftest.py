"""Fixtures the olive-core tests share; the passes and helpers behind them are in engine_support.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_support import make_registry

from olive.plugins.registry import PassRegistry, use_registry


@pytest.fixture
def engine_registry() -> Iterator[PassRegistry]:
    """The test passes of engine_support.py, offered by the process-wide registry for the test."""
    with use_registry(make_registry()) as registry:
        yield registry


@pytest.fixture
def run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file every real run of a test pass appends to (cache hits do not): read it with ``ran_passes``."""
    log = tmp_path / "runs.log"
    monkeypatch.setenv("OLIVE_TEST_RUN_LOG", str(log))
    return log
