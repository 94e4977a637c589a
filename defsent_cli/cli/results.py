"""What the evaluation commands do with a results JSON: check where it goes first, then print its
warnings and table and write it."""

from __future__ import annotations

from pathlib import Path

from ..console import say
from ..errors import DefsentError
from ..io import check_output, write_json
from ..log import warn
from .render import show


def check_results_output(output: Path | None, force: bool) -> None:
    """Results are JSON, never silently overwritten; checked before anything slow runs."""
    if output is not None:
        if output.suffix.lower() != ".json":
            raise DefsentError("results are JSON: give the output a .json suffix", path=output)
        check_output(output, force)


def finish(result: dict, table, output: Path | None) -> None:
    """Warnings, the table (stdout without ``-o``, where it is the output), the JSON."""
    for message in result.get("warnings", []):
        warn(message)
    show(table, to_stdout=output is None)
    if output is not None:
        write_json(output, result)
        say(f"wrote {output} ({result['seconds']:.1f} s)")
