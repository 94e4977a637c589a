"""The model card of a checkpoint folder (docs/formats.md, "Checkpoint"): a Hugging Face style ``README.md`` written
from its ``defsent.json``, with the Hub's metadata as ``huggingface_hub`` writes it and no absolute local path, so
the folder can be published as it is (``checkpoint.save_checkpoint`` writes it)."""

from __future__ import annotations

import json
from pathlib import Path


def _row(name: str, value) -> str:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)
    return f"| {name} | {text.replace('|', '/')} |"


#: A model card's (title, sentence on what the run did), when the writer gives none: the objective gives its own
#: (``training/objective.py``, ``Objective.card``), a merge its.
NEUTRAL_CARD = ("{kind} run", "a `{kind}` training run of defsent; its settings and data are below.")


def _card(info: dict, card: tuple[str, str] | None) -> tuple[str, str]:
    kind = info.get("kind", "train")
    return card or (NEUTRAL_CARD[0].format(kind=kind), NEUTRAL_CARD[1].format(kind=kind))


def _description(info: dict, card: tuple[str, str] | None) -> str:
    """The card's sentence on what the run did (the objective's, a merge's), and the auxiliary losses."""
    text = _card(info, card)[1]
    extras = []
    if info.get("nm_weight"):
        extras.append(f"plus {info['nm_weight']:g} x Noise Matching")
    if (info.get("config") or {}).get("mlm_weight"):
        extras.append(f"plus {info['config']['mlm_weight']:g} x a masked-LM loss")
    return text + (f" Loss: {', '.join(extras)}." if extras else "")


def base_license(base_model) -> str | None:
    """The ``license`` of the base model's own model card (its README's front matter), when it has one."""
    try:
        text = (Path(str(base_model)) / "README.md").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, _, value = line.partition(":")
        if key == "license" and value.strip() and value.strip() not in ("null", "~"):
            return value.strip().strip("\"'")
    return None


#: The dev criteria whose score is one public dataset's, for ``model-index`` (``huggingface_hub.EvalResult``'s
#: fields). The others (``dev``: STS-B dev and SICK-R trial together; ``dict-dev``: the user's own dictionary;
#: ``sts-avg``: seven test sets) are in the card's text only.
CRITERION_RESULTS = {
    "stsb-dev": {
        "task_type": "sentence-similarity",
        "task_name": "Semantic Textual Similarity",
        "dataset_type": "mteb/stsbenchmark-sts",
        "dataset_name": "STS Benchmark",
        "dataset_split": "validation",
        "metric_type": "cosine_spearman",
        "metric_name": "Spearman correlation of cosine similarities",
    },
}


def _kept_score(info: dict) -> tuple[str, float] | None:
    """(criterion, score) of the weights written: the dev score of the kept step (``train`` and the other
    trainings with ``--eval-every``) or a merge's selected score."""
    if info.get("kind") == "merge":
        if info.get("select") and info.get("selected_score") is not None:
            return info["select"], float(info["selected_score"])
        return None
    curve, kept = info.get("eval_curve") or [], info.get("kept_step")
    scores = [score for step, score in curve if step == kept and score is not None]
    return (info["eval_on"], float(scores[-1])) if info.get("eval_on") and scores else None


def _parents(info: dict) -> list[str]:
    """The model folders a checkpoint was made from: a merge's models and base, else the base model."""
    if info.get("kind") == "merge":
        return list(
            dict.fromkeys(str(m) for m in [*info.get("models", []), *([info["base"]] if info.get("base") else [])])
        )
    return [str(info["base_model"])] if info.get("base_model") else []


def _origin(path: str, info: dict) -> dict | None:
    """The Hub model a parent folder is (its id and commit), from the folder's place or the provenance."""
    from .origin import hub_origin

    found = hub_origin(path) if Path(path).exists() else None
    if found is None:
        for record in (info.get("provenance") or {}).get("models", []):
            if record.get("path") == str(Path(path).absolute()) and record.get("hub_id"):
                found = {"hub_id": record["hub_id"], "revision": record.get("revision")}
    return found


def _weights_hash(path: str, info: dict) -> str | None:
    for record in (info.get("provenance") or {}).get("models", []):
        if record.get("path") == str(Path(path).absolute()) and record.get("weights"):
            return next(iter(record["weights"].values()))
    return None


def _data_hash(path: str, info: dict) -> str | None:
    for record in (info.get("provenance") or {}).get("data", []):
        if record.get("path") == str(Path(path).absolute()):
            return record.get("sha256")
    return None


def card_data(name: str, info: dict):
    """The card's metadata as ``huggingface_hub``'s :class:`ModelCardData`: ``base_model`` the Hub ids of the
    parents where they are Hub models (with ``base_model_relation``), no local path; no ``datasets`` (the
    user's files are no Hub datasets: the text names them with their hashes); ``license`` the base card's;
    ``model-index`` the kept dev score where it is one public dataset's (:data:`CRITERION_RESULTS`)."""
    from huggingface_hub import EvalResult, ModelCardData

    kind = info.get("kind", "train")
    objective = info.get("objective") or {"train": "defsent-plus"}.get(kind, kind)
    tags = ["sentence-transformers", "sentence-similarity", "feature-extraction", "defsent"]
    tags += [tag for tag in (objective, info.get("loss")) if tag and tag not in tags]
    if info.get("matryoshka_dims"):  # --matryoshka: its widths are in the card's settings (matryoshka_dims)
        tags.append("matryoshka")
    parents = _parents(info)
    hub_ids = [origin["hub_id"] for origin in map(lambda p: _origin(p, info), parents) if origin]
    fields: dict = {"library_name": "sentence-transformers", "pipeline_tag": "sentence-similarity", "tags": tags}
    if hub_ids:
        fields["base_model"] = hub_ids[0] if len(hub_ids) == 1 else list(dict.fromkeys(hub_ids))
        fields["base_model_relation"] = "merge" if kind == "merge" else "finetune"
    licence = base_license(parents[0]) if parents else None
    if licence:
        fields["license"] = licence
    kept = _kept_score(info)
    if kept is not None and kept[0] in CRITERION_RESULTS:
        fields["model_name"] = name
        fields["eval_results"] = [EvalResult(**CRITERION_RESULTS[kept[0]], metric_value=round(kept[1] / 100, 6))]
    return ModelCardData(**fields)


def front_matter(name: str, info: dict) -> list[str]:
    """The model card's YAML metadata (:func:`card_data`), as ``huggingface_hub`` writes it."""
    return ["---", *card_data(name, info).to_yaml().splitlines(), "---"]


def _model_text(path: str, info: dict) -> str:
    """A parent model for the card's text: its Hub id (a link, and the commit where known), else the local
    folder's name and its weights' SHA-256; never the absolute path."""
    origin = _origin(path, info)
    if origin:
        at = f" at commit {origin['revision'][:12]}" if origin.get("revision") else ""
        return f"[{origin['hub_id']}](https://huggingface.co/{origin['hub_id']}){at}"
    digest = _weights_hash(path, info)
    return f"a local model folder `{Path(path).name}`" + (f" (weights SHA-256 {digest})" if digest else "")


def _file_text(path, digest: str | None) -> str:
    """A data file for the card's text: its name and SHA-256; never its absolute path."""
    if not path:
        return "-"
    return f"`{Path(str(path)).name}`" + (f" (SHA-256 {digest})" if digest else "")


def _value(value) -> str:
    return "-" if value is None else value


def _title(name: str, info: dict, card: tuple[str, str] | None) -> str:
    parents = [_origin(p, info) for p in _parents(info)]
    named = [o["hub_id"] if o else f"`{Path(p).name}`" for o, p in zip(parents, _parents(info), strict=True)]
    what = _card(info, card)[0]
    return f"{name}: {what} of {' and '.join(named)}" if named else f"{name}: {what}"


def model_card(name: str, info: dict, card: tuple[str, str] | None = None, settings: dict | None = None) -> str:
    """A Hugging Face style ``README.md`` for a checkpoint, written from its ``defsent.json`` and ``card`` (its
    title and sentence on what the run did: the objective's, :data:`NEUTRAL_CARD` without one): the Hub's
    metadata (:func:`front_matter`), then how to use it, its data (by name and hash), settings (``settings``: the
    run's own, the objective's and its auxiliary terms', shown first) and scores. No absolute local path appears in
    it (the folder can be published as it is; docs/formats.md)."""
    pooling = info.get("pooling", "mean")
    lines = [
        *front_matter(name, info),
        "",
        f"# {_title(name, info, card)}",
        "",
        f"A sentence encoder written by `defsent` {info.get('defsent_version', '')}: {_description(info, card)}",
        "",
        "## Use",
        "",
        f"`{name}` below is this folder, or its Hub id once uploaded (`hf upload ORG/NAME {name}`).",
        "",
        "```sh",
        f"defsent encode -m {name} --pooling {pooling} < sentences.txt > vectors.npy",
        "```",
        "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        f'model = SentenceTransformer("{name}")  # {pooling} pooling',
        "```",
        "",
    ]
    dims = info.get("matryoshka_dims")
    if dims:  # --matryoshka: the widths it was trained to stand alone at, and how to take them
        small = dims[-1]
        lines += [
            f"Trained with Matryoshka at {', '.join(map(str, dims))} dimensions: its vectors cut to any of these "
            f"widths stand alone (`defsent encode --dims {small}`, the server's `dimensions`, "
            f'`SentenceTransformer("{name}", truncate_dim={small})`).',
            "",
        ]
    if info.get("kind") == "merge":
        lines += ["## Merge", "", "| setting | value |", "|---|---|"]
        for key in ("method", "alpha", "base", "models", "weights", "select", "selected_score"):
            if key not in info:
                continue
            value = info[key]
            if key == "base":
                value = _model_text(str(value), info)
            elif key == "models":
                value = "; ".join(_model_text(str(m), info) for m in value)
            lines.append(_row(key, _value(value)))
        lines.append("")
    elif "sentences" in info or "pairs" in info:  # a run on plain sentences or on scored pairs
        lines += ["## Training data", "", "| what | value |", "|---|---|"]
        lines.append(_row("base model", _model_text(str(info.get("base_model", "?")), info)))
        if "pairs" in info:
            lines.append(_row("pairs", _file_text(info["pairs"], _data_hash(info["pairs"], info))))
            lines.append(_row("training pairs", info.get("training_pairs", "?")))
        else:
            lines.append(_row("sentences", _file_text(info["sentences"], _data_hash(info["sentences"], info))))
            lines.append(_row("split (of a dictionary)", info.get("split") or "-"))
            lines.append(_row("training sentences", info.get("training_sentences", "?")))
        lines += ["", "## Training settings", "", "| setting | value |", "|---|---|"]
        for key, value in {**(settings or {}), "train_pooling": info.get("train_pooling")}.items():
            if value is not None:
                lines.append(_row(key, value))
        for key, value in info.get("config", {}).items():
            lines.append(_row(key, _value(value)))
        lines.append(_row("steps", info.get("steps", "?")))
        lines.append(_row("seconds", info.get("seconds", "?")))
        lines.append("")
    else:
        bank = info.get("bank_attrs", {})
        lines += ["## Training data", "", "| what | value |", "|---|---|"]
        lines.append(_row("base model", _model_text(str(info.get("base_model", "?")), info)))
        lines.append(_row("dictionary", _file_text(info.get("dictionary"), bank.get("dictionary_sha256"))))
        lines.append(_row("bank", _file_text(info.get("bank"), info.get("bank_sha256"))))
        lines.append(_row("bank kind / transform", f"{bank.get('kind', '?')} / {bank.get('transform', 'none')}"))
        if bank.get("texts"):  # embed-entries --texts (banks/domain_text.py)
            found, most = bank.get("entries_from_texts", "?"), bank.get("texts_per_entry", "?")
            files = ", ".join(Path(t).name for t in str(bank["texts"]).splitlines())  # several: one a line
            lines.append(_row("bank from domain text", f"{files}: {found} entries, up to {most} lines each"))
        lines.append(_row("bank entries", info.get("bank_entries", "?")))
        lines.append(_row("training definitions", info.get("training_definitions", "?")))
        lines += ["", "## Training settings", "", "| setting | value |", "|---|---|"]
        lines.append(_row("pooling in training", info.get("train_pooling", "?")))
        lines.append(_row("head", info.get("head", "?")))
        for key, value in info.get("config", {}).items():
            lines.append(_row(key, _value(value)))
        for key, value in (settings or {}).items():  # the auxiliary terms' (+NM's, Matryoshka's)
            if key not in info.get("config", {}):
                lines.append(_row(key, _value(value)))
        lines.append(_row("steps", info.get("steps", "?")))
        lines.append(_row("seconds", info.get("seconds", "?")))
        lines.append("")
    scores = info.get("scores") or {}
    if scores or info.get("final_loss") is not None:
        lines += ["## Scores recorded for this checkpoint", "", "| score | value |", "|---|---|"]
        if info.get("final_loss") is not None:
            lines.append(_row("final training loss", info["final_loss"]))
        for key, value in scores.items():
            lines.append(_row(key, value))
        lines.append("")
    lines += [
        "Every setting and the whole loss curve are in `defsent.json`; the file formats are described in",
        "defsent's `docs/formats.md`.",
        "",
    ]
    return "\n".join(lines)
