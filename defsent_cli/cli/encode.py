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
from ..io import check_output, read_texts
from . import options as opt
from .boundary import guard


def encode_command(
    model: opt.Model = None,
    inputs: Annotated[
        list[Path] | None, typer.Option("--input", "-i", help="Input file(s); default stdin. '-' is stdin.")
    ] = None,
    field: Annotated[
        str | None, typer.Option("--field", help="Read JSONL and embed this string field of each object.")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Output file: .npy, .h5 or .jsonl (by suffix). Default: .npy on stdout."),
    ] = None,
    pooling: opt.Pooling = None,
    batch_size: opt.BatchSize = 32,
    batch_tokens: opt.BatchTokens = None,
    cuda_graphs: opt.CudaGraphs = False,
    max_length: opt.MaxLength = None,
    normalize: opt.Normalize = None,
    skip_blank: Annotated[bool, typer.Option("--skip-blank", help="Skip blank lines instead of failing.")] = False,
    device: opt.Device = "auto",
    runtime: opt.Runtime = opt.RUNTIME_DEFAULT,
    precision: opt.Precision = opt.PRECISION_DEFAULT,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
    layers: opt.Layers = None,
    template: opt.Template = None,
    ditto_head: opt.DittoHead = None,
    weighting: opt.WeightingOption = None,
    idf_corpus: opt.IdfCorpus = None,
    drop_tokens: opt.DropTokens = None,
    post: opt.Post = None,
    fit_on: opt.FitOn = None,
    post_file: opt.PostFile = None,
) -> None:
    """Encode sentences (one per line) into float32 vectors, one row per line, in order.

    \b
    Examples:
      defsent encode --model ckpt/ --pooling mean < sents.txt > vecs.npy
      defsent encode -m ckpt/ --pooling ditto --ditto-head 1-10 \\
          --post-file post.h5 -i sents.txt -o vecs.h5

    Under torchrun the processes share the work and rank 0 writes the one output.
    """
    from ..encoder.onnx_runtime import describe  # torch and numpy: imported by the command, not by --help
    from ..formats.vectors import vector_format, write_npy_stdout, write_vectors

    spec = opt.encode_spec(
        pooling, layers, template, ditto_head, weighting, idf_corpus, drop_tokens, post, fit_on, post_file, normalize
    )
    sources = [str(p) for p in inputs] if inputs else ["-"]
    if sources.count("-") > 1:
        raise DefsentError("stdin ('-') can be read only once; give it one --input -")
    if sources == ["-"] and sys.stdin.isatty():
        raise DefsentError("no input: pipe sentences into stdin or pass --input FILE")
    if output is None and sys.stdout.isatty():
        raise DefsentError("refusing to write binary .npy to a terminal; redirect stdout or pass -o FILE")
    if output is not None:
        check_output(output, force)
        vector_format(output)
    # Under torchrun every process shares stdin: only rank 0 reads it, and sends the texts to the others.
    from_stdin = distributed.active() and "-" in sources
    texts: list[str] = []
    if distributed.is_main() or not from_stdin:
        texts = read_texts(sources, field=field, skip_blank=skip_blank)
        if not texts:
            where = "stdin" if sources == ["-"] else ", ".join(sources)
            raise DefsentError(f"no sentences in {where}: nothing to encode")
        if field is None and _is_json_object(texts[0]):
            where = "<stdin>" if sources[0] == "-" else sources[0]
            raise DefsentError(
                "is JSON Lines (a JSON object per line), and encoding the raw JSON means nothing: pass --field NAME "
                "to encode one string field of each object",
                path=where,
                line=1,
            )
    loaded = opt.load(model, device, runtime, precision, batch_tokens, cuda_graphs)
    encoder = spec.resolve(loaded, batch_size=batch_size, max_length=max_length, show_progress=show_progress)
    with distributed.session(loaded.device):
        if from_stdin:
            texts = distributed.broadcast_object(texts)
        vectors = encoder(texts, shard=True)  # normalised (or not: encoder.normalized) after the post-processing
    if vectors is None:  # not rank 0: rank 0 writes
        return
    if output is None:
        write_npy_stdout(vectors)
    else:
        attrs = {"model": str(model), "pooling": encoder.label, "normalized": encoder.normalized}
        attrs["encoding"] = json.dumps(encoder.describe())
        write_vectors(output, vectors, texts=texts, attrs=attrs)
    norm = encoder.normalization()
    say(
        f"encoded {len(texts)} texts -> {vectors.shape[1]} dims ({encoder.label} pooling, {describe(loaded)}; "
        f"{'normalised' if norm['normalized'] else 'not normalised'}: {norm['by']})"
    )


def _is_json_object(text: str) -> bool:
    """True for a line that is a JSON object (the first line of a JSONL file given without --field)."""
    if not text.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def register(app: typer.Typer) -> None:
    app.command("encode")(guard(encode_command))
