"""Numeric precision: what ``--precision`` means for inference and for training, in one place.

Inference (``encode``, ``embed-entries``, the evaluations; ``--precision``):
- ``fp32``: float32 weights and arithmetic (PyTorch's own default: no TF32).
- ``tf32``: float32 weights, matrix products on the tensor cores' TF32 format (CUDA GPUs from Ampere on;
  10-bit mantissa products, float32 accumulation). Opt-in, as in PyTorch itself since 1.12, because it
  moves vectors by ~1e-3 relative where fp32 promises ~1e-7; on the CPU it is fp32.
- ``fp16`` / ``bf16``: the weights cast to half precision and the whole forward pass run in it, as
  sentence-transformers' ``model.half()`` / ``model_kwargs={"torch_dtype": ...}``; the pooled vectors are
  computed from the states upcast to float32. Meant for GPUs, and for CPUs with AMX (bf16 matrix tiles),
  where bf16 runs as fast as int8 at fp32's quality; on other CPUs bf16 runs slowly.
- ``int8``: ONNX Runtime on integers (``--runtime onnx``; ``onnx_runtime.quantize_rows``): int8 weights, each
  token's activations quantized with a scale of its own, so a text's vector does not depend on its batch.
- ``auto``: the fastest here, one meaning for every command that encodes (:func:`choose_runtime`): on a CUDA GPU
  torch in fp16; on a CPU ONNX Runtime in int8 when it is installed, else torch fp32 (with ``--runtime torch``
  named: fp16 on a GPU, fp32 on a CPU; with ``--runtime onnx``: int8). ``serve`` defaults to ``auto``; the other
  commands default to fp32 (on torch: vectors equal to sentence-transformers' to float noise). ``--runtime``
  defaults to ``auto`` everywhere: the runtime of the precision asked for (int8: onnx; the others: torch).

Training (``train``, ``tsdae``; ``--precision``), mixed precision as torch.amp does it: float32 master
weights and optimizer state, the forward pass under ``torch.autocast`` in bf16 or fp16 (fp16 with a
gradient scaler, since its range is too small for small gradients), and the loss over the bank (logits,
log-sum-exp) in float32 (``training/loss.py`` leaves autocast). ``auto`` is bf16 autocast on a CUDA
GPU that supports bf16 (Ampere and newer) and on a CPU that multiplies bf16 matrices in hardware (Intel AMX:
Xeon from Sapphire Rapids on; :func:`cpu_amx_bf16`), fp32 everywhere else: a CPU without AMX keeps the exact fp32
run (docs/cpu.md has the measurements behind the choice).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..environment import switch
from ..errors import DefsentError

RUNTIMES = ("torch", "onnx")
INFERENCE_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "int8")
#: what ``--runtime`` and ``--precision`` accept: a runtime or precision, or ``auto`` (:func:`choose_runtime`)
RUNTIME_CHOICES = ("auto", *RUNTIMES)
PRECISION_CHOICES = ("auto", *INFERENCE_PRECISIONS)
#: The precisions each runtime offers.
PRECISIONS = {"torch": ("fp32", "tf32", "fp16", "bf16"), "onnx": ("fp32", "int8")}
TRAIN_PRECISIONS = ("auto", "fp32", "tf32", "bf16", "fp16")
HALF = ("fp16", "bf16")


def torch_dtype(precision: str):
    """The torch dtype that holds the weights at inference (``float32`` for fp32 / tf32 / int8)."""
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision, torch.float32)


def choose_runtime(runtime: str, precision: str, device: str) -> tuple[str, str]:
    """``auto`` resolved, one meaning for every command. Precision ``auto``: the fastest here, on a CUDA GPU
    (``device`` cuda, or auto with one there) torch fp16, on a CPU ONNX Runtime int8 when it is installed (the
    ``onnx`` extra), else torch fp32; with a runtime named, that runtime's fastest (onnx: int8; torch: fp16 on a
    GPU, fp32 on a CPU). Runtime ``auto`` with a precision named: the runtime that has it (int8: onnx; the others:
    torch, the reference). The pair is checked later (``onnx_runtime.check_runtime``)."""
    if runtime != "auto" and precision != "auto":
        return runtime, precision
    import torch

    gpu = str(device).startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    if runtime == "auto":
        if precision == "auto":
            runtime = "onnx" if not gpu and _onnxruntime() else "torch"
        else:
            runtime = "onnx" if precision == "int8" else "torch"
    if precision == "auto":
        precision = "int8" if runtime == "onnx" else ("fp16" if gpu else "fp32")
    return runtime, precision


def _onnxruntime() -> bool:
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


#: ``DEFSENT_CPU_AMX=0`` makes :func:`cpu_amx_bf16` say no (``auto`` then trains in fp32 on any CPU), ``=1`` yes.
AMX_ENV = "DEFSENT_CPU_AMX"


def cpu_amx_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices in AMX tiles, by torch's own checks (``torch.cpu``: AMX tiles
    and AVX-512 BF16, as oneDNN needs for its bf16 AMX kernels), unless :data:`AMX_ENV` says otherwise."""
    told = switch(AMX_ENV, default=None)
    if told is not None:
        return told
    import torch

    checks = (getattr(torch.cpu, name, None) for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"))
    try:
        return all(check is not None and check() for check in checks)
    except RuntimeError:  # a torch built without the CPU feature probes
        return False


def resolve_train_precision(precision: str, device) -> str:
    """``auto`` -> ``bf16`` on a CUDA GPU with bf16 and on a CPU with AMX bf16 (:func:`cpu_amx_bf16`), else
    ``fp32``; the others passed through (checked by ``TrainConfig``), bf16 refused on a GPU without it. A user's
    explicit ``--precision`` always wins."""
    import torch

    device = torch.device(device)
    if precision == "auto":
        if device.type == "cuda":
            return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
        return "bf16" if device.type == "cpu" and cpu_amx_bf16() else "fp32"
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise DefsentError("--precision bf16: this GPU has no bf16; use --precision fp16 (with a gradient scaler)")
    return precision


@contextmanager
def tf32(active: bool) -> Iterator[None]:
    """TF32 matrix products on CUDA inside the block (restored after): torch's global switches, which change
    nothing on the CPU. Training holds it over the forward and the backward pass of a step."""
    import torch

    if not active:
        yield
        return
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


@contextmanager
def no_cudnn_attention(active: bool = True) -> Iterator[None]:
    """Scaled dot-product attention without its cuDNN backend inside the block (restored after).

    For fp16/bf16 on Hopper torch picks cuDNN's attention first, and it builds an execution plan for every
    new input shape: with the varying lengths of definitions that cost 2.5 ms of host time per call,
    measured on an H100 (torch 2.11), which made a bf16 training step 4x slower than the fp32 one. The
    flash and memory-efficient kernels need no such set-up.
    """
    import torch

    if not active:
        yield
        return
    before = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        yield
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before)


@contextmanager
def autocast(precision: str, device) -> Iterator[None]:
    """The training forward pass's context: autocast in bf16/fp16 (on a GPU without cuDNN attention), else
    nothing (``tf32`` is :func:`tf32`, held by the trainer over the backward pass too)."""
    import torch

    device = torch.device(device)
    if precision in HALF:
        with torch.autocast(device.type, dtype=torch_dtype(precision)), no_cudnn_attention(device.type == "cuda"):
            yield
    else:
        yield


def grad_scaler(precision: str, device):
    """A gradient scaler for fp16 training (torch.amp.GradScaler), else None."""
    import torch

    if precision != "fp16":
        return None
    return torch.amp.GradScaler(torch.device(device).type)


@contextmanager
def deterministic(active: bool) -> Iterator[None]:
    """torch's deterministic algorithms inside the block (``--deterministic``), restored after.

    On CUDA this also fixes cuBLAS's workspace (``CUBLAS_WORKSPACE_CONFIG=:4096:8``, read when the first
    cuBLAS handle is made, so set before any matrix product) and keeps attention on SDPA's math kernel (the
    flash and memory-efficient backward passes accumulate with atomics, in no fixed order). On the CPU every
    run is already bit-reproducible; the switch changes nothing there.
    """
    import os

    import torch

    if not active:
        yield
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cuda.flash_sdp_enabled(),
        torch.backends.cuda.mem_efficient_sdp_enabled(),
    )
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0])
        torch.backends.cuda.enable_flash_sdp(before[1])
        torch.backends.cuda.enable_mem_efficient_sdp(before[2])
