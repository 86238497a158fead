"""``ModelBuilder``: a Hugging Face decoder folder to an onnxruntime-genai folder, with onnxruntime-genai's builder.

Microsoft Olive's pass of the same name and params: ``precision`` (fp32, int8, int4, fp16, bf16), the int4
settings (``int4_block_size``, ``int4_is_symmetric``, ``int4_accuracy_level``, ``int4_algo_config``,
``int4_op_types_to_quantize``, ``int4_nodes_to_exclude``), ``exclude_embeds``, ``exclude_lm_head``,
``include_hidden_states``, ``use_qdq``, ``extra_options`` (any other builder option, passed as it is) and
``search`` (generation settings merged into ``genai_config.json``). The output is a :class:`GenAIModelHandler`:
the decoder with a KV cache (GroupQueryAttention), its external data, ``genai_config.json`` and the tokenizer
files, in one folder that ``onnxruntime_genai.Model(folder)`` runs as it is.

An ``HfModel`` with adapters (``adapter_path`` / ``adapters``) is built with its first adapter: the builder's
``adapter_path`` option, which writes each adapted MatMul's LoRA A and B (B scaled by ``lora_alpha / r``) as
initializers beside the base weight. The output's ``model_attributes["adapters"]`` lists every adapter (name,
folder, content digest) for ``ExtractAdapters``, which turns those weights into inputs and writes one adapter file
per adapter. An ``adapter_path`` in ``extra_options`` is the builder's own and wins. At int4 and int8 the adapter's
MatMuls are left out of the quantizing step: they stay float MatMuls, which ExtractAdapters turns into inputs.
``extract_adapters: true`` runs ExtractAdapters (its defaults) on the build within the pass, so its output, the
model a workflow's metrics compare with, is the base with adapter inputs, which runs with any adapter or none.

Checked before anything is built (a config error, ``olive run`` exits 2): a precision the target's execution
provider cannot run (fp16 and bf16 need a GPU provider), an architecture the installed builder does not know, a
folder without a tokenizer. The builder's messages go to this module's logger (what it prints, at DEBUG).

int4 and int8 run the builder's own quantizing step (its ``to_nbits``: its algorithm, block size, symmetry,
accuracy level, exclusions, mixed precision and tied-embedding handling as it decides them) with one change:
the float graph is streamed to a copy on disk first, beside the output, and the quantizer reads each weight from
there when it quantizes it. The builder itself hands onnxruntime's quantizer one in-memory ModelProto holding every
float weight, a second copy of the whole model; the file written is the same byte for byte.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from functools import lru_cache, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassParamError, PassRunError, WorkflowConfigError
from olive.hardware.accelerator import AcceleratorSpec
from olive.logs import onnxruntime_logs
from olive.passes import Pass, PassConfigParam
from olive.search.search_parameter import Boolean, Categorical
from olive_passes_genai.genai_model import GENAI_CONFIG, GenAIModelHandler
from olive_passes_quant._types import AccuracyLevel

if TYPE_CHECKING:
    from olive.model.handler import OliveModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

PRECISIONS = ("fp32", "fp16", "bf16", "int8", "int4")
BLOCK_SIZES = (16, 32, 64, 128, 256)
#: MatMulNBits accuracy levels the builder takes (Olive's ``ModelBuilder.AccuracyLevel``), from the one table of them
#: (olive-passes-quant's): the minimum compute type of int4 MatMuls; "unset" (0) is not the builder's to take.
ACCURACY_LEVELS = {level.value: level.name for level in AccuracyLevel if level is not AccuracyLevel.unset}
ALGO_CONFIGS = ("default", "rtn", "k_quant", "rtn_last", "k_quant_last", "k_quant_mixed", "k_quant_linear")
#: Execution provider -> the builder's ``execution_provider`` name, as Olive maps them.
EP_NAMES = {
    "CPUExecutionProvider": "cpu",
    "CUDAExecutionProvider": "cuda",
    "DmlExecutionProvider": "dml",
    "WebGpuExecutionProvider": "webgpu",
    "NvTensorRTRTXExecutionProvider": "NvTensorRtRtx",
}
#: Which precisions each builder target takes (what the builder itself lists as valid combinations).
EP_PRECISIONS = {
    "cpu": ("fp32", "int8", "int4"),
    "cuda": ("fp32", "fp16", "bf16", "int8", "int4"),
    "dml": ("fp16", "int4"),
    "webgpu": ("int8", "int4"),
    "NvTensorRtRtx": ("fp16", "bf16"),
}
# Olive's params that the builder takes under its own (newer) name; the int4_ prefix is its deprecated alias.
_RENAMED = {
    "int4_block_size": "block_size",
    "int4_is_symmetric": "is_symmetric",
    "int4_accuracy_level": "accuracy_level",
    "int4_algo_config": "algo_config",
    "int4_op_types_to_quantize": "op_types_to_quantize",
    "int4_nodes_to_exclude": "nodes_to_exclude",
}
# The builder reads lists as joined strings, the way its command line writes them.
_LIST_SEPARATORS = {"op_types_to_quantize": "/", "nodes_to_exclude": ","}
_BOOLS = ("exclude_embeds", "exclude_lm_head", "include_hidden_states", "use_qdq", "enable_cuda_graph")
#: Precisions the builder quantizes (MatMulNBits) after building the float graph.
QUANTIZED = ("int4", "int8")


@lru_cache(maxsize=1)
def supported_architectures() -> tuple[str, ...]:
    """The ``config.architectures`` values the installed onnxruntime-genai builder converts, read from its
    source: the list follows the installed version, never a copy of ours."""
    import inspect

    from onnxruntime_genai.models import builder

    source = inspect.getsource(builder.create_model)
    return tuple(sorted(set(re.findall(r'config\.architectures\[0\] == "(\w+)"', source))))


class ModelBuilder(Pass):
    """Build an onnxruntime-genai decoder folder (KV cache, genai_config.json, tokenizer) from a Hugging Face folder."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("HfModel",)

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "precision": PassConfigParam(
                type_=str,
                default_value="fp32",
                required=True,
                description=f"Precision of the model's weights: {', '.join(PRECISIONS)} (fp16 and bf16 need a GPU "
                "execution provider).",
            ),
            "extract_adapters": PassConfigParam(
                type_=bool,
                default_value=False,
                description="With an HfModel with adapters: the output is ExtractAdapters' (its defaults) on the "
                "build, the LoRA weights inputs with empty defaults and one .onnx_adapter per adapter, so the float "
                "build a workflow compares with runs every adapter and the base.",
            ),
            "search": PassConfigParam(
                type_=dict | None,
                default_value=None,
                description="Generation settings (max_length, do_sample, top_k, temperature...) merged into the "
                "'search' object of genai_config.json.",
            ),
            "int4_accuracy_level": PassConfigParam(
                type_=int | None,
                default_value=None,
                description="Minimum accuracy level of int4 MatMul activations: 1 fp32, 2 fp16, 3 bf16, 4 int8 "
                "(the builder's default: 4 on the CPU).",
            ),
            "int4_block_size": PassConfigParam(
                type_=int | None,
                default_value=None,
                search_defaults=Categorical([32, 64, 128]),
                description="Block size of int4 quantization: 16, 32, 64, 128 or 256 (the builder's default: 32).",
            ),
            "int4_is_symmetric": PassConfigParam(
                type_=bool | None,
                default_value=None,
                search_defaults=Boolean(),
                description="Symmetric (int4) or asymmetric (uint4, with zero points) int4 quantization.",
            ),
            "int4_op_types_to_quantize": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                description='Op types to quantize to int4 (default ["MatMul"]), e.g. ["MatMul", "Gather"].',
            ),
            "int4_nodes_to_exclude": PassConfigParam(
                type_=list[str] | None, default_value=None, description="Node names to keep out of int4 quantization."
            ),
            "int4_algo_config": PassConfigParam(
                type_=str | None,
                default_value=None,
                search_defaults=Categorical(["default", "rtn", "k_quant_mixed", "k_quant_last"]),
                description=f"The builder's int4 algorithm: {', '.join(ALGO_CONFIGS)}.",
            ),
            "use_qdq": PassConfigParam(
                type_=bool | None,
                default_value=None,
                description="Quantize-dequantize ops instead of MatMulNBits.",
            ),
            "include_hidden_states": PassConfigParam(
                type_=bool | None, default_value=None, description="Add the hidden states as an output."
            ),
            "exclude_embeds": PassConfigParam(
                type_=bool | None, default_value=None, description="Leave the embedding layer out of the model."
            ),
            "exclude_lm_head": PassConfigParam(
                type_=bool | None, default_value=None, description="Leave the language-modeling head out of the model."
            ),
            "enable_cuda_graph": PassConfigParam(
                type_=bool | None, default_value=None, description="Allow CUDA graph capture (CUDA provider only)."
            ),
            "extra_options": PassConfigParam(
                type_=dict | None,
                default_value=None,
                description="More builder options (KEY: VALUE, as the builder's --extra_options take them); they "
                "override the params above.",
            ),
        }

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        # The builder writes different graphs for different providers.
        return False

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        precision = config.precision
        if precision not in PRECISIONS:
            raise PassParamError(
                f"param 'precision' is {precision!r}; use one of {', '.join(PRECISIONS)}", params="precision"
            )
        provider = str(accelerator_spec.execution_provider)
        target = EP_NAMES.get(provider)
        if target is None:
            raise PassParamError(
                f"the target's execution provider {provider} is not one the builder writes for; use one of "
                f"{', '.join(EP_NAMES)}",
                params="precision",
            )
        if precision not in EP_PRECISIONS[target]:
            raise PassParamError(
                f"param 'precision' is {precision}, which {provider} cannot run; on it use "
                f"{', '.join(EP_PRECISIONS[target])}"
                + (" (fp16 and bf16 need a GPU provider, e.g. CUDAExecutionProvider)" if target == "cpu" else ""),
                params="precision",
            )
        block = config.int4_block_size
        if block is not None and block not in BLOCK_SIZES:
            raise PassParamError(
                f"param 'int4_block_size' is {block}; use one of {', '.join(map(str, BLOCK_SIZES))}",
                params="int4_block_size",
            )
        level = config.int4_accuracy_level
        if level is not None and level not in ACCURACY_LEVELS:
            raise PassParamError(
                f"param 'int4_accuracy_level' is {level}; use "
                + ", ".join(f"{k} ({v})" for k, v in ACCURACY_LEVELS.items()),
                params="int4_accuracy_level",
            )
        algo = config.int4_algo_config
        if algo is not None and algo not in ALGO_CONFIGS:
            raise PassParamError(
                f"param 'int4_algo_config' is {algo!r}; use one of {', '.join(ALGO_CONFIGS)}",
                params="int4_algo_config",
            )

    @classmethod
    def check_input_model(cls, model: OliveModelHandler, json_path: str) -> None:
        """The input folder is one the builder can convert: an architecture it knows and a tokenizer.

        Raises :class:`WorkflowConfigError` naming the input model's field and what is supported.
        """
        folder = Path(str(model.model_path))
        owner = f"{getattr(model, 'json_path', 'input_model')}.model_path"
        config_path = folder / "config.json"
        try:
            architectures = json.loads(config_path.read_text(encoding="utf-8")).get("architectures") or []
        except (OSError, ValueError) as exc:
            raise WorkflowConfigError(f"cannot read '{config_path}' ({exc})", owner=owner) from exc
        known = supported_architectures()
        if not architectures or architectures[0] not in known:
            found = architectures[0] if architectures else "none (config.json names no architectures)"
            raise WorkflowConfigError(
                f"{json_path}: the model's architecture is {found}, which the installed onnxruntime-genai builder "
                f"does not convert; it converts {', '.join(known)}",
                owner=f"{getattr(model, 'json_path', 'input_model')}.model_path",
            )
        if getattr(model, "adapters", None):
            try:
                import peft  # noqa: F401
            except ImportError:
                raise WorkflowConfigError(
                    f"{json_path}: the model has adapters, which onnxruntime-genai's builder reads with peft; "
                    "install it (pip install peft)",
                    owner=f"{getattr(model, 'json_path', 'input_model')}.adapters",
                ) from None
        if not (folder / "tokenizer.json").is_file() and not (folder / "tokenizer.model").is_file():
            raise WorkflowConfigError(
                f"{json_path}: '{folder}' has no tokenizer (tokenizer.json), which ModelBuilder copies into the "
                "onnxruntime-genai folder; save it there with tokenizer.save_pretrained(folder)",
                owner=owner,
            )

    def builder_options(self, config: BasePassConfig) -> dict[str, Any]:
        """The builder's ``extra_options`` for ``config``: Olive's param names as the builder spells them."""
        options: dict[str, Any] = {"filename": "model.onnx"}
        for name in (*_RENAMED, *_BOOLS):
            value = config[name]
            if value is None:
                continue
            key = _RENAMED.get(name, name)
            if key in _LIST_SEPARATORS and isinstance(value, list | tuple):
                value = _LIST_SEPARATORS[key].join(value)
            options[key] = value
        options.update(config.extra_options or {})
        return options

    def _run_for_config(
        self, model: OliveModelHandler, config: BasePassConfig, output_model_path: str
    ) -> GenAIModelHandler:
        from olive_passes_torch._logs import routed_logs

        self.check_input_model(model, self.config_owner())
        folder = str(model.model_path)
        # Absolute: the quantizing step runs with the float copy's folder as the working directory.
        output = Path(output_model_path).resolve()
        output.mkdir(parents=True, exist_ok=True)
        target = EP_NAMES[str(self.accelerator_spec.execution_provider)]
        options = self.builder_options(config)
        adapters = adapter_records(model)
        if adapters and "adapter_path" not in options:
            options["adapter_path"] = next(iter(adapters.values()))["path"]
        logger.info(
            "%s: building %s for %s from %s (options %s)",
            self.config_owner(),
            config.precision,
            target,
            folder,
            options,
        )
        # The builder keeps intermediate files in its cache folder: a folder of our own, outside the output
        # (which the engine copies whole), removed afterwards. Beside the output rather than in the temporary
        # folder: an int4 or int8 build keeps a float copy of the weights there, which belongs on the disk that
        # takes the output (a /tmp in memory would hold it in RAM).
        scratch = Path(tempfile.mkdtemp(prefix=f".{output.name}-build-", dir=output.parent))
        quantize_from_disk = _quantize_from_disk() if config.precision in QUANTIZED else contextlib.nullcontext()
        start = time.perf_counter()
        progress = None
        try:
            with (
                routed_logs(logger, logging.INFO),
                onnxruntime_logs(logger),
                _builder_progress(self, folder) as progress,
                quantize_from_disk,
            ):
                _create_model(folder, str(output), config.precision, target, str(scratch), options)
        except WorkflowConfigError:
            raise
        except Exception as exc:
            said = " ".join(str(exc).split())
            stage = progress.stage if progress is not None else "starting"
            raise PassRunError(
                f"onnxruntime-genai's builder failed on '{folder}' while {stage} ({_settings(config, target)}): "
                f"{type(exc).__name__}: {said}; {_fix(stage, config)} (-v shows the builder's traceback)",
                owner=self.config_owner(),
            ) from exc
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        logger.info("%s: built in %.1f s", self.config_owner(), time.perf_counter() - start)
        genai_config_path = output / GENAI_CONFIG
        genai_config = json.loads(genai_config_path.read_text(encoding="utf-8"))
        if config.search:
            genai_config["search"] = {**(genai_config.get("search") or {}), **config.search}
            genai_config_path.write_text(json.dumps(genai_config, indent=4), encoding="utf-8")
        attributes = {
            **getattr(model, "model_attributes", {}),
            "genai": {"precision": config.precision, "execution_provider": target, "builder_options": options},
        }
        if adapters:
            attributes["adapters"] = adapters
            attributes["adapter_built_in"] = next(iter(adapters))
        built = GenAIModelHandler(str(output), model_attributes=attributes)
        if adapters and config.extract_adapters:
            return self._extract(built, output)
        return built

    def _extract(self, built: GenAIModelHandler, output: Path) -> GenAIModelHandler:
        """ExtractAdapters (its defaults) on the build, into ``output``: the build moves aside first."""
        from olive_passes_genai.adapters import ExtractAdapters

        staging = Path(tempfile.mkdtemp(prefix=f".{output.name}-with-adapter-", dir=output.parent))
        try:
            for path in output.iterdir():
                path.replace(staging / path.name)
            moved = GenAIModelHandler(str(staging), model_attributes=built.model_attributes)
            return ExtractAdapters(self.accelerator_spec, {}).run(moved, str(output))
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def adapter_records(model: OliveModelHandler) -> dict[str, dict[str, str]]:
    """``{name: {"path", "sha256"}}`` of the model's adapters (an ``HfModel``'s ``adapters``), in order."""
    from olive.cache.store import hash_file
    from olive_passes_torch.adapters import adapter_files

    records = {}
    for name, folder in (getattr(model, "adapters", None) or {}).items():
        sha = hashlib.sha256()
        for path in adapter_files(Path(folder)):
            sha.update(f"{path.name}\0{hash_file(path)}\0".encode())
        records[name] = {"path": str(folder), "sha256": sha.hexdigest()}
    return records


# What the builder prints as it goes: one line per decoder layer read, one before it saves (and quantizes).
_LAYER_LINE = re.compile(r"^Reading layer (\d+)\s*$")
_SAVING_LINE = re.compile(r"^Saving ONNX model")


class _ProgressLines(io.TextIOBase):
    """A stdout that passes the builder's printed lines on and reports its layer loop as the pass's progress."""

    def __init__(self, owner: Pass, forward: Any, layers: int | None):
        self._owner, self._forward, self._partial = owner, forward, ""
        self.total = None if layers is None else layers + 1  # the layers, then saving
        self.done = 0
        #: where the builder is, in words, for a failure's message
        self.stage = "loading the checkpoint"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._forward.write(text)
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            layer = _LAYER_LINE.match(line.strip())
            if layer:
                self.done = max(self.done, int(layer.group(1)) + 1)
                self.stage = f"converting layer {layer.group(1)}"
                self._owner.report_progress(self.done, self.total, "layers")
            elif _SAVING_LINE.match(line.strip()):
                self.stage = "saving the model (and quantizing it, at int4 or int8)"
                self._owner.report_progress(self.done, self.total, "saving")
        return len(text)

    def flush(self) -> None:
        self._forward.flush()


@contextlib.contextmanager
def _builder_progress(owner: Pass, folder: str) -> Iterator[_ProgressLines]:
    """Report the builder's progress (a step per decoder layer, one for saving) while it runs in the block."""
    try:
        hf_config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
        layers = hf_config.get("num_hidden_layers") or (hf_config.get("text_config") or {}).get("num_hidden_layers")
    except (OSError, ValueError, AttributeError):
        layers = None
    lines = _ProgressLines(owner, sys.stdout, int(layers) if isinstance(layers, int) else None)
    with contextlib.redirect_stdout(lines):
        yield lines
    if lines.total is not None:
        owner.report_progress(lines.total, lines.total, "saved")


def _settings(config: BasePassConfig, target: str) -> str:
    """The settings a failure names: precision and target, and the int4 ones where they apply."""
    said = [f"precision {config.precision}", f"execution provider {target}"]
    if config.precision == "int4":
        for name in ("int4_block_size", "int4_is_symmetric", "int4_accuracy_level", "int4_algo_config"):
            value = getattr(config, name, None)
            if value is not None:
                said.append(f"{name} {value}")
    return ", ".join(said)


def _fix(stage: str, config: BasePassConfig) -> str:
    """What to change, from where the builder stopped."""
    if stage.startswith("loading"):
        return (
            "the checkpoint did not load: check that transformers' from_pretrained loads the folder, and that its "
            "weights are those its config.json describes"
        )
    if stage.startswith("converting"):
        return (
            f"the builder stopped {stage}: that layer's weights are not what the builder takes for this "
            "architecture (a modified or partly saved checkpoint?); save the model again with save_pretrained"
        )
    if config.precision in QUANTIZED:
        return (
            "the builder's quantizing step failed: try another int4_block_size or int4_algo_config, or build fp32 "
            "and quantize with OnnxKQuantQuantization or OnnxGuardedInt4"
        )
    return "the builder failed while saving: check that the output folder's disk has room for the model"


def _create_model(folder: str, output: str, precision: str, target: str, cache_dir: str, options: dict) -> None:
    """Run the builder as its command line does: options parsed (and the Hugging Face config read), then built."""
    from onnxruntime_genai.models import builder

    pairs = [f"{key}={_option_text(value)}" for key, value in options.items()]
    parsed = builder.parse_extra_options(None, folder, output, precision, target, cache_dir, pairs)
    builder.create_model(None, folder, output, precision, target, cache_dir, **parsed)


# The builder's class is patched for the length of one build: one build at a time.
_PATCH_LOCK = threading.Lock()


@contextlib.contextmanager
def _quantize_from_disk() -> Iterator[None]:
    """Inside the block, the builder's quantizing step reads the float weights from a copy on disk, one at a time.

    Its own ``to_nbits`` still decides and runs everything; only the graph it is given changes (see
    :func:`_to_nbits_from_disk`). A builder without that method (another version) runs as it is.
    """
    from onnxruntime_genai.models import builder

    # The class create_model instantiates: the builder imports its modules under top-level names (builders.base),
    # so onnxruntime_genai.models.builders.base.Model is another class object.
    model_class = getattr(builder, "Model", None)
    own = vars(model_class).get("to_nbits") if isinstance(model_class, type) else None
    if not callable(own):
        logger.debug("the installed builder has no Model.to_nbits; its quantizing step runs as it is")
        yield
        return

    @wraps(own)
    def to_nbits(builder_model: Any) -> Any:
        return _to_nbits_from_disk(builder_model, own)

    with _PATCH_LOCK:
        model_class.to_nbits = to_nbits
        try:
            yield
        finally:
            model_class.to_nbits = own


def _to_nbits_from_disk(builder_model: Any, own: Callable[[Any], Any]) -> Any:
    """The builder's ``to_nbits`` on its float graph streamed to disk first.

    The builder turns its graph into one ModelProto for onnxruntime's quantizer, reading every weight in and
    copying it: the peak of its build. Streamed to a file (one tensor at a time) and loaded back, the graph refers
    to the file instead, so that ModelProto holds locations, and the quantizer reads each weight when it quantizes
    it (from the working directory, as onnx resolves them), holding one at a time.
    """
    import onnx_ir as ir

    from olive.passes.onnx.common import weights_in

    # The builder removes its cache folder once it is empty after a save; a second graph of the same build (an
    # MTP head shares the folder) may come after.
    cache = Path(builder_model.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    copy = Path(tempfile.mkdtemp(prefix="float-graph-", dir=cache))
    path = copy / "model.onnx"
    start = time.perf_counter()
    ir.save(builder_model.model, path, external_data=f"{path.name}.data", size_threshold_bytes=0)
    with _dangling_inputs_expected():
        builder_model.model = ir.load(path)
    logger.debug("float graph streamed to %s in %.1f s", copy, time.perf_counter() - start)
    _keep_adapters_float(builder_model)
    with weights_in(copy):
        quantized = own(builder_model)
    # What stays in float (norms, biases, an unquantized embedding) still refers to the copy by a relative
    # location, and the builder saves the model after this returns, from the usual working directory.
    for graph in quantized.graphs():
        for value in graph.initializers.values():
            if isinstance(value.const_value, ir.ExternalTensor):
                value.const_value.base_dir = copy
    return quantized


# The builder's LoRA weights: <module>.lora_A.MatMul.weight / <module>.lora_B.MatMul.weight.
_LORA_WEIGHT = re.compile(r"\.lora_[AB]\.MatMul\.weight$")


def _keep_adapters_float(builder_model: Any) -> None:
    """Leave the adapter's MatMuls out of the builder's quantizing step.

    Quantized, they would become MatMulNBits with packed weights: ExtractAdapters could not make them inputs, and
    no adapter file could replace them (the base's adapter slots lost). In float, they take any adapter's weights;
    they are small (rank x width), so the base's size barely changes.
    """
    attrs = getattr(builder_model, "quant_attrs", None)
    if not isinstance(attrs, dict) or not isinstance(attrs.get("nodes_to_exclude"), list):
        return
    names = [
        node.name
        for node in builder_model.model.graph
        if node.op_type == "MatMul" and any(v is not None and _LORA_WEIGHT.search(v.name or "") for v in node.inputs)
    ]
    for name in names:
        if name not in attrs["nodes_to_exclude"]:
            attrs["nodes_to_exclude"].append(name)
    if names:
        logger.debug("adapter MatMuls kept in float: %d", len(names))


@contextlib.contextmanager
def _dangling_inputs_expected() -> Iterator[None]:
    """onnx_ir's warnings on loading the builder's float graph, at DEBUG.

    With tied embeddings the graph already names the LM head's quantized tensors (GatherBlockQuantized reads
    them), which only the quantizer creates: onnx_ir warns that they are missing, as it should on any other file.
    """

    class _ToDebug(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            logger.debug("onnx_ir: %s", record.getMessage())
            return False

    serde = logging.getLogger("onnx_ir.serde")
    to_debug = _ToDebug()
    serde.addFilter(to_debug)
    try:
        yield
    finally:
        serde.removeFilter(to_debug)


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
