"""``defsent eval-dict``: reverse-dictionary MRR and top-k on a dictionary split."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import distributed
from ..io import check_output, write_json
from . import options as opt
from .boundary import guard
from .groups import Values, change, takes_groups
from .models import MODEL, QUERIES, load
from .render import reverse_dictionary_table, show
from .search_options import CandidateBank, CheckpointModel, QueryPooling, candidates, check_candidates, choose_bank


def eval_dict_command(
    dictionary: Annotated[
        Path, typer.Argument(metavar="DICTIONARY", help="Dictionary JSONL the bank was built from.", show_default=False)
    ],
    model: Values = MODEL(model=change(annotation=CheckpointModel), without=QUERIES),
    bank: CandidateBank = None,
    word_head: opt.WordHead = None,
    split: Annotated[opt.Split, typer.Option("--split", help="Whose definitions are the queries.")] = opt.Split.test,
    limit: opt.Limit = None,
    seed: opt.Seed = opt.SEED_DEFAULT,
    output: opt.ResultsOutput = None,
    pooling: QueryPooling = None,
    dims: opt.Dims = None,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Reverse-dictionary accuracy: MRR and top-1/3/10 of each definition's entry among all bank entries.

    \b
    Examples:
      defsent eval-dict dict.jsonl --split test --model ckpt/ --bank bank.h5 \\
          -o dict-test.json
      defsent eval-dict dict.jsonl --model defsent-ckpt/ -o words.json
      defsent eval-dict dict.jsonl -m mrl-ckpt/ --bank bank.h5 --dims 128 \\
          -o dict-128.json

    Over the vocabulary (a --objective defsent checkpoint, or --word-head) only the entries that are one
    token are queried, as in DefSent's word-prediction table. The bank is read from its file a chunk of rows at
    a time, never whole; under torchrun the processes share the queries and each scores its share of the rows.
    """
    from ..evaluation.reverse_dict import evaluate  # torch: imported by the command, not by --help

    if output is not None:
        check_output(output, force, stdout=True)
    check_candidates(bank, word_head)
    loaded = load(model)
    bank = choose_bank(loaded, bank, word_head)
    with distributed.session(loaded.device):
        encoder, entries = candidates(loaded, bank, word_head, pooling, dictionary, dims)
        metrics = evaluate(
            dictionary,
            encoder,
            entries,
            opt.value(split),
            model.batch_size,
            limit,
            show_progress,
            seed,
            distributed.active(),
        )
    if not distributed.is_main():  # rank 0 reports
        return
    result = {
        "task": "reverse-dictionary",
        "model": str(model.model),
        "bank": str(bank) if bank is not None else None,
        "dictionary": str(dictionary),
    }
    result["pooling"] = encoder.pooling.name
    result["head"] = encoder.head.mode_description
    if encoder.cut is not None:  # the leading dims scored, both sides (--dims, or a bank built with it)
        result["dims"] = encoder.cut
    result.update(metrics)
    table = reverse_dictionary_table(metrics, len(entries))
    if output is not None:
        from ..formats.results import provenance

        result["provenance"] = provenance([model.model], [dictionary, *([bank] if bank is not None else [])], seed)
        write_json(output, result)
        show(table, to_stdout=False)
    else:
        show(table, to_stdout=True)


HELP_ORDER = 170  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("eval-dict")(guard(takes_groups(eval_dict_command)))
