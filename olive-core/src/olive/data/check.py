"""Checking a workflow's ``.npz`` data against its input model before anything runs (``olive run --dry-run``
and the start of every run).

Only the arrays' headers are read (:func:`~olive.data.npz.read_npz_headers`): names, ranks, fixed
dimensions and dtypes are checked with the rules the evaluator and the calibration readers apply to real
batches (:func:`~olive.data.feeds.check_feed_specs`, the shapes-and-dtypes half of ``check_feeds``), so a run
served from the cache needs no numpy. A file that is not an ``.npz`` of numeric arrays is a config error that
says how to write one; nothing is ever unpickled.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from olive.data.config import DataConfig
from olive.data.feeds import check_feed_specs
from olive.data.npz import LABEL_KEYS, read_npz_headers
from olive.data.split import MIN_SAMPLES_PER_ROLE, shared_data_too_small, too_few_samples
from olive.exceptions import OliveError, WorkflowConfigError
from olive.model.handler import ONNXModelHandler

if TYPE_CHECKING:
    from olive.config import WorkflowConfig

NPZ_CONTAINER = "NpzDataContainer"


def _uses(workflow: WorkflowConfig) -> Iterator[tuple[DataConfig, bool]]:
    """Each data config the workflow uses, with whether its dtypes must match the model's exactly (a pass's
    calibration data for the first pass; metrics cast floats to the width a model takes)."""
    evaluator = workflow.evaluator
    for metric in evaluator.metrics if evaluator is not None else []:
        config = metric.inline_data_config or workflow.data_configs.get(metric.data_config or "")
        if isinstance(config, DataConfig):
            yield config, False
    first = next(iter(workflow.passes), None)
    for key, specs in workflow.passes.items():
        for spec in specs:
            value = spec.params.get("data_config")
            if isinstance(value, str) and value.endswith(".npz"):
                value = DataConfig.from_json(
                    {"name": f"{key}_data", "type": NPZ_CONTAINER, "load_dataset_config": {"data_path": value}},
                    json_path=f"{spec.params_path}.data_config",
                )
            if isinstance(value, DataConfig):
                # A later pass may take a model whose inputs an earlier pass changed (float16): same kind only.
                yield value, key == first


def check_workflow_data(workflow: WorkflowConfig) -> None:
    """Raise :class:`WorkflowConfigError` naming the data config when an ``.npz`` it uses cannot be read or
    does not fit the input model's inputs (names, ranks, fixed dimensions, dtypes)."""
    model = None
    seen: dict[int, bool] = {}
    for config, exact in _uses(workflow):
        if config.type != NPZ_CONTAINER or config.load_dataset_config.type:
            continue
        if seen.get(id(config)) in (exact, True):
            continue
        seen[id(config)] = exact
        if model is None:
            handler = workflow.input_model.create_handler()
            if not isinstance(handler, ONNXModelHandler):
                return
            model = handler
        check_npz_config(config, model.get_io_config(), exact=exact)


def check_npz_config(config: DataConfig, io_config: dict[str, Any], exact: bool = False) -> None:
    """Check one ``NpzDataContainer`` config's file against a model's ``io_config``."""
    params = config.load_dataset_config.params
    path = params.get("data_path") or params.get("data_dir")
    where = f"{config.json_path or config.name}.load_dataset_config.data_path"
    if not isinstance(path, str):
        raise WorkflowConfigError(f"expected the path of an .npz file (a string), got {path!r}", owner=where)
    try:
        headers = read_npz_headers(path)
    except OliveError as exc:
        raise WorkflowConfigError(exc.reason, owner=where) from None
    inputs = {key: header for key, header in headers.items() if key not in LABEL_KEYS}
    if not inputs:
        raise WorkflowConfigError(f"'{path}' holds no input arrays; save one array per model input name", owner=where)
    lengths = {key: shape[0] if shape else None for key, (shape, _) in headers.items()}
    if None in lengths.values() or len(set(lengths.values())) != 1:
        shown = ", ".join(f"{k}: {v}" for k, v in lengths.items())
        raise WorkflowConfigError(
            f"arrays in '{path}' disagree on the number of samples (first axis) ({shown}); every array needs one "
            "row per sample",
            owner=where,
        )
    batch_size = config.dataloader_config.params.get("batch_size")
    rows = min(next(iter(lengths.values())), batch_size if isinstance(batch_size, int) and batch_size > 0 else 1)
    batch = {key: ((rows, *shape[1:]), dtype) for key, (shape, dtype) in inputs.items()}
    try:
        check_feed_specs(batch, io_config, f"data config '{config.name}' ('{path}')", "the input model", cast=not exact)
    except OliveError as exc:
        raise WorkflowConfigError(exc.reason, owner=where) from None
    if config.role is not None and config.split_required:
        # After the arrays fit the model: a file that does not is the problem to fix first.
        _check_split_count(config, _samples(next(iter(lengths.values())), params.get("max_samples")))


def known_sample_count(config: DataConfig) -> int | None:
    """How many samples ``config`` yields, where its file's headers tell (an ``.npz`` read by the built-in
    loader); None where only loading it would (or the file cannot be read: the data check says why)."""
    if config.type != NPZ_CONTAINER or config.load_dataset_config.type:
        return None
    params = config.load_dataset_config.params
    path = params.get("data_path") or params.get("data_dir")
    if not isinstance(path, str):
        return None
    try:
        headers = read_npz_headers(path)
    except OliveError:
        return None
    rows = {shape[0] if shape else None for key, (shape, _) in headers.items() if key not in LABEL_KEYS}
    if len(rows) != 1 or None in rows:
        return None
    return _samples(rows.pop(), params.get("max_samples"))


def _samples(rows: int, max_samples: Any) -> int:
    return min(rows, max_samples) if isinstance(max_samples, int) and max_samples > 0 else rows


def _check_split_count(config: DataConfig, count: int) -> None:
    """A data config split into a fitting and a judging part holds enough samples for both (the rule of
    :func:`olive.data.split.split_indices`, read from the headers)."""
    if count >= 2 * MIN_SAMPLES_PER_ROLE:
        return
    raise WorkflowConfigError(shared_data_too_small(too_few_samples(count)), owner=config.json_path or config.name)
