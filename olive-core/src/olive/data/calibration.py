"""Feeding data to onnxruntime's quantization calibration, from whatever form a pass is given it in."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from olive.data.config import as_data_config
from olive.data.feeds import FeedReader, check_feeds

__all__ = ["CalibrationDataReader", "as_data_config", "check_feeds"]


class CalibrationDataReader(FeedReader):
    """onnxruntime's ``CalibrationDataReader`` over a data config, checked against a model on request.

    :param data_config: a :class:`~olive.data.config.DataConfig`, its JSON form, or a path to an ``.npz`` file.
    :param input_names: keep only these inputs in each batch (default: every array of the data, or the
        model's inputs once :meth:`check_against` has run).
    :param max_samples: stop after this many samples (rows), cutting the last batch.

    Instances are subclasses of ``onnxruntime.quantization.CalibrationDataReader``; onnxruntime is only
    imported when the first reader is made.
    """

    def __init__(self, data_config: Any, input_names: Sequence[str] | None = None, max_samples: int | None = None):
        super().__init__(as_data_config(data_config), input_names, max_samples)
