"""The fast CPU path: the encoder exported to ONNX once, run by ONNX Runtime, in fp32 or int8.

``--runtime onnx`` replaces only the transformer's forward pass; tokenising, length batching, pooling,
the head and post-processing stay the ones of the torch path, so every pooling that reads the last
layer gives the same vectors (fp32: within float noise). The graph:

1. export: ``torch.onnx.export`` (the TorchScript exporter) of the model with eager attention, inputs
   ``input_ids`` and ``attention_mask`` (dynamic batch and length), output ``last_hidden_state``;
2. int8: ONNX Runtime's dynamic quantization (``quantize_dynamic``: weights int8 per output channel,
   activations uint8 quantized per batch), which runs on the VNNI instructions of this CPU.

No operator fusion (ONNX Runtime's transformer optimizer): measured on all-MiniLM-L6-v2 with 2 cores,
the fused graph was slower in both precisions with batches on worker threads (int8: 764 against
1,570 sentences/s on the STS-B test sentences), so the plain export is the one quantized and run.

Exported graphs are cached in the model folder (``MODEL/onnx/defsent-<precision>-<key>.onnx``), or in the
user's cache (:func:`user_cache`: ``$DEFSENT_CACHE``, else ``$XDG_CACHE_HOME/defsent``, else
``~/.cache/defsent``) when the folder cannot be written or belongs to an installed package (a folder under
``site-packages`` or ``dist-packages`` is pip's, not ours to write into) or is a snapshot in the Hugging Face
cache (the Hub's files only: nothing derived goes there). The key is a hash
of the weights, the config and the export settings, so a changed model never uses a stale graph (and
the stale file is removed when the new one is written). Poolings that read other layers (``--layers``,
``first-last``) or attention probabilities (``ditto``) run on torch, with a one-line notice.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..errors import DefsentError
from ..log import note
from .models import WEIGHT_FILES, LoadedModel
from .precision import HALF, INFERENCE_PRECISIONS, PRECISIONS, RUNTIMES, torch_dtype

EXPORT_VERSION = "2"  # bump when the export or quantization settings change
OPSET = 17


def require_onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        raise DefsentError(
            "--runtime onnx needs ONNX Runtime: pip install 'defsent-cli[onnx]' (or pip install onnxruntime onnx)"
        ) from None
    return onnxruntime


def check_runtime(runtime: str, precision: str, device: str = "cpu") -> None:
    """Validate the pair (and the device) before anything loads.

    ONNX Runtime runs on the CPU here (its CPU execution provider): with ``--device auto`` it runs there
    (:func:`runtime_device`), and only an explicit GPU is refused, pointing at the GPU path (torch in
    fp16/bf16), which is faster on a GPU than ONNX Runtime's CUDA provider would be for these encoders.
    """
    if runtime not in RUNTIMES:
        raise DefsentError(f"--runtime must be torch or onnx, not {runtime!r}")
    if precision not in INFERENCE_PRECISIONS:
        raise DefsentError(f"--precision must be one of {', '.join(INFERENCE_PRECISIONS)}, not {precision!r}")
    if precision not in PRECISIONS[runtime]:
        other = "onnx" if runtime == "torch" else "torch"
        raise DefsentError(f"--precision {precision} runs on --runtime {other}, not {runtime}: add --runtime {other}")
    if runtime == "onnx":
        if str(device).startswith("cuda"):
            raise DefsentError(
                f"--runtime onnx runs on the CPU, not --device {device}: use --device cpu or auto, or on a GPU "
                "--runtime torch --precision fp16"
            )
        require_onnxruntime()


def runtime_device(runtime: str, device: str) -> str:
    """The device a runtime runs on: ``auto`` means the CPU for ONNX Runtime (and cuda-or-cpu for torch)."""
    return "cpu" if runtime == "onnx" and device == "auto" else device


def weights_key(loaded: LoadedModel, precision: str) -> str:
    """A hash of everything the graph depends on: weights, config, precision, export settings."""
    digest = hashlib.sha256()
    folder = Path(loaded.transformer_dir or loaded.path)
    for name in (*WEIGHT_FILES, "config.json"):
        path = folder / name
        if path.is_file():
            digest.update(name.encode())
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    digest.update(block)
    import onnxruntime

    digest.update(f"{precision}|{EXPORT_VERSION}|{OPSET}|{torch.__version__}|{onnxruntime.__version__}".encode())
    return digest.hexdigest()[:16]


INSTALLED = ("site-packages", "dist-packages")  # the folders Python installs packages into


def user_cache() -> Path:
    """defsent's folder in the user's cache: ``$DEFSENT_CACHE``, else ``$XDG_CACHE_HOME/defsent``, else
    ``~/.cache/defsent``."""
    if os.environ.get("DEFSENT_CACHE"):
        return Path(os.environ["DEFSENT_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "defsent"


def installed(folder: Path) -> bool:
    """True for a folder inside an installed package (under ``site-packages`` or ``dist-packages``)."""
    return any(part in INSTALLED for part in Path(folder).resolve().parts)


def cache_candidates(loaded: LoadedModel) -> list[Path]:
    """Where graphs are kept: the model folder first (unless it belongs to an installed package or is a snapshot in
    the Hugging Face cache, which holds the Hub's files only), then the user's cache, in a folder per model
    folder."""
    from ..formats.origin import in_hub_cache

    model_dir = Path(loaded.transformer_dir or loaded.path)
    user = user_cache() / "onnx" / hashlib.sha256(str(Path(loaded.path).resolve()).encode()).hexdigest()[:16]
    return [user] if installed(model_dir) or in_hub_cache(model_dir) else [model_dir / "onnx", user]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".defsent-probe-", delete=True)
        probe.close()
        return True
    except OSError:
        return False


class _Wrapped(torch.nn.Module):
    """``model(input_ids, attention_mask) -> last_hidden_state``, positional, for the exporter."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def export_graph(loaded: LoadedModel, precision: str, target: Path) -> None:
    """Export (and fuse, and quantize) the model into ``target``, atomically."""
    import warnings

    from transformers import AutoModel

    work = Path(tempfile.mkdtemp(prefix=".defsent-export-", dir=target.parent))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # eager attention: the graph pattern ONNX Runtime's optimizer recognises (and no SDPA export quirks)
            model = AutoModel.from_pretrained(loaded.transformer_dir, attn_implementation="eager", dtype=torch.float32)
            model.load_state_dict(loaded.model.state_dict())  # the weights in memory (e.g. merged), not the files
            model.eval()
            sample = torch.tensor([[loaded.tokenizer.cls_token_id or 0] * 4], dtype=torch.long)
            exported = work / "model.onnx"
            dynamic = {0: "batch", 1: "sequence"}
            torch.onnx.export(
                _Wrapped(model),
                (sample, torch.ones_like(sample)),
                str(exported),
                input_names=["input_ids", "attention_mask"],
                output_names=["last_hidden_state"],
                dynamic_axes={"input_ids": dynamic, "attention_mask": dynamic, "last_hidden_state": dynamic},
                opset_version=OPSET,
                dynamo=False,
                do_constant_folding=True,
            )
            graph = exported
            if precision == "int8":
                import onnx
                from onnxruntime.quantization import QuantType, quantize_dynamic

                quantized = work / "int8.onnx"
                logging.disable(logging.WARNING)  # its advice to pre-process goes to the root logger
                try:
                    quantize_dynamic(
                        str(graph),
                        str(quantized),
                        weight_type=QuantType.QInt8,
                        per_channel=True,
                        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
                    )
                finally:
                    logging.disable(logging.NOTSET)
                graph = quantized
        # the work folder is this export's own (two processes exporting the same graph at once, e.g. two jobs
        # on a fresh model, never write one file) and beside the target, so the move is atomic
        with open(graph, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(graph, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def graph_for(loaded: LoadedModel, precision: str) -> tuple[Path, bool]:
    """The cached graph for this model and precision, exported now when missing: (path, exported now)."""
    key = weights_key(loaded, precision)
    name = f"defsent-{precision}-{key}.onnx"
    for folder in cache_candidates(loaded):
        if (folder / name).is_file():
            return folder / name, False
    folder = next((f for f in cache_candidates(loaded) if _writable(f)), None)
    if folder is None:
        raise DefsentError("no writable place for the ONNX graph; set DEFSENT_CACHE to a writable folder")
    export_graph(loaded, precision, folder / name)
    for stale in folder.glob(f"defsent-{precision}-*.onnx"):
        if stale.name != name:
            stale.unlink(missing_ok=True)  # a graph of older weights is never used again
    return folder / name, True


@dataclass
class _Output:
    last_hidden_state: torch.Tensor


class OnnxModel:
    """Stands in for the transformer's forward pass: ``model(input_ids=, attention_mask=)`` -> last layer."""

    def __init__(self, path: Path, precision: str, threads: int):
        ort = require_onnxruntime()
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.path, self.precision = path, precision

    def supports(self, pooling) -> bool:
        """True when the pooling reads only the last layer (what the graph returns)."""
        return pooling.layers is None and pooling.ditto_head is None

    def __call__(self, input_ids, attention_mask=None, output_hidden_states=False, output_attentions=False):
        ids = input_ids.cpu().numpy().astype(np.int64, copy=False)
        mask = np.ones_like(ids) if attention_mask is None else attention_mask.cpu().numpy().astype(np.int64)
        (states,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
        return _Output(torch.from_numpy(states))


def use_runtime(loaded: LoadedModel, runtime: str = "torch", precision: str = "fp32") -> LoadedModel:
    """Attach the ONNX graph to ``loaded`` (``runtime == "onnx"``; the torch model stays for everything else),
    or set the torch model's precision: fp16 / bf16 cast its weights, tf32 is applied around each pass."""
    check_runtime(runtime, precision, str(loaded.device))
    loaded.runtime, loaded.precision = None, precision
    if runtime == "torch":
        if precision in HALF:
            loaded.model.to(torch_dtype(precision))
        return loaded
    from .encode import encode_workers

    path, exported = graph_for(loaded, precision)
    workers = encode_workers(loaded.device)
    loaded.runtime = OnnxModel(path, precision, max(1, torch.get_num_threads() // workers))
    note(f"ONNX Runtime {precision} ({'exported to' if exported else 'cached'} {path})")
    return loaded


def describe(loaded: LoadedModel) -> str:
    """``torch fp32``, ``torch bf16, CUDA graphs`` or ``onnx int8``: what ran."""
    runtime = getattr(loaded, "runtime", None)
    if runtime is not None:
        return f"onnx {runtime.precision}"
    return f"torch {loaded.precision}" + (", CUDA graphs" if getattr(loaded, "cuda_graphs", False) else "")
