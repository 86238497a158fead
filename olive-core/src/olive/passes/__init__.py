"""The Pass contract. Importing this package imports neither onnxruntime nor numpy."""

from olive.passes.olive_pass import Pass
from olive.passes.pass_config import BasePassConfig, ParamCategory, PassConfigParam, PassParamDefault

__all__ = ["BasePassConfig", "ParamCategory", "Pass", "PassConfigParam", "PassParamDefault"]
