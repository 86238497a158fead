"""The ``olive`` pytest plugin (registered through the ``pytest11`` entry point) for pass authors.

Fixtures: ``tiny_mlp``, ``tiny_conv``, ``tiny_bert`` (an ``ONNXModelHandler`` saved under ``tmp_path``),
``run_pass`` (``run_pass(PassClass, model, config=None, accelerator_spec=None)`` runs a pass into a fresh
folder and checks the output loads in onnxruntime), ``isolated_registry`` (an empty
:class:`~olive.plugins.registry.PassRegistry` made the process-wide one for the test; add passes with
``.register(PassClass)``) and ``fresh_venv`` (a :class:`~olive.testing.venv.Venv` under ``tmp_path``).

Marker ``int8_kernel``: a test whose expectation depends on onnxruntime's CPU int8 kernel (it adds exactly with
VNNI or AMX, in saturating 16-bit pairs on AVX2 alone: :mod:`olive.hardware.cpu`). Such a test asserts what holds
on both, or reads :func:`~olive.measure.int8_kernel.int8_matmul_saturates` and says which branch it checks; ``tox -e
avx2`` runs the marked tests as on an AVX2-only CPU. The report header names the CPU the tests ran on.

Workflows that name no ``cache_dir`` cache in a folder of the test session (``OLIVE_CACHE_DIR``, unless it is
already set), never in the user's own per-user cache.

Loading this plugin imports only pytest; onnx, numpy and onnxruntime load when a fixture needs them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from olive.model.handler import ONNXModelHandler
    from olive.plugins.registry import PassRegistry
    from olive.testing.venv import Venv


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "int8_kernel: the expectation depends on the CPU's int8 kernel (tox -e avx2 runs these as on an AVX2-only CPU)",
    )


def pytest_report_header(config: pytest.Config) -> str:
    from olive.hardware.cpu import describe_cpu
    from olive.measure.int8_kernel import int8_matmul_saturates

    kernel = "saturating 16-bit pairs" if int8_matmul_saturates() else "exact"
    return f"cpu: {describe_cpu()}; onnxruntime int8 MatMul: {kernel} (by its flags)"


@pytest.fixture(scope="session", autouse=True)
def _olive_session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep the tests' caching out of the user's cache: a per-session ``OLIVE_CACHE_DIR`` unless one is set."""
    if os.environ.get("OLIVE_CACHE_DIR"):
        yield
        return
    os.environ["OLIVE_CACHE_DIR"] = str(tmp_path_factory.mktemp("olive-user-cache"))
    try:
        yield
    finally:
        os.environ.pop("OLIVE_CACHE_DIR", None)


@pytest.fixture
def tiny_mlp(tmp_path: Path) -> ONNXModelHandler:
    """A seeded MLP (input ``input`` [batch, 16] -> output ``output`` [batch, 8])."""
    from olive.testing.models import mlp_model, save_model

    return save_model(mlp_model(), tmp_path / "tiny_mlp")


@pytest.fixture
def tiny_conv(tmp_path: Path) -> ONNXModelHandler:
    """A seeded conv net (input ``input`` [batch, 3, 16, 16] -> output ``output`` [batch, 10])."""
    from olive.testing.models import conv_model, save_model

    return save_model(conv_model(), tmp_path / "tiny_conv")


@pytest.fixture
def tiny_bert(tmp_path: Path) -> ONNXModelHandler:
    """A seeded 2-layer BERT-like encoder (``input_ids``, ``attention_mask``, ``token_type_ids``)."""
    from olive.testing.models import bert_like_model, save_model

    return save_model(bert_like_model(), tmp_path / "tiny_bert")


@pytest.fixture
def run_pass(tmp_path: Path) -> Callable[..., Any]:
    """``run_pass(PassClass, model, config=None, accelerator_spec=None) -> OliveModelHandler``."""
    from olive.testing.runner import run_pass as _run_pass

    def run(pass_class: Any, model: Any, config: Any = None, accelerator_spec: Any = None) -> Any:
        return _run_pass(pass_class, model, config, accelerator_spec, output_dir=tmp_path / "run_pass")

    return run


@pytest.fixture
def isolated_registry() -> Iterator[PassRegistry]:
    """An empty pass registry (no entry points, no allow/block lists) used process-wide for the test."""
    from olive.plugins.discovery import PluginPolicy
    from olive.plugins.registry import PassRegistry, use_registry

    with use_registry(PassRegistry(entry_points=False, policy=PluginPolicy())) as registry:
        yield registry


@pytest.fixture
def fresh_venv(tmp_path: Path) -> Venv:
    """A new virtual environment under ``tmp_path`` that also sees this interpreter's packages."""
    from olive.testing.venv import make_venv

    return make_venv(tmp_path / "venv")
