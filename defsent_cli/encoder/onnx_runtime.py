"""The fast CPU path: the encoder exported to ONNX once, run by ONNX Runtime, in fp32 or int8.

``--runtime onnx`` replaces only the transformer's forward pass; tokenising, length batching, pooling,
the head and post-processing stay the ones of the torch path, so every pooling that reads the last
layer gives the same vectors (fp32: within float noise). The graph:

1. export: ``torch.onnx.export`` (the TorchScript exporter) of the model with eager attention, inputs
   ``input_ids`` and ``attention_mask`` (dynamic batch and length), output ``last_hidden_state``;
2. int8 (:func:`quantize_rows`): every matrix product with a weight matrix runs on ONNX Runtime's integer
   kernels (``MatMulIntegerToFloat``: VNNI or AMX where the CPU has them, AVX2 elsewhere), its weights int8 per
   output channel and its input uint8 quantized **per row**, each token with its own scale and zero point, so
   a text's vector does not depend on the other texts of its batch or on their padding (ONNX Runtime's own
   ``quantize_dynamic`` takes one scale for the whole batch tensor: a text's vector moved with its
   batch-mates, cosine 0.99 on all-MiniLM-L6-v2; issue 80).

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

EXPORT_VERSION = "3"  # bump when the export or quantization settings change (3: int8 per row, issue 80)
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
                quantized = work / "int8.onnx"
                quantize_rows(graph, quantized)
                graph = quantized
        # the work folder is this export's own (two processes exporting the same graph at once, e.g. two jobs
        # on a fresh model, never write one file) and beside the target, so the move is atomic
        with open(graph, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(graph, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: The zero point of every row (see :func:`quantize_rows`): 64 of uint8's 0..255 below zero, 191 above.
ZERO_POINT = 64


def quantize_rows(source: Path, target: Path) -> None:
    """The int8 graph of the fp32 graph ``source``, written to ``target``: each ``MatMul`` whose second input is a
    2-D float weight runs on integers, with its input quantized row by row, so that no row's result depends on
    another row (a token of another text, a padding position).

    Weights: int8 per output column ``j``, symmetric: ``s_j = max|W[:, j]| / 127``, ``Wq = round(W / s_j)``.
    Input rows (the last axis: a token's hidden state), each with its own scale and the zero point 64:
    ``scale = max(max(x) / 191, -min(x) / 64)``, ``q = QuantizeLinear(x, scale, 64)`` in 0..255.
    ``MatMulIntegerToFloat(q, Wq)`` multiplies them in int32 (the zero point taken off inside) and scales the
    columns by ``s_j``; the row's scale multiplies the result: ``y = scale * A``. The zero point 64 rather than
    128 gives the positive side, where the large values of a transformer's activations mostly are (GELU's
    output is never below -0.17), three quarters of the range; a zero point of the row's own (``-min(x) / scale``)
    was more accurate still but needs a correction per row and column after the product (measured on
    all-MiniLM-L6-v2, mean 1 - cosine to fp32 over the STS-B test sentences: 8.4e-3 per batch as before,
    4.6e-3 per row at 128, 2.7e-3 at 64, 1.7e-3 a row's own capped at 96, whose correction took about 6% more
    time than the zero point 64, itself 6-7% slower than per batch: docs/cpu.md). On AVX2, without VNNI,
    uint8 x int8 products are summed in pairs into 16 bits and saturate beyond 32,767; a small zero point keeps
    the near-zero entries' uint8 values small (64 measured as accurate as a uint8 x uint8 graph, which cannot
    saturate). The embedding tables and the attention products stay fp32. Every step is a standard ONNX operator but ``MatMulIntegerToFloat`` (ONNX Runtime's
    ``com.microsoft`` domain, in its CPU provider since 1.8).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), OPSET)
    weights = {t.name: t for t in graph.initializer if t.data_type == TensorProto.FLOAT and len(t.dims) == 2}
    added: dict[str, onnx.TensorProto] = {}

    def const(name: str, value) -> str:
        if name not in added:
            added[name] = numpy_helper.from_array(np.asarray(value), name)
        return name

    def reduce(op: str, x: str, out: str) -> onnx.NodeProto:  # over the last axis, kept: axes an input from 18 on
        if opset >= 18:
            return helper.make_node(op, [x, const("rows/axes", np.array([-1], np.int64))], [out], keepdims=1)
        return helper.make_node(op, [x], [out], axes=[-1], keepdims=1)

    def rows(x: str, width: int) -> list[onnx.NodeProto]:
        """``x`` quantized per row: ``{x}/q`` (uint8, x's shape) and ``{x}/scale`` (float, [..., 1])."""
        n = lambda name: f"{x}/{name}"  # noqa: E731
        make = helper.make_node
        return [
            reduce("ReduceMax", x, n("max")),
            reduce("ReduceMin", x, n("min")),
            make("Mul", [n("max"), const("rows/above", np.float32(1 / (255 - ZERO_POINT)))], [n("up")]),
            make("Mul", [n("min"), const("rows/below", np.float32(-1 / ZERO_POINT))], [n("down")]),
            make("Max", [n("up"), n("down")], [n("wide")]),
            make("Max", [n("wide"), const("rows/tiny", np.float32(1e-30))], [n("scale")]),  # a row of zeros
            make("Reshape", [n("scale"), const("rows/flat", np.array([-1], np.int64))], [n("scale/1d")]),
            make("Shape", [n("scale/1d")], [n("count")]),
            make("Expand", [const("rows/zero/1d", np.array([ZERO_POINT], np.uint8)), n("count")], [n("zero/1d")]),
            make("Reshape", [x, const(f"rows/{width}", np.array([-1, width], np.int64))], [n("2d")]),
            make("QuantizeLinear", [n("2d"), n("scale/1d"), n("zero/1d")], [n("q/2d")], axis=0),
            make("Shape", [x], [n("shape")]),
            make("Reshape", [n("q/2d"), n("shape")], [n("q")]),
        ]

    nodes, quantized = [], set()
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in weights:
            nodes.append(node)
            continue
        x, name = node.input[0], node.input[1]
        w = numpy_helper.to_array(weights[name]).astype(np.float32)
        if x not in quantized:
            nodes += rows(x, w.shape[0])
            quantized.add(x)
        scale = np.abs(w).max(axis=0) / 127
        scale[scale == 0] = 1.0
        wq = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        y = node.output[0]
        inputs = [f"{x}/q", const(f"{name}/int8", wq), const("rows/1", np.float32(1)), const(f"{name}/scale", scale)]
        inputs += [const("rows/zero", np.uint8(ZERO_POINT)), const("rows/0/i8", np.int8(0))]  # the zero points
        nodes += [
            helper.make_node("MatMulIntegerToFloat", inputs, [f"{y}/int"], domain="com.microsoft"),
            helper.make_node("Mul", [f"{y}/int", f"{x}/scale"], [y]),
        ]
    used = {name for node in nodes for name in node.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:], graph.node[:]
    graph.initializer.extend(kept + list(added.values()))
    graph.node.extend(nodes)
    for i, node in enumerate(graph.node):
        node.name = node.name or f"{node.op_type}_{i}"
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(target))


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
