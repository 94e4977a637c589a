"""``defsent encode``: texts in, one vector per line out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from .. import distributed, io
from ..cli import command
from ..console import err_console
from ..encoding import encode
from ..errors import DefsentError
from ..models import load_model
from ..toolbox import Toolbox, apply_post, post_settings
from .options import BATCH_SIZE, DEVICE, FORCE, MAX_LENGTH, MODEL, POOLING, PROGRESS, with_toolbox


@command("encode")
@with_toolbox
def encode_command(
    model: Path = MODEL,
    inputs: list[Path] = typer.Option(None, "--input", "-i", help="Input file(s); default stdin. '-' is stdin."),
    field: str = typer.Option(None, "--field", help="Read JSONL and embed this string field of each object."),
    output: Path = typer.Option(
        None, "--output", "-o", help="Output file: .npy, .h5 or .jsonl (by suffix). Default: .npy on stdout."
    ),
    pooling: str = POOLING,
    batch_size: int = BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    normalize: bool = typer.Option(False, "--normalize/--no-normalize", help="L2-normalise each vector."),
    skip_blank: bool = typer.Option(False, "--skip-blank", help="Skip blank lines instead of failing."),
    device: str = DEVICE,
    show_progress: bool = PROGRESS,
    force: bool = FORCE,
    toolbox: Toolbox = None,
) -> None:
    """Encode sentences (one per line) into float32 vectors, one row per line, in order.

    Example: defsent encode --model ckpt/ --pooling mean < sents.txt > vecs.npy

    Toolbox: defsent encode -m ckpt/ --pooling ditto --ditto-head 1-10 --post-file post.h5 -i s.txt -o v.npy

    Under torchrun the processes share the work and rank 0 writes the one output.
    """
    sources = [str(p) for p in inputs] if inputs else ["-"]
    if sources == ["-"] and sys.stdin.isatty():
        raise DefsentError("no input: pipe sentences into stdin or pass --input FILE")
    if output is None and sys.stdout.isatty():
        raise DefsentError("refusing to write binary .npy to a terminal; redirect stdout or pass -o FILE")
    if output is not None:
        io.vector_format(output)
        io.check_output(output, force)
    # Under torchrun every process shares stdin: only rank 0 reads it, and sends the texts to the others.
    from_stdin = distributed.active() and "-" in sources
    texts: list[str] = []
    if distributed.is_main() or not from_stdin:
        texts = io.read_texts(sources, field=field, skip_blank=skip_blank)
    loaded = load_model(model, distributed.local_device(device))
    chosen = toolbox.pooling_for(loaded, max_length) or pooling
    with distributed.session(loaded.device):
        if from_stdin:
            texts = distributed.broadcast_object(texts)
        vectors = encode(
            texts,
            loaded,
            pooling=chosen,
            batch_size=batch_size,
            max_length=max_length,
            normalize_embeddings=normalize and not (toolbox.post or toolbox.post_file),
            show_progress_bar=show_progress,
            shard=True,
        )
    if vectors is None:  # not rank 0: rank 0 writes
        return
    post = toolbox.post_for(loaded, chosen, batch_size, max_length, show_progress)
    if post:
        vectors = apply_post(post, vectors)  # --normalize comes after the post-processing
        if normalize:
            from ..encoding import l2_normalize

            vectors = l2_normalize(vectors)
    used = getattr(chosen, "label", None) or pooling or loaded.default_pooling
    if output is None:
        io.write_npy_stdout(vectors)
    else:
        attrs = {"model": str(model), "pooling": used, "normalized": normalize}
        if post:
            attrs["post"] = json.dumps(post_settings(post))
        io.write_vectors(output, vectors, texts=texts, attrs=attrs)
    err_console.print(f"encoded {len(texts)} texts -> {vectors.shape[1]} dims ({used} pooling)")
