"""What Olive measures, defined once: the evaluator, the passes, the benchmarks and plugin authors use it.

A pass that compares its output model with its input model, a test that checks a pass keeps a model's
outputs, and a metric that times a model all get the same numbers as Olive's own ``agreement`` and
``latency`` metrics by calling these functions::

    from olive.measure import ReferenceOutputs, create_session, latency_summary, session_runner, synthetic_inputs
    from olive.measure import timed_runs

    feeds = synthetic_inputs(model.get_io_config())             # or batches of real data
    reference = ReferenceOutputs.of_model(model, [feeds])       # the input model's outputs, run once
    scores = reference.score(output_model)                      # {"cosine_mean", "cosine_min", "max_abs_diff", "top1"}

    session = create_session(output_model.model_path, {"session_options": {"intra_op_num_threads": 2}})
    latency_ms = latency_summary([s * 1000 for s in timed_runs(session_runner(session, feeds), repeat=50, warmup=5)])

Modules, one concept each:

- :mod:`olive.measure.agreement`: :func:`agreement_scores` (``cosine_mean``, ``cosine_min``, ``max_abs_diff``,
  ``top1``) and :func:`cosine_similarities`. Identical outputs score exactly 1.0, two zero vectors agree.
- :mod:`olive.measure.pooling`: mean pooling over the tokens an attention mask keeps (the mask's shape is
  checked against the output), first-token (``cls``) pooling.
- :mod:`olive.measure.outputs`: :class:`OutputVectors`, which outputs are compared and how a batch's outputs
  become one vector per sample.
- :mod:`olive.measure.reference`: :class:`ReferenceOutputs`, a reference's vectors on fixed batches, against
  which any number of models are scored.
- :mod:`olive.measure.padding`: running a padded sample at its real length (:func:`trim_right_padding`,
  :func:`samples_at_real_length`).
- :mod:`olive.measure.batching`: batches as a server makes them (:func:`served_batches`: samples shuffled with a
  fixed seed, cut at the served batch size, padded as the data is) and the worst score over the batch sizes a
  model is served at (:func:`worst_over_batch_sizes`).
- :mod:`olive.measure.synthetic`: seeded inputs from a model's input specs, with one stated rule for free
  dimensions (batch 1, others 16, or the sizes named in ``dim_values``).
- :mod:`olive.measure.sessions`: :func:`create_session`, the one place onnxruntime sessions are made from
  ``inference_settings`` (execution providers, built in or plugin libraries from pip packages, provider
  options, session options), with errors that name the bad setting; :func:`settings_on_target` puts a model's
  settings on an accelerator (its provider, options and device).
- :mod:`olive.measure.int8_kernel`: whether onnxruntime's CPU int8 MatMul saturates here (from the CPU's flags,
  and measured with one tiny session), and the ``reduce_range`` default that follows.
- :mod:`olive.measure.timing`: settle pause, warmup, timed runs, sessions timed in interleaved rounds, each
  run's ratio to a reference's median in its round, and the summary statistics the latency metrics report.

Importing ``olive.measure`` imports neither numpy nor onnxruntime; each function imports what it needs when
it runs.
"""

from __future__ import annotations

from olive.measure.agreement import AGREEMENT_SCORES, agreement_scores, cosine_similarities
from olive.measure.batching import SERVE_SEED, rebatch, served_batches, worst_over_batch_sizes
from olive.measure.outputs import OutputVectors
from olive.measure.padding import check_one_sample, samples_at_real_length, trim_right_padding
from olive.measure.pooling import POOLINGS, first_token, mean_pool, pool
from olive.measure.reference import ReferenceOutputs, session_of
from olive.measure.sessions import (
    ModelRunError,
    SessionSetup,
    create_session,
    describe_session,
    session_setup,
    settings_on_target,
)
from olive.measure.synthetic import BATCH_SIZE, FREE_DIM_SIZE, concrete_shape, synthetic_inputs
from olive.measure.timing import (
    LATENCY_SETTLE_S,
    interleaved_runs,
    latency_summary,
    paired_round_size,
    ratios_to_reference,
    session_runner,
    timed_runs,
)

__all__ = [
    "AGREEMENT_SCORES",
    "BATCH_SIZE",
    "FREE_DIM_SIZE",
    "LATENCY_SETTLE_S",
    "POOLINGS",
    "SERVE_SEED",
    "ModelRunError",
    "OutputVectors",
    "ReferenceOutputs",
    "SessionSetup",
    "agreement_scores",
    "check_one_sample",
    "concrete_shape",
    "cosine_similarities",
    "create_session",
    "describe_session",
    "first_token",
    "interleaved_runs",
    "latency_summary",
    "mean_pool",
    "paired_round_size",
    "pool",
    "ratios_to_reference",
    "rebatch",
    "samples_at_real_length",
    "served_batches",
    "session_of",
    "session_runner",
    "session_setup",
    "settings_on_target",
    "synthetic_inputs",
    "timed_runs",
    "trim_right_padding",
    "worst_over_batch_sizes",
]
