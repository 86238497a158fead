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
from olive.measure import (
    ModelRunError,
    OutputVectors,
    ReferenceOutputs,
    create_session,
    served_batches,
    settings_on_target,
    worst_over_batch_sizes,
)
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

    def __init__(
        self,
        reference: ReferenceOutputs | Mapping[int, ReferenceOutputs],
        settings: dict[str, Any] | None = None,
    ):
        # one reference per served batch size, each on the samples batched at that size
        self.by_size: dict[int, ReferenceOutputs] = (
            dict(reference) if isinstance(reference, Mapping) else {0: reference}
        )
        self.reference = next(iter(self.by_size.values()))
        self.settings = dict(settings or QUIET)

    @property
    def batches(self) -> list[dict[str, np.ndarray]]:
        """The samples in the batches of the first batch size (static quantization calibrates on them)."""
        return self.reference.batches

    @property
    def num_samples(self) -> int:
        return self.reference.num_samples

    @property
    def batch_sizes(self) -> list[int]:
        """The served batch sizes scored at (empty: the data's own batches)."""
        return [size for size in self.by_size if size]

    @classmethod
    def load(
        cls,
        data_config: Any,
        model: ONNXModelHandler,
        vectors: OutputVectors,
        max_samples: int | None,
        batch_size: int | list[int],
        owner: str,
        param: str = "data_config",
        trim_padding: bool = False,
        settings: dict[str, Any] | None = None,
    ) -> EvalSet:
        """Read up to ``max_samples`` samples, check them against ``model``'s inputs, serve them at each of
        ``batch_size`` (one size or a list; :func:`olive.measure.served_batches`: shuffled with a fixed seed, batched
        together, padded as the data is) and run ``model`` on them.

        With ``trim_padding`` and the vectors' ``mask_input``, each sample served at batch size 1 has its trailing
        padding cut off, so it runs at its real length as a batch-1 service runs it.
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
        batches = [b for b in batches if b and len(next(iter(b.values())))]
        if not batches:
            raise PassConfigError(f"{owner}: {param} ({config.where}) yields no samples; it needs at least one")
        sizes = sorted(set(batch_size if isinstance(batch_size, list) else [batch_size]))
        mask = vectors.mask_input if trim_padding else None
        try:
            references = {
                size: ReferenceOutputs.of_model(
                    model.model_path,
                    served_batches(batches, size, mask, io_config),
                    vectors,
                    settings or QUIET,
                    what=f"the input model '{model.model_path}'",
                )
                for size in sizes
            }
        except ModelRunError as exc:
            raise PassConfigError(
                f"{param} ({config.where}) does not fit the model: {exc.reason}", owner=owner
            ) from exc
        except ModelLoadError:
            raise
        except OliveError as exc:
            # The outputs cannot be compared as configured (pooling, pooled_output_func).
            raise PassConfigError(exc.reason, owner=owner) from exc
        return cls(references, settings)

    def score(self, model: str | Path | bytes, what: str) -> dict[str, float]:
        """Agreement of a model (file path or serialized bytes) with the float model, on the measures targets name:
        the worst over the served batch sizes."""
        if len(self.by_size) == 1:
            return target_measures(self.reference.score(model, self.settings, what))
        # One session for every batch size: a variant costs one load however many sizes it is scored at.
        session = create_session(model, self.settings, what=what)
        by_size = {size: reference.score(session, what=what) for size, reference in self.by_size.items()}
        worst, _ = worst_over_batch_sizes(by_size)
        return target_measures(worst)
