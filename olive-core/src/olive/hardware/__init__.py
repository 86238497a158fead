"""Devices, execution providers and accelerator specs."""

from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR, AcceleratorSpec, Device
from olive.hardware.constants import ExecutionProvider

__all__ = ["DEFAULT_CPU_ACCELERATOR", "AcceleratorSpec", "Device", "ExecutionProvider"]
