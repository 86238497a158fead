"""Execution provider names and the onnxruntime packages that provide them."""

from __future__ import annotations

from enum import StrEnum


class Device(StrEnum):
    """The kinds of hardware a model runs on: the one list of device names."""

    CPU = "cpu"
    GPU = "gpu"
    NPU = "npu"


#: Every device name, as configs and flags spell them.
DEVICES = tuple(device.value for device in Device)


class ExecutionProvider(StrEnum):
    CPUExecutionProvider = "CPUExecutionProvider"
    CUDAExecutionProvider = "CUDAExecutionProvider"
    TensorrtExecutionProvider = "TensorrtExecutionProvider"
    DmlExecutionProvider = "DmlExecutionProvider"
    ROCMExecutionProvider = "ROCMExecutionProvider"
    MIGraphXExecutionProvider = "MIGraphXExecutionProvider"
    OpenVINOExecutionProvider = "OpenVINOExecutionProvider"
    QNNExecutionProvider = "QNNExecutionProvider"
    VitisAIExecutionProvider = "VitisAIExecutionProvider"
    CoreMLExecutionProvider = "CoreMLExecutionProvider"
    NvTensorRTRTXExecutionProvider = "NvTensorRTRTXExecutionProvider"
    WebGpuExecutionProvider = "WebGpuExecutionProvider"


# The pip package a user installs to get each provider; used in the warning about dropped providers.
PROVIDER_PACKAGE: dict[str, str] = {
    "CPUExecutionProvider": "onnxruntime",
    "CUDAExecutionProvider": "onnxruntime-gpu",
    "TensorrtExecutionProvider": "onnxruntime-gpu",
    "DmlExecutionProvider": "onnxruntime-directml",
    "ROCMExecutionProvider": "onnxruntime-rocm",
    "MIGraphXExecutionProvider": "onnxruntime-migraphx",
    "OpenVINOExecutionProvider": "onnxruntime-openvino",
    "QNNExecutionProvider": "onnxruntime-qnn",
    "VitisAIExecutionProvider": "onnxruntime-vitisai",
    "CoreMLExecutionProvider": "onnxruntime (on macOS)",
    "NvTensorRTRTXExecutionProvider": "onnxruntime-trt-rtx",
    "WebGpuExecutionProvider": "onnxruntime-webgpu",
}

# The device each provider runs on, so an accelerator given only providers gets a sensible device.
PROVIDER_DEVICE: dict[str, str] = {
    "CPUExecutionProvider": "cpu",
    "OpenVINOExecutionProvider": "cpu",
    "QNNExecutionProvider": "npu",
    "VitisAIExecutionProvider": "npu",
}
