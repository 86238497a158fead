"""The choices ``olive optimize`` takes, checked: :class:`OptimizeOptions`.

Each option has one spelling of ours and accepts Microsoft Olive 0.13's spelling as an alias (the CLI maps
them); values Olive accepts that no pass here can honour (``--algorithm gptq``, ``--precision nf4``...) are
errors naming what is supported. Every error is a :class:`~olive.exceptions.WorkflowConfigError` owned by
the option, so the command exits with code 2 and one line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from olive.exceptions import WorkflowConfigError, closest_match_hint
from olive.hardware.constants import DEVICES
from olive.optimize.keep import Keep

__all__ = [
    "ACT_PRECISIONS",
    "ALGORITHMS",
    "IMPLEMENTATIONS",
    "PRECISIONS",
    "OptimizeOptions",
    "check_choice",
    "parse_adapters",
    "parse_batch_sizes",
    "parse_dims",
    "parse_latency_budget",
]

#: precision -> what it means here
PRECISIONS: dict[str, str] = {
    "auto": "what runs fastest on the target while keeping the outputs (int8 on a CPU, fp16 on a GPU)",
    "int8": "8-bit integer weights (dynamic quantization; with data, the accuracy guard keeps sensitive nodes float)",
    "uint8": "int8 with unsigned 8-bit weights (onnxruntime's QUInt8)",
    "int4": "4-bit block-wise weights (MatMulNBits, round to nearest)",
    "fp16": "float16 weights and compute, float32 inputs and outputs",
    "fp32": "no quantization: graph rewrites only",
}
#: Microsoft Olive's precision values that no pass here produces, and what to use instead
_UNSUPPORTED_PRECISIONS = {
    "bf16": "fp16, or run fp32 on OpenVINO in bf16 (--provider OpenVINOExecutionProvider)",
    "int16": "int8",
    "int32": "int8",
    "uint4": "int4",
    "uint16": "uint8",
    "uint32": "uint8",
    "nf4": "int4",
    "fp4": "int4",
    "fp8": "int8",
}
#: activation precision -> static quantization's activation type
ACT_PRECISIONS = ("int8", "uint8")
#: Microsoft Olive's --algorithm values; only round-to-nearest is what our quantizers do
ALGORITHMS = ("rtn",)
_OLIVE_ALGORITHMS = ("awq", "gptq", "hqq", "spinquant", "quarot", "lpbq", "seqmse", "adaround", "sparsegpt")
#: Microsoft Olive's --implementation values; ours are onnxruntime's quantizers
IMPLEMENTATIONS = ("ort",)
_OLIVE_IMPLEMENTATIONS = ("quarot", "spinquant", "awq", "autogptq", "bnb", "nvmo", "inc", "olive")
FASTEST = "fastest"
DEFAULT_MAX_SAMPLES = 64
#: tokens per text sample (what the latency is timed at): a typical sentence-embedding service's limit
DEFAULT_MAX_LENGTH = 128


def check_choice(value: str, allowed: Mapping[str, str] | tuple[str, ...], option: str, extra: str = "") -> str:
    if value in allowed:
        return value
    raise WorkflowConfigError(
        f"'{value}' is not supported{closest_match_hint(value, allowed)}; use one of {', '.join(allowed)}{extra}",
        owner=option,
    )


def check_precision(value: str, option: str = "--precision") -> str:
    value = value.strip().lower()
    if value in _UNSUPPORTED_PRECISIONS:
        raise WorkflowConfigError(
            f"'{value}' is a Microsoft Olive precision that no pass here produces; use "
            f"{_UNSUPPORTED_PRECISIONS[value]} (supported: {', '.join(PRECISIONS)})",
            owner=option,
        )
    return check_choice(value, PRECISIONS, option)


def check_algorithm(value: str) -> str:
    value = value.strip().lower()
    if value in _OLIVE_ALGORITHMS:
        raise WorkflowConfigError(
            f"'{value}' is not supported: it works on the PyTorch weights and no pass here provides it; olive "
            "optimize supports 'rtn' (round to nearest, as the int8 and int4 passes quantize; the accuracy guard "
            "keeps the nodes it hurts most in float)",
            owner="--algorithm",
        )
    return check_choice(value, ALGORITHMS, "--algorithm", " (round to nearest)")


def check_implementation(value: str) -> str:
    value = value.strip().lower()
    if value in _OLIVE_IMPLEMENTATIONS:
        raise WorkflowConfigError(
            f"'{value}' is a Microsoft Olive implementation that no pass here provides; the passes here use "
            "onnxruntime's quantizers ('ort')",
            owner="--implementation",
        )
    return check_choice(value, IMPLEMENTATIONS, "--implementation")


def parse_latency_budget(text: str | None) -> float | None:
    """``"fastest"`` (or nothing) -> None; ``"0.6"`` (or ``"0.6x"``) -> 0.6, the latency ratio to the input model."""
    if text is None or text.strip().lower() == FASTEST:
        return None
    raw = text.strip().lower().removesuffix("x")
    try:
        value = float(raw)
    except ValueError:
        raise WorkflowConfigError(
            f"'{text}' is neither a ratio (e.g. 0.6: at most 0.6x the input model's median latency) nor '{FASTEST}'",
            owner="--latency-budget",
        ) from None
    if not 0 < value < 1e6:
        raise WorkflowConfigError(
            f"'{text}' must be a positive ratio to the input model's median latency (e.g. 0.6)",
            owner="--latency-budget",
        )
    return value


def parse_batch_sizes(text: str | None) -> tuple[int, ...]:
    """``"32"`` -> (32,); ``"1,8,32"`` -> (1, 8, 32); ``"auto"`` (or nothing) -> () (the model's default,
    :func:`olive.optimize.recipe.served_batch_sizes`)."""
    if text is None or text.strip().lower() in ("", "auto"):
        return ()
    sizes = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise WorkflowConfigError(
                f"'{text}': '{part}' is not a whole number >= 1; give the batch size the model is served at (e.g. 32), "
                "a comma-separated list of them (e.g. 1,8,32), or auto",
                owner="--batch-size",
            )
        sizes.append(int(part))
    return tuple(sorted(set(sizes)))


#: an adapter's name: it names its file (NAME.onnx_adapter) and what a server activates
_ADAPTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: what a PEFT adapter folder holds (PeftModel.save_pretrained)
_ADAPTER_CONFIG = "adapter_config.json"


def parse_adapters(values: tuple[str, ...] | list[str]) -> tuple[tuple[str, Path], ...]:
    """``("legal=adapters/legal", ...)`` -> ``(("legal", Path), ...)``: each a usable name, given once, and a PEFT
    adapter folder that exists (whether it fits the model is the model's check, before anything runs)."""
    found: dict[str, Path] = {}
    for value in values:
        name, sep, path_text = value.partition("=")
        name, path_text = name.strip(), path_text.strip()
        if not sep or not name or not path_text:
            raise WorkflowConfigError(
                f"'{value}' is not NAME=PATH; give each adapter a name and its PEFT folder, e.g. "
                "--adapter legal=adapters/legal",
                owner="--adapter",
            )
        if not _ADAPTER_NAME.match(name):
            raise WorkflowConfigError(
                f"'{value}': the name '{name}' names the adapter's file and what a server activates; use letters, "
                "digits, '.', '_' and '-' (starting with a letter or digit)",
                owner="--adapter",
            )
        if name in found:
            raise WorkflowConfigError(
                f"'{value}': a second adapter named '{name}'; give each adapter its own name", owner="--adapter"
            )
        path = Path(path_text).expanduser().absolute()
        if not path.is_dir():
            raise WorkflowConfigError(
                f"'{value}': adapter '{name}' has no folder at {path}; give the folder PeftModel.save_pretrained wrote",
                owner="--adapter",
            )
        if not (path / _ADAPTER_CONFIG).is_file():
            raise WorkflowConfigError(
                f"'{value}': adapter '{name}': {path} has no {_ADAPTER_CONFIG}, so it is not a PEFT adapter folder; "
                "give the folder PeftModel.save_pretrained wrote",
                owner="--adapter",
            )
        found[name] = path
    return tuple(found.items())


def parse_dims(params: str | None, values: str | None) -> dict[str, int]:
    """Microsoft Olive's ``--dim_param batch_size,sequence_length --dim_value 1,128`` -> ``{name: size}``."""
    if params is None and values is None:
        return {}
    if params is None or values is None:
        given, missing = ("--dim_param", "--dim_value") if values is None else ("--dim_value", "--dim_param")
        raise WorkflowConfigError(
            f"{given} needs {missing} too: names and sizes, comma separated, in the same order "
            "(e.g. --dim_param batch_size,sequence_length --dim_value 1,128)",
            owner=missing,
        )
    names = [n.strip() for n in params.split(",") if n.strip()]
    sizes = [v.strip() for v in values.split(",") if v.strip()]
    if len(names) != len(sizes) or not names:
        raise WorkflowConfigError(
            f"{len(names)} name(s) but {len(sizes)} size(s); give one size per --dim_param name, in the same order",
            owner="--dim_value",
        )
    dims = {}
    for name, size in zip(names, sizes, strict=True):
        if not size.isdigit() or int(size) < 1:
            raise WorkflowConfigError(f"size of '{name}' is '{size}'; give a whole number >= 1", owner="--dim_value")
        dims[name] = int(size)
    return dims


def _checked(check: Callable[[str], str]) -> Callable[[Any, attrs.Attribute, str | None], None]:
    """An attrs validator from one of the ``check_*`` functions (None is left to the field's type)."""

    def validate(instance: Any, attribute: attrs.Attribute, value: str | None) -> None:
        if value is not None:
            check(value)

    return validate


def _at_least_one(option: str) -> Callable[[Any, attrs.Attribute, int | None], None]:
    def validate(instance: Any, attribute: attrs.Attribute, value: int | None) -> None:
        if value is not None and value < 1:
            raise WorkflowConfigError(f"{value}; give a whole number >= 1", owner=option)

    return validate


def _each_at_least_one(option: str) -> Callable[[Any, attrs.Attribute, tuple[int, ...]], None]:
    def validate(instance: Any, attribute: attrs.Attribute, value: tuple[int, ...]) -> None:
        for size in value:
            _at_least_one(option)(instance, attribute, size)

    return validate


def _positive_seconds(instance: Any, attribute: attrs.Attribute, value: float | None) -> None:
    if value is not None and not value > 0:
        raise WorkflowConfigError(f"{value:g} s; give a positive number of seconds", owner="--max-time")


def _check_block_size(block_size: int, precision: str) -> None:
    # auto means int4 for a decoder and int8 for other models: the recipe, which knows the model, checks that case.
    if precision not in ("int4", "auto"):
        raise WorkflowConfigError(
            f"a block size is for --precision int4 (block-wise 4-bit weights); --precision is {precision}",
            owner="--block_size",
        )
    if block_size == -1:
        raise WorkflowConfigError(
            "-1 (per-channel 4-bit weights) is not supported by MatMulNBits; give a power of two >= 16 (e.g. 32)",
            owner="--block_size",
        )
    if block_size < 16 or block_size & (block_size - 1):
        raise WorkflowConfigError(
            f"{block_size} is not a power of two >= 16, which MatMulNBits needs (e.g. 32, 64, 128)",
            owner="--block_size",
        )


@attrs.frozen
class OptimizeOptions:
    """What the user asked for, checked (see the CLI's help for each option).

    :param keeps: what the chosen model must keep (empty: the defaults for the model's kind of output).
    :param latency_budget: the most the chosen model's median latency may be, as a ratio to the input model's
        (timed in alternating rounds with it); None: the fastest model that keeps ``keeps``.
    :param precision: see :data:`PRECISIONS`.
    :param act_precision: static quantization with this activation type (Microsoft Olive's ``--act_precision``).
    :param use_qdq_format: static quantization in the QDQ format (else QOperator).
    :param block_size: int4 block size.
    :param providers: execution providers to search (empty: the device's default); ``"all"`` is every
        installed one that offers the device.
    :param data: a file of samples (``.npz`` keyed by input name, or text when the model has a tokenizer); the
        passes fit on one half of it and the metrics judge on the other, unless ``validation_data`` is given.
    :param validation_data: a file of samples the metrics and keeps judge on (then the passes fit on all of
        ``data``).
    :param fusion: transformer fusion: None decides from the model, False never, True always.
    :param quantize_only: ``olive quantize``: no graph rewrites.
    :param batch_sizes: the batch sizes the model is served at: held-out samples are batched together at each (shuffled
        with a fixed seed) and every figure and keep is the worst over them; empty: 1 and 32 for a model with an
        attention mask, 1 otherwise (:func:`olive.optimize.recipe.served_batch_sizes`).
    :param adapters: a decoder's PEFT LoRA adapters, ``(name, folder)``: the base is built once with an input for
        each adapted weight, each adapter becomes ``name.onnx_adapter`` and is measured with it active.
    """

    output_dir: Path
    cache_dir: Path | None
    keeps: tuple[Keep, ...] = ()
    latency_budget: float | None = None
    precision: str = attrs.field(default="auto", validator=_checked(check_precision))
    act_precision: str | None = None
    use_qdq_format: bool = False
    block_size: int | None = None
    algorithm: str = attrs.field(default="rtn", validator=_checked(check_algorithm))
    implementation: str | None = attrs.field(default=None, validator=_checked(check_implementation))
    providers: tuple[str, ...] = ()
    device: str = attrs.field(default="cpu", validator=_checked(lambda value: check_choice(value, DEVICES, "--device")))
    max_time: float | None = attrs.field(default=None, validator=_positive_seconds)
    data: Path | None = None
    validation_data: Path | None = None
    tokenizer: Path | None = None
    max_samples: int = attrs.field(default=DEFAULT_MAX_SAMPLES, validator=_at_least_one("--max_samples"))
    #: the batch sizes the model is served at (agreement and keeps are measured at each); empty: the model's default
    batch_sizes: tuple[int, ...] = attrs.field(default=(), validator=_each_at_least_one("--batch-size"))
    #: text data: tokens per sample; None: DEFAULT_MAX_LENGTH, or the model's longest input when shorter
    max_length: int | None = attrs.field(default=None, validator=_at_least_one("--max-length"))
    dim_values: dict[str, int] = attrs.field(factory=dict)
    fusion: bool | None = None
    task: str | None = None
    quantize_only: bool = False
    adapters: tuple[tuple[str, Path], ...] = ()

    def __attrs_post_init__(self) -> None:
        self._check_quantization()
        self._check_command()

    def _check_quantization(self) -> None:
        int8 = self.precision in ("auto", "int8", "uint8")
        if self.act_precision is not None:
            check_choice(self.act_precision, ACT_PRECISIONS, "--act_precision")
            if not int8:
                raise WorkflowConfigError(
                    f"activation quantization goes with int8 weights; --precision is {self.precision}. Leave "
                    "--act_precision out, or use --precision int8",
                    owner="--act_precision",
                )
            if self.act_precision == "int8" and not self.use_qdq_format:
                raise WorkflowConfigError(
                    "int8 activations need --use_qdq_format (onnxruntime's QOperator format takes uint8 "
                    "activations); add --use_qdq_format, or use --act_precision uint8",
                    owner="--act_precision",
                )
        if self.use_qdq_format and not int8:
            raise WorkflowConfigError(
                f"the QDQ format is for int8 quantization; --precision is {self.precision}. Leave --use_qdq_format "
                "out, or use --precision int8",
                owner="--use_qdq_format",
            )
        if self.block_size is not None:
            _check_block_size(self.block_size, self.precision)

    def _check_command(self) -> None:
        if self.quantize_only and self.fusion:
            raise WorkflowConfigError(
                "olive quantize never rewrites the graph; run olive optimize --fusion to fuse and quantize",
                owner="--fusion",
            )
        if self.quantize_only and self.precision == "fp32":
            raise WorkflowConfigError(
                "olive quantize with fp32 leaves nothing to do; use int8, int4 or fp16, or run olive optimize",
                owner="--precision",
            )
        if self.validation_data is not None and self.data is None:
            raise WorkflowConfigError(
                "judging data is for a model fit on --data; give --data FILE too (the passes fit on it)",
                owner="--validation-data",
            )
        names = [k.metric for k in self.keeps]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise WorkflowConfigError(f"{', '.join(twice)} given twice; keep each metric once", owner="--keep")
