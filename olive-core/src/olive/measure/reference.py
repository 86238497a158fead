"""A reference's per-sample vectors on fixed batches, and the agreement of other models with them.

Scoring many models against one reference (a quantization search's variants, a benchmark's rows, a pass's
output against its input) runs the reference once: :class:`ReferenceOutputs` keeps the batches and the
reference's vectors, and each model scored runs the same batches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.measure.agreement import agreement_scores
from olive.measure.outputs import OutputVectors
from olive.measure.sessions import create_session

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime


class ReferenceOutputs:
    """Batches plus the reference's vectors on them (``[samples, ...]``, see :class:`OutputVectors`).

    :param batches: model feeds, one dict per batch, in the order ``vectors`` holds their samples.
    :param vectors: the reference's vectors (one array, or a list of per-batch arrays as
        :meth:`OutputVectors.run` gives them); from a reference model, use :meth:`of_model`.
    :param output_vectors: how outputs become vectors (which outputs, pooling).
    """

    def __init__(self, batches: Sequence[Mapping[str, Any]], vectors: Any, output_vectors: OutputVectors | None = None):
        import numpy as np

        self.batches = [dict(batch) for batch in batches]
        if isinstance(vectors, list | tuple):
            self.vectors: np.ndarray | list[np.ndarray] = [np.asarray(v, dtype=np.float64) for v in vectors]
        else:
            self.vectors = np.asarray(vectors, dtype=np.float64)
        self.output_vectors = output_vectors or OutputVectors()

    @classmethod
    def of_model(
        cls,
        reference: Any,
        batches: Sequence[Mapping[str, Any]],
        output_vectors: OutputVectors | None = None,
        inference_settings: Mapping[str, Any] | None = None,
        what: str = "the reference model",
    ) -> ReferenceOutputs:
        """Run ``reference`` (see :func:`session_of`) on ``batches`` and keep its vectors."""
        output_vectors = output_vectors or OutputVectors()
        session = session_of(reference, inference_settings, what)
        return cls(batches, output_vectors.run(session, batches, what), output_vectors)

    @property
    def num_samples(self) -> int:
        if isinstance(self.vectors, list):
            return sum(len(batch) for batch in self.vectors)
        return len(self.vectors)

    def vectors_of(
        self, model: Any, inference_settings: Mapping[str, Any] | None = None, what: str = "the model"
    ) -> np.ndarray | list[np.ndarray]:
        """``model``'s vectors on the batches (see :func:`session_of` for what ``model`` may be)."""
        return self.output_vectors.run(session_of(model, inference_settings, what), self.batches, what)

    def score(
        self, model: Any, inference_settings: Mapping[str, Any] | None = None, what: str = "the model"
    ) -> dict[str, float]:
        """:func:`~olive.measure.agreement.agreement_scores` of ``model`` against the reference."""
        return agreement_scores(self.vectors_of(model, inference_settings, what), self.vectors)


def session_of(
    model: Any, inference_settings: Mapping[str, Any] | None = None, what: str | None = None
) -> onnxruntime.InferenceSession:
    """A session for ``model``: an ``InferenceSession`` as it is, a model handler through its
    ``prepare_session``, an ``.onnx`` path or serialized bytes through :func:`create_session`."""
    if hasattr(model, "run") and hasattr(model, "get_outputs"):
        return model
    if hasattr(model, "prepare_session"):
        return model.prepare_session(inference_settings=inference_settings)
    if isinstance(model, str | Path | bytes):
        return create_session(model, inference_settings, what=what)
    raise TypeError(f"cannot run {model!r}: give an InferenceSession, a model handler, an .onnx path or model bytes")
