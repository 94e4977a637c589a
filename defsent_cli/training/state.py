"""The resumable training state (docs/formats.md, "Training state"): ``OUTPUT.partial/state.safetensors``.

One safetensors file, written atomically, holds every tensor (model weights, AdamW moments, each
process's torch RNG states, CPU and CUDA, the best weights kept so far) and, in its metadata, a JSON document with the rest (format, config,
step, scheduler, fp16's gradient scale, Python RNG state, loss log, elapsed time). Reading it runs no code: safetensors
stores raw tensors and the metadata is parsed as JSON, unlike a pickled ``torch.save`` file, so a
crafted state file cannot execute anything on ``--resume``.
"""

from __future__ import annotations

import random
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from .. import distributed
from ..errors import DefsentError
from ..formats.tensors import read_tensors, write_tensors
from ..log import warn
from .config import TrainConfig
from .matryoshka import option_text

STATE_FORMAT = "defsent-train-state/2"
STATE_FILE = "state.safetensors"
#: Settings that may change between a run and its resumption (they do not change the weights).
RESUMABLE_CHANGES = ("device", "save_every", "log_every", "deterministic", "shard_bank")


def _optimizer_tensors(state: dict) -> tuple[dict[str, torch.Tensor], dict]:
    """Split ``optimizer.state_dict()`` into tensors (by "param.name") and the JSON-able rest."""
    tensors: dict[str, torch.Tensor] = {}
    plain: dict[str, dict[str, Any]] = {}
    for param, values in state["state"].items():
        for name, value in values.items():
            if torch.is_tensor(value):
                tensors[f"optimizer.{param}.{name}"] = value
            else:
                plain.setdefault(str(param), {})[name] = value
    return tensors, {"param_groups": state["param_groups"], "plain": plain}


def _optimizer_state(tensors: dict[str, torch.Tensor], doc: dict) -> dict:
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        if key.startswith("optimizer."):
            _, param, name = key.split(".", 2)
            state.setdefault(int(param), {})[name] = value
    for param, values in doc["plain"].items():
        state.setdefault(int(param), {}).update(values)
    return {"state": state, "param_groups": doc["param_groups"]}


def save_state(path: Path, trainer) -> None:
    """Write the state atomically; under torchrun every process calls it (RNG states are gathered), rank 0 writes."""
    device = torch.device(trainer.device)
    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None  # dropout on a GPU draws from it
    rngs = distributed.gather_object((torch.get_rng_state(), cuda))
    if not distributed.is_main():
        return
    tensors = {f"model.{k}": v for k, v in trainer.model.state_dict().items()}
    optimizer, optimizer_doc = _optimizer_tensors(trainer.optimizer.state_dict())
    tensors.update(optimizer)
    tensors.update({f"rng.{rank}": state for rank, (state, _) in enumerate(rngs)})
    tensors.update({f"rng_cuda.{rank}": state for rank, (_, state) in enumerate(rngs) if state is not None})
    extra, extra_tensors = extra_state(trainer)
    tensors.update({f"extra.{k}": v for k, v in extra_tensors.items()})
    tensors = {k: v.detach().to("cpu").clone().contiguous() for k, v in tensors.items()}
    version, internal, gauss = random.getstate()
    doc = {
        "format": STATE_FORMAT,
        "config": trainer.run_settings(),
        "step": trainer.step,
        "world_size": trainer.world,
        "optimizer": optimizer_doc,
        "scheduler": trainer.scheduler.state_dict(),
        "scaler": trainer.scaler.state_dict() if trainer.scaler is not None else None,
        "python_rng": [version, list(internal), gauss],
        "log": trainer.log,
        "extra": extra,
        "elapsed": trainer.elapsed,
        "settings": trainer.settings(),
        "inputs": trainer.inputs(),
    }
    write_tensors(path, tensors, doc)  # atomic: the previous state stays until this one is complete


def _option(name: str) -> str:
    """The command-line option of a setting's name (``max_steps`` -> ``--max-steps``)."""
    return "--" + name.replace("_", "-")


def _shown(value: Any) -> str:
    return "not given" if value is None else str(value).lower() if isinstance(value, bool) else f"{value}"


def _legacy_settings(doc: dict) -> dict:
    """The run's own settings in a state saved before they had their place in the document: inside ``extra``, as
    its ``settings``, or as ``extra`` itself where the objective's state document was its settings (plain values,
    where a dev tracker's document holds lists)."""
    extra = doc.get("extra") or {}
    if "settings" in extra:
        return dict(extra["settings"])
    if all(not isinstance(value, (dict, list)) for value in extra.values()):
        return dict(extra)
    return {}


def check_resume(doc: dict, trainer, path: Path) -> None:
    """Refuse a resume that would not continue the saved run: a setting that changes the weights differs (any of
    the run's settings, the loop's and the objective's, but :data:`RESUMABLE_CHANGES`, or one of the auxiliary
    terms'), or an input
    file differs (by SHA-256: another file, the same file edited, its lines in another order). Each difference is
    named; the one place every resumable command (every registered objective's) checks this."""
    # every setting of the run, the loop's and the objective's (a state saved before issue 70 kept the objective's
    # in "settings", DefSent+'s in "config", where another objective's run's config also said objective
    # defsent-plus, which its settings override; one saved before either, in "extra")
    saved_aux = doc["settings"] if isinstance(doc.get("settings"), dict) else _legacy_settings(doc)
    saved = {**doc.get("config", {}), **saved_aux}
    mine, aux, defaults = trainer.run_settings(), trainer.settings(), asdict(TrainConfig())
    differ = [
        f"{_option(k)} {_shown(mine[k])} (saved: {_shown(saved.get(k, defaults.get(k)))})"
        for k in mine
        if k not in RESUMABLE_CHANGES and saved.get(k, defaults.get(k)) != mine[k]
    ]
    # the auxiliary terms' (+NM's): a setting only one side has differs too
    aux_saved = {k: v for k, v in saved_aux.items() if k not in mine}
    for k in dict.fromkeys([*aux, *aux_saved]):
        if k.startswith("matryoshka_"):
            continue  # one option, --matryoshka, below
        if k not in aux or k not in aux_saved or aux[k] != aux_saved[k]:
            differ.append(f"{_option(k)} {_shown(aux.get(k))} (saved: {_shown(aux_saved.get(k))})")
    keys = ("matryoshka_dims", "matryoshka_weights")
    if [aux.get(k) for k in keys] != [aux_saved.get(k) for k in keys]:  # shown as the option is typed
        differ.append(f"--matryoshka {_shown(option_text(aux))} (saved: {_shown(option_text(aux_saved))})")
    if differ:
        raise DefsentError(
            f"cannot resume: settings differ from the saved run: {'; '.join(differ)}; resume with the saved run's "
            "settings, or pass --force to start over",
            path=path,
        )
    saved_inputs, inputs = doc.get("inputs"), trainer.inputs()
    if not isinstance(saved_inputs, dict):
        if distributed.is_main():
            warn(f"{path}: saved by an older defsent, it records no input files: that the resume reads the same data "
                 "is not checked")  # fmt: skip
        return
    changed = []
    for name in dict.fromkeys([*saved_inputs, *inputs]):
        before, now = saved_inputs.get(name), inputs.get(name)
        if before is not None and now is not None and before.get("sha256") == now["sha256"]:
            continue  # the same bytes, wherever the file is now (moved or copied: the same data)
        if before is None or now is None:
            changed.append(f"{name} {'not given' if now is None else now['path']} (saved: "
                           f"{'none' if before is None else before['path']})")  # fmt: skip
        elif before["path"] == now["path"]:
            changed.append(f"{name} {now['path']} changed since the run was saved (its SHA-256 differs)")
        else:
            changed.append(f"{name} {now['path']} is not the saved run's {before['path']} (its SHA-256 differs)")
    if changed:
        raise DefsentError(
            f"cannot resume: the input differs from the saved run's: {'; '.join(changed)}; resume with the same "
            "data, or pass --force to start over",
            path=path,
        )


def input_record(path: Path) -> dict:
    """How a resume recognises an input file: its absolute path (for the message) and its SHA-256 (the check)."""
    from ..io import sha256_file

    return {"path": str(Path(path).resolve()), "sha256": sha256_file(path)}


def model_record(folder: Path, shown: Path | None = None) -> dict:
    """How a resume recognises the base model: the SHA-256 of its configuration and tokenizer files (what
    decides the architecture and the token ids; the weights come from the state), not of its weights; ``shown``:
    the folder the user named (a sentence-transformers folder holds ``folder`` inside)."""
    import hashlib

    from ..io import sha256_file

    folder = Path(folder)
    names = ("config.json", "tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model",
             "sentencepiece.bpe.model", "tokenizer.model")  # fmt: skip
    digest = hashlib.sha256()
    for name in names:
        if (folder / name).is_file():
            digest.update(f"{name}:{sha256_file(folder / name)}\n".encode())
    return {"path": str(Path(shown or folder).resolve()), "sha256": digest.hexdigest()}


def saved_step(path: Path) -> int | None:
    """The step of the state saved at ``path``, from its metadata alone (no tensor read); None where there is
    no readable state."""
    import json

    from safetensors import safe_open

    from ..formats.tensors import METADATA_KEY

    try:
        with safe_open(str(path), framework="pt", device="cpu") as fh:
            step = json.loads((fh.metadata() or {}).get(METADATA_KEY, "null"))["step"]
    except Exception:  # noqa: BLE001 - a state that cannot be read says no step; --resume names the fault
        return None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def load_state(path: Path, trainer) -> None:
    """Restore a state written by :func:`save_state` into ``trainer`` (same settings required)."""
    tensors, doc = read_tensors(path, "the resume state", "; delete it or pass --force")
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise DefsentError(f"not a defsent training state ({STATE_FORMAT}); delete it or pass --force", path=path)
    check_resume(doc, trainer, path)
    model = {k.removeprefix("model."): v for k, v in tensors.items() if k.startswith("model.")}
    trainer.model.load_state_dict(model)
    trainer.optimizer.load_state_dict(_optimizer_state(tensors, doc["optimizer"]))
    trainer.scheduler.load_state_dict(doc["scheduler"])
    if doc.get("scaler") and trainer.scaler is not None:
        trainer.scaler.load_state_dict(doc["scaler"])
    rngs = [tensors[f"rng.{rank}"] for rank in range(int(doc["world_size"])) if f"rng.{rank}" in tensors]
    if len(rngs) == trainer.world:
        torch.set_rng_state(rngs[trainer.rank])
        cuda, device = tensors.get(f"rng_cuda.{trainer.rank}"), torch.device(trainer.device)
        if cuda is not None and device.type == "cuda":
            torch.cuda.set_rng_state(cuda, device)
    else:  # saved by another number of processes: the weights so far are the same, dropout masks from here differ
        torch.manual_seed(trainer.config.seed + 1_000_003 * trainer.rank + 7919 * int(doc["step"]))
        if distributed.is_main():
            warn(
                f"state saved by {len(rngs)} process(es), resumed by {trainer.world}: dropout from here differs "
                "from an uninterrupted run"
            )
    version, internal, gauss = doc["python_rng"]
    random.setstate((version, tuple(internal), gauss))
    trainer.step, trainer.log, trainer.elapsed = int(doc["step"]), list(doc["log"]), float(doc["elapsed"])
    extra = {k.removeprefix("extra."): v for k, v in tensors.items() if k.startswith("extra.")}
    restore_extra_state(trainer, doc.get("extra") or {}, extra)


# --- what the resumable state carries beyond weights, optimiser and log: the objective's and the dev tracker's ---


def _own(trainer) -> dict[str, dict[str, torch.Tensor]]:
    """Each of the objective's modules' weights that are not the encoder's (a tied decoder shares its embeddings)."""
    shared = {p.data_ptr() for p in trainer.model.parameters()}
    return {
        name: {k: v for k, v in module.state_dict().items() if v.data_ptr() not in shared}
        for name, module in trainer.objective.modules().items()
    }


def extra_state(trainer) -> tuple[dict, dict[str, torch.Tensor]]:
    """The objective's document and its modules' weights, and the dev tracker's (with the kept-best weights)."""
    objective = trainer.objective
    doc, tensors = objective.state_document(), {}
    for name, weights in _own(trainer).items():
        tensors.update({f"{name}.{k}": v for k, v in weights.items()})
    if trainer.dev is not None:
        dev, best = trainer.dev.state()
        key = objective.dev_key
        doc = {**doc, key: dev} if key is not None else {**doc, **dev}
        tensors.update({f"{objective.best_prefix}{k}": v for k, v in best.items()})
    return doc, tensors


def restore_extra_state(trainer, extra: dict, tensors: dict[str, torch.Tensor]) -> None:
    """:func:`extra_state`'s, back into the objective's modules and the dev tracker (the settings were compared with
    the saved run's before: :func:`check_resume`)."""
    objective = trainer.objective
    for name, module in objective.modules().items():
        weights = {k.removeprefix(f"{name}."): v for k, v in tensors.items() if k.startswith(f"{name}.")}
        module.load_state_dict(weights, strict=False)
    if trainer.dev is not None:
        prefix, own = objective.best_prefix, tuple(f"{name}." for name in objective.modules())
        best = {k.removeprefix(prefix): v for k, v in tensors.items() if k.startswith(prefix) and not k.startswith(own)}
        key = objective.dev_key
        trainer.dev.restore(extra.get(key, {}) if key is not None else extra, best)
