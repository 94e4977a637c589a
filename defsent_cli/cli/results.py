"""What the evaluation commands do with a results JSON: check where it goes first, then print its
warnings and table and write it."""

from __future__ import annotations

import glob
from collections.abc import Callable, Sequence
from pathlib import Path

from ..console import say
from ..errors import DefsentError
from ..io import check_output, is_stdout, write_json
from ..log import note, warn
from .render import show, summary_table

_GLOB = set("*?[")


def expand_models(models: Sequence[Path]) -> list[Path]:
    """The model folders of ``--model`` (repeated) with quoted globs expanded, sorted, each once."""
    paths: list[Path] = []
    for model in models:
        text = str(model)
        if not model.exists() and _GLOB & set(text):
            matches = sorted(glob.glob(text))
            if not matches:
                raise DefsentError("no model folder matches this pattern", path=model)
            paths.extend(Path(m) for m in matches)
        else:
            paths.append(model)
    if not paths:
        raise DefsentError("no model given: pass --model PATH")
    return list(dict.fromkeys(paths))


def run_models(models: Sequence[Path], evaluate: Callable[[Path], dict]) -> dict:
    """``evaluate`` on one model: its result as it is; on several: every run and their mean ± sd per task."""
    from ..evaluation.common import summarize_runs

    if len(models) == 1:
        return evaluate(models[0])
    runs = []
    for number, model in enumerate(models, start=1):
        note(f"model {number}/{len(models)}: {model}")
        runs.append(evaluate(model))
    return summarize_runs(runs)


def table_of(result: dict, single: Callable[[dict], object]):
    """The table of one run (``single``), or the mean ± sd table of several."""
    return summary_table(result) if "runs" in result else single(result)


def check_results_output(output: Path | None, force: bool, stdout_carries: str | None = None) -> None:
    """Results are JSON, never silently overwritten; checked before anything slow runs. ``-`` is stdout,
    unless the command writes other data there (``stdout_carries`` says what)."""
    if stdout_carries and is_stdout(output):
        raise DefsentError(
            f"'-' means standard output, which carries {stdout_carries} here: give the results JSON a file name"
        )
    if output is not None and not is_stdout(output):
        if output.suffix.lower() != ".json":
            raise DefsentError("results are JSON: give the output a .json suffix", path=output)
        check_output(output, force)


def finish(result: dict, table, output: Path | None) -> None:
    """Warnings, the table (stdout without ``-o``, where it is the output), the JSON (with its provenance:
    the command line, the models and their weights' hashes, the data read, the versions, the seed)."""
    from ..formats.results import result_provenance

    for message in result.get("warnings", []):
        warn(message)
    show(table, to_stdout=output is None)
    if output is not None:
        result.setdefault("provenance", result_provenance(result))
        write_json(output, result)
        say(f"wrote {'the results to stdout' if is_stdout(output) else output} ({result['seconds']:.1f} s)")
