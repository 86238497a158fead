"""Hugging Face tasks this distribution converts, and what each exports.

A task names the model class that loads the checkpoint (``AutoModelForSequenceClassification`` for
``text-classification``) and the outputs the ONNX model gets. Decoders are exported without past key
values (``text-generation``); Olive's ``*-with-past`` tasks are refused with that alternative.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from olive.exceptions import WorkflowConfigError, closest_match_hint

if TYPE_CHECKING:
    import transformers

BATCH = "batch_size"
SEQUENCE = "sequence_length"


@attrs.frozen
class Task:
    """One task: the auto class that loads it, its mapping in ``transformers.models.auto.modeling_auto``, the
    outputs it exports and their free axes."""

    name: str
    auto_class: str
    mapping: str
    output_names: tuple[str, ...]
    output_axes: dict[str, dict[int, str]]


_SEQ_AXES = {0: BATCH, 1: SEQUENCE}
TASKS: dict[str, Task] = {
    "feature-extraction": Task(
        "feature-extraction",
        "AutoModel",
        "MODEL_MAPPING_NAMES",
        ("last_hidden_state",),
        {"last_hidden_state": _SEQ_AXES},
    ),
    "text-classification": Task(
        "text-classification",
        "AutoModelForSequenceClassification",
        "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
        ("logits",),
        {"logits": {0: BATCH}},
    ),
    "fill-mask": Task(
        "fill-mask", "AutoModelForMaskedLM", "MODEL_FOR_MASKED_LM_MAPPING_NAMES", ("logits",), {"logits": _SEQ_AXES}
    ),
    "token-classification": Task(
        "token-classification",
        "AutoModelForTokenClassification",
        "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
        ("logits",),
        {"logits": _SEQ_AXES},
    ),
    "text-generation": Task(
        "text-generation",
        "AutoModelForCausalLM",
        "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
        ("logits",),
        {"logits": _SEQ_AXES},
    ),
}
# Other names of the same tasks (transformers pipelines, sentence-transformers, older Olive files).
ALIASES = {
    "sentence-similarity": "feature-extraction",
    "default": "feature-extraction",
    "sequence-classification": "text-classification",
    "sentiment-analysis": "text-classification",
    "masked-lm": "fill-mask",
    "ner": "token-classification",
    "causal-lm": "text-generation",
}
# Inputs a tokenizer may give that the exported model takes, in the order they are tried when the folder
# has no tokenizer to ask.
TEXT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Parameters of the base model that the conversion check may leave out of missing weights: not part of what
# the task exports.
_UNUSED_BY_TASK = {"feature-extraction": ("pooler.",)}


def normalize_task(task: Any, owner: str) -> str:
    """The canonical name of ``task``; an unknown or unsupported one is a :class:`WorkflowConfigError`."""
    if not isinstance(task, str) or not task:
        raise WorkflowConfigError(f"expected a task name such as 'feature-extraction', got {task!r}", owner=owner)
    name = ALIASES.get(task, task)
    if name in TASKS:
        return name
    if name.endswith("-with-past"):
        base = name.removesuffix("-with-past")
        instead = f"use '{base}', exported without a cache" if base in TASKS else f"supported: {', '.join(TASKS)}"
        raise WorkflowConfigError(f"'{task}': past key values are not exported by this version; {instead}", owner=owner)
    raise WorkflowConfigError(
        f"unknown or unsupported task '{task}'{closest_match_hint(task, [*TASKS, *ALIASES])}; supported: "
        f"{', '.join(TASKS)}",
        owner=owner,
    )


def _mapping(task: Task) -> dict[str, str]:
    from transformers.models.auto import modeling_auto

    return dict(getattr(modeling_auto, task.mapping))


def tasks_for_config(config: transformers.PretrainedConfig) -> list[str]:
    """The tasks transformers has a model class for, for this config's model type."""
    return [name for name, task in TASKS.items() if config.model_type in _mapping(task)]


def task_from_architectures(config: transformers.PretrainedConfig) -> str | None:
    """The task the checkpoint was saved for, from ``config.architectures`` (None when it does not say)."""
    for architecture in config.architectures or []:
        for name, task in TASKS.items():
            if _mapping(task).get(config.model_type) == architecture:
                return name
    return None


def model_class(task: str, config: transformers.PretrainedConfig) -> type:
    """The transformers class that loads ``config`` for ``task`` (no weights are read)."""
    import transformers

    auto = getattr(transformers, TASKS[task].auto_class)
    return auto._model_mapping[type(config)]


def missing_weights(task: str, missing: set[str] | list[str]) -> list[str]:
    """The missing checkpoint weights the exported outputs depend on (what loading initialized at random)."""
    unused = _UNUSED_BY_TASK.get(task, ())
    return sorted(k for k in missing if not any(part in k for part in unused))
