"""The CPU as Olive reads it: its description, whether onnxruntime's int8 MatMul saturates on it (read from the
flags, and measured), and the defaults that follow.

Both branches of the int8 rule run on any CPU: this machine's through onnxruntime itself, the other through the
rule's inputs. ``.ci/on-avx2`` runs the suite as on an AVX2-only CPU (an emulated AMD EPYC Rome), where the
measured kernel saturates.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from olive.cli.main import cli
from olive.hardware.cpu import CpuInfo, cpu_info, describe_cpu
from olive.measure.int8_kernel import int8_matmul, int8_matmul_saturates, reduce_range_for

pytestmark = pytest.mark.int8_kernel


def test_the_flags_rule_says_what_onnxruntime_does_on_this_cpu() -> None:
    measured = int8_matmul()
    assert int8_matmul_saturates() is measured.saturates, (describe_cpu(), measured)
    assert measured.cpu == describe_cpu() and measured.onnxruntime
    print(f"{describe_cpu()}: int8 MatMul {measured.describe()}")


@pytest.mark.parametrize(
    ("machine", "flags", "saturates"),
    [
        ("x86_64", ("avx2", "fma"), True),  # AMD EPYC Rome/Milan, Intel Haswell..Coffee Lake
        ("x86_64", ("avx2", "avx512f", "avx512bw"), True),  # Skylake-SP: AVX-512 without VNNI
        ("x86_64", ("avx2", "avx512f", "avx512_vnni"), False),  # Cascade Lake, Zen 4/5
        ("x86_64", ("avx2", "avx_vnni"), False),  # Alder Lake
        ("x86_64", ("avx2", "avx512f", "avx512_vnni", "amx_int8"), False),  # Sapphire Rapids
        ("AMD64", ("avx2",), True),
        ("aarch64", ("asimd",), False),
        ("arm64", (), False),
        ("x86_64", (), None),  # not listed: measured instead
    ],
)
def test_which_cpus_saturate(machine: str, flags: tuple[str, ...], saturates: bool | None) -> None:
    assert CpuInfo("a CPU", machine, 2, flags).int8_saturates is saturates


def test_reduce_range_follows_the_cpu_providers_kernel_only() -> None:
    assert reduce_range_for("CPUExecutionProvider") is int8_matmul_saturates()
    assert reduce_range_for(None) is int8_matmul_saturates()
    assert reduce_range_for("OpenVINOExecutionProvider") is False


def test_the_description_names_the_model_architecture_and_instruction_sets() -> None:
    info = cpu_info()
    text = describe_cpu()
    assert info.model in text and info.machine in text and f"{info.cores} cores" in text
    assert all(flag in text for flag in info.flags)
    assert CpuInfo("X", "x86_64", 2).describe() == "X (x86_64, 2 cores; instruction sets not listed)"


def test_reading_the_cpu_imports_neither_numpy_nor_onnxruntime() -> None:
    code = (
        "import sys\nfrom olive.hardware.cpu import describe_cpu\n"
        "from olive.measure.int8_kernel import int8_matmul_saturates\n"
        "describe_cpu(); int8_matmul_saturates()\n"
        "print(' '.join(m for m in ('numpy', 'onnxruntime', 'onnx') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_olive_eps_shows_the_cpu_and_its_int8_kernel() -> None:
    import json

    result = CliRunner().invoke(cli, ["eps", "--json"])
    assert result.exit_code == 0, result.output
    (cpu,) = [s for s in json.loads(result.output) if s["name"] == "CPUExecutionProvider"]
    (device,) = cpu["devices"]
    assert device["name"] == describe_cpu()
    assert device["int8_matmul"] == ("saturating" if int8_matmul().saturates else "exact")
