"""From a model's outputs on a batch to the vectors agreement is computed on, one per sample."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from olive.exceptions import OliveError, closest_match_hint
from olive.measure.pooling import pool
from olive.measure.sessions import ModelRunError

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime


class OutputVectors:
    """Which outputs are compared and how each sample's outputs become the vector agreement is taken on.

    :param output_names: the outputs to compare (default: all of them, in the model's order).
    :param pooling: ``"mean"`` (weighted by ``mask_input`` when the batch holds it), ``"cls"``, or
        ``None``/``"none"``; see :mod:`olive.measure.pooling`.
    :param mask_input: the attention-mask input mean pooling weighs positions by.
    :param pooled_output_func: ``f(outputs: dict[str, ndarray], inputs: dict[str, ndarray]) -> ndarray`` with
        samples on the first axis; replaces ``output_names`` and ``pooling``.
    :param owner: what errors are about (a metric, a pass); named in their messages.

    One output keeps its shape after the sample axis (``top1`` looks at its last axis); several are
    flattened per sample and joined.
    """

    def __init__(
        self,
        output_names: Sequence[str] | None = None,
        pooling: str | None = None,
        mask_input: str | None = None,
        pooled_output_func: Callable[..., Any] | None = None,
        owner: str | None = None,
    ):
        self.output_names = list(output_names) if output_names else None
        self.pooling = None if pooling in (None, "none") else pooling
        self.mask_input = mask_input
        self.pooled_output_func = pooled_output_func
        self.owner = owner

    def check(self, io_config: Mapping[str, Any]) -> None:
        """Output and mask names that the model does not have are errors, raised before anything runs."""
        outputs, inputs = list(io_config["output_names"]), list(io_config["input_names"])
        for name in self.output_names or []:
            if name not in outputs:
                raise OliveError(
                    f"output_name '{name}' is not an output of the model{closest_match_hint(name, outputs)}; "
                    f"outputs: {', '.join(outputs)}",
                    owner=self.owner,
                )
        if self.mask_input and self.pooling == "mean" and self.mask_input not in inputs:
            raise OliveError(
                f"mask_input '{self.mask_input}' is not an input of the model"
                f"{closest_match_hint(self.mask_input, inputs)}; inputs: {', '.join(inputs)}",
                owner=self.owner,
            )

    def of(self, outputs: Mapping[str, Any], feeds: Mapping[str, Any]) -> np.ndarray:
        """The float64 vectors of one batch, samples on the first axis."""
        import numpy as np

        if self.pooled_output_func is not None:
            return self._user_pooled(outputs, feeds)
        names = self.output_names or list(outputs)
        missing = [name for name in names if name not in outputs]
        if missing:
            raise OliveError(
                f"the model gave no output {', '.join(repr(n) for n in missing)}; it gave {', '.join(outputs)}",
                owner=self.owner,
            )
        mask = feeds.get(self.mask_input) if self.mask_input else None
        try:
            parts = [pool(outputs[name], self.pooling, mask, name, self.mask_input or "mask") for name in names]
        except OliveError as exc:
            raise OliveError(exc.reason, owner=self.owner) from exc
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([part.reshape(len(part), -1) for part in parts], axis=1)

    def run(
        self, session: onnxruntime.InferenceSession, batches: Iterable[Mapping[str, Any]], what: str = "the model"
    ) -> np.ndarray | list[np.ndarray]:
        """The vectors of every batch run through ``session``, joined on the sample axis.

        Batches whose vectors differ in shape after the sample axis (unpooled samples at their real length)
        come back as a list of per-batch arrays, which the agreement functions take as they are.
        """
        import numpy as np

        names = [output.name for output in session.get_outputs()]
        parts = []
        for feeds in batches:
            try:
                values = session.run(None, dict(feeds))
            except Exception as exc:
                raise ModelRunError(
                    f"running {what} on the data failed ({type(exc).__name__}: {exc})", owner=self.owner
                ) from exc
            parts.append(self.of(dict(zip(names, values, strict=True)), feeds))
        if not parts:
            raise OliveError("there is no batch to run", owner=self.owner)
        if any(part.shape[1:] != parts[0].shape[1:] for part in parts):
            return parts
        return np.concatenate(parts, axis=0)

    def _user_pooled(self, outputs: Mapping[str, Any], feeds: Mapping[str, Any]) -> np.ndarray:
        import numpy as np

        func = self.pooled_output_func
        label = getattr(func, "__name__", func)
        try:
            pooled = np.asarray(func(dict(outputs), dict(feeds)), dtype=np.float64)
        except Exception as exc:
            raise OliveError(
                f"pooled_output_func '{label}' failed ({type(exc).__name__}: {exc}); it is called as "
                "f(outputs: dict of arrays, inputs: dict of arrays)",
                owner=self.owner,
            ) from exc
        samples = len(next(iter(feeds.values())))
        if pooled.ndim == 0 or pooled.shape[0] != samples:
            raise OliveError(
                f"pooled_output_func '{label}' returned shape {list(pooled.shape)}; it must put the batch's "
                f"{samples} samples on the first axis",
                owner=self.owner,
            )
        return pooled.reshape(samples, -1)
