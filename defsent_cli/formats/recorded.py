"""Paths one file records of others (docs/formats.md, "Recorded paths"): a bank its dictionary, a checkpoint its
base model, its data files and where it came from. Each is written relative to the folder of the file that records
it, so the files travel together (a bank served from another folder finds its dictionary; a checkpoint published
with ``hf upload`` names no absolute local path: no home, temporary or virtual-environment folder), with the
SHA-256 of what it names beside it where that matters (``dictionary_sha256``, ``bank_sha256``, the provenance's
hashes). Readers resolve them against the recording file's folder and still take the absolute paths older files
hold.

The rule, one for every format:

- a path is written POSIX-style, relative to the recording file's folder, starting ``./`` or ``../``, where the two
  share a folder below the filesystem's root (``../dict.jsonl``, ``../../models/bert``);
- else (``/data/...`` beside ``/home/...``) by its name alone, the hash beside telling which file it was;
- a model that is a Hub model (a snapshot in the Hugging Face cache, the bundled all-MiniLM-L6-v2) by its Hub id,
  ``ORG/NAME``, which is no path (it starts with neither ``./``, ``../`` nor ``/``).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

#: what a relative recorded path starts with (a Hub id or a bare name does not)
RELATIVE = ("./", "../")


def is_relative(value) -> bool:
    """Whether a recorded value is a relative path (``.``, ``..``, ``./x``, ``../x``), not a name or absolute."""
    return isinstance(value, str) and (value in (".", "..") or value.startswith(RELATIVE))


def _real(path: str | Path) -> str:
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def recorded_path(path: str | Path, folder: str | Path) -> str:
    """How a file in ``folder`` records ``path`` (see the module docstring): ``./x`` or ``../x`` relative to
    ``folder`` when the two share a folder below the root, else the name of ``path`` alone. A relative ``path`` is
    taken from the working folder."""
    target, base = _real(path), _real(folder)
    try:
        common = os.path.commonpath([target, base])
    except ValueError:  # another drive
        common = None
    if common is None or common == os.path.dirname(common):  # only the root (or a drive) in common
        return Path(target).name
    relative = PurePosixPath(*Path(os.path.relpath(target, base)).parts).as_posix()
    if relative in (".", ".."):
        return relative
    return relative if relative.startswith("../") else f"./{relative}"


def recorded_model(path: str | Path, folder: str | Path) -> str:
    """How a file in ``folder`` records a model folder: its Hub id where it is a Hub model (``formats/origin.py``),
    else :func:`recorded_path`."""
    from .origin import hub_origin

    origin = hub_origin(path) if Path(path).exists() else None
    return origin["hub_id"] if origin else recorded_path(path, folder)


def resolved(value: str, folder: str | Path) -> str:
    """A recorded path read back: ``./x`` and ``../x`` against ``folder`` (an absolute path, normalised); an absolute
    path (an older file's) and a name (a Hub id, a file named alone) as they are."""
    if not is_relative(value):
        return value
    return os.path.normpath(os.path.join(_real(folder), value))


def resolved_loose(value: str, folder: str | Path) -> str:
    """As :func:`resolved`, but any relative path is taken against ``folder``: a bank's ``dictionary`` written
    before paths were recorded relative to it was the path as typed, in the folder it was built in, mostly the
    bank's own; ``-`` (the dictionary read from stdin) stays."""
    if not isinstance(value, str) or not value or value == "-" or os.path.isabs(value):
        return value
    return os.path.normpath(os.path.join(_real(folder), value))


def command_arguments(command: list[str], cwd: str | Path) -> list[str]:
    """A command line (provenance's ``command``) with its absolute paths, and relative ones that climb out of the
    working folder, recorded relative to ``cwd`` as :func:`recorded_path` records them (``--opt=PATH`` and
    ``-oPATH`` too): the command still reads from the working folder, and names no folder above the two's common
    one."""

    def one(argument: str) -> str:
        if argument.startswith("--"):
            head, eq, value = argument.partition("=")
        elif argument[:1] == "-" and argument[1:2].isalpha() and argument[2:].startswith(("/", "..")):
            head, eq, value = argument[:2], "", argument[2:]  # a short option with its value attached: -m/models/x
        else:
            head, eq, value = "", "", argument
        if not (os.path.isabs(value) or value.startswith("../") or value == ".."):
            return argument
        return f"{head}{eq}{recorded_path(os.path.join(os.fspath(cwd), value), cwd)}"

    return [one(str(argument)) for argument in command]


# ---------------------------------------------------------------- a checkpoint's defsent.json

#: defsent.json's keys that name a data file, and those that name a model folder (``models``: a merge's list)
CHECKPOINT_FILES = ("dictionary", "bank", "sentences", "pairs")
CHECKPOINT_MODELS = ("base_model", "base")


def _with_path(convert):
    def record(entry):
        return {**entry, "path": convert(entry["path"])} if isinstance(entry, dict) and "path" in entry else entry

    return record


def _bank_attrs(attrs: dict, file, model) -> dict:
    """The bank's own paths in ``bank_attrs``: its dictionary (``-``: read from stdin), encoder, domain texts."""
    attrs = dict(attrs)
    if isinstance(attrs.get("dictionary"), str) and attrs["dictionary"] not in ("", "-"):
        attrs["dictionary"] = file(attrs["dictionary"])
    if isinstance(attrs.get("encoder"), str) and attrs["encoder"]:
        attrs["encoder"] = model(attrs["encoder"])
    if isinstance(attrs.get("texts"), str) and attrs["texts"]:  # several files: one a line
        attrs["texts"] = "\n".join(file(line) if line != "-" else line for line in attrs["texts"].splitlines())
    return attrs


def _convert_info(info: dict, file, model, cwd, command) -> dict:
    """``info`` with each path converted: data files by ``file``, model folders by ``model``, the provenance's
    working folder by ``cwd`` and its command line by ``command(arguments, working folder)``."""
    out = dict(info)
    for key in CHECKPOINT_FILES:
        if isinstance(out.get(key), str):
            out[key] = file(out[key])
    for key in CHECKPOINT_MODELS:
        if isinstance(out.get(key), str):
            out[key] = model(out[key])
    for key in ("models", "soup"):  # a merge's models, and those its soup kept
        if isinstance(out.get(key), list):
            out[key] = [model(m) if isinstance(m, str) else m for m in out[key]]
    if isinstance(out.get("greedy"), list):  # the greedy soup's log: a model per line
        out["greedy"] = [
            {**line, "model": model(line["model"])}
            if isinstance(line, dict) and isinstance(line.get("model"), str)
            else line
            for line in out["greedy"]
        ]
    if isinstance(out.get("bank_attrs"), dict):
        out["bank_attrs"] = _bank_attrs(out["bank_attrs"], file, model)
    if isinstance(out.get("provenance"), dict):
        origin = dict(out["provenance"])
        where = origin.get("cwd")
        if isinstance(where, str):
            if isinstance(origin.get("command"), list):
                origin["command"] = command(origin["command"], where)
            origin["cwd"] = cwd(where)
        for key, convert in (("models", model), ("data", file)):
            if isinstance(origin.get(key), list):
                origin[key] = [_with_path(convert)(record) for record in origin[key]]
        out["provenance"] = origin
    return out


def portable_info(info: dict, folder: str | Path) -> dict:
    """``info`` as the checkpoint at ``folder`` writes it into ``defsent.json``: every path it names (the data
    files, the base model or a merge's models, the bank's own paths in ``bank_attrs``, the provenance's models,
    data, working folder and command line) recorded relative to ``folder`` (:func:`recorded_path`,
    :func:`recorded_model`); the working folder ``null`` where it shares no folder below the root with ``folder``;
    the command line's paths relative to the working folder (:func:`command_arguments`)."""
    home = _real(folder)

    def cwd(where: str) -> str | None:
        found = recorded_path(where, home)
        return found if is_relative(found) else None

    def model(path: str) -> str:
        return recorded_model(path, home) if os.path.isabs(path) else path  # a Hub id, a name: as it is

    def file(path: str) -> str:
        return recorded_path(path, home) if os.path.isabs(path) else path

    return _convert_info(info, file, model, cwd, command_arguments)


def resolved_info(info: dict, folder: str | Path) -> dict:
    """``defsent.json`` as read from the checkpoint at ``folder``: its relative paths resolved against ``folder``
    (absolute), the absolute ones of older checkpoints and the names (Hub ids, files named alone) as they are; the
    command line as recorded (relative to the working folder)."""
    home = _real(folder)

    def back(value: str) -> str:
        return resolved(value, home)

    return _convert_info(info, back, back, back, lambda command, where: command)
