"""``defsent merge``: WiSE-FT interpolation and model soups of checkpoints of one base model."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from .. import __version__
from ..console import say
from ..errors import DefsentError
from ..evaluation.criteria import CRITERIA, Criterion
from ..io import check_output
from ..merging import METHODS
from . import options as opt
from .boundary import guard

Method = opt.choices("Method", METHODS)
# dict-dev needs a dictionary and a bank, which a merge of bare model folders does not have
Select = opt.choices("Select", [name for name in CRITERIA if name != "dict-dev"])


def merge_command(
    models: Annotated[
        list[Path],
        typer.Argument(metavar="MODELS", help="Model folders: BASE CKPT for interpolate, the soup's checkpoints else."),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Checkpoint folder to write.", show_default=False)],
    method: Annotated[
        Method,
        typer.Option(
            "--method",
            help="interpolate (WiSE-FT: (1-a) BASE + a CKPT), uniform (mean of all) or greedy (Wortsman et al.'s "
            "greedy soup on --select).",
        ),
    ] = Method("interpolate"),
    alpha: Annotated[
        str | None,
        typer.Option(
            "--alpha",
            help="Weight of the model against the base: 0.5, a list 0.3,0.5 or a grid 0:1:0.1 (several need --select; "
            "0 is the base itself). Default 0.5 for interpolate.",
        ),
    ] = None,
    base: Annotated[
        Path | None, typer.Option("--base", help="Interpolate the soup toward this base model (with --alpha).")
    ] = None,
    select: Annotated[
        Select | None,
        typer.Option("--select", help="Dev criterion that chooses alpha and the greedy soup (no test data: use dev)."),
    ] = None,
    pooling: Annotated[
        opt.PoolingName | None,
        typer.Option("--pooling", "-p", help="Pooling of the merged model (default: the first checkpoint's)."),
    ] = None,
    data: opt.Data = None,
    batch_size: opt.BatchSize = 32,
    device: opt.Device = "auto",
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Merge checkpoints of one base model in weight space: WiSE-FT or a model soup.

    \b
    Examples:
      defsent merge BASE ckpt/ --alpha 0.5 -o merged/
      defsent merge BASE ckpt/ --alpha 0:1:0.1 --select dev -o merged/
      defsent merge seed-1/ seed-2/ seed-3/ --method greedy --select dev \\
          --base BASE --alpha 0:1:0.1 -o soup/

    The merged folder is a normal checkpoint (transformers and sentence-transformers load it); its
    defsent.json records the models, the weights and the whole alpha curve.
    """
    from ..encoder.models import load_model
    from ..formats.checkpoint import CHECKPOINT_FORMAT, save_checkpoint
    from ..merging.search import merge, parse_alphas  # torch: imported by the command, not by --help
    from ..merging.weights import check_compatible, load_ingredient, with_weights

    started = time.perf_counter()
    check_output(output, force, kind="folder", what="a checkpoint folder")
    alphas = parse_alphas(alpha) if alpha is not None else None
    if opt.value(method) == "greedy" and select is None:
        raise DefsentError("--method greedy needs --select CRITERION (e.g. --select dev)")
    if alphas is not None and len(alphas) > 1 and select is None:
        raise DefsentError("several --alpha values need --select CRITERION to choose between them (e.g. dev)")
    criterion = (
        Criterion(opt.value(select), data, batch_size=batch_size, show_progress=show_progress) if select else None
    )
    if criterion is not None:
        criterion.prepare()
    folders = [*models, *([base] if base else [])]
    for path in folders:
        if not path.is_dir():
            raise DefsentError("not a model folder", path=path)
        if [other.resolve() for other in folders].count(path.resolve()) > 1:
            raise DefsentError("given more than once: each model merges once", path=path)
    base_ingredient = load_ingredient(base) if base is not None else None
    ingredients = [load_ingredient(path) for path in models]
    everything = ([base_ingredient] if base_ingredient else []) + ingredients
    check_compatible(everything)
    trained = next((i for i in ingredients if i.info), ingredients[-1])
    chosen_pooling = opt.value(pooling) or trained.pooling
    work = load_model(everything[0].path, device)  # the model whose weights each candidate replaces

    def score(weights) -> float:
        return criterion.score(with_weights(work, weights), pooling=chosen_pooling)

    result = merge(ingredients, opt.value(method), alphas, base_ingredient, score if criterion else None)
    with_weights(work, result.weights)
    info = {
        "format": CHECKPOINT_FORMAT,
        "kind": "merge",
        "defsent_version": __version__,
        "method": opt.value(method),
        "base": str(result.members[0].path.resolve()) if base or opt.value(method) == "interpolate" else None,
        "models": [str(m.path.resolve()) for m in result.members],
        "weights": [round(c, 6) for c in result.coefficients],
        "pooling": chosen_pooling,
        "normalize": work.normalize,
        "head": "none",
        "select": opt.value(select),
        **result.report,
        "seconds": round(time.perf_counter() - started, 1),
    }
    info.update(matryoshka_of(result.members, result.coefficients))
    if criterion is not None and "selected_score" in result.report:
        info["scores"] = {f"{criterion.name} ({criterion.meaning})": result.report["selected_score"]}
    from ..formats.results import provenance, task_folder_provenance

    read = [task_folder_provenance(task.folder) for task in criterion.tasks] if criterion is not None else []
    info["provenance"] = provenance(folders, read)  # every model given, kept in the merge or not
    card = ("weight-space merge", "a weight-space merge of the models below.")
    save_checkpoint(output, work.model, work.tokenizer, info, work.max_length, force=force, card=card)
    chosen = f"alpha {result.report['alpha']:g}" if "alpha" in result.report else f"{len(result.members)} models"
    scored = f", {criterion.name} {result.report['selected_score']:.2f}" if "selected_score" in result.report else ""
    say(f"wrote {output}: {opt.value(method)}, {chosen}{scored}")


def matryoshka_of(members, coefficients) -> dict:
    """The ``--matryoshka`` widths and weights of the merge: those of its models where every one it is made of
    (a weight above 0) was trained for the same widths, else none (WiSE-FT of an untrained base: its widths were
    not trained to stand alone)."""
    keys = ("matryoshka_dims", "matryoshka_weights")
    found = [{k: (m.info or {}).get(k) for k in keys} for m, c in zip(members, coefficients, strict=True) if c]
    same = found and found[0]["matryoshka_dims"] and all(f == found[0] for f in found)
    return dict(found[0]) if same else {}


HELP_ORDER = 150  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("merge")(guard(merge_command))
