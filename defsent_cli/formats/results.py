"""What every results JSON shares (docs/formats.md, "Results"): the format tag, the kind of
evaluation, the model, the pooling, the data root, when and with what it was made, and its
``provenance``: the command line, each model with the SHA-256 of its weights, each data file with its
SHA-256, the versions and the seed."""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from .. import __version__
from ..io import sha256_file

RESULTS_FORMAT = "defsent-results/1"


def results_header(kind: str, model: str, pooling: str | None, data_root=None, **extra) -> dict:
    """The head of a results JSON; ``extra`` (pooling settings, post-processing, ...) follows it."""
    return {
        "format": RESULTS_FORMAT,
        "kind": kind,
        "model": model,
        "pooling": pooling,
        "data": str(data_root) if data_root is not None else None,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "defsent_version": __version__,
        "python": platform.python_version(),
        **{key: value for key, value in extra.items() if value is not None},
    }


def number(value: float | None, digits: int = 4) -> float | None:
    """A JSON-safe rounded float (NaN and inf become null)."""
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


# ---------------------------------------------------------------- provenance (docs/formats.md, "Results JSON")

#: Files of a model folder that hold its weights (a sharded model: each shard; a defsent checkpoint: also its
#: word head; a sentence-transformers module such as Dense: its own file).
WEIGHT_SUFFIXES = (".safetensors", ".bin")
#: A task folder whose files are hashed in a results JSON's provenance (SentEval's are a few MB); a larger one
#: is named only.
HASH_FOLDER_LIMIT = 1 << 28

_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read in blocks (never whole), computed once per file and version (its
    path, size and modification time) in this process."""
    path = Path(path).resolve()
    facts = path.stat()
    key = (str(path), facts.st_size, facts.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = sha256_file(path)
    return _DIGESTS[key]


def weight_files(folder: str | Path) -> list[Path]:
    """The weights of a model folder: ``*.safetensors`` / ``*.bin`` in it and in the module folders its
    ``modules.json`` names (a sentence-transformers folder), sorted."""
    folder = Path(folder)
    places = [folder]
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        places += [folder / str(m.get("path", "")) for m in modules if isinstance(m, dict) and m.get("path")]
    except (OSError, ValueError):
        pass
    found: set[Path] = set()
    for place in places:
        if place.is_dir():
            found.update(p for p in place.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    return sorted(found)


def model_provenance(path: str | Path) -> dict:
    """``{"path": absolute folder, "weights": {file (relative): sha256}}``, and ``hub_id`` and ``revision`` (the
    commit; None for the bundled all-MiniLM-L6-v2) where the folder is a Hub model (``formats/origin.py``)."""
    from .origin import hub_origin

    folder = Path(path).absolute()
    weights = {p.relative_to(folder).as_posix(): file_sha256(p) for p in weight_files(folder)}
    return {"path": str(folder), **(hub_origin(folder) or {}), "weights": weights}


def data_provenance(path: str | Path, files: Iterable[str | Path] | None = None) -> dict:
    """A data file, ``{"path", "sha256"}``; a folder, ``{"path", "folder": true}`` and, with ``files`` (the
    files read in it), their hashes under ``files``."""
    path = Path(path).absolute()
    if path.is_file():
        return {"path": str(path), "sha256": file_sha256(path)}
    record: dict = {"path": str(path), "folder": path.is_dir()}
    if files is not None:
        record["files"] = {Path(f).name: file_sha256(path / f) for f in sorted({str(f) for f in files})}
    return record


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    """defsent, torch, transformers (as installed; ``None`` when absent) and Python."""
    return {
        "defsent": __version__,
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "python": platform.python_version(),
    }


def command_line() -> list[str]:
    """The command line as typed (``sys.argv``), its program named ``defsent`` however it was started
    (``python -m defsent_cli``, the installed script)."""
    return ["defsent", *sys.argv[1:]]


def provenance(
    models: Iterable[str | Path] = (),
    data: Iterable[str | Path | dict] = (),
    seed: int | None = None,
) -> dict:
    """Where a result came from: the command line, the working folder (relative paths in it are relative
    to it), each model folder with the SHA-256 of each weights file, each data file with its SHA-256 (a
    folder: its path; a ``dict`` from :func:`data_provenance` is taken as it is), the versions and the seed."""
    seen: set[str] = set()
    records = []
    for item in data:
        record = item if isinstance(item, dict) else data_provenance(item)
        if record["path"] not in seen:
            seen.add(record["path"])
            records.append(record)
    return {
        "command": command_line(),
        "cwd": os.getcwd(),
        "models": [model_provenance(m) for m in dict.fromkeys(str(m) for m in models)],
        "data": records,
        "versions": versions(),
        "seed": seed,
    }


def task_folder_provenance(folder: str | Path) -> dict:
    """A task's data folder (STS, SentEval) with the SHA-256 of every file directly in it (the task's files,
    read or not), unless they are large (:data:`HASH_FOLDER_LIMIT`): then its path only."""
    folder = Path(folder)
    files = [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
    small = sum(p.stat().st_size for p in files) <= HASH_FOLDER_LIMIT
    return data_provenance(folder, [p.name for p in files] if small else None)


def _task_data(task: dict) -> dict | None:
    """What one task of a results object read: its file (clustering) or its folder (STS, SentEval)."""
    if task.get("file"):
        return data_provenance(task["file"])
    return task_folder_provenance(task["folder"]) if task.get("folder") else None


def result_provenance(result: dict, data: Iterable[str | Path | dict] = (), seed: int | None = None) -> dict:
    """:func:`provenance` of an evaluation's results object (one run or several): its models (``model`` or
    ``models``), its data (the ``data`` folder, each task's folder or file, ``exclude_pairs``, and ``data``
    given here) and its seed (``seed``, else the first run's)."""
    runs = result.get("runs") or [result]
    models = result.get("models") or ([result["model"]] if result.get("model") else [])
    records: list = []
    if result.get("data"):
        records.append(data_provenance(result["data"]))
    for run in runs:
        for task in (run.get("tasks") or {}).values():
            record = _task_data(task) if isinstance(task, dict) else None
            if record is not None:
                records.append(record)
    records += [*(result.get("exclude_pairs") or []), *data]
    if seed is None:
        seed = result.get("seed", runs[0].get("seed"))
    return provenance(models, records, seed)
