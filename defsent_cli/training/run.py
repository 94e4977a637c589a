"""Running a training to a checkpoint folder: the work folder, resuming, writing, cleaning up.

:func:`objective_fit` trains any registered objective (``objective.OBJECTIVES``; every training command calls it
through ``cli/loop_options.fit_objective``), at the objective's own defaults unless given a config, and hands the run
to :func:`fit`, which owns ``OUTPUT.partial/`` and the checkpoint.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import distributed
from ..errors import DefsentError
from ..evaluation.criteria import Criterion
from ..formats.checkpoint import save_checkpoint
from ..io import check_output
from ..log import note
from .config import TrainConfig
from .loop import Loop
from .matryoshka import Matryoshka
from .noise_matching import NoiseMatching
from .state import STATE_FILE, load_state, saved_step


@dataclass
class Interrupted:
    """What an interrupted training left (set on the KeyboardInterrupt as ``defsent_run``, for the command line's
    ``interrupted`` line): the work folder, whether a state is kept there and its step (None where unreadable),
    the run's steps and ``--save-every``, and how many processes ran it."""

    work_dir: Path
    kept: bool
    step: int | None
    total_steps: int
    save_every: int
    processes: int = 1


def _work_dir(output: Path, resume: bool, force: bool) -> tuple[Path, Path]:
    """(the checked output folder, ``OUTPUT.partial/``): refuse to drop a resumable state unless --force,
    say --resume (checked before anything loads)."""
    output = check_output(Path(output), force, kind="folder", what="a checkpoint folder")
    work_dir = output.with_name(output.name + ".partial")
    state = work_dir / STATE_FILE
    if (work_dir / "state.pt").exists() and not force:
        raise DefsentError(
            "holds a training state in the old pickled format (state.pt), which is not read any more: it could run "
            "code; pass --force to start over",
            path=work_dir,
        )
    if state.exists() and not resume and not force:
        raise DefsentError(
            "holds a resumable training state; pass --resume to continue that run or --force to start over",
            path=work_dir,
        )
    return output, work_dir


def _criterion(
    config: TrainConfig, data: Path | None, show_progress: bool | None, dictionary=None, bank=None
) -> Criterion | None:
    """The dev criterion of ``--eval-every`` with its data loaded now, so that missing evaluation data fails
    before the model loads (None without ``--eval-every``); its encoding shows progress as the run does.
    dict-dev needs the run's dictionary: a run on plain sentences or pairs has none."""
    if not config.eval_every:
        return None
    if config.eval_on == "dict-dev" and dictionary is None:
        raise DefsentError("--eval-on dict-dev needs a dictionary and an entry bank; use dev or stsb-dev")
    return Criterion(config.eval_on, data, dictionary, bank, show_progress=show_progress).prepare()


def _tracking(trainer: Loop, criterion: Criterion | None) -> Loop:
    if criterion is not None:
        trainer.track_dev(criterion)
    return trainer


def objective_fit(
    objective,
    data_file: Path,
    base_model: Path,
    output: Path,
    config: TrainConfig | None = None,
    resume: bool = False,
    force: bool = False,
    show_progress: bool | None = None,
    data: Path | None = None,
    nm: NoiseMatching | None = None,
    matryoshka: Matryoshka | None = None,
) -> dict:
    """Train any :class:`objective.Objective` on ``data_file`` from ``base_model`` and write the checkpoint folder
    ``output``; returns its ``defsent.json``. ``config``: the loop's settings (default: the objective's own,
    ``objective.config(base_model)``, as its command's with no option given; a :class:`TrainConfig` made by hand
    starts from the loop's neutral defaults). With ``config.eval_every`` the model is scored on ``config.eval_on``
    as it trains (evaluation data under ``data``, default ``$DEFSENT_DATA``; ``dev_eval.py``); ``nm``: the auxiliary
    +NM term (``--nm-weight``); ``matryoshka``: the widths trained to stand alone (``--matryoshka``). The settings are checked before anything loads. Under torchrun every process calls
    this and resumes from the same state (so ``output`` must be on a file system all processes see)."""
    from .loop import Loop

    config = objective.config(base_model) if config is None else config
    objective.check(config)  # before the output, the evaluation data and the model (the run checks it again)
    output, work_dir = _work_dir(output, resume, force)
    criterion = _criterion(config, data, show_progress, *objective.dev_data(data_file))
    trainer = _tracking(Loop(objective, data_file, base_model, config, nm, matryoshka), criterion)
    return fit(trainer, output, work_dir, resume, force, show_progress)


def fit(trainer: Loop, output: Path, work_dir: Path, resume: bool, force: bool, show_progress: bool | None) -> dict:
    """Train ``trainer`` (resuming from ``work_dir`` if asked) and write its checkpoint to ``output``.

    ``OUTPUT.partial/`` holds the loss log and, every ``save_every`` steps, the resumable state; it is
    removed when the checkpoint is written, and by any failure before a state was saved (a saved state
    stays for ``--resume``). Under torchrun rank 0 alone writes.
    """
    state_path = work_dir / STATE_FILE
    main = distributed.is_main()
    say = note if main else (lambda message: None)
    with distributed.session(trainer.device):
        resuming = distributed.broadcast_object(resume and state_path.exists())  # rank 0 decides for all
        if main:
            if not resuming:
                shutil.rmtree(work_dir, ignore_errors=True)  # --force, or leftovers without a state
            work_dir.mkdir(exist_ok=True)
        try:
            if resuming:
                load_state(state_path, trainer)
                if main:
                    # The log may hold rows written after the saved state: keep only what the state knows.
                    (work_dir / "log.jsonl").write_text(
                        "".join(json.dumps(row) + "\n" for row in trainer.log), encoding="utf-8"
                    )
                say(f"resuming from step {trainer.step} of {trainer.total_steps} ({state_path})")
            elif resume:
                say(f"no saved state in {work_dir}: starting from step 0")
            trainer.distribute()
            # the DDP wrapper goes before the process groups do, whatever ends the run (distributed.destroy)
            distributed.on_teardown(lambda: setattr(trainer, "net", distributed.unwrap(trainer.net)))
            processes = f", {trainer.world} processes" if trainer.world > 1 else ""
            say(f"{trainer.describe()}{processes})")
            trainer.run(work_dir, show_progress)
            # rank 0's record on every process: it alone holds the dev curve of the STS criteria (it scores alone)
            info = distributed.broadcast_object(trainer.info() if main else None)
            if main:
                files = trainer.checkpoint_files(work_dir)
                save_checkpoint(
                    output,
                    trainer.model,
                    trainer.loaded.tokenizer,
                    info,
                    trainer.max_length,
                    force=force,
                    files=files,
                    sentence_transformer=trainer.sentence_transformer,
                    card=trainer.objective.card(),
                    settings={**trainer.objective.settings(), **trainer.settings()},  # its own, and +NM's
                )
        except BaseException as exc:
            kept = main and state_path.exists()
            if main and not kept:
                shutil.rmtree(work_dir, ignore_errors=True)  # nothing resumable: leave nothing behind
            if main and isinstance(exc, KeyboardInterrupt):  # the command line's last word says what was kept
                exc.defsent_run = Interrupted(
                    work_dir, kept, saved_step(state_path) if kept else None, trainer.total_steps,
                    trainer.config.save_every, trainer.world,
                )  # fmt: skip
            raise
        if main:
            shutil.rmtree(work_dir, ignore_errors=True)
        distributed.barrier()  # every process returns once the checkpoint is written
    return info
