"""What ``olive optimize`` needs to know about the input model before it writes a workflow.

:func:`read_model_facts` reads an ONNX file's graph (not its weights) or asks the installed model type
plugin (``olive.models`` entry points) about a model folder, and returns :class:`ModelFacts`: the inputs and
outputs, whether it is a transformer whose attention onnxruntime can fuse, which input is the attention mask,
whether its outputs are class scores or vectors, and where its tokenizer is.

Which path is which, and what a graph holds, are the model's rules (:mod:`olive.model.onnx_facts`): an ``.onnx``
file, or a folder holding one ``.onnx`` file, is an ONNX model; a folder with a ``config.json`` and no ``.onnx``
file is a Hugging Face model (``HfModel``, from ``olive-passes-torch``). An ONNX model's facts keep the handler
that read them (:attr:`ModelFacts.handler`), which the workflow then starts from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from olive.exceptions import ModelLoadError, WorkflowConfigError, closest_match_hint
from olive.model.handler import OliveModelHandler, ONNXModelHandler
from olive.model.hub import looks_like_hub_name, not_downloaded_message
from olive.model.onnx_facts import (
    FUSED_ATTENTION_OPS,
    GraphFacts,
    NoSingleOnnxFile,
    find_onnx_file,
    graph_facts,
    is_hugging_face_folder,
    mask_input,
)
from olive.model.onnx_scan import scan_onnx_bytes
from olive.model.types import handler_from_config

__all__ = ["FUSED_ATTENTION_OPS", "TOKENIZER_FILES", "ModelFacts", "model_facts_from_onnx", "read_model_facts"]

OPTION = "MODEL"
#: files a folder holds when a tokenizer was saved in it (``tokenizer.save_pretrained``)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model")
# Outputs whose values are class scores: agreement on them is the predicted class (top1).
_CLASS_SCORE_WORDS = ("logit", "prob", "score", "class", "label")
# Tasks of a Hugging Face model whose output is class (or token) scores.
_CLASSIFIER_TASKS = ("text-classification", "token-classification", "fill-mask", "text-generation")


@attrs.frozen
class ModelFacts:
    """What a workflow for this model depends on.

    :param model_type: the workflow's ``input_model.type`` (``ONNXModel``, ``HfModel``...).
    :param path: the model's file or folder, absolute.
    :param inputs: ``(name, shape, dtype)`` of each graph input (empty for a model not yet converted).
    :param outputs: ``(name, shape, dtype)`` of each graph output.
    :param attention_blocks: unfused attention blocks found (Softmax between two MatMuls).
    :param fused: the graph already holds onnxruntime's fused attention ops.
    :param decoder_with_past: an input carries past key/values (a generation cache).
    :param mask_input: the input holding the attention mask, if any.
    :param classifier: the first output is class scores (agreement is kept on the predicted class).
    :param tokenizer_dir: the folder of the model's tokenizer (beside the model), if any.
    :param task: a Hugging Face model's task.
    :param op_counts: op type -> nodes (ONNX only).
    :param max_sequence_length: the longest input the model takes (its position table), when known.
    :param handler: the handler that read an ONNX model's graph, holding what it read: the workflow built from
        these facts starts from it, so the file is read once.
    """

    model_type: str
    path: Path
    inputs: tuple[tuple[str, tuple[Any, ...], str], ...] = ()
    outputs: tuple[tuple[str, tuple[Any, ...], str], ...] = ()
    attention_blocks: int = 0
    fused: bool = False
    decoder_with_past: bool = False
    mask_input: str | None = None
    classifier: bool = False
    tokenizer_dir: Path | None = None
    task: str | None = None
    op_counts: dict[str, int] = attrs.field(factory=dict)
    max_sequence_length: int | None = None
    handler: OliveModelHandler | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def is_onnx(self) -> bool:
        return self.model_type == "ONNXModel"

    @property
    def transformer(self) -> bool:
        """A transformer whose attention onnxruntime's optimizer can fuse (a converted model is one when the
        plugin says it is a transformer: Hugging Face models all are)."""
        return (self.attention_blocks > 0 or self.model_type == "HfModel") and not self.fused

    @property
    def decoder(self) -> bool:
        """A Hugging Face causal language model (task ``text-generation``): it goes through onnxruntime-genai's
        builder, with a KV cache, rather than a plain ONNX export."""
        return self.model_type == "HfModel" and self.task == "text-generation"

    @property
    def first_output_rank(self) -> int | None:
        return len(self.outputs[0][1]) if self.outputs else None

    @property
    def sequence_output(self) -> bool:
        """The first output holds one vector per token (``[batch, sequence, hidden]``)."""
        if self.model_type == "HfModel":
            return self.task == "feature-extraction"
        return self.first_output_rank == 3

    def describe(self) -> str:
        """One line for the console: what kind of model this is taken to be."""
        kind = "transformer" if self.attention_blocks or self.model_type == "HfModel" else "model"
        if self.decoder:
            kind = "decoder (causal language model)"
        if self.fused:
            kind = "transformer (attention already fused)"
        parts = [f"{self.model_type} {kind}"]
        if self.attention_blocks:
            parts.append(f"{self.attention_blocks} attention block(s)")
        if self.task:
            parts.append(f"task {self.task}")
        if self.inputs:
            parts.append("inputs " + ", ".join(name for name, _, _ in self.inputs))
        if self.outputs:
            scores = " (next-token scores)" if self.decoder else " (class scores)" if self.classifier else ""
            parts.append("output " + self.outputs[0][0] + scores)
        return "; ".join(parts)


def read_model_facts(model: str | Path, task: str | None = None, owner: str = OPTION) -> ModelFacts:
    """The facts of the model at ``model``; raises :class:`WorkflowConfigError` (owned by ``owner``) naming what
    is wrong with the path and what to give instead."""
    path = Path(model).expanduser()
    if not path.exists():
        local = _looks_local(path, str(model))
        if local is not None:
            raise WorkflowConfigError(local, owner=owner)
        if looks_like_hub_name(str(model)):
            raise WorkflowConfigError(
                not_downloaded_message(str(model)),
                owner=owner,
            )
        raise WorkflowConfigError(
            f"'{model}' does not exist; give an ONNX file or a Hugging Face model folder", owner=owner
        )
    path = path.resolve()
    if path.is_dir():
        if task is None:
            try:
                return _onnx_facts(find_onnx_file(path), owner)
            except NoSingleOnnxFile as exc:
                if exc.found:
                    raise WorkflowConfigError(
                        f"'{model}' holds {len(exc.found)} .onnx files "
                        f"({', '.join(f.name for f in exc.found[:4])}); name the file",
                        owner=owner,
                    ) from None
        if task is not None or is_hugging_face_folder(path):
            return _hf_facts(path, task, owner)
        raise WorkflowConfigError(
            f"'{model}' is a folder with neither an .onnx file nor a Hugging Face config.json; give an ONNX file "
            "or a folder written by save_pretrained",
            owner=owner,
        )
    if task is not None:
        raise WorkflowConfigError(
            f"--task is for a Hugging Face model folder, and '{model}' is a file; leave --task out", owner="--task"
        )
    return _onnx_facts(path, owner)


#: what a model file is named like; a hub id (``org/name``) never ends so
_MODEL_SUFFIXES = (".onnx", ".pt", ".pth", ".bin", ".safetensors", ".ort")


def _looks_local(path: Path, given: str) -> str | None:
    """Why a missing ``path`` is a local path gone wrong (a typo in a file or folder name), naming the closest
    entry of the deepest folder that exists; None when it may be a hub id."""
    parent = path.parent
    named_like_a_path = path.suffix.lower() in _MODEL_SUFFIXES or path.is_absolute() or given.startswith((".", "~"))
    # 'org/name' may be a hub id when 'org' is not a folder here.
    if not named_like_a_path and (not parent.is_dir() or parent == Path()):
        return None
    missing = path
    while not missing.parent.is_dir() and missing.parent != missing.parent.parent:
        missing = missing.parent
    existing = missing.parent
    try:
        names = sorted(p.name for p in existing.iterdir())
    except OSError:
        names = []
    folder = "the current folder" if str(existing) == "." else f"'{existing}'"
    hint = closest_match_hint(missing.name, names)
    where = f"{folder} has no '{missing.name}'{hint}"
    return f"'{path}' does not exist: {where}; give an ONNX file or a Hugging Face model folder"


def _onnx_facts(path: Path, owner: str) -> ModelFacts:
    handler = ONNXModelHandler(str(path))
    try:
        graph = handler.graph_facts()
    except ModelLoadError as exc:
        raise WorkflowConfigError(exc.reason, owner=owner) from None
    if graph is None or not graph.has_nodes:
        _unreadable(path, owner)
    return _model_facts(graph, path, handler)


def _unreadable(path: Path, owner: str) -> None:
    """Raise what is wrong with a file whose scan found no graph, in onnx's own words when it has some."""
    import onnx

    try:
        onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise WorkflowConfigError(
            f"'{path}' cannot be read as an ONNX model ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); "
            "give an .onnx file (or a Hugging Face folder)",
            owner=owner,
        ) from None
    raise WorkflowConfigError(f"'{path}' holds an ONNX graph without nodes; nothing to optimize", owner=owner)


def model_facts_from_onnx(proto: Any, path: Path) -> ModelFacts:
    """The facts of an ONNX graph (``onnx.ModelProto``) saved at ``path``."""
    return _model_facts(graph_facts(scan_onnx_bytes(proto.SerializeToString())), path)


def _model_facts(graph: GraphFacts, path: Path, handler: OliveModelHandler | None = None) -> ModelFacts:
    first_output = graph.outputs[0][0].lower() if graph.outputs else ""
    folder = path.parent
    return ModelFacts(
        model_type="ONNXModel",
        path=path,
        inputs=graph.inputs,
        outputs=graph.outputs,
        attention_blocks=graph.attention_blocks,
        fused=graph.fused,
        decoder_with_past=any("past" in name.lower() for name, _, _ in graph.inputs),
        mask_input=graph.mask_input,
        classifier=any(word in first_output for word in _CLASS_SCORE_WORDS),
        tokenizer_dir=folder if any((folder / name).is_file() for name in TOKENIZER_FILES) else None,
        op_counts=graph.op_counts,
        handler=handler,
    )


def _hf_facts(path: Path, task: str | None, owner: str) -> ModelFacts:
    """A Hugging Face folder, through the ``HfModel`` type its plugin registers (reads the config, not weights)."""
    fields: dict[str, Any] = {"type": "HfModel", "model_path": str(path)}
    if task is not None:
        fields["task"] = task
    try:
        handler = handler_from_config(fields, owner, Path.cwd())
        handler.validate()
    except WorkflowConfigError as exc:
        where = "--task" if (exc.owner or "").endswith(".task") else owner
        raise WorkflowConfigError(exc.reason, owner=where) from exc
    except ModelLoadError as exc:
        raise WorkflowConfigError(exc.reason, owner=owner) from exc
    try:
        resolved = getattr(handler, "resolved_task", None) or task
        # The plugin's own view of what the conversion will give (names inferred from the config and tokenizer;
        # remembered from an earlier check of the same folder, so a rerun imports no transformers).
        names_of = getattr(handler, "input_output_names", None)
        names, output_names = names_of() if names_of is not None else ([], [])
    except WorkflowConfigError as exc:
        where = "--task" if (exc.owner or "").endswith(".task") else owner
        raise WorkflowConfigError(exc.reason, owner=where) from exc
    outputs = tuple((name, (), "float32") for name in output_names)
    mask = mask_input(names) if names else None
    has_tokenizer = any((path / name).is_file() for name in TOKENIZER_FILES)
    positions = getattr(handler, "max_positions", None)
    return ModelFacts(
        model_type="HfModel",
        path=path,
        inputs=tuple((name, ("batch_size", "sequence_length"), "int64") for name in names),
        outputs=outputs,
        mask_input=mask,
        classifier=resolved in _CLASSIFIER_TASKS,
        tokenizer_dir=path if has_tokenizer else None,
        task=resolved,
        max_sequence_length=positions if isinstance(positions, int) and positions > 0 else None,
    )
