"""Recreate the example model and data in ``examples/models/`` (they are checked in; this shows how they
were made, with the same seeds)."""

from __future__ import annotations

from pathlib import Path

from olive.testing.models import mlp_model, save_model, write_npz_dataset

HERE = Path(__file__).parent


def main() -> None:
    model = save_model(mlp_model(seed=0, in_features=64, hidden=256, out_features=32), HERE / "models" / "mlp")
    write_npz_dataset(HERE / "models" / "mlp" / "data.npz", model, num_samples=32, seed=0)


if __name__ == "__main__":
    main()
