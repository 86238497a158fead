"""The int8 params of Olive 0.8 workflows, turned into today's names so those files run unchanged.

Olive 0.8 named the weight type ``weight_type`` with onnxruntime's ``QInt8``/``QUInt8`` (today ``precision``
with ``int8``/``uint8``), wrote ``activation_type`` the same way, and exposed some onnxruntime
``extra_options`` keys as params of their own (``WeightSymmetric``, ``MatMulConstBOnly``...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from olive.exceptions import PassParamError

_QUANT_TYPES = {"QInt8": "int8", "QUInt8": "uint8"}
_RENAMED = {
    "weight_type": "precision",
    "ActivationSymmetric": "activation_symmetric",
    "WeightSymmetric": "weight_symmetric",
}
# Params that were onnxruntime extra_options keys under another coat; they go back into extra_options.
_EXTRA_OPTIONS = ("EnableSubgraph", "ForceQuantizeNoInputCheck", "MatMulConstBOnly", "extra.Sigmoid.nnapi")
# QNN-only params: accepted when they ask for nothing.
_QNN = ("prepare_qnn_config", "qnn_extra_options")


def _quant_type(name: str, value: Any) -> Any:
    """``QInt8``/``QUInt8`` (alone or in a list of values to search) as ``int8``/``uint8``."""
    if isinstance(value, list):
        return [_quant_type(name, item) for item in value]
    if isinstance(value, Mapping) and isinstance(value.get("support"), list):
        # A search parameter in its JSON form.
        return {**value, "support": _quant_type(name, value["support"])}
    if isinstance(value, str) and value.startswith("Q"):
        if value not in _QUANT_TYPES:
            raise PassParamError(
                f"param '{name}' is '{value}'; only 8-bit types are supported: 'QInt8' or 'QUInt8' (today written "
                "'int8' or 'uint8')",
                params=name,
            )
        return _QUANT_TYPES[value]
    return value


def translate_legacy_params(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with Olive 0.8 param names and values replaced by today's (a new dict; ``config`` is kept).

    A pass's ``_upgrade_config``; raises :class:`~olive.exceptions.PassParamError` for what cannot be translated.
    """
    user = dict(config)
    for name in ("weight_type", "precision", "activation_type"):
        if name in user:
            user[name] = _quant_type(name, user[name])
    for old, new in _RENAMED.items():
        if old not in user:
            continue
        if new in user:
            raise PassParamError(
                f"params '{old}' (the Olive 0.8 name) and '{new}' are both set; keep only '{new}'", params=(old, new)
            )
        user[new] = user.pop(old)
    moved = {key: user.pop(key) for key in _EXTRA_OPTIONS if key in user}
    if moved:
        extra = user.get("extra_options")
        if extra is not None and not isinstance(extra, Mapping):
            raise PassParamError(
                f"param 'extra_options' must be an object, got {type(extra).__name__}", params="extra_options"
            )
        # As in Olive, the dedicated params win over the same keys in extra_options.
        user["extra_options"] = {**(extra or {}), **moved}
    for name in _QNN:
        # Popped either way: a false value asks for nothing.
        if name in user and user.pop(name):
            raise PassParamError(
                f"param '{name}' (QNN execution provider) is not supported; remove it, or use prepare_qdq_config=true "
                "for a full integer QDQ model",
                params=name,
            )
    return user
