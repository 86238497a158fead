"""One log de-duplication filter: each distinct message once, errors never hidden, removed after its block."""

from __future__ import annotations

import logging

import pytest

from olive.logs import OnceFilter, once_per_message


def test_each_distinct_message_shows_once_inside_the_block(caplog: pytest.LogCaptureFixture) -> None:
    noisy = logging.getLogger("olive.tests.noisy")
    with caplog.at_level(logging.INFO, logger="olive.tests.noisy"), once_per_message(noisy):
        for layer in range(3):
            noisy.warning("consider pre-processing")
            noisy.warning("fused layer %d", layer)
            noisy.info("consider pre-processing")  # another level: another message
    noisy.warning("consider pre-processing")  # the block is over: shown again
    assert [r.getMessage() for r in caplog.records] == [
        "consider pre-processing",
        "fused layer 0",
        "consider pre-processing",
        "fused layer 1",
        "fused layer 2",
        "consider pre-processing",
    ]
    assert not noisy.filters


def test_levels_outside_the_range_always_pass(caplog: pytest.LogCaptureFixture) -> None:
    noisy = logging.getLogger("olive.tests.levels")
    once = OnceFilter(min_level=logging.WARNING, max_level=logging.ERROR)
    with caplog.at_level(logging.DEBUG, logger="olive.tests.levels"), once_per_message(noisy, once=once):
        for _ in range(2):
            noisy.info("progress")
            noisy.warning("advice")
            noisy.error("broken")
    assert [r.getMessage() for r in caplog.records] == ["progress", "advice", "broken", "progress", "broken"]
