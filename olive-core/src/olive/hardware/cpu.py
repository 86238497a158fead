"""The CPU this process runs on: its model name and the instruction sets that decide which kernels
onnxruntime picks, including whether its int8 MatMul saturates.

Every measured figure is named beside the CPU it came from (latency and, for int8, even accuracy differ between
an AVX2-only CPU and one with VNNI or AMX), so benchmarks, ``olive eps`` and the CI log print
:func:`describe_cpu`. It reads ``/proc/cpuinfo`` on Linux and ``sysctl`` on macOS; it imports nothing heavy, so
pass configs can take defaults from it while they are validated, and never fails (an unknown model reads
``unknown CPU``).

**Saturating int8.** onnxruntime multiplies uint8 activations by int8 weights (what dynamic int8 quantization
produces) with the best kernel the CPU offers. With VNNI (AVX-512 VNNI or AVX-VNNI) or AMX, and on ARM, each
product is added in 32 bits. On x86-64 without them (AVX2-only CPUs such as AMD EPYC Rome and Milan, and
AVX-512 CPUs without VNNI) it uses ``VPMADDUBSW``, which adds each pair of products in 16 bits and saturates: a
large activation times two 8-bit weights near +-127 overflows, and the model drifts from its float model.
onnxruntime's quantization guide gives the remedy for such CPUs: 7-bit weights (``reduce_range``), whose pair
sums fit, or uint8 weights (a kernel that does not saturate). :attr:`CpuInfo.int8_saturates` says which case
this CPU is from its flags; :mod:`olive.measure.int8_kernel` measures what onnxruntime really does (the tests
check that the two agree on whatever CPU they run on) and decides where a system lists no flags.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from pathlib import Path

import attrs

__all__ = [
    "EXACT_INT8_FLAGS",
    "ISA_FLAGS",
    "REDUCE_RANGE_REASON",
    "CpuInfo",
    "cpu_info",
    "describe_cpu",
]

#: the instruction-set flags (Linux ``/proc/cpuinfo`` spelling) that change onnxruntime's CPU kernels: the
#: float GEMMs (AVX2/FMA, AVX-512), the int8 ones (VNNI in its AVX-512 and AVX forms, AMX), bf16/fp16 compute
ISA_FLAGS = (
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "asimd",
    "asimddp",
    "i8mm",
    "sve",
)
#: any of these gives onnxruntime an int8 MatMul kernel that adds in 32 bits on x86-64
EXACT_INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
_X86 = ("x86_64", "amd64", "i386", "i686", "x86")

#: why int8 weights get ``reduce_range`` on a CPU whose int8 MatMul saturates (said in ``--dry-run`` and docs)
REDUCE_RANGE_REASON = (
    "onnxruntime's int8 MatMul on this CPU (x86-64 without VNNI or AMX) adds pairs of uint8 x int8 products in 16 "
    "bits, which 8-bit weights can overflow and 7-bit ones cannot (onnxruntime's advice for such CPUs)"
)


@attrs.frozen
class CpuInfo:
    """:param model: the CPU's marketing name ("AMD EPYC", "Intel(R) Xeon(R) Platinum 8480+").
    :param machine: the architecture (``x86_64``, ``aarch64``, ``arm64``).
    :param cores: logical CPUs this process may use.
    :param flags: the :data:`ISA_FLAGS` the CPU reports (empty where the system does not list them).
    """

    model: str
    machine: str
    cores: int
    flags: tuple[str, ...] = ()

    def has(self, flag: str) -> bool:
        return flag in self.flags

    @property
    def x86(self) -> bool:
        return self.machine.lower() in _X86

    @property
    def int8_saturates(self) -> bool | None:
        """Whether onnxruntime's CPU int8 MatMul adds pairs of products in 16 bits here (module docstring); None
        on an x86 CPU whose flags the system does not list."""
        if not self.x86:
            return False
        if not self.flags:
            return None
        return not any(self.has(flag) for flag in EXACT_INT8_FLAGS)

    def describe(self) -> str:
        isa = " ".join(self.flags) if self.flags else "instruction sets not listed"
        return f"{self.model} ({self.machine}, {self.cores} cores; {isa})"


@functools.cache
def cpu_info() -> CpuInfo:
    """This machine's CPU (read once per process)."""
    machine = platform.machine() or "unknown"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    model, flags = _from_proc_cpuinfo()
    if model is None:
        model = _system_model_name()
    if not flags:
        flags = _macos_flags()
    return CpuInfo(model or platform.processor() or "unknown CPU", machine, cores, flags)


def describe_cpu() -> str:
    """One line naming this machine's CPU and the instruction sets that choose onnxruntime's kernels."""
    return cpu_info().describe()


def _from_proc_cpuinfo() -> tuple[str | None, tuple[str, ...]]:
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return None, ()
    model: str | None = None
    reported: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "cpu model", "hardware") and model is None and value.strip():
            model = value.strip()
        elif key in ("flags", "features") and not reported:
            reported = set(value.split())
    return model, tuple(flag for flag in ISA_FLAGS if flag in reported)


def _system_model_name() -> str | None:
    if platform.system() != "Darwin":
        return None
    return _sysctl("machdep.cpu.brand_string")


def _macos_flags() -> tuple[str, ...]:
    if platform.system() != "Darwin":
        return ()
    # Intel Macs list CPUID features under machdep.cpu (AVX2, AVX512VNNI...); Apple silicon is ARM.
    reported = " ".join(_sysctl(key) or "" for key in ("machdep.cpu.features", "machdep.cpu.leaf7_features")).lower()
    spelled = {"avx2": "avx2", "fma": "fma", "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512vnni": "avx512_vnni"}
    return tuple(ours for theirs, ours in spelled.items() if theirs in reported.split())


def _sysctl(key: str) -> str | None:
    try:
        done = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None
