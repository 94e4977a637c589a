"""``defsent lookup`` (reverse dictionary) and ``defsent eval-dict`` (its MRR / top-k)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.table import Table

from .. import io
from ..cli import command
from ..console import err_console
from ..errors import DefsentError
from ..reverse_dict import evaluate, load_bank_for, load_query_encoder, top_k
from .options import BATCH_SIZE, DEVICE, FORCE, PROGRESS

BANK = typer.Option(..., "--bank", help="Entry bank (.h5) whose entries are the candidates.")
MODEL = typer.Option(..., "--model", "-m", help="A defsent checkpoint (its trained head is used) or any model.")
QUERY_POOLING = typer.Option(None, "--pooling", "-p", help="Override the query pooling (default: the training one).")


@command("lookup")
def lookup_command(
    queries: list[str] = typer.Argument(None, help="Definitions to look up; none: one per line on stdin."),
    model: Path = MODEL,
    bank: Path = BANK,
    k: int = typer.Option(10, "--top-k", "-k", min=1, help="Entries to show per query."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per query on stdout."),
    pooling: str = QUERY_POOLING,
    batch_size: int = BATCH_SIZE,
    device: str = DEVICE,
) -> None:
    """Reverse dictionary: print the entries whose bank vectors best match each definition.

    Example: defsent lookup --model ckpt/ --bank bank.h5 "a long-necked African animal"
    """
    if not queries:
        if sys.stdin.isatty():
            raise DefsentError("no query: pass definitions as arguments or one per line on stdin")
        queries = io.read_texts(["-"], skip_blank=True)
    entries = load_bank_for(None, bank)
    encoder = load_query_encoder(model, entries, pooling, device)
    vectors = encoder.encode(queries, batch_size)
    indices, scores = top_k(vectors, entries, k)
    for query, rows, values in zip(queries, indices, scores, strict=True):
        hits = [{"entry": entries.entries[i], "score": round(float(s), 4)} for i, s in zip(rows, values, strict=True)]
        if as_json:
            sys.stdout.write(json.dumps({"query": query, "results": hits}, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(f"{query}\n")
            for rank, hit in enumerate(hits, 1):
                sys.stdout.write(f"  {rank:>2}. {hit['entry']}\t{hit['score']:.4f}\n")
    sys.stdout.flush()


@command("eval-dict")
def eval_dict_command(
    dictionary: Path = typer.Argument(..., help="Dictionary JSONL the bank was built from."),
    model: Path = MODEL,
    bank: Path = BANK,
    split: str = typer.Option("test", "--split", help="train, dev or test: whose definitions are the queries."),
    limit: int = typer.Option(None, "--limit", min=1, help="Evaluate only the first N definitions."),
    output: Path = typer.Option(None, "--output", "-o", help="Write the results JSON here."),
    pooling: str = QUERY_POOLING,
    batch_size: int = BATCH_SIZE,
    device: str = DEVICE,
    show_progress: bool = PROGRESS,
    force: bool = FORCE,
) -> None:
    """Reverse-dictionary accuracy: MRR and top-1/3/10 of each definition's entry among all bank entries.

    Example: defsent eval-dict dict.jsonl --split test --model ckpt/ --bank bank.h5 -o dict-test.json
    """
    if output is not None:
        io.check_output(output, force)
    entries = load_bank_for(dictionary, bank)
    encoder = load_query_encoder(model, entries, pooling, device)
    metrics = evaluate(dictionary, encoder, entries, split, batch_size, limit, show_progress)
    result = {"task": "reverse-dictionary", "model": str(model), "bank": str(bank), "dictionary": str(dictionary)}
    result["pooling"] = encoder.pooling.name
    result["head"] = encoder.head.mode_description
    result.update(metrics)
    table = Table(title=f"reverse dictionary, {split} split ({metrics['n']:,} definitions, {len(entries):,} entries)")
    for name in ("MRR", "top-1", "top-3", "top-10", "median rank"):
        table.add_column(name, justify="right")
    table.add_row(
        f"{metrics['mrr']:.4f}",
        f"{metrics['top1']:.4f}",
        f"{metrics['top3']:.4f}",
        f"{metrics['top10']:.4f}",
        f"{metrics['median_rank']:g}",
    )
    if output is not None:
        io.write_json(output, result)
        err_console.print(table)
    else:
        from rich.console import Console

        Console(highlight=False).print(table)
