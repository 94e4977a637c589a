"""The model a command runs and how it encodes, each as an option group declared once (``groups.py``), and what
loads them.

- :data:`MODEL`: ``-m`` and how the model runs (batch size, token budget, CUDA graphs, token limit, device,
  runtime, precision). A command takes it as one parameter, ``model: Values = MODEL(without=BUDGET)``, and
  :func:`load` (or :func:`load_encoder`) loads what it says;
- :data:`TOOLBOX`: the training-free toolbox on top of the pooling (layers, prompt template, Ditto, token
  weighting, dropped tokens, post-processing, normalisation); :func:`encode_spec` makes the pooling and it one
  checked EncodeSpec.

The library is imported inside these functions only: ``--help`` loads no model code (docs/layout.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..constraints import Interval
from ..encoder.precision import PRECISION_CHOICES, RUNTIME_CHOICES
from . import options as opt
from .groups import Group, Values, declared, option

RuntimeName = opt.choices("RuntimeName", RUNTIME_CHOICES)
PrecisionName = opt.choices("PrecisionName", PRECISION_CHOICES)
Weighting = opt.choices("Weighting", ("idf", "none"))

#: The model's options, in the order --help lists them.
MODEL = Group(
    "model",
    {
        "model": declared(opt.Model),
        "batch_size": declared(opt.BatchSize, 32),
        "batch_tokens": option(
            "--batch-tokens",
            type=int | None,
            help="Also cap each batch at this many tokens, padding included (a token budget: long texts come fewer "
            "per batch, short ones up to --batch-size). E.g. -b 1024 --batch-tokens 32768 on a GPU.",
            constraint=Interval(1, integer=True, optional=True),
        ),
        "cuda_graphs": option(
            "--cuda-graphs",
            type=bool,
            help="On a CUDA GPU: record each batch shape's forward pass once (lengths rounded up to a multiple of 8 "
            "tokens) and replay it in one launch: for small batches and small encoders, whose kernel launches "
            "cost more than their arithmetic (MiniLM on an H200: 1.66x faster at fp32 batch 32, 1.18x at fp16 "
            "batch 256, but 0.72x at fp32 batch 256; docs/speed.md). Same vectors within float noise.",
            default=False,
        ),
        "max_length": declared(opt.MaxLength),
        "device": declared(opt.Device, "auto"),
        "runtime": option(
            "--runtime",
            type=RuntimeName,
            help="torch, or onnx: ONNX Runtime on the CPU (the graph exported once and cached; --device auto runs "
            "it on the CPU); auto: the runtime of --precision (int8: onnx; auto: onnx on a CPU where it is "
            "installed; the others: torch).",
            default=RuntimeName("auto"),
            envvar="DEFSENT_RUNTIME",
        ),
        "precision": option(
            "--precision",
            type=PrecisionName,
            help="fp32; tf32 (fp32 with TF32 matrix products on a CUDA GPU); fp16 or bf16 (half-precision weights, "
            "for GPUs, and bf16 for a CPU with AMX, 2.4x fp32 at its quality: docs/cpu.md; pooling in fp32); int8 "
            "(int8 weights, each token's activations on a scale of its own, so a text's vector does not depend on its "
            "batch; ONNX Runtime); auto: int8 on ONNX Runtime, fp16 on a GPU, else fp32 "
            "(the same for every command: docs/cpu.md).",
            default=PrecisionName("fp32"),
            envvar="DEFSENT_PRECISION",
        ),
    },
)
#: the token budget and CUDA graphs, taken by encode and embed-entries alone: ``MODEL(without=BUDGET)``
BUDGET = ("batch_tokens", "cuda_graphs")
#: what the commands that encode queries (eval-dict, lookup, search, serve) leave out: the budget and --max-length
QUERIES = (*BUDGET, "max_length")

#: The toolbox's options, in the order --help lists them.
TOOLBOX = Group(
    "toolbox",
    {
        "layers": option(
            "--layers",
            type=str | None,
            help="Average these hidden_states before pooling: indices (0 = embedding output, L = last layer, "
            "negative from the end), first-last (= 0 and L; --layers 1,L is the fixed-SimCSE variant) or last.",
        ),
        "template": option(
            "--template",
            type=str | None,
            help="Prompt template for prompt / prompt-avg: defsent (default), T0-T4, or your own with [X] and "
            "[MASK] (several masks are averaged).",
        ),
        "ditto_head": option(
            "--ditto-head",
            type=str | None,
            help="Ditto's attention head LAYER-HEAD, 1-based (default 1-10; defsent ditto-search finds a model's "
            "best).",
        ),
        "weighting": option(
            "--weighting",
            type=Weighting | None,
            help="idf: weight tokens by log(N/df), rescaled to sum to 1 per text.",
        ),
        "idf_corpus": option(
            "--idf-corpus",
            type=Path | None,
            help="Lines to count df on (default: the encoded texts, the 'target' setting).",
        ),
        "drop_tokens": option(
            "--drop-tokens",
            type=str | None,
            help="biases: leave out PromptBERT's 36 frequent tokens, punctuation and subword pieces when pooling "
            "(or a comma list of frequent, punctuation, subword).",
        ),
        "post": option(
            "--post",
            type=list[str] | None,
            help="Post-processing, in order (repeat or comma-separate): zscore, quantile[:normal], whiten, "
            "whiten-k:K, abtt:D, l2. Fitted on --fit-on, else on the encoded texts (the 'target' setting).",
        ),
        "fit_on": option("--fit-on", type=Path | None, help="Fit --post on the sentences of this file."),
        "post_file": option(
            "--post-file", type=Path | None, help="Apply a chain fitted by defsent fit-post (instead of --post)."
        ),
        "normalize": option(
            "--normalize/--no-normalize",
            type=bool | None,
            help="L2-normalise each vector, after --post. Default: as the model folder says (a sentence-transformers "
            "folder whose modules end in Normalize, such as all-MiniLM-L6-v2, normalises; other folders do not).",
            show_default=False,
        ),
    },
)


def _settings(group: Group, values: Values | None, given: dict[str, Any]) -> dict[str, Any]:
    """Every member of ``group``: its default, what the command took of it, then ``given``; choices as plain values."""
    found = {name: member.default for name, member in group.options.items()} | dict(values or ()) | given
    return {name: opt.value(v) for name, v in found.items()}


def encode_spec(pooling: Any = None, toolbox: Values | None = None, **given: Any):
    """The pooling and the toolbox's values (``given`` sets a member the command names otherwise, as fit-post's
    ``--input`` for ``fit_on``), checked, as one EncodeSpec."""
    from ..encoder.spec import EncodeSpec

    return EncodeSpec(opt.value(pooling), **_settings(TOOLBOX, toolbox, given)).check()


def load(model: Values, path: Path | None = None, **given: Any):
    """The model ``model`` names (or ``path``: one of several ``-m``, a collection's model), loaded on this
    process's device (``auto`` is the CPU for ONNX Runtime; under torchrun cuda:LOCAL_RANK), with the runtime,
    precision and batching its values ask for (``given``: one the command chose itself, as serve's runtime),
    checked before the model loads."""
    from .. import distributed
    from ..encoder.cuda_graphs import check_cuda_graphs
    from ..encoder.models import load_model
    from ..encoder.onnx_runtime import check_runtime, runtime_device, use_runtime
    from ..encoder.precision import choose_runtime

    run = _settings(MODEL, model, given)
    runtime, precision = choose_runtime(run["runtime"], run["precision"], run["device"])
    check_runtime(runtime, precision, run["device"])
    device = distributed.local_device(runtime_device(runtime, run["device"]))
    if run["cuda_graphs"]:
        check_cuda_graphs(runtime, device)
    loaded = use_runtime(load_model(path or run["model"], device), runtime, precision)
    loaded.batch_tokens, loaded.cuda_graphs = run["batch_tokens"], run["cuda_graphs"]
    return loaded


def load_encoder(spec, model: Values, path: Path | None = None, show_progress: bool | None = None):
    """The model loaded (:func:`load`) and resolved by an EncodeSpec into an Encoder, at the model's batch size and
    token limit."""
    loaded = load(model, path)
    return spec.resolve(
        loaded, batch_size=model.batch_size, max_length=getattr(model, "max_length", None), show_progress=show_progress
    )
