"""``defsent ica`` (FastICA / whitening of a bank) and ``defsent inspect`` (isotropy figures, pictures)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ..bank import read_bank, write_bank
from ..cli import command
from ..console import err_console
from ..errors import DefsentError
from ..io import check_output, write_json
from ..space import DTYPES, FIGURES, FUNS, METHODS, WHITEN_MODES, IcaSettings, load_space, rescale_bank, space_figures
from ..space import transform_bank as _transform_bank
from .options import FORCE, PROGRESS


def _choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    if value not in allowed:
        raise DefsentError(f"unknown {option} {value!r}; use one of {', '.join(allowed)}")
    return value


@command("ica")
def ica(
    bank_path: Path = typer.Argument(..., help="Input bank (.h5, embed-entries output)."),
    output: Path = typer.Option(..., "--output", "-o", help="Output bank (.h5)."),
    method: str = typer.Option(
        "ica", "--method", help="ica (FastICA, DefSent+) or whiten (PCA whitening, Su et al. 2021)."
    ),
    scale: float = typer.Option(100.0, "--scale", help="Multiply the transformed vectors by this (DefSent+: 100)."),
    rescale: bool = typer.Option(
        False,
        "--rescale",
        help="The input is already an ica/whiten bank: change its scale to --scale without fitting again.",
    ),
    n_components: int = typer.Option(None, "--n-components", min=1, help="Components to keep (default: all d)."),
    whiten: str = typer.Option(
        "unit-variance", "--whiten", help="FastICA whiten: unit-variance or arbitrary-variance."
    ),
    fun: str = typer.Option("logcosh", "--fun", help="FastICA nonlinearity: logcosh, exp or cube."),
    tol: float = typer.Option(1e-4, "--tol", min=0.0, help="FastICA convergence tolerance."),
    max_iter: int = typer.Option(1000, "--max-iter", min=1, help="FastICA iteration limit."),
    seed: int = typer.Option(42, "--seed", help="FastICA random_state (its starting unmixing matrix)."),
    standardize: bool = typer.Option(
        None,
        "--standardize/--no-standardize",
        help="StandardScaler per dimension first (default: on for ica, off for whiten).",
    ),
    dtype: str = typer.Option(
        "float32", "--dtype", help="Compute in float32 (DefSent+) or float64; output is float32."
    ),
    show_progress: bool = PROGRESS,
    force: bool = FORCE,
) -> None:
    """Transform a bank's vectors by FastICA (DefSent+ settings) or PCA whitening; entries and provenance kept.

    Example: defsent ica bank.h5 -o bank-ica.h5
    (another scale without refitting: defsent ica bank-ica.h5 --rescale --scale 1 -o bank-ica1.h5)
    """
    _choice(method, METHODS, "--method")
    _choice(whiten, WHITEN_MODES, "--whiten")
    _choice(fun, FUNS, "--fun")
    _choice(dtype, DTYPES, "--dtype")
    if output.suffix.lower() not in (".h5", ".hdf5"):
        raise DefsentError("a bank is HDF5: give the output an .h5 suffix", path=output)
    check_output(output, force)
    bank = read_bank(bank_path)
    if rescale:
        try:
            new = rescale_bank(bank, scale, source=bank_path)
        except DefsentError as exc:
            raise DefsentError(str(exc), path=bank_path) from None
        write_bank(output, new)
        old = new.attrs["transform_rescaled_from"]
        err_console.print(f"wrote {escape(str(output))}: {len(new):,} entries, rescaled x{old:g} -> x{scale:g}")
        return
    previous = str(bank.attrs.get("transform", "none"))
    if previous != "none":
        err_console.print(
            f"note: {escape(str(bank_path))} is already transformed ({escape(previous)}); transforming again"
        )
    settings = IcaSettings(n_components=n_components, whiten=whiten, fun=fun, tol=tol, max_iter=max_iter, seed=seed)
    n, d = bank.vectors.shape
    label = "FastICA (scikit-learn)" if method == "ica" else "PCA whitening"
    err_console.print(f"{label} of {n:,} x {d} from {escape(str(bank_path))}")
    try:
        new, result = _transform_bank(
            bank,
            method,
            source=bank_path,
            settings=settings,
            scale=scale,
            standardize_first=standardize,
            dtype=dtype,
            show_progress=show_progress,
        )
    except DefsentError as exc:
        raise DefsentError(str(exc), path=bank_path) from None
    write_bank(output, new)
    if result.dead_dims.size:
        err_console.print(
            f"note: {result.dead_dims.size} constant dimension(s) ({new.attrs['transform_dead_dims']}) left out "
            "of the transform; they are zero columns in the output"
        )
    if method == "ica" and not result.converged:
        err_console.print(
            f"[yellow]warning:[/yellow] FastICA did NOT converge in {result.n_iter} iterations (tol {tol:g}); "
            f"the bank was written and marked transform_converged=False. Raise --max-iter or --tol to converge."
        )
    done = f", converged in {result.n_iter} iterations" if method == "ica" and result.converged else ""
    err_console.print(
        f"wrote {escape(str(output))}: {len(new):,} entries x {new.vectors.shape[1]} dims "
        f"({method} x{scale:g}{done}, {result.seconds:.1f}s)"
    )


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return f"{value:,}"
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return f"{value:.3e}"
    return f"{value:.4f}"


@command("inspect")
def inspect(
    paths: list[Path] = typer.Argument(..., help="Bank(s) (.h5) or vector files (.npy) to describe, in order."),
    pairs: int = typer.Option(100_000, "--pairs", min=1, help="Random pairs for the mean cosine (all pairs if fewer)."),
    seed: int = typer.Option(0, "--seed", help="Seed for the random pairs and the plotted sample."),
    plot: Path = typer.Option(None, "--plot", help="Draw the SVD and PCA-whitened 2-D projections (.png, .pdf, .svg)."),
    points: int = typer.Option(5000, "--points", min=10, help="Points per projection in the plot (a random sample)."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON on stdout."),
    output: Path = typer.Option(None, "--output", "-o", help="Write the figures as JSON to this file."),
    force: bool = FORCE,
) -> None:
    """Isotropy figures of entry spaces (mean cosine, variance shares, I(W), skewness / kurtosis), optional plot.

    Several banks (e.g. PST steps, before / after ICA) give one column and one plot row each.

    Example: defsent inspect bank.h5 bank-ica.h5 --plot space.png
    """
    if output is not None:
        check_output(output, force)
    if plot is not None:
        from ..plots import check_plot_path

        check_plot_path(plot)
        check_output(plot, force)
    spaces = [load_space(p) for p in paths]
    reports = []
    for space in spaces:
        try:
            figures = space_figures(space.vectors, pairs=pairs, seed=seed)
        except DefsentError as exc:
            raise DefsentError(str(exc), path=space.path) from None
        provenance = {k: space.attrs[k] for k in ("kind", "encoder", "transform") if k in space.attrs}
        figures = {k: (None if isinstance(v, float) and v != v else v) for k, v in figures.items()}  # NaN -> null
        reports.append({"path": str(space.path), "describe": space.describe(), **provenance, **figures})
    table = Table(title="entry-space figures", title_justify="left")
    table.add_column("figure", no_wrap=True)
    for number, report in enumerate(reports, start=1):
        table.add_column(f"{number}: {escape(Path(report['path']).name)}", justify="right", overflow="fold")
    labels = {"n": "vectors", "d": "dimensions", **FIGURES, "pairs": "pairs for the cosine"}
    for key, label in labels.items():
        table.add_row(label, *(_fmt(r[key]) for r in reports))
    err_console.print(table)
    for number, report in enumerate(reports, start=1):
        err_console.print(f"{number}: {escape(report['describe'])}", soft_wrap=True)
    document = {"pairs": pairs, "seed": seed, "banks": reports}
    if output is not None:
        write_json(output, document)
        err_console.print(f"wrote {escape(str(output))}")
    if as_json:
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
    if plot is not None:
        from ..plots import plot_spaces

        plot_spaces(plot, spaces, points=points, seed=seed)
        err_console.print(f"wrote {escape(str(plot))}")
