"""A fixed evaluation set for quantization variants: checked inputs and the float model's outputs on them.

Every variant a sensitivity analysis or guarded quantization tries is scored on the same batches, held in
memory, against reference outputs computed once; each variant costs one session and one pass over them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.data.padding import trim_right_padding
from olive.exceptions import OliveError, PassConfigError
from olive_passes_quant._agreement import OutputComparer, agreement

if TYPE_CHECKING:
    import numpy as np

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


def session(model: str | Path | bytes, what: str) -> Any:
    """A CPU onnxruntime session for a model file or serialized model; a refusal is an :class:`OliveError`."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        source = model if isinstance(model, bytes) else str(model)
        return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise OliveError(f"onnxruntime cannot load {what} ({type(exc).__name__}: {exc})") from exc


class EvalSet:
    """Batches of checked inputs plus the reference model's output vectors on them.

    :param batches: model feeds, one dict per batch.
    :param comparer: turns outputs into per-sample vectors.
    :param reference: ``[samples, features]`` vectors of the float model.
    """

    def __init__(self, batches: list[dict[str, np.ndarray]], comparer: OutputComparer, reference: np.ndarray):
        self.batches = batches
        self.comparer = comparer
        self.reference = reference

    @property
    def num_samples(self) -> int:
        return int(self.reference.shape[0])

    @classmethod
    def load(
        cls,
        data_config: Any,
        model: ONNXModelHandler,
        comparer: OutputComparer,
        max_samples: int | None,
        batch_size: int,
        owner: str,
        param: str = "data_config",
        trim_padding: bool = False,
    ) -> EvalSet:
        """Read up to ``max_samples`` samples in batches of ``batch_size``, check them against ``model``'s inputs
        and run ``model`` on them.

        With ``trim_padding``, ``batch_size`` 1 and the comparer's ``mask_input``, each sample's trailing
        padding is cut off, so it runs at its real length as a batch-1 service runs it.
        """
        from olive.data.calibration import CalibrationDataReader

        config = to_data_config(data_config, owner, param)
        io_config = model.get_io_config()
        comparer.check(io_config["output_names"], io_config["input_names"], owner)
        reader = CalibrationDataReader(config, max_samples=max_samples)
        try:
            reader.check_against(model)
            batches = [dict(feeds) for feeds in reader]
        except OliveError as exc:
            # The message already names the data config; add which pass and param used it.
            raise type(exc)(f"{owner}: {exc}") from exc
        batches = rebatch([b for b in batches if b and len(next(iter(b.values())))], batch_size)
        if trim_padding and batch_size == 1 and comparer.mask_input:
            batches = [trim_right_padding(b, comparer.mask_input, io_config) for b in batches]
        if not batches:
            raise PassConfigError(f"{owner}: {param} ({config.where}) yields no samples; it needs at least one")
        evalset = cls(batches, comparer, _empty())
        reference_session = session(model.model_path, f"the input model '{model.model_path}'")
        try:
            evalset.reference = evalset.vectors(reference_session)
        except _RunFailed as exc:
            raise PassConfigError(f"{owner}: {param} ({config.where}) does not fit the model: {exc}") from exc
        except OliveError as exc:
            # The outputs cannot be compared as configured (pooling, pooled_output_func).
            raise PassConfigError(f"{owner}: {exc}") from exc
        return evalset

    def vectors(self, model_session: Any) -> np.ndarray:
        import numpy as np

        names = [o.name for o in model_session.get_outputs()]
        parts = []
        for feeds in self.batches:
            try:
                values = model_session.run(None, feeds)
            except Exception as exc:
                raise _RunFailed(f"running the model on the data failed ({type(exc).__name__}: {exc})") from exc
            parts.append(self.comparer.vectors(dict(zip(names, values, strict=True)), feeds))
        return np.concatenate(parts, axis=0)

    def score(self, model: str | Path | bytes, what: str) -> dict[str, float]:
        """Agreement of a model (file path or serialized bytes) with the reference outputs."""
        return agreement(self.reference, self.vectors(session(model, what)))


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


class _RunFailed(OliveError):
    """onnxruntime refused a batch (wrong shapes or values for the model)."""


def _empty() -> np.ndarray:
    import numpy as np

    return np.zeros((0, 0))
