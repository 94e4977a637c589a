"""``defsent train``: one PST step of DefSent+ on a dictionary against a frozen bank."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import distributed
from ..encoder.choices import POOLER_MODES
from ..training.config import BANK_DTYPES, CONSTRAINTS, DEFINITIONS_VARIANTS, LOGITS, SCHEDULES, SHARD_BANK_BYTES
from ..training.specs import DEFINITIONS
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import AUX, Values, change, fit_objective, loop_of, takes_groups, training_warnings

Pooler = opt.choices("Pooler", POOLER_MODES)

BankDtype = opt.choices("BankDtype", BANK_DTYPES)
Logits = opt.choices("Logits", LOGITS)
Variant = opt.choices("Variant", DEFINITIONS_VARIANTS)
Schedule = opt.choices("Schedule", SCHEDULES)
_OWN, _RULES = DEFINITIONS.settings, DEFINITIONS.constraints  # its settings' defaults and rules: the spec's

# train's own options (its objective's settings and the pooling it trains with), each default given in the
# command's signature from the spec
DefinitionsBank = Annotated[
    Path | None,
    typer.Option(
        "--bank",
        help="Entry bank (.h5) built from exactly this dictionary (objective defsent-plus; defsent has none).",
        show_default=False,
    ),
]
ObjectiveVariant = Annotated[
    Variant,
    typer.Option(
        "--objective",
        help="defsent-plus: definitions onto their entries' bank vectors (DefSent+); defsent: predict the "
        "entry word through the frozen word head (DefSent; single-token entries only).",
    ),
]
FreezeEmbeddings = Annotated[
    bool | None,
    typer.Option(
        "--freeze-embeddings/--train-embeddings",
        help="Freeze the encoder's embedding layer (default: frozen for --objective defsent, as DefSent; "
        "trained for defsent-plus).",
        show_default=False,
    ),
]
InferencePooling = Annotated[
    opt.PoolingName | None,
    typer.Option("--inference-pooling", help="Pooling the checkpoint uses for encode/eval (default: --pooling)."),
]
PoolerOption = Annotated[
    Pooler,
    typer.Option(
        "--pooler",
        help="Head between pooling and bank: keep (the model's dense+tanh pooler; BERT default), mlm-dense (MLM "
        "head dense + GELU; RoBERTa default), none (no head), linear (the pooler dense reset to the identity, no "
        "activation: for untrained poolers and ICA banks), auto (the paper's head for the model's family when the "
        "folder has it trained, else none, e.g. for all-MiniLM-L6-v2).",
    ),
]
HeadLr = Annotated[
    float | None,
    typer.Option(
        "--head-lr",
        callback=opt.constrained(CONSTRAINTS["head_lr"]),
        help="Peak learning rate of the head's dense layer (default: --lr).",
    ),
]
ScheduleOption = Annotated[
    Schedule | None,
    typer.Option(
        "--schedule",
        help="After the warm-up: linear (decay to 0; DefSent+) or constant (DefSent's code). Default: the objective's.",
        show_default=False,
    ),
]
BankDtypeOption = Annotated[
    BankDtype,
    typer.Option(
        "--bank-dtype",
        help="How the frozen bank is held: float16 halves its memory in every process (the loss stays float32).",
    ),
]
ShardBank = Annotated[
    bool | None,
    typer.Option(
        "--shard-bank/--no-shard-bank",
        help="Under torchrun: each process holds only its 1/N of the bank's rows and the softmax over all "
        "entries is computed across the processes (the same loss; bank memory per process / N). Default: "
        f"sharded when the bank takes {SHARD_BANK_BYTES >> 30} GiB or more (in its --bank-dtype), replicated below.",
        show_default=False,
    ),
]
LogitsOption = Annotated[
    Logits,
    typer.Option(
        "--logits",
        help="dot: rep . bank row (DefSent+); cosine: cos(rep, bank row) x --scale, the geometry "
        "sentence-transformers models were trained in.",
    ),
]
Scale = Annotated[
    float | None,
    typer.Option(
        "--scale",
        callback=opt.constrained(_RULES["scale"]),
        help="Multiply the logits by this (default: 1 for dot, 20 for cosine).",
    ),
]
LabelSmoothing = Annotated[
    float,
    typer.Option(
        "--label-smoothing",
        callback=opt.constrained(_RULES["label_smoothing"]),
        help="Put this share of the target on all entries evenly.",
    ),
]
HeadWarmupSteps = Annotated[
    int,
    typer.Option(
        "--head-warmup-steps",
        min=0,
        help="Train only the head for this many steps, then everything (linear probe, then fine-tune: "
        "LP-FT, Kumar et al. 2022); for a trainable head such as --pooler linear.",
    ),
]
TrainPoolingOption = Annotated[
    opt.TrainPooling | None,
    typer.Option("--pooling", "-p", help=f"Pooling before the head, in training. {opt.OWN_POOLING_HELP}"),
]


def _objective_default(name: str, what: str, kind: type) -> dict:
    """A loop option whose default is the objective's variant's: None on the command line, the help saying each
    (from the spec)."""
    first, *others = DEFINITIONS.variants
    shown = "; ".join(
        [f"default: {DEFINITIONS.loop_defaults(first)[name]:g}"]
        + [f"--objective {variant}: {DEFINITIONS.loop_defaults(variant)[name]:g}" for variant in others]
    )
    return change(None, type=kind | None, help=f"{what} ({shown}).", show_default=False)


def train_command(
    ctx: typer.Context,
    dictionary: Annotated[
        Path,
        typer.Argument(
            metavar="DICTIONARY", help="Dictionary JSONL; its train split is trained on.", show_default=False
        ),
    ],
    output: opt.CheckpointOutput,
    model: opt.Model = None,
    bank: DefinitionsBank = None,
    objective: ObjectiveVariant = _OWN["objective"],
    word_head: opt.WordHead = None,
    freeze_embeddings: FreezeEmbeddings = _OWN["freeze_embeddings"],
    aux: Values = AUX(),
    pooling: TrainPoolingOption = None,
    inference_pooling: InferencePooling = _OWN["inference_pooling"],
    pooler: PoolerOption = _OWN["pooler"],
    head_lr: HeadLr = None,
    schedule: ScheduleOption = None,
    bank_dtype: BankDtypeOption = _OWN["bank_dtype"],
    shard_bank: ShardBank = _OWN["shard_bank"],
    logits: LogitsOption = _OWN["logits"],
    scale: Scale = _OWN["scale"],
    label_smoothing: LabelSmoothing = _OWN["label_smoothing"],
    head_warmup_steps: HeadWarmupSteps = _OWN["head_warmup_steps"],
    loop: Values = loop_of(
        DEFINITIONS,
        lr=_objective_default("lr", "Peak learning rate", float),
        batch_size=_objective_default("batch_size", "Definitions per step", int),
        warmup_ratio=_objective_default("warmup_ratio", "Share of steps for linear warm-up", float),
        adam_eps=_objective_default("adam_eps", "AdamW epsilon", float),
        max_grad_norm=_objective_default("max_grad_norm", "Gradient clipping norm, 0 = none", float),
    ),
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Train a fresh copy of MODEL to map definitions onto their entries' bank vectors (one PST step).

    \b
    Examples:
      defsent train dict.jsonl --bank bank.h5 --seed 1 -o ckpt-1/
      defsent train dict.jsonl --bank bank.h5 -m bert-base/ --lr 5e-5 -o ckpt-1/
      defsent train dict.jsonl --objective defsent -m bert-base/ -o defsent-1/
      defsent train dict.jsonl --bank bank.h5 -m BASE --mlm-weight 0.1 -o mlm/
      defsent train dict.jsonl --bank bank.h5 -m BASE --nm-weight 0.1 -o nm/
      defsent train dict.jsonl --bank bank.h5 --matryoshka 384,256,128,64 -o mrl/

    Pooling and head follow the model (its own pooling, CLS for a plain BERT; no head where its pooler is
    untrained); --pooling and --pooler choose. --objective defsent is DefSent's word prediction (batch 16, Adam, lr 1e-5, 10% warm-up, then constant,
    no clipping).
    Runs unchanged under torchrun --nproc_per_node N (DDP): --batch-size stays the global batch;
    --shard-bank splits the bank's rows across the processes.
    """
    from ..formats.dictionary import check_dictionary

    check_dictionary(dictionary)  # a pairs file or a TSV given as the dictionary fails before torch loads
    from ..training.definitions import Definitions  # torch: imported by the command, not by --help

    objective_name = opt.value(objective)
    warn_ineffective(ctx, _ineffective(loop, aux, objective_name, opt.value(pooler)))
    definitions = Definitions(
        bank,
        objective=objective_name,
        pooler=opt.value(pooler),
        inference_pooling=opt.value(inference_pooling),
        bank_dtype=opt.value(bank_dtype),
        shard_bank=shard_bank,
        logits=opt.value(logits),
        scale=scale,
        label_smoothing=label_smoothing,
        head_warmup_steps=head_warmup_steps,
        freeze_embeddings=freeze_embeddings,
    )
    own = {"word_head": opt.value(word_head), "schedule": opt.value(schedule), "pooling": pooling, "head_lr": head_lr}
    fit_objective(definitions, dictionary, model, output, loop, aux, force=force, show_progress=show_progress, **own)


def _ineffective(loop: Values, aux: Values, objective: str, pooler: str) -> list[tuple[str, bool, str]]:
    """train's options that cannot take effect, given the others (``boundary.warn_ineffective``'s cases)."""
    return [
        *training_warnings(loop.eval_every, aux),
        (
            "word_head",
            objective == "defsent-plus" and not aux.mlm_weight,
            "--word-head has no effect: --objective defsent-plus uses a word head only for --mlm-weight",
        ),
        ("head_lr", pooler == "none", "--head-lr has no effect: --pooler none has no head to train"),
        (
            "shard_bank",
            not distributed.active(),
            "--shard-bank has no effect in one process, which holds the whole bank; it shards the bank across "
            "the processes of torchrun",
        ),
    ]


HELP_ORDER = 50  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("train")(guard(takes_groups(train_command)))
