"""A safetensors file with a JSON document in its ``defsent`` metadata key (the training state, the word head).

Reading runs no code (raw tensors plus a JSON string, unlike a pickled ``torch.save`` file), and the write is
atomic: a temporary file beside the target, renamed when complete.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import DefsentError
from ..io import atomic_path, file_mode

METADATA_KEY = "defsent"


def write_tensors(path: str | Path, tensors: dict, document: dict) -> None:
    """Write ``tensors`` (name -> contiguous CPU tensor) with ``document`` as JSON metadata, atomically, with
    the mode the umask gives a new file (safetensors replaces the temporary file with one of its own, 0o600)."""
    from safetensors.torch import save_file

    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={METADATA_KEY: json.dumps(document)})
        os.chmod(tmp, file_mode())


def read_tensors(path: str | Path, what: str, hint: str = "") -> tuple[dict, object]:
    """(tensors, the JSON document or None) of a file :func:`write_tensors` wrote.

    Any failure to read it (missing, truncated, not safetensors, bad JSON) is one line: "cannot read
    ``what`` (the error's type)" + ``hint``.
    """
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt", device="cpu") as fh:
            document = json.loads((fh.metadata() or {}).get(METADATA_KEY, "null"))
            tensors = {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118 - safe_open has no items()
    except Exception as exc:  # noqa: BLE001 - a missing or damaged file of any kind is one line
        raise DefsentError(f"cannot read {what} ({type(exc).__name__}){hint}", path=path) from None
    return tensors, document
