"""``select-best``: rank checkpoints (several seeds of one PST step) by one criterion.

- ``stsb-dev``: Spearman x100 on the STS-B dev set, the usual model-selection signal;
- ``dict-dev``: MRR x100 of reverse-dictionary prediction on the dictionary's dev split
  (no external data; the dictionary and bank default to the ones the checkpoint trained on);
- ``sts-avg``: the 7-task STS test average ('all'), how DefSent+ reported "best of 10":
  this selects on test data, and says so.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from .console import err_console
from .errors import DefsentError
from .models import load_model

CRITERIA = {
    "stsb-dev": "STS-B dev Spearman x100",
    "dict-dev": "reverse-dictionary MRR x100 on the dev split",
    "sts-avg": "7-task STS test average Spearman x100 (selects on TEST data)",
}


@dataclass
class SelectionSettings:
    """What the criteria need besides the checkpoints."""

    data: Path | None = None
    dictionary: Path | None = None
    bank: Path | None = None
    pooling: str | None = None
    batch_size: int = 32
    device: str = "auto"
    show_progress: bool | None = None


def _checkpoint_info(path: Path) -> dict:
    info_path = path / "defsent.json"
    if not info_path.exists():
        return {}
    try:
        return json.loads(info_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DefsentError(f"invalid defsent.json ({exc})", path=info_path) from None


def _dict_dev_score(path: Path, settings: SelectionSettings) -> float:
    from .reverse_dict import evaluate, load_bank_for, load_query_encoder

    info = _checkpoint_info(path)
    dictionary = settings.dictionary or (Path(info["dictionary"]) if info.get("dictionary") else None)
    bank_path = settings.bank or (Path(info["bank"]) if info.get("bank") else None)
    if dictionary is None or bank_path is None:
        raise DefsentError("dict-dev needs --dictionary and --bank (the checkpoint does not name them)", path=path)
    bank = load_bank_for(dictionary, bank_path)
    encoder = load_query_encoder(path, bank, None, settings.device)
    metrics = evaluate(dictionary, encoder, bank, "dev", settings.batch_size, show_progress=settings.show_progress)
    return 100.0 * metrics["mrr"]


def select_best(checkpoints: list[Path], criterion: str, settings: SelectionSettings) -> list[dict]:
    """Score every checkpoint; returns the ranking, best first (``rank``, ``path``, ``score``)."""
    if criterion not in CRITERIA:
        raise DefsentError(f"unknown criterion {criterion!r}; choose one of {', '.join(CRITERIA)}")
    paths = [Path(p) for p in checkpoints]
    if not paths:
        raise DefsentError("no checkpoints given")
    for path in paths:
        if not path.is_dir():
            raise DefsentError("not a checkpoint folder", path=path)
    if criterion == "sts-avg":
        err_console.print(
            "[yellow]warning:[/yellow] sts-avg selects on the STS TEST sets (as DefSent+ did); "
            "report it as such, or select with stsb-dev"
        )
    tasks = None
    if criterion in ("stsb-dev", "sts-avg"):
        from .evaluation.sts import load_sts_tasks

        tasks = (
            load_sts_tasks(settings.data, ["STS-B"], "dev")
            if criterion == "stsb-dev"
            else load_sts_tasks(settings.data)
        )
    ranking = []
    for path in paths:
        if tasks is not None:
            from .evaluation.sts import evaluate_sts

            loaded = load_model(path, settings.device)
            result = evaluate_sts(
                loaded,
                tasks=tasks,
                pooling=settings.pooling,
                batch_size=settings.batch_size,
                show_progress=settings.show_progress,
            )
            score = result["average"]["spearman"]
            if score is None:
                raise DefsentError("an STS task could not be scored", path=path)
        else:
            score = _dict_dev_score(path, settings)
        info = _checkpoint_info(path)
        ranking.append({"path": str(path), "score": round(float(score), 4), "seed": info.get("config", {}).get("seed")})
        err_console.print(f"{path}: {CRITERIA[criterion]} = {score:.2f}")
    ranking.sort(key=lambda row: -row["score"])
    for rank, row in enumerate(ranking, 1):
        row["rank"] = rank
    return ranking


def link_winner(winner: Path, link: Path, copy: bool = False, force: bool = False) -> None:
    """Point ``link`` at the winning checkpoint: a relative symlink, or a copy with ``copy``."""
    if link.exists() or link.is_symlink():
        if not force:
            raise DefsentError("link target exists; pass --force to replace it", path=link)
        if link.is_symlink() or link.is_file():
            link.unlink()
        else:
            shutil.rmtree(link)
    if copy:
        tmp = link.with_name(f".{link.name}.copying")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(winner, tmp, symlinks=False)
        tmp.rename(link)
    else:
        target = Path(winner).resolve()
        try:
            relative = target.relative_to(link.parent.resolve())
            link.symlink_to(relative, target_is_directory=True)
        except ValueError:
            link.symlink_to(target, target_is_directory=True)
