"""Measuring each row's model, through ``olive.measure`` (the definitions the engine and the passes use).

- **Accuracy**: each held-out sentence runs alone (batch 1) at its real length
  (``olive.measure.samples_at_real_length``); its output is mean-pooled over the attention mask
  (``OutputVectors``) and compared with the reference embedding by ``cosine_similarities``.
- **Latency**: batch 1, sequence 128, ``intra_op_num_threads=2``, one session per model (``create_session``);
  every model's runs interleaved in rounds of 5 in rotating order (``interleaved_runs``), each turn after
  the settle pause, so a change in machine load during the run hits every row alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rows import MASK_NAME, OUTPUT_NAME

if TYPE_CHECKING:
    import numpy as np
    from build import Result

SEQUENCE_LENGTH = 128
THREADS = 2
WARMUP = 10
# Short rounds: a burst of load from elsewhere then lands on every row alike rather than on a few.
RUNS_PER_ROUND = 5
SESSION_SETTINGS = {
    "session_options": {
        "intra_op_num_threads": THREADS,
        "inter_op_num_threads": 1,
        "execution_mode": "ORT_SEQUENTIAL",
        "log_severity_level": 3,
    }
}


def embeddings(session: Any, io_config: dict[str, Any], data: dict[str, Any]) -> np.ndarray:
    """Mean-pooled embedding of each sample of ``data``, run alone at its real length.

    Samples are cast to the model's input types (an optimizer may take int32 ids).
    """
    from olive.data.calibration import check_feeds
    from olive.measure import OutputVectors, samples_at_real_length

    samples = [
        check_feeds(sample, io_config, "eval.npz", cast=True)
        for sample in samples_at_real_length([data], MASK_NAME, io_config)
    ]
    return OutputVectors([OUTPUT_NAME], "mean", MASK_NAME).run(session, samples)


def measure(results: list[Result], export_dir: Path, runs: int, warmup: int) -> None:
    """Cosine against the reference for each model, then latency for all of them in interleaved rounds."""
    import numpy as np
    from build import one_line

    from olive.data.calibration import check_feeds
    from olive.exceptions import OliveError
    from olive.measure import cosine_similarities, create_session, interleaved_runs, session_runner
    from olive.model.handler import ONNXModelHandler

    evaluation = dict(np.load(export_dir / "eval.npz"))
    reference = np.load(export_dir / "reference.npy")
    latency_input = dict(np.load(export_dir / "latency.npz"))
    timed: list[tuple[Result, Any]] = []
    for r in (r for r in results if r.status == "ok"):
        try:
            io_config = ONNXModelHandler(str(r.model_path)).get_io_config()
            session = create_session(r.model_path, SESSION_SETTINGS)
            r.cosines = cosine_similarities(embeddings(session, io_config, evaluation), reference).tolist()
            feeds = check_feeds(latency_input, io_config, "latency.npz", cast=True)
        except OliveError as exc:
            r.status, r.note = "failed", f"onnxruntime: {one_line(exc)}"
            continue
        timed.append((r, session_runner(session, feeds, what=f"the model of row {r.row.key}")))
    rounds = interleaved_runs([run for _, run in timed], runs, warmup, per_round=min(RUNS_PER_ROUND, runs))
    for index, (r, _) in enumerate(timed):
        r.latencies_ms = [seconds * 1000.0 for times in rounds for seconds in times[index]]
