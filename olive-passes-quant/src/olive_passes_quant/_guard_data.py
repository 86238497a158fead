"""A fixed evaluation set for quantization variants: checked inputs and the float model's outputs on them.

Every variant a sensitivity analysis or guarded quantization tries is scored on the same batches, held in
memory, against reference outputs computed once (:class:`olive.measure.ReferenceOutputs`); each variant
costs one session and one pass over them. What is scored is :mod:`olive.measure`'s agreement, so the
guard's numbers are the engine's ``agreement`` metric's on the same data.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import ModelLoadError, OliveError, PassConfigError
from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR
from olive.measure import ModelRunError, OutputVectors, ReferenceOutputs, samples_at_real_length, settings_on_target
from olive_passes_quant._agreement import target_measures

if TYPE_CHECKING:
    import numpy as np

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler


def to_data_config(value: Any, owner: str, param: str = "data_config") -> Any:
    """A ``DataConfig`` from a DataConfig, its JSON form, or a path to an ``.npz`` file."""
    from olive.data.calibration import as_data_config
    from olive.data.config import DataConfig

    if isinstance(value, Mapping) and "name" not in value:
        value = {"name": param, **value}
    if isinstance(value, str | Path) and str(value).endswith(".npz") and not Path(value).is_file():
        raise PassConfigError(f"{owner}: {param} file '{value}' does not exist; write it with numpy.savez")
    try:
        return as_data_config(value, where=param) if not isinstance(value, DataConfig) else value
    except PassConfigError:
        raise
    except OliveError as exc:
        raise PassConfigError(f"{owner}: invalid {param}: {exc}") from exc


# Errors only: a search scores dozens of variants, and onnxruntime's per-session warnings would repeat for each.
QUIET = {"session_options": {"log_severity_level": 3}}


def scoring_settings(accelerator: AcceleratorSpec) -> dict[str, Any]:
    """The settings variants are scored with: quiet sessions on the pass's target (provider, options, device),
    so the agreement a guard keeps is the one the model has where it will run."""
    return settings_on_target(QUIET, accelerator)


def scores_on_target(accelerator: AcceleratorSpec) -> bool:
    """Whether scoring on ``accelerator`` differs from scoring on the default CPU target (its cache key then
    names the target)."""
    return accelerator.cache_key() != DEFAULT_CPU_ACCELERATOR.cache_key()


class EvalSet:
    """The batches variants are scored on, plus the float model's output vectors on them.

    :param reference: the float model's vectors on the batches, and how outputs become vectors.
    :param settings: the sessions' ``inference_settings``: the pass's target (provider, options, device), so
        variants are scored where the model will run.
    """

    def __init__(self, reference: ReferenceOutputs, settings: dict[str, Any] | None = None):
        self.reference = reference
        self.settings = dict(settings or QUIET)

    @property
    def batches(self) -> list[dict[str, np.ndarray]]:
        return self.reference.batches

    @property
    def num_samples(self) -> int:
        return self.reference.num_samples

    @classmethod
    def load(
        cls,
        data_config: Any,
        model: ONNXModelHandler,
        vectors: OutputVectors,
        max_samples: int | None,
        batch_size: int,
        owner: str,
        param: str = "data_config",
        trim_padding: bool = False,
        settings: dict[str, Any] | None = None,
    ) -> EvalSet:
        """Read up to ``max_samples`` samples in batches of ``batch_size``, check them against ``model``'s inputs
        and run ``model`` on them.

        With ``trim_padding``, ``batch_size`` 1 and the vectors' ``mask_input``, each sample's trailing
        padding is cut off, so it runs at its real length as a batch-1 service runs it.
        """
        from olive.data.calibration import CalibrationDataReader

        config = to_data_config(data_config, owner, param)
        io_config = model.get_io_config()
        try:
            vectors.check(io_config)
        except OliveError as exc:
            raise PassConfigError(exc.reason, owner=owner) from exc
        reader = CalibrationDataReader(config, max_samples=max_samples)
        try:
            reader.check_against(model)
            batches = [dict(feeds) for feeds in reader]
        except OliveError as exc:
            # The message already names the data config; add which pass and param used it.
            raise type(exc)(f"{owner}: {exc}") from exc
        batches = rebatch([b for b in batches if b and len(next(iter(b.values())))], batch_size)
        if trim_padding and batch_size == 1 and vectors.mask_input:
            batches = samples_at_real_length(batches, vectors.mask_input, io_config)
        if not batches:
            raise PassConfigError(f"{owner}: {param} ({config.where}) yields no samples; it needs at least one")
        try:
            reference = ReferenceOutputs.of_model(
                model.model_path, batches, vectors, settings or QUIET, what=f"the input model '{model.model_path}'"
            )
        except ModelRunError as exc:
            raise PassConfigError(
                f"{param} ({config.where}) does not fit the model: {exc.reason}", owner=owner
            ) from exc
        except ModelLoadError:
            raise
        except OliveError as exc:
            # The outputs cannot be compared as configured (pooling, pooled_output_func).
            raise PassConfigError(exc.reason, owner=owner) from exc
        return cls(reference, settings)

    def score(self, model: str | Path | bytes, what: str) -> dict[str, float]:
        """Agreement of a model (file path or serialized bytes) with the float model, on the measures targets name."""
        return target_measures(self.reference.score(model, self.settings, what))


def rebatch(batches: list[dict[str, Any]], batch_size: int) -> list[dict[str, Any]]:
    """Re-cut the data into batches of ``batch_size`` samples; samples of different shapes never share one."""
    import numpy as np

    rebatched: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            rebatched.append({k: np.concatenate([p[k] for p in pending]) for k in pending[0]})
            pending.clear()

    for batch in batches:
        for i in range(len(next(iter(batch.values())))):
            sample = {k: v[i : i + 1] for k, v in batch.items()}
            if pending and any(pending[0][k].shape[1:] != sample[k].shape[1:] for k in sample):
                flush()
            pending.append(sample)
            if len(pending) == batch_size:
                flush()
    flush()
    return rebatched
