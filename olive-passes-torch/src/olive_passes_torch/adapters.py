"""PEFT LoRA adapters of a Hugging Face model: parsed from ``HfModel``'s ``adapter_path`` / ``adapters`` and
checked against the base model before anything runs.

A check reads ``adapter_config.json`` and the safetensors headers of the adapter and of the base checkpoint
(:mod:`.checkpoint_files`, which also says when a file is damaged; no weight is read, peft is not imported): the
adapter is LoRA (not DoRA), each ``lora_A`` / ``lora_B`` belongs to a module the base has, ``lora_A`` is ``[r, in]``
and ``lora_B`` is ``[out, r]`` for the base weight ``[out, in]`` and the adapter's rank, and a base model the adapter
names as a local folder has this model's config. Every problem is a :class:`WorkflowConfigError` (``olive run``
exits 2) naming the adapter, the module and both shapes.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from olive.exceptions import WorkflowConfigError
from olive_passes_torch.checkpoint_files import safetensors_header
from olive_passes_torch.torch_model import resolve_path

logger = logging.getLogger(__name__)

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors",)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# peft's saved names: base_model.model.<module>.lora_A.weight (".default" in older saves).
_LORA_KEY = re.compile(r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<which>[AB])(?:\.default)?\.weight$")
# Config fields that must agree between the base an adapter names and this model.
_SAME_CONFIG = (
    "model_type",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
)


def parse_adapters(adapter_path: Any, adapters: Any, json_path: str, base_dir: Path) -> dict[str, str]:
    """``{name: absolute folder}`` from ``adapter_path`` (named after its folder) and ``adapters``; each folder
    exists, names are unique and usable as file names."""
    found: dict[str, str] = {}

    def add(name: Any, value: Any, owner: str) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise WorkflowConfigError(
                f"adapter name {name!r} is not usable as a file name; use letters, digits, '.', '_' and '-'",
                owner=owner,
            )
        if name in found:
            raise WorkflowConfigError(f"a second adapter named '{name}'; give each adapter its own name", owner=owner)
        path = resolve_path(value, owner, base_dir, "folder path")
        if not path.is_dir():
            raise WorkflowConfigError(
                f"'{value}' is not a folder (looked at {path}); give the folder PeftModel.save_pretrained wrote",
                owner=owner,
            )
        found[name] = str(path)

    if adapter_path is not None:
        owner = f"{json_path}.adapter_path"
        path = resolve_path(adapter_path, owner, base_dir, "folder path")
        add(_safe_name(path.name), adapter_path, owner)
    if adapters is not None:
        if not isinstance(adapters, Mapping):
            raise WorkflowConfigError(
                'expected an object of adapter names and PEFT folders, like {"legal": "adapters/legal"}',
                owner=f"{json_path}.adapters",
            )
        for name, value in adapters.items():
            add(name, value, f"{json_path}.adapters.{name}")
    return found


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip("._-")
    return cleaned or "adapter"


def adapter_files(folder: Path) -> list[Path]:
    """The files of an adapter folder that make the adapter (its config and weights)."""
    return sorted(
        p for p in folder.iterdir() if p.is_file() and (p.name == ADAPTER_CONFIG or p.name.startswith("adapter_model"))
    )


def read_adapter_config(name: str, folder: Path, owner: str) -> dict[str, Any]:
    path = folder / ADAPTER_CONFIG
    if not path.is_file():
        raise WorkflowConfigError(
            f"adapter '{name}': '{folder}' has no {ADAPTER_CONFIG}, so it is not a PEFT adapter folder; save the "
            "adapter with PeftModel.save_pretrained(folder)",
            owner=owner,
        )
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WorkflowConfigError(f"adapter '{name}': cannot read '{path}' ({exc})", owner=owner) from exc
    if not isinstance(config, dict):
        raise WorkflowConfigError(f"adapter '{name}': '{path}' is not a JSON object", owner=owner)
    return config


def _meta_shapes(hf_config: Any) -> dict[str, list[int]] | None:
    """The parameter shapes of the model ``hf_config`` describes, built on PyTorch's meta device (no weights); None
    when it cannot be built that way."""
    import torch
    import transformers

    try:
        with torch.device("meta"):
            module = transformers.AutoModelForCausalLM.from_config(hf_config)
    except Exception as exc:
        logger.debug("cannot build the model on the meta device (%s); adapter shapes are not checked", exc)
        return None
    return {name: list(p.shape) for name, p in module.state_dict().items()}


def _rank_for(module: str, config: Mapping[str, Any]) -> int:
    for pattern, rank in (config.get("rank_pattern") or {}).items():
        if re.search(rf"(^|\.){pattern}$", module) or module == pattern:
            return int(rank)
    return int(config["r"])


def check_adapters(
    adapters: Mapping[str, str],
    model_path: Path,
    hf_config: Any,
    owner: str,
    base: Mapping[str, list[int]] | None = None,
) -> None:
    """Check every adapter against the model in ``model_path`` (see the module docstring); ``base``: the
    checkpoint's tensor shapes (:func:`.checkpoint_files.checkpoint_tensors`), else built on the meta device."""
    if base is None:
        base = _meta_shapes(hf_config)
    for name, folder in adapters.items():
        check_adapter(name, Path(folder), base, hf_config, model_path, f"{owner}.{name}")


def check_adapter(
    name: str, folder: Path, base: Mapping[str, list[int]] | None, hf_config: Any, model_path: Path, owner: str
) -> dict[str, list[int]]:
    """Check one adapter against the base's tensor shapes (None: they could not be read, and only the adapter's own
    files are checked); returns its LoRA tensor shapes by peft name."""
    config = read_adapter_config(name, folder, owner)
    kind = config.get("peft_type")
    if kind != "LORA":
        raise WorkflowConfigError(
            f"adapter '{name}' ({folder}) is a {kind or 'untyped'} adapter; only LoRA adapters (peft_type LORA) are "
            "taken",
            owner=owner,
        )
    if config.get("use_dora"):
        raise WorkflowConfigError(
            f"adapter '{name}' ({folder}) is a DoRA adapter (use_dora), whose magnitude vectors the decoder does "
            "not take; merge it into the weights (merge_and_unload) instead",
            owner=owner,
        )
    rank = config.get("r")
    if not isinstance(rank, int) or isinstance(rank, bool) or rank <= 0:
        raise WorkflowConfigError(
            f"adapter '{name}': {ADAPTER_CONFIG} gives rank r={rank!r}; expected a positive integer", owner=owner
        )
    _check_named_base(name, folder, config, hf_config, model_path, owner)
    weights = folder / ADAPTER_WEIGHTS[0]
    if not weights.is_file():
        found = ", ".join(sorted(p.name for p in folder.iterdir() if p.is_file())) or "nothing"
        raise WorkflowConfigError(
            f"adapter '{name}': '{folder}' has no {ADAPTER_WEIGHTS[0]} (it has {found}); save the adapter with "
            "PeftModel.save_pretrained(folder) (safetensors is its default)",
            owner=owner,
        )
    shapes = {key: list(shape) for key, (_, shape) in safetensors_header(weights, owner).items()}
    lora = {}
    others = []
    for key, shape in shapes.items():
        match = _LORA_KEY.match(key)
        if match:
            lora[key] = (match["module"], match["which"], shape)
        else:
            others.append(key)
    if others:
        shown = ", ".join(sorted(others)[:3]) + (" ..." if len(others) > 3 else "")
        raise WorkflowConfigError(
            f"adapter '{name}' ({weights}) holds weights other than LoRA A/B ({shown}: modules_to_save or trained "
            "embeddings), which adapter files cannot carry; train it without them or merge it (merge_and_unload)",
            owner=owner,
        )
    if not lora:
        raise WorkflowConfigError(f"adapter '{name}' ({weights}) holds no lora_A / lora_B weights", owner=owner)
    for module, which, shape in sorted(lora.values()) if base is not None else ():
        base_name = f"{module}.weight"
        base_shape = base.get(base_name)
        if base_shape is None:
            raise WorkflowConfigError(
                f"adapter '{name}': module {module} is not in the base model ({model_path}); the adapter was trained "
                "on another model",
                owner=owner,
            )
        if len(base_shape) != 2:
            raise WorkflowConfigError(
                f"adapter '{name}': module {module} of the base is not a linear layer (weight {base_shape})",
                owner=owner,
            )
        out_features, in_features = base_shape
        module_rank = _rank_for(module, config)
        expected = [module_rank, in_features] if which == "A" else [out_features, module_rank]
        if list(shape) != expected:
            raise WorkflowConfigError(
                f"adapter '{name}': module {module}: lora_{which} is {list(shape)} but this model's {base_name} is "
                f"{list(base_shape)} [out, in] and the adapter's rank is {module_rank}, which make lora_{which} "
                f"{expected}; the adapter was trained on another base model or with another rank than its "
                f"{ADAPTER_CONFIG} says",
                owner=owner,
            )
    return {key: shape for key, (_, _, shape) in lora.items()}


def _check_named_base(
    name: str, folder: Path, config: Mapping[str, Any], hf_config: Any, model_path: Path, owner: str
) -> None:
    """The base the adapter was trained on, when it names a local folder, has this model's config."""
    named = config.get("base_model_name_or_path")
    if not isinstance(named, str) or not named:
        return
    candidates = [Path(named)] if Path(named).is_absolute() else [Path(named), folder / named]
    base_folder = next((p for p in candidates if (p / "config.json").is_file()), None)
    if base_folder is None:
        # A hub name (or a folder not on this machine): the shapes are what can be checked.
        logger.debug("adapter %s names base %s, not a local folder; checking shapes only", name, named)
        return
    if base_folder.resolve() == model_path.resolve():
        return
    try:
        theirs = json.loads((base_folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    ours = hf_config.to_dict() if hasattr(hf_config, "to_dict") else dict(hf_config)
    differ = [k for k in _SAME_CONFIG if k in theirs and k in ours and theirs[k] != ours[k]]
    if differ:
        shown = ", ".join(f"{k} {theirs[k]} there, {ours[k]} here" for k in differ)
        raise WorkflowConfigError(
            f"adapter '{name}' was trained on {base_folder}, another model than {model_path} ({shown}); give the "
            "adapter with the model it was trained on",
            owner=owner,
        )
