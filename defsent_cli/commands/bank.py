"""``defsent embed-entries``: a dictionary and an encoder in, an HDF5 entry bank out."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import distributed
from ..bank import SPLITS, build_bank, write_bank
from ..cli import command
from ..console import err_console
from ..errors import DefsentError
from ..io import check_output
from ..models import load_model
from .options import BATCH_SIZE, DEVICE, FORCE, MAX_LENGTH, PROGRESS


@command("embed-entries")
def embed_entries(
    dictionary: Path = typer.Argument(..., help="Dictionary JSONL (build-dict output)."),
    encoder: Path = typer.Option(..., "--encoder", "--model", "-m", help="Local encoder folder."),
    kind: str = typer.Option(
        "AMP", "--kind", "-k", help="AC (mean of CLS states) or AMP (mean of mean-pooled states)."
    ),
    output: Path = typer.Option(..., "--output", "-o", help="Output bank (.h5)."),
    splits: str = typer.Option(
        ",".join(SPLITS), "--splits", help="Comma-separated splits whose entries enter the bank."
    ),
    batch_size: int = BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    device: str = DEVICE,
    show_progress: bool = PROGRESS,
    force: bool = FORCE,
) -> None:
    """Embed every dictionary entry as the mean of its definitions' vectors (AC or AMP bank).

    Example: defsent embed-entries dict.jsonl --encoder ckpt/ --kind AMP -o bank.h5

    Under torchrun the processes share the definitions and rank 0 writes the bank.
    """
    if output.suffix.lower() not in (".h5", ".hdf5"):
        raise DefsentError("a bank is HDF5: give the output an .h5 suffix", path=output)
    check_output(output, force)
    wanted = [s.strip() for s in splits.split(",") if s.strip()]
    loaded = load_model(encoder, distributed.local_device(device))
    with distributed.session(loaded.device):
        bank = build_bank(
            dictionary, loaded, kind, wanted, batch_size, max_length, show_progress=show_progress, shard=True
        )
    if bank is None:  # not rank 0: rank 0 writes
        return
    write_bank(output, bank)
    err_console.print(
        f"wrote {output}: {len(bank)} entries x {bank.vectors.shape[1]} dims ({bank.kind}, "
        f"{int(bank.counts.sum())} definitions)"
    )
