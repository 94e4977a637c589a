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
    extra, extra_tensors = trainer.extra_state()
    tensors.update({f"extra.{k}": v for k, v in extra_tensors.items()})
    tensors = {k: v.detach().to("cpu").clone().contiguous() for k, v in tensors.items()}
    version, internal, gauss = random.getstate()
    doc = {
        "format": STATE_FORMAT,
        "config": asdict(trainer.config),
        "step": trainer.step,
        "world_size": trainer.world,
        "optimizer": optimizer_doc,
        "scheduler": trainer.scheduler.state_dict(),
        "scaler": trainer.scaler.state_dict() if trainer.scaler is not None else None,
        "python_rng": [version, list(internal), gauss],
        "log": trainer.log,
        "extra": extra,
        "elapsed": trainer.elapsed,
    }
    write_tensors(path, tensors, doc)  # atomic: the previous state stays until this one is complete


def load_state(path: Path, trainer) -> None:
    """Restore a state written by :func:`save_state` into ``trainer`` (same settings required)."""
    tensors, doc = read_tensors(path, "the resume state", "; delete it or pass --force")
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise DefsentError(f"not a defsent training state ({STATE_FORMAT}); delete it or pass --force", path=path)
    saved = doc.get("config", {})
    mine, defaults = asdict(trainer.config), asdict(TrainConfig())
    differ = [k for k in mine if k not in RESUMABLE_CHANGES and saved.get(k, defaults[k]) != mine[k]]
    if differ:
        raise DefsentError(f"cannot resume: settings differ from the saved run ({', '.join(differ)})", path=path)
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
    trainer.restore_extra_state(doc.get("extra") or {}, extra)
