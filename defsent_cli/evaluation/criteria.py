"""Scores that choose between models without looking at test data (except ``sts-avg``, which says so).

- ``dev``: the mean of STS-B dev and SICK-R trial (``SICK_trial.txt``, 500 pairs) Spearman x100: two
  dev signals, no test data (STS-B dev alone is a narrow proxy for the 7-task average);
- ``stsb-dev``: Spearman x100 on the STS-B dev set, the usual model-selection signal (SimCSE's);
- ``dict-dev``: MRR x100 of reverse-dictionary prediction on the dictionary's dev split
  (no external data; the dictionary and bank default to the ones the checkpoint trained on);
- ``sts-avg``: the 7-task STS test average ('all'), how DefSent+ reported "best of 10":
  this selects on test data, and says so.

``select-best`` ranks checkpoints by one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import distributed
from ..errors import DefsentError
from ..log import warn

if TYPE_CHECKING:  # the command line lists CRITERIA without the model and checkpoint code
    from ..encoder.models import LoadedModel

CRITERIA = {
    "dev": "mean of STS-B dev and SICK-R trial Spearman x100",
    "stsb-dev": "STS-B dev Spearman x100",
    "dict-dev": "reverse-dictionary MRR x100 on the dev split",
    "sts-avg": "7-task STS test average Spearman x100 (selects on TEST data)",
}


@dataclass
class Criterion:
    """One criterion with what it needs besides the model; its data is loaded once, on first use."""

    name: str
    data: Path | None = None
    dictionary: Path | None = None
    bank: Path | None = None
    pooling: str | None = None
    batch_size: int = 32
    show_progress: bool | None = None
    _tasks: list | None = field(default=None, repr=False)
    _bank: object = field(default=None, repr=False)  # dict-dev: the opened, checked bank (BankFile)

    def __post_init__(self) -> None:
        if self.name not in CRITERIA:
            raise DefsentError(f"unknown criterion {self.name!r}; choose one of {', '.join(CRITERIA)}")

    @property
    def meaning(self) -> str:
        return CRITERIA[self.name]

    @property
    def every_process(self) -> bool:
        """Whether under torchrun every process takes part in a score (dict-dev: each scores its share of the
        bank's rows, see ``search/exact.py``), rather than rank 0 alone."""
        return self.name == "dict-dev" and distributed.active()

    def prepare(self) -> Criterion:
        """Load the evaluation data now, so a missing folder fails before any model loads."""
        if self.name == "sts-avg":
            warn("sts-avg selects on the STS TEST sets (as DefSent+ did); report it as such, or select with stsb-dev")
        if self.name != "dict-dev" and self._tasks is None:
            from .sts_data import load_sts_tasks

            if self.name == "sts-avg":
                self._tasks = load_sts_tasks(self.data)
            else:
                self._tasks = load_sts_tasks(self.data, ["STS-B", "SICK-R"] if self.name == "dev" else ["STS-B"], "dev")
        return self

    @property
    def tasks(self) -> list:
        """The STS tasks the criterion scores on (loaded on first use); none for dict-dev."""
        return list(self.prepare()._tasks or [])

    def score(self, loaded: LoadedModel, pooling: str | None = None) -> float:
        """The criterion's score of a loaded model (checkpoint info from ``loaded.info``); ``pooling``
        overrides the criterion's (default: the model's own)."""
        self.prepare()
        if self._tasks is not None:
            from .sts import evaluate_sts

            result = evaluate_sts(
                loaded,
                tasks=self._tasks,
                pooling=pooling or self.pooling,
                batch_size=self.batch_size,
                show_progress=self.show_progress,
            )
            score = result["average"]["spearman"]
            if score is None:
                raise DefsentError("an STS task could not be scored", path=loaded.path)
            return float(score)
        return self._dict_dev(loaded)

    def _dict_dev(self, loaded: LoadedModel) -> float:
        from ..search.queries import query_encoder
        from .reverse_dict import evaluate, load_bank_for

        info = loaded.info
        dictionary = self.dictionary or (Path(info["dictionary"]) if info.get("dictionary") else None)
        bank_path = self.bank or (Path(info["bank"]) if info.get("bank") else None)
        if dictionary is None or bank_path is None:
            raise DefsentError(
                "dict-dev needs --dictionary and --bank (the checkpoint does not name them)", path=loaded.path
            )
        if self._bank is None or self._bank.source != Path(bank_path):  # checked once per bank
            self._bank = load_bank_for(dictionary, bank_path)
        encoder = query_encoder(loaded, self._bank)
        metrics = evaluate(
            dictionary,
            encoder,
            self._bank,
            "dev",
            self.batch_size,
            show_progress=self.show_progress,
            sharded=self.every_process,
        )
        return 100.0 * metrics["mrr"]

    def score_folder(self, path: Path, device: str = "auto") -> float:
        from ..encoder.models import load_model

        return self.score(load_model(path, device))


def checkpoint_seed(path: Path):
    """The training seed a checkpoint records (None for other folders)."""
    from ..formats.checkpoint import read_info

    return read_info(path).get("config", {}).get("seed")
