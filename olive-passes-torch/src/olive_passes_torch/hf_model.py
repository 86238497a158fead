"""``HfModel``: a Hugging Face transformers model saved in a local folder.

Written in a workflow with Microsoft Olive's keys::

    "input_model": {"type": "HfModel", "model_path": "models/all-MiniLM-L6-v2", "task": "feature-extraction"}

- ``model_path``: a folder holding ``config.json`` and PyTorch weights (what ``save_pretrained`` writes).
  Nothing is downloaded: a hub name is an error that says how to get the folder.
- ``task``: ``feature-extraction``, ``text-classification``, ``fill-mask``, ``token-classification`` or
  ``text-generation`` (a decoder, exported without past key values); when left out, the task the
  checkpoint was saved for (``config.architectures``).
- ``adapter_path``: a PEFT LoRA adapter folder (``adapter_config.json`` + ``adapter_model.safetensors``, what
  ``PeftModel.save_pretrained`` writes) trained on this model; named after its folder.
- ``adapters``: more adapters of the same base, ``{"NAME": "PATH", ...}`` (names are letters, digits, ``.``,
  ``_``, ``-``). Every adapter is checked before anything runs (:mod:`.adapters`): a LoRA adapter whose modules
  exist in this model with the shapes its rank and the model's config give, and whose base model (when it names
  a local folder) has this model's config. ``ModelBuilder`` builds the first one into the decoder and
  ``ExtractAdapters`` writes one adapter file per adapter.
- ``load_kwargs``: ``torch_dtype`` (or ``dtype``), ``attn_implementation`` (default ``eager``: the plain
  MatMul/Softmax attention that onnxruntime's transformer optimizer fuses), ``trust_remote_code``,
  ``device_map`` (``cpu`` only) and ``extra_args`` (more ``from_pretrained`` keyword arguments).
- ``io_config``: overrides what is inferred from the config and the tokenizer (input names: the
  tokenizer's ``model_input_names`` that ``forward`` takes; outputs per task; batch and sequence axes free).
- ``model_attributes``: free-form facts, as for every model.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassConfigError, WorkflowConfigError, closest_match_hint
from olive.model.hub import looks_like_hub_name, not_downloaded_message
from olive_passes_torch._logs import routed_logs
from olive_passes_torch.adapters import adapter_files, check_adapters, parse_adapters
from olive_passes_torch.checked_folders import CheckedFolder, recall, remember
from olive_passes_torch.checkpoint_files import check_config_file, check_tokenizer_vocabulary, checkpoint_tensors
from olive_passes_torch.hf_tasks import (
    BATCH,
    SEQUENCE,
    TASKS,
    TEXT_INPUTS,
    missing_weights,
    model_class,
    normalize_task,
    task_from_architectures,
    tasks_for_config,
)
from olive_passes_torch.io_config import IoConfig, check_io_config
from olive_passes_torch.torch_model import (
    DTYPES,
    TorchModelHandler,
    check_input_names,
    content_digest,
    forward_parameters,
    labelled,
    library_versions,
    model_files,
    resolve_path,
)

if TYPE_CHECKING:
    import numpy as np
    import torch
    import transformers

logger = logging.getLogger(__name__)

FIELDS = ("model_path", "task", "adapter_path", "adapters", "load_kwargs", "io_config", "model_attributes")
LOAD_KWARGS = ("torch_dtype", "dtype", "attn_implementation", "trust_remote_code", "device_map", "extra_args")
# Olive's keys this version does not act on, with what to do instead.
_UNSUPPORTED = {
    "mlflow_transformer_model_cache_dir": "MLflow models are not loaded by this version; save the model with "
    "save_pretrained and point model_path at the folder",
    "generative": "not needed: the task says what is exported (text-generation for a decoder)",
}
_UNSUPPORTED_LOAD_KWARGS = {
    "quantization_method": "quantized checkpoints (bitsandbytes, GPTQ, AWQ) are not loaded by this version; "
    "convert the float model and quantize the ONNX model",
    "quantization_config": "quantized checkpoints are not loaded by this version; convert the float model and "
    "quantize the ONNX model",
}
WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)


def checkpoint_tensor_names(folder: Path) -> set[str] | None:
    """The names of the tensors a ``save_pretrained`` folder holds, read from its index or its safetensors header
    (no weights are read); None when the folder's checkpoint cannot be listed that way (a lone ``.bin``)."""
    import json
    import struct

    try:
        for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
            if (folder / index).is_file():
                return set(json.loads((folder / index).read_text())["weight_map"])
        if (folder / "model.safetensors").is_file():
            with (folder / "model.safetensors").open("rb") as handle:
                (length,) = struct.unpack("<Q", handle.read(8))
                if length > 100 * 2**20:
                    return None
                header = json.loads(handle.read(length))
            return {name for name in header if name != "__metadata__"}
    except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
        logger.debug("cannot list the tensors of %s: %s", folder, exc)
    return None


class HfModelHandler(TorchModelHandler):
    """A Hugging Face transformers model in a local folder (see the module docstring for its fields)."""

    model_type = "HfModel"
    inputs_by_name = True

    def __init__(
        self,
        model_path: str | Path,
        task: str | None = None,
        load_kwargs: Mapping[str, Any] | None = None,
        io_config: Mapping[str, Any] | None = None,
        model_attributes: Mapping[str, Any] | None = None,
        adapters: Mapping[str, str | Path] | None = None,
    ):
        super().__init__(model_path, model_attributes)
        self.task = task
        self.load_kwargs = dict(load_kwargs or {})
        self.io_config = dict(io_config) if io_config else None
        #: Adapter name -> PEFT folder, in the order given (the first is the one built into the decoder).
        self.adapters = {str(k): str(v) for k, v in (adapters or {}).items()}

    @property
    def adapter_path(self) -> str | None:
        """The first adapter's folder (Olive's ``adapter_path``): the one a builder builds into the model."""
        return next(iter(self.adapters.values()), None)

    # ------------------------------------------------------------------------------------------ the interface

    @classmethod
    def from_config(cls, fields: Mapping[str, Any], json_path: str, base_dir: Path) -> HfModelHandler:
        for key in fields:
            if key in _UNSUPPORTED:
                raise WorkflowConfigError(_UNSUPPORTED[key], owner=f"{json_path}.{key}")
            if key not in FIELDS:
                raise WorkflowConfigError(
                    f"unknown key for HfModel{closest_match_hint(str(key), FIELDS)}; valid keys: {', '.join(FIELDS)}",
                    owner=f"{json_path}.{key}",
                )
        if fields.get("model_path") is None:
            raise WorkflowConfigError(
                "missing; give the folder that holds config.json and the weights (save_pretrained)",
                owner=f"{json_path}.model_path",
            )
        path = model_folder(fields["model_path"], f"{json_path}.model_path", base_dir)
        task = fields.get("task")
        if task is not None:
            task = normalize_task(task, f"{json_path}.task")
        load_kwargs = check_load_kwargs(fields.get("load_kwargs"), f"{json_path}.load_kwargs")
        io_config = fields.get("io_config")
        if io_config is not None:
            check_io_config(io_config, f"{json_path}.io_config", partial=True)
        attributes = fields.get("model_attributes")
        if attributes is not None and not isinstance(attributes, Mapping):
            raise WorkflowConfigError("expected an object", owner=f"{json_path}.model_attributes")
        adapters = parse_adapters(fields.get("adapter_path"), fields.get("adapters"), json_path, base_dir)
        handler = cls(str(path), task, load_kwargs, io_config, attributes, adapters)
        handler.json_path = json_path
        return handler

    def __getstate__(self) -> dict[str, Any]:
        # The handler travels to trial workers inside the workflow; transformers' config is read again there.
        state = dict(self.__dict__)
        state.pop("hf_config", None)
        return state

    def _extra_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.task:
            extra["task"] = self.task
        if self.load_kwargs:
            extra["load_kwargs"] = self.load_kwargs
        if self.io_config:
            extra["io_config"] = self.io_config
        if self.adapters:
            extra["adapters"] = self.adapters
        if self.model_attributes:
            extra["model_attributes"] = self.model_attributes
        return extra

    def validate(self) -> None:
        """The folder holds a config transformers reads and PyTorch weights, the task is one the model can do,
        and the io_config's inputs are parameters of its forward. Reads no weights. A folder checked before with
        the same content, settings and library versions is not checked again (:mod:`.checked_folders`). Each
        adapter is checked against the model (:func:`.adapters.check_adapters`)."""
        if self._recorded is not None:
            return
        path = Path(self.model_path)
        config = self.hf_config
        if not any((path / name).is_file() for name in WEIGHT_FILES):
            found = ", ".join(sorted(p.name for p in path.iterdir() if p.is_file())) or "nothing"
            raise WorkflowConfigError(
                f"'{path}' holds a config.json but no PyTorch weights ({' or '.join(WEIGHT_FILES[:2])}; it has "
                f"{found}); save the model with save_pretrained",
                owner=f"{self.json_path}.model_path",
            )
        owner = f"{self.json_path}.model_path"
        # The checkpoint's files from their headers: a truncated or mismatched file is said here, not by the
        # library that would load it minutes later.
        tensors = checkpoint_tensors(path, owner)
        check_tokenizer_vocabulary(path, getattr(config, "vocab_size", None), owner)
        task = self.resolved_task
        if tensors is not None and not self.load_kwargs.get("trust_remote_code"):
            self._check_shapes(task, tensors, owner)
        if self.adapters:
            shapes = {name: list(shape) for name, (_, shape) in tensors.items()} if tensors is not None else None
            check_adapters(self.adapters, path, config, f"{self.json_path}.adapters", shapes)
        if self.io_config and self.io_config.get("input_names"):
            named, _ = forward_parameters(_ClassForward(model_class(task, config)))
            try:
                check_input_names(named, self.io_config["input_names"], f"{self.json_path}.io_config.input_names")
            except PassConfigError as exc:
                raise WorkflowConfigError(exc.reason, owner=exc.owner) from None
        missing = self._weights_missing_for(task)
        if missing:
            raise WorkflowConfigError(self._missing_reason(task, missing), owner=f"{self.json_path}.task")
        self._record_check(task)

    @cached_property
    def _recorded(self) -> CheckedFolder | None:
        return recall(self.content_hash())

    def _record_check(self, task: str) -> None:
        try:
            io_config = self.io_config_for()
        except WorkflowConfigError:
            return  # said when the names are asked for; nothing to keep
        positions = getattr(self.hf_config, "max_position_embeddings", None)
        record = CheckedFolder(
            task=task,
            input_names=list(io_config.input_names),
            output_names=list(io_config.output_names),
            max_position_embeddings=positions if isinstance(positions, int) and positions > 0 else None,
        )
        remember(self.content_hash(), record)
        self.__dict__["_recorded"] = record

    def input_output_names(self) -> tuple[list[str], list[str]]:
        """The ONNX model's input and output names the conversion will give (from the check's record when there
        is one: no transformers import)."""
        if self._recorded is not None:
            return list(self._recorded["input_names"]), list(self._recorded["output_names"])
        io_config = self.io_config_for()
        return list(io_config.input_names), list(io_config.output_names)

    @property
    def max_positions(self) -> int | None:
        """The longest sequence the model's position table takes (``max_position_embeddings``), if it says."""
        if self._recorded is not None:
            return self._recorded["max_position_embeddings"]
        positions = getattr(self.hf_config, "max_position_embeddings", None)
        return positions if isinstance(positions, int) and positions > 0 else None

    def _weights_missing_for(self, task: str) -> list[str]:
        """The parameters the task's model class has and the checkpoint lacks (what loading would initialize at
        random), from the checkpoint's tensor names and the class built on PyTorch's meta device: no weight is
        read. Empty when that cannot be told without loading (the load checks again)."""
        saved = checkpoint_tensor_names(Path(self.model_path))
        if saved is None or self.load_kwargs.get("trust_remote_code"):
            return []
        import torch

        try:
            with torch.device("meta"), routed_logs(logger, logging.DEBUG):
                module = model_class(task, self.hf_config)(self.hf_config)
        except Exception as exc:
            logger.debug("could not build %s's %s model on the meta device: %s", self.model_path, task, exc)
            return []
        prefix = f"{module.base_model_prefix}." if getattr(module, "base_model_prefix", "") else ""
        # A checkpoint of the bare model names its tensors without the task model's prefix, and the other way round.
        have = {name.removeprefix(prefix) for name in saved}
        # named_parameters lists a tied weight once, under the name the checkpoint keeps.
        missing = [name for name, _ in module.named_parameters() if name.removeprefix(prefix) not in have]
        return missing_weights(task, missing)

    def _check_shapes(self, task: str, tensors: Mapping[str, tuple[str, tuple[int, ...]]], owner: str) -> None:
        """Each saved tensor has the shape the config gives its parameter (built on PyTorch's meta device, no weight
        read): a config and weights of two different models are refused, naming the tensor and both shapes."""
        import torch

        try:
            with torch.device("meta"), routed_logs(logger, logging.DEBUG):
                module = model_class(task, self.hf_config)(self.hf_config)
        except Exception as exc:
            logger.debug("could not build %s's %s model on the meta device: %s", self.model_path, task, exc)
            return
        prefix = f"{module.base_model_prefix}." if getattr(module, "base_model_prefix", "") else ""
        saved = {name.removeprefix(prefix): shape for name, (_, shape) in tensors.items()}
        for name, parameter in module.named_parameters():
            shape = saved.get(name.removeprefix(prefix))
            if shape is not None and tuple(shape) != tuple(parameter.shape):
                raise WorkflowConfigError(
                    f"the checkpoint in '{self.model_path}' holds '{name}' of shape {list(shape)}, and its config.json "
                    f"makes it {list(parameter.shape)}: the config and the weights are of different models; put the "
                    "config.json saved with these weights beside them",
                    owner=owner,
                )

    def _missing_reason(self, task: str, missing: list[str]) -> str:
        saved_as = task_from_architectures(self.hf_config)
        shown = ", ".join(missing[:4]) + (" ..." if len(missing) > 4 else "")
        hint = f"; the checkpoint was saved for task '{saved_as}'" if saved_as and saved_as != task else ""
        return (
            f"the checkpoint in '{self.model_path}' has no (or differently shaped) weights for {shown}: loading it "
            f"for task '{task}' would export randomly initialized layers{hint}"
        )

    def content_hash(self) -> str:
        path = Path(self.model_path)
        # The adapters' names are settings too: an adapter folder with no files must not hash like no adapter (a
        # check recorded for the base alone would then pass it unchecked).
        settings = {
            "task": self.task,
            "load_kwargs": self.load_kwargs,
            "io_config": self.io_config,
            "adapters": sorted(self.adapters),
        }
        versions = library_versions("torch", "transformers", "tokenizers")
        files = labelled(model_files(path), path)
        for name, folder in self.adapters.items():
            # An adapter changes what the model computes as much as its weights do.
            files += labelled(adapter_files(Path(folder)), Path(folder), prefix=f"adapter:{name}/")
        return content_digest(self.model_type, files, settings, versions)

    @property
    def size_on_disk(self) -> int:
        return sum(p.stat().st_size for p in model_files(Path(self.model_path)))

    # ------------------------------------------------------------------------------------------ transformers

    @cached_property
    def hf_config(self) -> transformers.PretrainedConfig:
        """The model's ``config.json`` as transformers reads it (a :class:`WorkflowConfigError` naming
        ``model_path`` when the folder is not a model)."""
        path = Path(self.model_path)
        owner = f"{self.json_path}.model_path"
        if not (path / "config.json").is_file():
            raise WorkflowConfigError(
                f"'{path}' is not a Hugging Face model folder: it has no config.json; save the model there with "
                "model.save_pretrained(folder) (and its tokenizer with tokenizer.save_pretrained(folder))",
                owner=owner,
            )
        check_config_file(path / "config.json", owner)
        import transformers

        try:
            with routed_logs(logger, logging.DEBUG):
                return transformers.AutoConfig.from_pretrained(
                    str(path), local_files_only=True, trust_remote_code=bool(self.load_kwargs.get("trust_remote_code"))
                )
        except Exception as exc:
            raise WorkflowConfigError(
                f"transformers cannot read '{path / 'config.json'}' "
                f"({type(exc).__name__}: {' '.join(str(exc).split())}); put the config.json saved with the model "
                "beside its weights (model.config.save_pretrained(folder))",
                owner=owner,
            ) from exc

    @property
    def resolved_task(self) -> str:
        """The task: the configured one, else the one ``config.architectures`` names. Checked against what the
        model type can do."""
        if self._recorded is not None:
            return self._recorded["task"]
        config = self.hf_config
        can_do = tasks_for_config(config)
        task = self.task or task_from_architectures(config)
        owner = f"{self.json_path}.task"
        if task is None:
            named = [a for a in getattr(config, "architectures", None) or [] if isinstance(a, str)]
            said = (
                f"config.json's architectures ({', '.join(named)}) name no task done here"
                if named
                else "config.json names no architecture to infer it from"
            )
            raise WorkflowConfigError(
                f"missing, and {said}; set it to one of {', '.join(can_do) or ', '.join(TASKS)}", owner=owner
            )
        if task not in can_do:
            raise WorkflowConfigError(
                f"a '{config.model_type}' model cannot do task '{task}'; it can do: "
                f"{', '.join(can_do) or '(none here)'}",
                owner=owner,
            )
        return task

    def tokenizer(self) -> Any:
        """The folder's tokenizer, or None when it has none."""
        import transformers

        try:
            with routed_logs(logger, logging.DEBUG):
                return transformers.AutoTokenizer.from_pretrained(
                    self.model_path,
                    local_files_only=True,
                    trust_remote_code=bool(self.load_kwargs.get("trust_remote_code")),
                )
        except (OSError, ValueError, TypeError, KeyError) as exc:
            logger.debug("no tokenizer in %s (%s)", self.model_path, exc)
            return None

    def io_config_for(
        self, module: torch.nn.Module | None = None, overrides: Mapping[str, Any] | None = None
    ) -> IoConfig:
        task = TASKS[self.resolved_task]
        target = module if module is not None else _ClassForward(model_class(task.name, self.hf_config))
        forward, _ = forward_parameters(target)
        tokenizer = self.tokenizer()
        offered = list(tokenizer.model_input_names) if tokenizer is not None else list(TEXT_INPUTS)
        inputs = [name for name in forward if name in offered]
        if "input_ids" not in inputs:
            raise WorkflowConfigError(
                f"the model's forward ({', '.join(forward)}) takes none of the tokenizer's inputs "
                f"({', '.join(offered)}); give io_config.input_names",
                owner=f"{self.json_path}.io_config",
            )
        inferred: dict[str, Any] = {
            "input_names": inputs,
            "output_names": list(task.output_names),
            "dynamic_axes": {**{n: {0: BATCH, 1: SEQUENCE} for n in inputs}, **task.output_axes},
        }
        merged = {**inferred, **(self.io_config or {}), **(overrides or {})}
        if merged["dynamic_axes"] is inferred["dynamic_axes"]:
            # Inferred axes follow the names in use; axes the user wrote are checked as written.
            names = {*merged["input_names"], *merged["output_names"]}
            merged["dynamic_axes"] = {k: v for k, v in inferred["dynamic_axes"].items() if k in names}
        checked = check_io_config(merged, f"{self.json_path}.io_config")
        names = {*checked["input_names"], *checked["output_names"]}
        return IoConfig(
            input_names=tuple(checked["input_names"]),
            output_names=tuple(checked["output_names"]),
            input_shapes=tuple(tuple(s) for s in checked["input_shapes"]) if "input_shapes" in checked else None,
            input_types=tuple(checked.get("input_types") or ["int64"] * len(checked["input_names"])),
            dynamic_axes={k: v for k, v in checked.get("dynamic_axes", {}).items() if k in names},
        )

    def load_model(self, torch_dtype: str | None = None) -> torch.nn.Module:
        import torch
        import transformers

        if self.adapters:
            raise PassConfigError(
                f"the model has adapters ({', '.join(self.adapters)}), which are built by ModelBuilder and written as "
                "adapter files by ExtractAdapters; this pass loads the PyTorch model itself and would leave them out. "
                "Use ModelBuilder, or merge the adapter (peft's merge_and_unload) and give the merged folder",
                owner=f"{self.json_path}.adapters",
            )
        task = self.resolved_task
        auto = getattr(transformers, TASKS[task].auto_class)
        kwargs: dict[str, Any] = dict(self.load_kwargs.get("extra_args") or {})
        kwargs["attn_implementation"] = self.load_kwargs.get("attn_implementation") or "eager"
        kwargs["trust_remote_code"] = bool(self.load_kwargs.get("trust_remote_code"))
        dtype = torch_dtype or self.load_kwargs.get("dtype") or self.load_kwargs.get("torch_dtype")
        if dtype:
            kwargs["dtype"] = getattr(torch, dtype)
        try:
            with routed_logs(logger, logging.DEBUG):
                model, info = auto.from_pretrained(
                    self.model_path, local_files_only=True, output_loading_info=True, **kwargs
                )
        except Exception as exc:
            raise PassConfigError(
                f"transformers cannot load '{self.model_path}' for task '{task}' ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:500]})",
                owner=f"{self.json_path}.model_path",
            ) from exc
        missing = missing_weights(task, info.get("missing_keys") or ())
        mismatched = sorted(str(k[0]) if isinstance(k, tuple) else str(k) for k in info.get("mismatched_keys") or ())
        if missing or mismatched:
            raise PassConfigError(self._missing_reason(task, [*missing, *mismatched]), owner=f"{self.json_path}.task")
        if dtype:
            model = model.to(getattr(torch, dtype))
        return model.eval()

    def forward_kwargs(self, module: torch.nn.Module) -> dict[str, Any]:
        params, _ = forward_parameters(module)
        extra: dict[str, Any] = {"return_dict": True} if "return_dict" in params else {}
        if "use_cache" in params:
            extra["use_cache"] = False  # no past key values are exported
        return extra

    def example_inputs(self, io: IoConfig, vary: bool, module: torch.nn.Module | None = None) -> dict[str, np.ndarray]:
        from olive_passes_torch._inputs import synthetic_inputs

        return synthetic_inputs(io, vary=vary, vocab_size=getattr(self.hf_config, "vocab_size", None))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "task": self.resolved_task}

    def output_attributes(self) -> dict[str, Any]:
        """The Hugging Face config's fields (``model_type``, ``num_attention_heads``, ``hidden_size``...), which
        later passes read, then the model's own attributes."""
        import json

        attributes = json.loads(self.hf_config.to_json_string(use_diff=False))
        return {**attributes, **self.model_attributes}


class _ClassForward:
    """A model class's ``forward`` read without instantiating it (for signature checks)."""

    def __init__(self, cls: type):
        self.forward = cls.forward


def model_folder(value: Any, owner: str, base_dir: Path) -> Path:
    """The model folder, absolute; a hub name or a missing path is a :class:`WorkflowConfigError`."""
    path = resolve_path(value, owner, base_dir, "folder path")
    if not path.exists():
        if looks_like_hub_name(value):
            raise WorkflowConfigError(
                not_downloaded_message(value),
                owner=owner,
            )
        raise WorkflowConfigError(f"'{value}' does not exist (looked at {path}); fix the path", owner=owner)
    if not path.is_dir():
        raise WorkflowConfigError(
            f"'{path}' is a file; give the folder that holds config.json and the weights (save_pretrained)", owner=owner
        )
    return path


def check_load_kwargs(value: Any, owner: str) -> dict[str, Any]:
    """``load_kwargs`` checked key by key."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise WorkflowConfigError('expected an object like {"torch_dtype": "float32"}', owner=owner)
    for key, item in value.items():
        if key in _UNSUPPORTED_LOAD_KWARGS:
            if item is None:
                continue
            raise WorkflowConfigError(_UNSUPPORTED_LOAD_KWARGS[key], owner=f"{owner}.{key}")
        if key not in LOAD_KWARGS:
            raise WorkflowConfigError(
                f"unknown key{closest_match_hint(str(key), LOAD_KWARGS)}; valid keys: {', '.join(LOAD_KWARGS)}",
                owner=f"{owner}.{key}",
            )
        if key in ("torch_dtype", "dtype") and item is not None and item not in DTYPES:
            raise WorkflowConfigError(f"expected one of {', '.join(DTYPES)}, got {item!r}", owner=f"{owner}.{key}")
        if key == "device_map" and item not in (None, "cpu"):
            raise WorkflowConfigError(
                f"{item!r}: the model is loaded on the CPU for conversion; leave device_map out", owner=f"{owner}.{key}"
            )
        if key == "extra_args" and item is not None and not isinstance(item, Mapping):
            raise WorkflowConfigError("expected an object of from_pretrained keyword arguments", owner=f"{owner}.{key}")
        if key == "trust_remote_code" and not isinstance(item, bool):
            raise WorkflowConfigError(f"expected true or false, got {item!r}", owner=f"{owner}.{key}")
    return {k: v for k, v in value.items() if v is not None}
