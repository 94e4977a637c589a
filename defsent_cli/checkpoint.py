"""The checkpoint folder of DESIGN.md: a Hugging Face model folder that
sentence-transformers also loads, plus ``defsent.json`` with the whole run.

Written into a temporary folder beside the target and renamed at the end, so a
killed run never leaves a half-written checkpoint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .errors import DefsentError

ST_POOLING_MODES = {
    "cls": "pooling_mode_cls_token",
    "mean": "pooling_mode_mean_tokens",
    "max": "pooling_mode_max_tokens",
}


def sentence_transformers_files(folder: Path, dim: int, pooling: str, max_seq_length: int) -> None:
    """Write ``modules.json``, ``sentence_bert_config.json`` and ``1_Pooling/config.json``.

    sentence-transformers has no prompt pooling; a ``prompt`` checkpoint gets mean
    pooling there (defsent itself reads ``defsent.json`` and uses the prompt).
    """
    st_pooling = pooling if pooling in ST_POOLING_MODES else "mean"
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules, indent=2) + "\n", encoding="utf-8")
    st_config = {"max_seq_length": int(max_seq_length), "do_lower_case": False}
    (folder / "sentence_bert_config.json").write_text(json.dumps(st_config, indent=2) + "\n", encoding="utf-8")
    pooling_config = {"word_embedding_dimension": int(dim)}
    for name, key in ST_POOLING_MODES.items():
        pooling_config[key] = name == st_pooling
    pooling_config["pooling_mode_mean_sqrt_len_tokens"] = False
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config, indent=2) + "\n", encoding="utf-8")


def save_checkpoint(output: Path, model, tokenizer, info: dict, max_seq_length: int, force: bool = False) -> Path:
    """Atomically write model + tokenizer + ``defsent.json`` + ST module files to ``output``."""
    output = Path(output)
    if output.exists() and not force:
        raise DefsentError("output exists; pass --force to overwrite", path=output)
    tmp = output.with_name(f".{output.name}.writing")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        sentence_transformers_files(tmp, model.config.hidden_size, info.get("pooling", "mean"), max_seq_length)
        (tmp / "defsent.json").write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if output.exists():
            old = output.with_name(f".{output.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            output.rename(old)
            tmp.rename(output)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return output
