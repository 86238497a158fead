"""A pass base whose ``validate_config`` prunes a search point with a reason the footprint can show."""

from __future__ import annotations

import logging

from olive.hardware.accelerator import AcceleratorSpec
from olive.passes import BasePassConfig, Pass

logger = logging.getLogger(__name__)


class ExplainedPass(Pass):
    """Subclasses say why a config cannot run in ``explain_invalid``; ``validate_config`` logs it and prunes."""

    @classmethod
    def explain_invalid(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> str | None:
        """Why onnxruntime cannot run ``config``, or None when it can."""
        return None

    @classmethod
    def validate_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> bool:
        reason = cls.explain_invalid(config, accelerator_spec)
        if reason:
            logger.info("%s: skipping config: %s", cls.pass_name(), reason)
            return False
        return True
