"""The options of the commands that search, declared once, and what they choose: the reverse dictionary's
candidates for ``lookup`` and ``eval-dict`` (the checkpoint, its bank or the vocabulary, the query pooling:
:func:`candidates`), and a collection's search for ``search`` and ``serve`` (the similarity, the bank's dictionary,
:data:`ANN_SEARCH`). Like the other option modules it loads nothing: the library code runs inside the functions
that need it (``defsent_cli.search``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..constraints import Interval
from ..errors import DefsentError
from ..formats.bank import Bank, BankFile
from ..formats.pos import POS_NAMES
from ..log import note
from ..search.ann import EF_SEARCH
from . import options as opt
from .groups import Group, option

if TYPE_CHECKING:  # the reverse dictionary runs in torch: imported by the commands, not by --help
    from ..search.queries import QueryEncoder

QueryPooling = Annotated[
    opt.PoolingName | None,
    typer.Option("--pooling", "-p", help="Override the query pooling (default: the training one)."),
]
CheckpointModel = Annotated[
    Path | None,
    typer.Option(
        "--model",
        "-m",
        help="A defsent checkpoint (its trained head is used) or any model. Default: $DEFSENT_MODEL, else the "
        "bundled all-MiniLM-L6-v2.",
        show_default=False,
        callback=opt.model_default,
        path_type=str,  # as typed: ./x is a folder, never a Hub name (options.model_default)
    ),
]


CandidateBank = Annotated[
    Path | None,
    typer.Option(
        "--bank",
        help="Entry bank (.h5) whose entries are the candidates (not needed for a --objective defsent checkpoint "
        "or with --word-head: the vocabulary is).",
        show_default=False,
    ),
]


def check_candidates(bank: Path | None, word_head) -> None:
    """Before the model loads: one way of choosing the candidates."""
    if bank is not None and word_head is not None:
        raise DefsentError("--bank and --word-head choose the candidates two ways; pass one of them")


def candidates(
    loaded, bank: Path | None, word_head, pooling, dictionary: Path | None = None, dims: int | None = None
) -> tuple[QueryEncoder, Bank | BankFile]:
    """(query encoder, candidates): the entries of ``bank`` (:func:`choose_bank`'s), both sides cut to ``dims``
    (``--dims``; else to the width of a bank built with ``--dims``), or the vocabulary through a word head (which
    ``--dims`` cannot cut)."""
    from ..evaluation.reverse_dict import load_bank_for
    from ..search.queries import query_encoder, word_query_encoder

    check_candidates(bank, word_head)
    if bank is None:
        if dims is not None:
            raise DefsentError(
                "--dims cuts a bank's vectors and the queries'; a word head ranks the vocabulary, which it cannot "
                "cut: pass --bank BANK.h5"
            )
        return word_query_encoder(loaded, opt.value(word_head), opt.value(pooling))
    entries = load_bank_for(dictionary, bank)
    encoder = query_encoder(loaded, entries, opt.value(pooling), dims)
    return encoder, encoder.rows(entries)


def choose_bank(loaded, bank: Path | None, word_head) -> Path | None:
    """The candidates' bank: ``--bank``; else none where the vocabulary is ranked (``--word-head``, a DefSent
    checkpoint); else the bank the checkpoint was trained against (its ``defsent.json``), said in a note; else an
    error saying what to pass (and that the recorded bank is gone, where it is)."""
    from ..evaluation.reverse_dict import check_recorded_bank
    from ..search.queries import trained_word_objective

    if bank is not None or word_head is not None or trained_word_objective(loaded):
        return bank
    recorded = loaded.info.get("bank") if isinstance(loaded.info, dict) else None
    if isinstance(recorded, str) and Path(recorded).is_absolute() and Path(recorded).is_file():  # read_info resolves
        note(f"bank: {recorded} (the one {loaded.path} was trained against; --bank chooses another)")
        check_recorded_bank(recorded, loaded.info.get("bank_sha256"), loaded.path)
        return Path(recorded)
    gone = f" ({loaded.path} was trained against {recorded}, which is gone)" if isinstance(recorded, str) else ""
    raise DefsentError(
        f"pass --bank BANK.h5 (the candidates), or --word-head mlm|embeddings to rank the vocabulary{gone}"
    )


PosName = opt.choices("PosName", POS_NAMES)
PartOfSpeech = Annotated[
    PosName | None,
    typer.Option(
        "--pos",
        help="Only entries with this part of speech (as pos:noun in a query); the bank must keep them (embed-entries "
        "from a dictionary with parts of speech).",
        show_default=False,
    ),
]
Pattern = Annotated[
    str | None,
    typer.Option(
        "--pattern",
        help="Only entries spelt so: * any run, ? one letter (pig*, ????let, *let); as 'a baby pig:p*' in a query.",
        show_default=False,
    ),
]
SimilarityName = opt.choices("SimilarityName", ("cosine", "dot"))
Similarity = Annotated[
    SimilarityName,
    typer.Option(
        "--similarity",
        help="cosine, or dot: a bank's raw dot products (lookup's and training's score). An index holds unit "
        "vectors, so its scores are cosines either way.",
    ),
]
Dictionary = Annotated[
    Path | None,
    typer.Option(
        "--dictionary",
        help="With a bank: the dictionary .jsonl whose definitions the hits show (default: the one the bank "
        "records, when it is still there unchanged).",
        show_default=False,
    ),
]


#: How an index is searched, for search and serve: through its HNSW graph (index --ann) or every row.
ANN_SEARCH = Group(
    "ann search",
    {
        "exact": option(
            "--exact",
            type=bool,
            help="Score every row even where the index has an HNSW graph (index --ann).",
            default=False,
        ),
        "ef_search": option(
            "--ef-search",
            type=int | None,
            help=f"With an index's HNSW graph: candidates kept while searching (more: better recall, slower; "
            f"default {EF_SEARCH}).",
            default=None,
            show_default=False,
            constraint=Interval(1, integer=True),
        ),
    },
)
