"""``defsent ica``: FastICA (DefSent+) or PCA whitening of a bank, or a change of its scale."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..errors import DefsentError
from ..formats.bank import check_bank_path, read_bank, write_bank
from ..io import check_output
from ..space.choices import DTYPES, FUNS, METHODS, WHITEN_MODES
from . import options as opt
from .boundary import guard

Method = opt.choices("Method", METHODS)

WhitenMode = opt.choices("WhitenMode", WHITEN_MODES)

Fun = opt.choices("Fun", FUNS)

Dtype = opt.choices("Dtype", DTYPES)

IcaSeed = opt.seed_option("FastICA random_state (its starting unmixing matrix).")


def ica(
    bank_path: Annotated[
        Path, typer.Argument(metavar="BANK", help="Input bank (.h5, embed-entries output).", show_default=False)
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output bank (.h5).", show_default=False)],
    method: Annotated[
        Method, typer.Option("--method", help="ica (FastICA, DefSent+) or whiten (PCA whitening, Su et al. 2021).")
    ] = Method.ica,
    scale: Annotated[
        float,
        typer.Option(
            "--scale",
            callback=opt.number(0.0, low_open=True),
            help="Multiply the transformed vectors by this (DefSent+: 100).",
        ),
    ] = 100.0,
    rescale: Annotated[
        bool,
        typer.Option(
            "--rescale", help="The input is already an ica/whiten bank: change its scale to --scale without fitting."
        ),
    ] = False,
    n_components: Annotated[
        int | None, typer.Option("--n-components", min=1, help="Components to keep (default: all d).")
    ] = None,
    whiten: Annotated[
        WhitenMode, typer.Option("--whiten", help="FastICA whiten: unit-variance or arbitrary-variance.")
    ] = WhitenMode.unit_variance,
    fun: Annotated[Fun, typer.Option("--fun", help="FastICA nonlinearity.")] = Fun.logcosh,
    tol: Annotated[
        float, typer.Option("--tol", callback=opt.NON_NEGATIVE, help="FastICA convergence tolerance.")
    ] = 1e-4,
    max_iter: Annotated[int, typer.Option("--max-iter", min=1, help="FastICA iteration limit.")] = 1000,
    seed: IcaSeed = opt.SEED_DEFAULT,
    standardize: Annotated[
        bool | None,
        typer.Option(
            "--standardize/--no-standardize",
            help="StandardScaler per dimension first (default: on for ica, off for whiten).",
            show_default=False,
        ),
    ] = None,
    dtype: Annotated[Dtype, typer.Option("--dtype", help="Compute in float32 (DefSent+) or float64.")] = Dtype.float32,
    fit_rows: Annotated[
        int | None,
        typer.Option(
            "--fit-rows",
            min=2,
            help="Fit on a seeded sample (--seed) of this many rows, then transform every row a chunk at a time "
            "from the file into the output: memory holds the sample, not the bank (all rows when the bank has "
            "no more).",
        ),
    ] = None,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Transform a bank's vectors by FastICA (DefSent+ settings) or PCA whitening; entries and provenance kept.

    Memory: the whole bank (n x d in --dtype) plus FastICA's working copies, a few times that; with --fit-rows N,
    the N sampled rows (and their copies) and one chunk of rows, whatever the bank's size: a 10M-row bank is
    transformed with the fit of a sample.

    \b
    Examples:
      defsent ica bank.h5 -o bank-ica.h5
      defsent ica bank-ica.h5 --rescale --scale 1 -o bank-ica1.h5   # no refit
      defsent ica big.h5 --fit-rows 200000 -o big-ica.h5  # fit on 200k rows
    """
    from ..space.transforms import IcaSettings, rescale_bank, transform_bank  # numpy: not for --help

    check_output(check_bank_path(output), force)
    if rescale:
        fitting = {"--n-components": n_components is not None, "--standardize": standardize is not None}
        fitting["--method whiten"] = method != Method.ica
        fitting["--fit-rows"] = fit_rows is not None
        if given := [name for name, present in fitting.items() if present]:
            raise DefsentError(f"--rescale only changes the scale of a fitted bank; drop {', '.join(given)}")
    settings = IcaSettings(n_components, opt.value(whiten), opt.value(fun), tol, max_iter, seed)
    if fit_rows is not None:
        _fit_on_sample(
            bank_path, output, opt.value(method), fit_rows, settings, scale, standardize, dtype, show_progress
        )
        return
    bank = read_bank(bank_path)
    try:
        if rescale:
            new = rescale_bank(bank, scale, source=bank_path)
            done = f"rescaled x{new.attrs['transform_rescaled_from']:g} -> x{scale:g}"
        else:
            say(f"{opt.value(method)} of {len(bank):,} x {bank.vectors.shape[1]} from {bank_path}")
            new, result = transform_bank(
                bank,
                opt.value(method),
                source=bank_path,
                settings=settings,
                scale=scale,
                standardize_first=standardize,
                dtype=opt.value(dtype),
                show_progress=show_progress,
            )
            converged = (
                f", converged in {result.n_iter} iterations" if method == Method.ica and result.converged else ""
            )
            done = f"{opt.value(method)} x{scale:g}{converged}, {result.seconds:.1f}s"
    except DefsentError as exc:
        raise DefsentError(str(exc), path=bank_path) from None
    write_bank(output, new)
    say(f"wrote {output}: {len(new):,} entries x {new.vectors.shape[1]} dims ({done})")


def _fit_on_sample(bank_path, output, method, fit_rows, settings, scale, standardize, dtype, show_progress) -> None:
    """``ica --fit-rows``: fit on a seeded sample, stream every row through the fit into the output."""
    from ..formats.bank import open_bank
    from ..space.streamed import transform_bank_file

    bank = open_bank(bank_path)
    rows = min(fit_rows, len(bank))
    say(f"{method} of {len(bank):,} x {bank.dim} from {bank_path}, fitted on {rows:,} rows (seed {settings.seed})")
    try:
        fitted = transform_bank_file(
            bank,
            output,
            method,
            fit_rows,
            settings.seed,
            source=bank_path,
            show_progress=show_progress,
            settings=settings,
            scale=scale,
            standardize_first=standardize,
            dtype=opt.value(dtype),
        )
    except DefsentError as exc:
        raise DefsentError(str(exc).removeprefix(f"{bank_path}: "), path=bank_path) from None
    converged = f", converged in {fitted.n_iter} iterations" if method == "ica" and fitted.converged else ""
    say(
        f"wrote {output}: {len(bank):,} entries x {fitted.width} dims ({method} x{scale:g}{converged}, fitted on "
        f"{rows:,} rows, {fitted.seconds:.1f}s)"
    )


HELP_ORDER = 30  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("ica")(guard(ica))
