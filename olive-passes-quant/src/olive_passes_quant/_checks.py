"""Checks the quantization passes' ``_check_config`` share (typos, names that do not exist, missing data).

They raise :class:`~olive.exceptions.PassParamError` naming the param, the bad value and the fix; the Pass
contract names the pass, so a workflow fails before anything is written, or a search prunes the point.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

from olive.exceptions import PassParamError, closest_match_hint
from olive.search.search_parameter import SpecialParamValue

logger = logging.getLogger(__name__)


def applied(config: Any, name: str) -> Any:
    """The value of param ``name`` in ``config`` (a pass config or a mapping), or None where it does not apply
    (missing, or IGNORED for the other quant_mode)."""
    value = config.get(name) if isinstance(config, Mapping) else getattr(config, name, None)
    return None if isinstance(value, str) and value == SpecialParamValue.IGNORED else value


def quantizable_op_types(mode: str | None = None, quant_format: str | None = None) -> set[str]:
    """Op types onnxruntime's quantizer handles: for one mode/format, or all of them (imports onnxruntime)."""
    from onnxruntime.quantization import registry

    if mode == "dynamic":
        return set(registry.IntegerOpsRegistry)
    if mode == "static" and quant_format == "QOperator":
        return set(registry.QLinearOpsRegistry)
    if mode == "static" and quant_format == "QDQ":
        return set(registry.QDQRegistry)
    return set(registry.IntegerOpsRegistry) | set(registry.QLinearOpsRegistry) | set(registry.QDQRegistry)


def _is_known_op_type(op_type: str) -> bool:
    import onnx

    return onnx.defs.has(op_type) or op_type in quantizable_op_types()


def check_op_types(config: Any) -> None:
    """Reject op types in ``op_types_to_quantize`` / ``op_types_to_exclude`` that do not exist."""
    problems = []
    to_quantize = applied(config, "op_types_to_quantize")
    if isinstance(to_quantize, list) and to_quantize:
        valid = quantizable_op_types()
        for op_type in to_quantize:
            if op_type not in valid:
                problems.append(
                    f"op_types_to_quantize has '{op_type}', which onnxruntime's quantizer does not handle"
                    f"{closest_match_hint(op_type, valid)}; quantizable op types: {', '.join(sorted(valid))}"
                )
    to_exclude = applied(config, "op_types_to_exclude")
    if isinstance(to_exclude, list) and to_exclude:
        for op_type in to_exclude:
            if not _is_known_op_type(op_type):
                problems.append(
                    f"op_types_to_exclude has '{op_type}', which is not an ONNX op type"
                    f"{closest_match_hint(op_type, quantizable_op_types())}; fix the spelling (op types are "
                    "case-sensitive, e.g. 'MatMul')"
                )
    if problems:
        raise PassParamError("; ".join(problems), params=("op_types_to_quantize", "op_types_to_exclude"))


def check_data_config_value(value: Any) -> None:
    """A data_config must be a DataConfig, a dict (its JSON form) or a string (an .npz path or a name)."""
    if value is None or isinstance(value, dict | str | PathLike) or hasattr(value, "create_dataloader"):
        return
    raise PassParamError(
        "param 'data_config' expects a DataConfig, a dict in DataConfig JSON form or a path to an .npz file, got "
        f"{type(value).__name__}",
        params="data_config",
    )


def warn_unknown_nodes(node_names: Iterable[str], param: str, graph_nodes: Sequence[str]) -> None:
    """Log (once per param) node names that are not in the graph: a typo, or a node an earlier pass renamed."""
    names = set(graph_nodes)
    missing = [n for n in node_names if n not in names]
    if missing:
        hints = "".join(closest_match_hint(n, names) for n in missing[:1])
        logger.warning(
            "%s names %d node(s) that are not in the model: %s%s", param, len(missing), ", ".join(missing[:5]), hints
        )
