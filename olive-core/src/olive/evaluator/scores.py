"""Classification scores in numpy (no scikit-learn); agreement scores live in :mod:`olive.measure.agreement`."""

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
