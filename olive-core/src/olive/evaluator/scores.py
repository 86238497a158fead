"""Classification and agreement scores in numpy (no scikit-learn)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def classification_scores(y_true: Any, y_pred: Any, sub_type: str, config: Mapping[str, Any] | None = None) -> float:
    """``accuracy_score``, ``f1_score``, ``precision`` or ``recall``, as scikit-learn defines them.

    ``config["average"]``: ``binary`` (default when the labels are 0/1), ``macro`` (default otherwise),
    ``micro`` or ``weighted``; ``config["pos_label"]`` (default 1) for ``binary``.
    """
    import numpy as np

    config = dict(config or {})
    y_true = np.asarray(y_true).reshape(-1)
    y_pred = np.asarray(y_pred).reshape(-1)
    if y_true.size == 0:
        return 0.0
    if sub_type == "accuracy_score":
        return float(np.mean(y_true == y_pred))
    classes = np.union1d(y_true, y_pred)
    average = config.get("average") or ("binary" if set(classes.tolist()) <= {0, 1} else "macro")
    if average == "binary":
        classes = np.asarray([config.get("pos_label", 1)])
    tp = np.asarray([np.sum((y_pred == c) & (y_true == c)) for c in classes], dtype=np.float64)
    fp = np.asarray([np.sum((y_pred == c) & (y_true != c)) for c in classes], dtype=np.float64)
    fn = np.asarray([np.sum((y_pred != c) & (y_true == c)) for c in classes], dtype=np.float64)
    if average == "micro":
        tp, fp, fn = tp.sum(keepdims=True), fp.sum(keepdims=True), fn.sum(keepdims=True)
    precision = np.divide(tp, tp + fp, out=np.zeros_like(tp), where=(tp + fp) > 0)
    recall = np.divide(tp, tp + fn, out=np.zeros_like(tp), where=(tp + fn) > 0)
    f1 = np.divide(2 * tp, 2 * tp + fp + fn, out=np.zeros_like(tp), where=(2 * tp + fp + fn) > 0)
    per_class = {"precision": precision, "recall": recall, "f1_score": f1}[sub_type]
    if average == "weighted":
        support = np.asarray([np.sum(y_true == c) for c in classes], dtype=np.float64)
        return float(np.sum(per_class * support) / support.sum()) if support.sum() else 0.0
    return float(per_class.mean())


def agreement_scores(candidate: Any, reference: Any) -> dict[str, float]:
    """How closely ``candidate`` outputs follow ``reference`` (both ``[samples, ...]``).

    ``cosine_mean`` / ``cosine_min``: cosine similarity of each sample's flattened output (two zero
    vectors agree fully); ``max_abs_diff``: largest elementwise difference; ``top1``: share of positions
    whose argmax over the last axis agrees.
    """
    import numpy as np

    a = np.asarray(candidate, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    flat_a = a.reshape(len(a), -1)
    flat_b = b.reshape(len(b), -1)
    norm_a = np.linalg.norm(flat_a, axis=1)
    norm_b = np.linalg.norm(flat_b, axis=1)
    dot = np.sum(flat_a * flat_b, axis=1)
    denom = norm_a * norm_b
    cosine = np.where(
        denom > 0, dot / np.where(denom > 0, denom, 1.0), np.where((norm_a == 0) & (norm_b == 0), 1.0, 0.0)
    )
    # identical outputs score exactly 1.0, not 1 - rounding error
    cosine = np.where(np.all(flat_a == flat_b, axis=1), 1.0, np.clip(cosine, -1.0, 1.0))
    if a.ndim >= 2 and a.shape[-1] > 1:
        top1 = float(np.mean(a.argmax(axis=-1) == b.argmax(axis=-1)))
    else:
        top1 = float(np.mean(np.sign(a) == np.sign(b)))
    return {
        "cosine_mean": float(cosine.mean()),
        "cosine_min": float(cosine.min()),
        "max_abs_diff": float(np.max(np.abs(a - b))) if a.size else 0.0,
        "top1": top1,
    }
