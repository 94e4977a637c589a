"""Options shared by several subcommands, named as sentence-transformers names them."""

from __future__ import annotations

import typer

MODEL = typer.Option(
    ..., "--model", "-m", help="Local model folder (transformers, sentence-transformers or a defsent checkpoint)."
)
POOLING = typer.Option(
    None,
    "--pooling",
    "-p",
    help="cls | mean | max | prompt | prompt-avg | first-last | ditto (see the Pooling toolbox options). "
    "Default: the model folder's own (sentence-transformers or defsent config), else mean.",
)
BATCH_SIZE = typer.Option(32, "--batch-size", "-b", min=1, help="Texts per forward pass.")
MAX_LENGTH = typer.Option(
    None, "--max-length", min=2, help="Truncate inputs to this many tokens (default: the model's limit)."
)
DEVICE = typer.Option("auto", "--device", envvar="DEFSENT_DEVICE", help="cpu, cuda, cuda:N or auto.")
PROGRESS = typer.Option(
    None, "--progress/--no-progress", help="Progress bar on stderr (default on; DEFSENT_NO_PROGRESS=1 turns it off)."
)
FORCE = typer.Option(False, "--force", help="Overwrite an existing output.")


# ---------------------------------------------------------------- the training-free toolbox

TOOLBOX_OPTIONS = {
    "layers": typer.Option(
        None,
        "--layers",
        help="Average these hidden_states before pooling: indices (0 = embedding output, L = last layer; "
        "negative from the end), or first-last = 0 and L (Ditto's code, the SimCSE paper; --layers 1,L is the "
        "fixed-SimCSE / Stankevičius variant), or last.",
        rich_help_panel="Pooling toolbox",
    ),
    "template": typer.Option(
        None,
        "--template",
        help="Prompt template for prompt / prompt-avg: defsent (default), T0-T4 (T4: This sentence from the "
        'dictionary: "[X]" means "[MASK]" and is about [MASK], which is a synonym for [MASK].) or your own '
        "with [X] and [MASK]; several masks are averaged.",
        rich_help_panel="Pooling toolbox",
    ),
    "ditto_head": typer.Option(
        None,
        "--ditto-head",
        help="Ditto's attention head LAYER-HEAD, 1-based as the paper (default 1-10, its bert-base choice; "
        "defsent ditto-search finds a model's best).",
        rich_help_panel="Pooling toolbox",
    ),
    "weighting": typer.Option(
        None,
        "--weighting",
        help="idf: weight tokens by log(N/df), rescaled to sum to 1 per text (mean, prompt-avg, first-last).",
        rich_help_panel="Pooling toolbox",
    ),
    "idf_corpus": typer.Option(
        None,
        "--idf-corpus",
        help="Lines (documents) to count df on. Default: the texts being encoded (the 'target' setting).",
        rich_help_panel="Pooling toolbox",
    ),
    "drop_tokens": typer.Option(
        None,
        "--drop-tokens",
        help="biases: leave out PromptBERT's 36 most frequent tokens, punctuation and subword pieces when "
        "pooling (or a comma list of frequent, punctuation, subword).",
        rich_help_panel="Pooling toolbox",
    ),
    "post": typer.Option(
        None,
        "--post",
        help="Post-processing steps, in order (repeat or comma-separate): zscore, quantile (uniform; "
        "quantile:normal), whiten, whiten-k:K, abtt:D, l2. Fitted on --fit-on, else on the encoded texts "
        "themselves (the published 'target' setting).",
        rich_help_panel="Post-processing",
    ),
    "fit_on": typer.Option(
        None, "--fit-on", help="Fit --post on the sentences of this file.", rich_help_panel="Post-processing"
    ),
    "post_file": typer.Option(
        None,
        "--post-file",
        help="Apply a chain fitted by defsent fit-post (instead of --post).",
        rich_help_panel="Post-processing",
    ),
}


def with_toolbox(fn):
    """Give a command the toolbox options; it receives them as one ``toolbox`` argument (a Toolbox).

    The command keeps its own ``pooling`` option and a ``toolbox`` parameter; Typer sees the
    options above in their place.
    """
    import functools
    import inspect
    from pathlib import Path

    from ..toolbox import Toolbox

    annotations = {
        "layers": str,
        "template": str,
        "ditto_head": str,
        "weighting": str,
        "idf_corpus": Path,
        "drop_tokens": str,
        "post": list[str],
        "fit_on": Path,
        "post_file": Path,
    }
    signature = inspect.signature(fn)
    params = [p for p in signature.parameters.values() if p.name != "toolbox"]
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=TOOLBOX_OPTIONS[name], annotation=kind)
        for name, kind in annotations.items()
    ]
    positional = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]

    @functools.wraps(fn)
    def wrapper(**kwargs):
        options = {name: kwargs.pop(name, None) for name in annotations}
        options["post"] = [step for item in options["post"] or [] for step in item.split(",") if step.strip()]
        toolbox = Toolbox(pooling=kwargs.get("pooling"), **options)
        toolbox.check()
        return fn(toolbox=toolbox, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=positional + extra)
    return wrapper
