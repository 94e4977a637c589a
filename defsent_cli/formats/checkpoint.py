"""The checkpoint folder (docs/formats.md, "Checkpoint"): a Hugging Face model folder that
sentence-transformers also loads, plus ``defsent.json`` (the whole run) and a ``README.md``
model card written from it, so the folder can be shared as it is.

Written into a temporary folder beside the target and renamed at the end, so a killed run
never leaves a half-written checkpoint.
"""

from __future__ import annotations

import json
import shutil
from importlib import metadata
from pathlib import Path

from ..errors import DefsentError
from ..io import as_os_error, check_output, fsync_tree, is_io_failure, share_tree
from .model_card import model_card
from .recorded import portable_info, resolved_info
from .results import provenance

CHECKPOINT_FORMAT = "defsent-checkpoint/1"
INFO_FILE = "defsent.json"
ST_POOLING_MODES = {
    "cls": "pooling_mode_cls_token",
    "mean": "pooling_mode_mean_tokens",
    "max": "pooling_mode_max_tokens",
}


def read_info(folder: str | Path) -> dict:
    """A checkpoint's ``defsent.json`` ({} when the folder has none); it must hold a JSON object. The paths it
    records relative to the folder come back resolved against it (``formats/recorded.py``)."""
    path = Path(folder) / INFO_FILE
    if not path.is_file():
        return {}
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DefsentError(f"cannot read {INFO_FILE} ({exc})", path=path) from None
    if not isinstance(info, dict):
        raise DefsentError(f"{INFO_FILE} must hold a JSON object, found {type(info).__name__}", path=path)
    if "format" in info and info["format"] != CHECKPOINT_FORMAT:
        raise DefsentError(
            f"{INFO_FILE} says format {info['format']!r}; this defsent reads {CHECKPOINT_FORMAT!r} "
            "(a newer defsent wrote it?)",
            path=path,
        )
    return resolved_info(info, folder)


def write_info(folder: Path, info: dict, home: Path | None = None) -> None:
    """``info`` into ``folder``'s ``defsent.json``, its paths recorded relative to ``home`` (the folder the
    checkpoint will be at; ``folder`` itself by default): no absolute local path in it (docs/formats.md)."""
    portable = portable_info(info, home if home is not None else folder)
    (folder / INFO_FILE).write_text(json.dumps(portable, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def sentence_transformers_files(
    folder: Path, dim: int, pooling: str, max_seq_length: int, normalize: bool = False
) -> None:
    """Write ``modules.json``, ``config_sentence_transformers.json``, ``sentence_bert_config.json`` and
    ``1_Pooling/config.json`` (and a ``Normalize`` module when the base model had one, as a fine-tuned
    sentence-transformers model keeps it).

    sentence-transformers has no prompt pooling; a ``prompt`` checkpoint gets mean
    pooling there (defsent itself reads ``defsent.json`` and uses the prompt).
    """
    st_pooling = pooling if pooling in ST_POOLING_MODES else "mean"
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
        (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "modules.json").write_text(json.dumps(modules, indent=2) + "\n", encoding="utf-8")
    config = json.dumps(sentence_transformers_config(), indent=2, sort_keys=True)
    (folder / "config_sentence_transformers.json").write_text(config, encoding="utf-8")
    st_config = {"max_seq_length": int(max_seq_length), "do_lower_case": False}
    (folder / "sentence_bert_config.json").write_text(json.dumps(st_config, indent=2) + "\n", encoding="utf-8")
    pooling_config = {"word_embedding_dimension": int(dim)}
    for name, key in ST_POOLING_MODES.items():
        pooling_config[key] = name == st_pooling
    pooling_config["pooling_mode_mean_sqrt_len_tokens"] = False
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config, indent=2) + "\n", encoding="utf-8")


def sentence_transformers_config() -> dict:
    """``config_sentence_transformers.json`` as sentence-transformers 6 writes it (``SentenceTransformer.save``):
    the versions that wrote the folder (sentence-transformers' only where it is installed: it warns when a
    folder names a newer version than its own), no prompts but its empty defaults, cosine similarity."""
    written_with = {}
    for key, package in (("pytorch", "torch"), ("sentence_transformers", "sentence-transformers"),
                         ("transformers", "transformers")):  # fmt: skip
        try:
            written_with[key] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {
        "__version__": written_with,
        "default_prompt_name": None,
        "model_type": "SentenceTransformer",
        "prompts": {"document": "", "query": ""},
        "similarity_fn_name": "cosine",
    }


def checkpoint_provenance(info: dict) -> dict:
    """Where a checkpoint came from (docs/formats.md, "Results JSON", ``provenance``): the models it was made
    from (the base model; a merge: its models and base) with their weights' hashes, its training data files
    with theirs, the command line, the versions and the training seed."""
    models = [*info.get("models", []), *([info["base"]] if info.get("base") else [])]
    if info.get("base_model"):
        models.append(info["base_model"])
    data = [info[key] for key in ("dictionary", "bank", "sentences", "pairs") if isinstance(info.get(key), str)]
    return provenance(models, data, (info.get("config") or {}).get("seed"))


def _discard(path: Path) -> None:
    """Remove what is at ``path``: a symlink or file unlinked (never followed), a folder with its contents."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def save_checkpoint(
    output: Path,
    model,
    tokenizer,
    info: dict,
    max_seq_length: int,
    force: bool = False,
    files: dict | None = None,
    sentence_transformer: bool = True,
    card: tuple[str, str] | None = None,
    settings: dict | None = None,
) -> Path:
    """Atomically write model + tokenizer + ``defsent.json`` + model card + ST module files to ``output``;
    ``files`` maps extra file names to the paths copied in (e.g. the loss log). Without
    ``sentence_transformer`` no bi-encoder module files (a Cross-Encoder folder). ``card``: the model card's
    title and sentence on what the run did, ``settings`` the run's own (:func:`model_card`)."""
    output = check_output(output, force, kind="folder", what="a checkpoint folder")
    if "provenance" not in info:
        info = {**info, "provenance": checkpoint_provenance(info)}
    tmp = output.with_name(f".{output.name}.writing")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if sentence_transformer:
            sentence_transformers_files(
                tmp, model.config.hidden_size, info.get("pooling", "mean"), max_seq_length, bool(info.get("normalize"))
            )
        write_info(tmp, info, output)
        (tmp / "README.md").write_text(model_card(output.name, info, card, settings), encoding="utf-8")
        for name, source in (files or {}).items():
            shutil.copyfile(source, tmp / name)
        share_tree(tmp)  # the modes the umask gives (save_pretrained leaves model.safetensors private)
        fsync_tree(tmp)  # a full disk surfaces before the checkpoint appears
        if output.exists() or output.is_symlink():
            old = output.with_name(f".{output.name}.old")
            _discard(old)
            output.rename(old)
            tmp.rename(output)
            _discard(old)  # a symlink there (select-best --link) goes; the checkpoint it pointed at stays
        else:
            tmp.rename(output)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if is_io_failure(exc):
            raise as_os_error(exc, output) from exc
        raise
    return output
