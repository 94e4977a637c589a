"""``defsent encode``: texts in, one vector per line out."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import DefsentError
from ..io import check_output, is_stdout
from . import options as opt
from .boundary import guard, warn_given
from .groups import Values, takes_groups
from .input_options import RECORDS, refuse_blank
from .models import MODEL, TOOLBOX, encode_spec, load_encoder

VectorFormat = opt.choices("VectorFormat", ("npy", "jsonl", "json", "h5"))


def encode_command(
    sentences: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TEXT", help="Texts to encode, given here instead of a file or stdin.", show_default=False
        ),
    ] = None,
    model: Values = MODEL(),
    inputs: Annotated[
        list[Path] | None, typer.Option("--input", "-i", help="Input file(s); default stdin. '-' is stdin.")
    ] = None,
    records: Values = RECORDS(),
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Output file: .npy, .h5, .jsonl or .json (by suffix). Default (or -): stdout."
        ),
    ] = None,
    fmt: Annotated[
        VectorFormat | None,
        typer.Option(
            "--format",
            "-f",
            help="npy, jsonl ({id, embedding} per row), json (a list of them) or h5 (a file only). Default: -o's "
            "suffix; on stdout npy, or jsonl when stdout is a terminal.",
            show_default=False,
        ),
    ] = None,
    store_text: Annotated[
        bool, typer.Option("--store-text", help="JSON rows carry their text too (h5 always stores the texts).")
    ] = False,
    similarity: Annotated[
        bool,
        typer.Option(
            "--similarity",
            help="Print the cosine similarity of every pair of texts instead of their vectors (a table; JSON with "
            "--format json).",
        ),
    ] = False,
    pooling: opt.Pooling = None,
    toolbox: Values = TOOLBOX(),
    dims: opt.Dims = None,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Encode sentences (arguments, or one per line of files or stdin) into float32 vectors, one row each, in order.

    \b
    Examples:
      defsent encode --model ckpt/ --pooling mean < sents.txt > vecs.npy
      defsent encode -f jsonl "A man plays a guitar." "Someone plays guitar."
      defsent encode --similarity "A man plays a guitar." \\
          "Someone plays guitar." "A cat sleeps."
      defsent encode -i docs.jsonl --field text --id-field id \\
          --store-text -o vecs.jsonl
      defsent encode -m ckpt/ --pooling ditto --ditto-head 1-10 \\
          --post-file post.h5 -i sents.txt -o vecs.h5
      defsent encode -m mrl-ckpt/ --dims 128 < sents.txt > vecs.npy

    Under torchrun the processes share the work and rank 0 writes the one output.
    """
    from ..encoder.onnx_runtime import describe  # torch and numpy: imported by the command, not by --help
    from ..formats.vectors import refuse_nonfinite

    spec = encode_spec(pooling, toolbox)
    if sentences and inputs:
        raise DefsentError("give the texts as arguments or with --input, not both")
    refuse_blank(sentences or [], "text", "give a text to encode")
    sources = [str(p) for p in inputs] if inputs else ["-"]
    if sources.count("-") > 1:
        raise DefsentError("stdin ('-') can be read only once; give it one --input -")
    if not sentences and sources == ["-"] and sys.stdin.isatty():
        raise DefsentError("no input: give texts as arguments, pipe sentences into stdin, or pass --input FILE")
    to_stdout = output is None or is_stdout(output)
    if not to_stdout:
        check_output(output, force)
    chosen = output_format(output, opt.value(fmt), similarity)
    warn_given(
        [
            ("field", bool(sentences), "--field has no effect: the texts are the arguments, not JSONL objects"),
            ("skip_blank", bool(sentences), "--skip-blank has no effect on arguments: a blank argument is an error"),
            (
                "store_text",
                chosen not in ("jsonl", "json") or similarity,
                f"--store-text has no effect on {'the --similarity table' if similarity else chosen}: only jsonl and json "
                "rows carry their text (h5 always stores the texts)",
            ),
        ]
    )
    # Under torchrun every process shares stdin: only rank 0 reads it, and sends the texts to the others.
    from_stdin = distributed.active() and "-" in sources and not sentences
    texts, ids, where = _read_texts(sentences, sources, records, from_stdin)
    encoder = load_encoder(spec, model, show_progress=show_progress).cut_to(dims)
    loaded = encoder.loaded
    with distributed.session(loaded.device):
        if from_stdin:
            texts = distributed.broadcast_object(texts)
        vectors = encoder(texts, shard=True)  # normalised (or not: encoder.normalized) after the post-processing
    if vectors is None:  # not rank 0: rank 0 writes
        return
    refuse_nonfinite(vectors, loaded.path, where or None)
    if similarity:
        write_similarity(texts, vectors, chosen)
    else:
        target = "-" if to_stdout else output
        _write_vectors(target, vectors, texts, ids, encoder, model.model, dims is not None, chosen, store_text)
    norm = encoder.normalization()
    cut = "" if dims is None else f", the leading {encoder.width} of {loaded.dim}"
    say(
        f"encoded {len(texts)} texts -> {vectors.shape[1]} dims{cut} ({encoder.label} pooling, {describe(loaded)}; "
        f"{'normalised' if norm['normalized'] else 'not normalised'}: {norm['by']})"
    )


def _read_texts(sentences: list[str] | None, sources: list[str], records, from_stdin: bool):
    """(texts, ids, where) of encode: the arguments, numbered 1, 2, ...; else the records of the files or stdin
    (``where``: each text's file and line), read by every process but, for stdin under torchrun, by rank 0 alone
    (the others get nothing here: rank 0 sends them the texts)."""
    from ..formats.plain import read_plain_records

    texts: list[str] = []
    ids: list = []
    where: list[tuple[str, int]] = []
    if sentences:
        texts, ids = list(sentences), list(range(1, len(sentences) + 1))
        if records.id_field is not None:
            raise DefsentError("--id-field reads JSONL input: texts given as arguments are numbered 1, 2, ...")
    elif distributed.is_main() or not from_stdin:
        ids, texts = read_plain_records(
            sources, records.field, records.id_field, records.skip_blank, "encode", "sentences", where
        )
    return texts, ids, where


def _write_vectors(target, vectors, texts, ids, encoder, model, cut: bool, fmt: str, store_text: bool) -> None:
    """The vectors written to ``target`` (a file or ``-``), with what made them: the model, the pooling, whether
    they are normalised, their width where ``--dims`` cut them (``cut``), the whole encoding."""
    from ..formats.vectors import write_vectors

    attrs = {"model": str(model), "pooling": encoder.label, "normalized": encoder.normalized}
    if cut:
        attrs["dims"] = encoder.width
    attrs["encoding"] = json.dumps(encoder.describe())
    write_vectors(target, vectors, texts=texts, attrs=attrs, fmt=fmt, ids=ids, store_text=store_text)


def output_format(output: Path | None, fmt: str | None, similarity: bool) -> str:
    """What ``encode`` writes: ``--format``, else the suffix of ``-o FILE``, else (stdout) npy, or jsonl on a
    terminal; a table with ``--similarity`` (JSON with --format json). Contradictions are one-line errors."""
    from ..formats.vectors import vector_format

    to_stdout = output is None or is_stdout(output)
    if similarity:
        if not to_stdout:
            raise DefsentError("--similarity prints its table on stdout: drop -o (or use --format json > FILE)")
        if fmt not in (None, "json"):
            raise DefsentError(f"--similarity prints a table, or JSON with --format json, not {fmt}")
        return fmt or "table"
    if to_stdout:
        if fmt == "h5":
            raise DefsentError("h5 cannot be written to stdout: give -o FILE.h5")
        if fmt is None and sys.stdout.isatty():
            return "jsonl"
        if fmt == "npy" and sys.stdout.isatty():
            raise DefsentError("refusing to write binary .npy to a terminal; redirect stdout or pass -o FILE")
        return fmt or "npy"
    by_suffix = vector_format(output) if fmt is None else None
    if (
        fmt is not None
        and output.suffix.lower() not in ("", f".{fmt}")
        and not (fmt == "h5" and output.suffix.lower() == ".hdf5")
    ):
        raise DefsentError(f"--format {fmt} contradicts the output's suffix {output.suffix}", path=output)
    return fmt or by_suffix


def write_similarity(texts: list[str], vectors, fmt: str) -> None:
    """The cosine of every pair of texts on stdout: a table (each row ends with its text) or a JSON object."""
    import numpy as np

    from ..io import json_text, write_stdout

    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    cosine = np.clip(unit @ unit.T, -1.0, 1.0)
    if fmt == "json":
        write_stdout(json_text({"texts": texts, "cosine": np.round(cosine, 6).tolist()}) + "\n")
        return
    labels = [f"[{i}]" for i in range(1, len(texts) + 1)]
    width = max(7, max(map(len, labels)) + 1)
    lines = [" " * width + "".join(label.rjust(width) for label in labels)]
    for label, row, text in zip(labels, cosine, texts, strict=True):
        lines.append(label.ljust(width) + "".join(f"{value:{width}.4f}" for value in row) + "  " + text)
    write_stdout("\n".join(lines) + "\n")


HELP_ORDER = 180  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("encode")(guard(takes_groups(encode_command)))
