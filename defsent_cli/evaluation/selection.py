"""``select-best``: rank checkpoints (several seeds of one PST step) by one criterion (:mod:`.criteria`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..encoder.models import load_model
from ..errors import DefsentError
from ..io import check_writable, is_stdout, refuse_stdout
from ..log import note
from .common import mean_sd
from .criteria import Criterion, checkpoint_seed


def select_best(checkpoints: list[Path], criterion: Criterion, device: str = "auto") -> list[dict]:
    """Score every checkpoint; returns the ranking, best first (``rank``, ``path``, ``score``, ``seed``).

    Ties keep the order the checkpoints were given in.
    """
    paths = [Path(p) for p in checkpoints]
    if not paths:
        raise DefsentError("no checkpoints given")
    for path in paths:
        if not path.is_dir():
            raise DefsentError("not a checkpoint folder", path=path)
    criterion.prepare()
    ranking = []
    for path in paths:
        score = criterion.score(load_model(path, device))
        ranking.append({"path": str(path), "score": round(float(score), 4), "seed": checkpoint_seed(path)})
        note(f"{path}: {criterion.meaning} = {score:.2f}")
    ranking.sort(key=lambda row: -row["score"])
    for rank, row in enumerate(ranking, 1):
        row["rank"] = rank
    return ranking


def score_summary(ranking: list[dict]) -> dict:
    """The criterion's mean and sample sd over the ranked checkpoints (the seeds' spread)."""
    mean, sd = mean_sd([row["score"] for row in ranking])
    return {
        "n": len(ranking),
        "mean": None if mean is None else round(mean, 4),
        "sd": None if sd is None else round(sd, 4),
    }


def check_link(link: Path, force: bool = False) -> Path:
    """Where ``--link`` goes must be free (or ``force``) and its folder must exist: checked before any work."""
    if is_stdout(link):
        raise DefsentError(refuse_stdout("path", "--link, a link to a checkpoint folder,"))
    if (link.exists() or link.is_symlink()) and not force:
        raise DefsentError("link target exists; pass --force to replace it", path=link)
    if not link.parent.is_dir():
        raise DefsentError("the folder of --link does not exist", path=link.parent)
    check_writable(link)
    return link


def link_winner(winner: Path, link: Path, copy: bool = False, force: bool = False) -> None:
    """Point ``link`` at the winning checkpoint: a relative symlink, or a copy with ``copy``."""
    check_link(link, force)
    if copy:
        tmp = link.with_name(f".{link.name}.copying")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            shutil.copytree(winner, tmp, symlinks=False)
            _rebase_info(tmp, winner, link)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _remove(link)
        tmp.rename(link)
        return
    _remove(link)
    target = Path(winner).resolve()
    try:
        link.symlink_to(target.relative_to(link.parent.resolve()), target_is_directory=True)
    except ValueError:
        link.symlink_to(target, target_is_directory=True)


def _rebase_info(copy: Path, original: Path, link: Path) -> None:
    """The copied checkpoint's ``defsent.json`` with its paths recorded again, relative to where the copy goes
    (they were relative to the original: ``formats/recorded.py``)."""
    from ..formats.checkpoint import INFO_FILE, read_info, write_info

    if (copy / INFO_FILE).is_file():
        write_info(copy, read_info(original), link)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
