"""Teachers that score sentence pairs, ``defsent teacher --arch ce|cbe`` and ``defsent label`` (Reiml 2023,
sections 4.1 and 5.2; Augmented SBERT, Thakur et al. 2021).

- **Cross-Encoder** (``ce``): the pair as one sequence ``[CLS] x1 [SEP] x2 [SEP]``, the [CLS] state through a
  linear layer to one logit, a sigmoid on it (what the thesis's Table 6.2 found best): transformers'
  ``AutoModelForSequenceClassification`` with one label, trained with binary cross-entropy on the gold score
  rescaled to [0, 1] (sentence-transformers' ``BinaryCrossEntropyLoss`` computes the same). The folder is a
  sentence-transformers ``CrossEncoder`` (its default activation for one label is the sigmoid).
- **Cross-Bi-Encoder** (``cbe``): the pair as ``[CLS] x1 [SEP] [CLS] x2 [SEP]`` (two single-sentence encodings
  joined, so the second sentence gets its own [CLS], as the thesis writes it; BERT's segment ids 0 and 1
  where the model has them), one encoder pass in which the sentences attend to each other, then a masked
  mean over each sentence's own tokens (from its [CLS] to its [SEP]; ``--no-special-tokens``: without them)
  and the cosine of the two means. Trained with the bi-encoder's own loss, the squared error of the cosine
  against the gold score rescaled to [0, 1] (sentence-transformers' ``CosineSimilarityLoss``): the teacher then
  scores in exactly the student's target range and geometry (a cosine, every dimension weighted equally),
  which is the point of the CBE; [-1, 1] targets would put unrelated pairs at -1, where a bi-encoder trained on
  [0, 1] targets never puts them.

Both are the :class:`~defsent_cli.training.pairs.Pairs` objective with another model and loss (its data,
resume, torchrun for the per-pair losses) and are scored on dev by the Spearman of their own pair scores against the
gold (:class:`PairScoreCriterion`), after every epoch by default, keeping the best. ``label`` writes the
scores back in the gold scale (x ``max_score``, recorded in the teacher's ``defsent.json``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..encoder.encode import model_mask
from ..encoder.tokenize import has_padding, on_device, to_device
from ..encoder.tokenize import pad_id as padding_id
from ..errors import DefsentError, count
from .config import TrainConfig
from .objective import register
from .pairs import Pairs
from .specs import TEACHER

ARCHES = TEACHER.constraints["arch"].choices()


class PairScorer:
    """Scores pairs with a teacher model: the CE's logit, or the CBE's pooled pair (before any activation)."""

    def __init__(self, model, tokenizer, arch: str, max_length: int, special_tokens: bool = True):
        if arch not in ARCHES:
            raise DefsentError(f"--arch must be one of {', '.join(ARCHES)}, not {arch!r}")
        self.model, self.tokenizer, self.arch, self.special_tokens = model, tokenizer, arch, special_tokens
        self.max_length = max_length
        self.specials = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        self.two_segments = getattr(model.config, "type_vocab_size", 1) > 1

    def batch(self, texts1: list[str], texts2: list[str]) -> dict[str, torch.Tensor]:
        """The joint inputs of a batch of pairs (host tensors).

        CE: the tokenizer's own pair layout (BERT: [CLS] x1 [SEP] x2 [SEP] with segment ids 0/1; RoBERTa:
        <s> x1 </s></s> x2 </s>), as sentence-transformers' CrossEncoder tokenises. CBE: each sentence encoded
        alone with its special tokens ([CLS] x [SEP], truncated to half the length) and the two joined;
        ``segments`` marks the tokens of sentence 1 and 2 (the token type ids, where the model has two)."""
        if self.arch == "ce":
            enc = self.tokenizer(
                texts1, texts2, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
            )
            return {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        half = max(2, self.max_length // 2)
        first = self.tokenizer(texts1, truncation=True, max_length=half)["input_ids"]
        second = self.tokenizer(texts2, truncation=True, max_length=half)["input_ids"]
        rows = [a + b for a, b in zip(first, second, strict=True)]
        width = max(len(r) for r in rows)
        pad = padding_id(self.tokenizer)
        input_ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], dtype=torch.long)
        segments = torch.tensor(
            [[1] * len(a) + [2] * len(b) + [0] * (width - len(a) - len(b)) for a, b in zip(first, second, strict=True)],
            dtype=torch.long,
        )
        batch = {"input_ids": input_ids, "attention_mask": (segments > 0).long(), "segments": segments}
        if self.two_segments:
            batch["token_type_ids"] = (segments == 2).long()
        return batch

    def pooling_masks(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """The tokens each CBE pooling reads: its sentence's own tokens, without special tokens if asked."""
        keep = batch["attention_mask"].bool()
        if not self.special_tokens:
            self.specials = on_device(self.specials, keep.device)
            keep = keep & ~torch.isin(batch["input_ids"], self.specials)
        return keep & (batch["segments"] == 1), keep & (batch["segments"] == 2)

    @staticmethod
    def device_batch(batch: dict[str, torch.Tensor], device) -> tuple[dict[str, torch.Tensor], bool]:
        """The batch on ``device``, and whether it holds padding (``tokenize.has_padding``)."""
        return {k: to_device(v, device) for k, v in batch.items()}, has_padding(batch["attention_mask"])

    def forward(self, batch: dict[str, torch.Tensor], padded: bool = True):
        """CE: one logit per pair; CBE: the two pooled vectors (u, v). ``padded``: as :meth:`device_batch` says (the
        model gets ``encode.model_mask``'s mask: none without padding, a ready SDPA mask, so no host sync)."""
        inputs = {k: v for k, v in batch.items() if k != "segments"}
        inputs["attention_mask"] = model_mask(self.model, batch["attention_mask"], padded)
        out = self.model(**inputs)
        if self.arch == "ce":
            return out.logits[:, 0]
        states = out.last_hidden_state.float()
        u, v = ((states * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp(min=1) for m in self.pooling_masks(batch))
        return u, v

    @torch.no_grad()
    def score(self, texts1: list[str], texts2: list[str], device, batch_size: int = 64, progress=None) -> np.ndarray:
        """Every pair's score in [0, 1] terms: sigmoid(logit) (CE) or the cosine (CBE, in [-1, 1])."""
        scores = []  # kept on the device and copied back once: the host tokenises the next batch meanwhile
        for start in range(0, len(texts1), batch_size):
            batch = self.batch(texts1[start : start + batch_size], texts2[start : start + batch_size])
            out = self.forward(*self.device_batch(batch, device))
            if self.arch == "ce":
                scores.append(torch.sigmoid(out.float()))
            else:
                scores.append(torch.nn.functional.cosine_similarity(*out))
            if progress is not None:
                progress(len(batch["input_ids"]))
        return torch.cat(scores).float().cpu().numpy() if scores else np.zeros(0, dtype=np.float32)


class TeacherForward(torch.nn.Module):
    """The teacher's forward pass as one module (what DDP wraps): batch -> CE logits or CBE (u, v)."""

    def __init__(self, scorer: PairScorer):
        super().__init__()
        self.model, self.scorer = scorer.model, scorer

    def forward(self, padded: bool = True, **batch):
        return self.scorer.forward(batch, padded)


class PairScoreCriterion:
    """A teacher's dev score: Spearman x100 of its own pair scores against the gold of the criterion's STS dev
    sets (stsb-dev: STS-B dev; dev: the mean of STS-B dev and SICK-R trial)."""

    every_process = False  # under torchrun rank 0 scores alone (the others wait), as for every STS criterion

    def __init__(self, criterion, scorer: PairScorer, device, batch_size: int = 64):
        if criterion.name not in ("dev", "stsb-dev"):
            raise DefsentError(f"a teacher is scored on pairs: --eval-on dev or stsb-dev, not {criterion.name}")
        self.name, self.meaning = criterion.name, f"{criterion.meaning}, of the teacher's pair scores"
        self.criterion, self.scorer, self.device, self.batch_size = criterion, scorer, device, batch_size

    def prepare(self):
        self.criterion.prepare()
        return self

    def score(self, loaded, pooling=None) -> float:
        from scipy.stats import spearmanr

        values = []
        for task in self.criterion.tasks:
            sent1 = [s for sub in task.subsets for s in sub.sent1]
            sent2 = [s for sub in task.subsets for s in sub.sent2]
            gold = np.concatenate([sub.gold for sub in task.subsets])
            predicted = self.scorer.score(sent1, sent2, self.device, self.batch_size)
            values.append(100 * spearmanr(predicted, gold).statistic)
        return float(np.mean(values))


@register
class Teacher(Pairs):
    """A Cross-Encoder or Cross-Bi-Encoder trained on scored pairs: the :class:`Pairs` objective, another model and
    loss."""

    spec = TEACHER
    nm = False  # a teacher scores pairs; it encodes no single sentence for Noise Matching

    def __init__(
        self,
        arch: str = TEACHER.settings["arch"],
        max_score: float = TEACHER.settings["max_score"],
        special_tokens: bool = TEACHER.settings["special_tokens"],
    ):
        super().__init__(loss="cosine", max_score=max_score)
        self.arch, self.special_tokens = arch, special_tokens
        self.sentence_transformer = arch == "cbe"  # a CE folder is a sentence-transformers CrossEncoder instead
        self.freeze_pooler = arch == "cbe"  # the CE's classifier reads BERT's pooler

    def model_options(self) -> dict:
        return {"regression_head": self.arch == "ce"}  # the CE: the encoder with a one-logit head on [CLS]

    def pair_net(self, run) -> torch.nn.Module:
        self.scorer = PairScorer(run.model, run.loaded.tokenizer, self.arch, run.max_length, self.special_tokens)
        return TeacherForward(self.scorer)

    def settings(self) -> dict:
        return {"arch": self.arch, "max_score": self.max_score, "special_tokens": self.special_tokens}

    def refusal(self, term: str) -> str | None:
        if term == "matryoshka":
            return "defsent teacher takes no --matryoshka: a teacher scores pairs, its vectors are not what it serves"
        return super().refusal(term)

    def check(self, config: TrainConfig) -> None:
        super().check(config)
        if config.eval_every and config.eval_on == "sts-avg":
            raise DefsentError(
                "--eval-on sts-avg scores sentence vectors, which a teacher has none of; use dev or stsb-dev"
            )

    #: the model card's title and sentence, by architecture
    cards = {
        "ce": (
            "Cross-Encoder teacher",
            "a Cross-Encoder teacher trained on scored sentence pairs: both sentences in one input, its [CLS] state "
            "scored by one logit, a sigmoid giving the pair's score. It scores pairs (defsent label); it makes no "
            "sentence vectors.",
        ),
        "cbe": (
            "Cross-Bi-Encoder teacher",
            "a Cross-Bi-Encoder teacher trained on scored sentence pairs (Reiml 2023): the two sentences in one pass, "
            "each mean-pooled over its own tokens, the cosine giving the pair's score. It scores pairs (defsent "
            "label).",
        ),
    }

    def card(self) -> tuple[str, str]:
        return self.cards[self.arch]

    def describe(self, run) -> str:
        config = run.config
        name = {"ce": "Cross-Encoder", "cbe": "Cross-Bi-Encoder"}[self.arch]
        return (
            f"teacher ({name}): {run.base_model} on {count(len(run.data), 'scored pair')}, lr {config.lr:g}, "
            f"batch {config.batch_size}, {count(run.total_steps, 'step')}, seed {config.seed}"
        )

    def criterion(self, run, criterion):
        return PairScoreCriterion(criterion, self.scorer, run.device)

    def loss(self, run, index: np.ndarray) -> torch.Tensor:
        """CE: binary cross-entropy of the logit against the rescaled score; CBE: the squared error of the cosine."""
        batch = self.scorer.batch([run.data.texts[i] for i in index], [self.texts2[i] for i in index])
        inputs, padded = self.scorer.device_batch(batch, run.device)
        out = run.net(padded=padded, **inputs)
        labels = to_device(torch.from_numpy(run.data.labels[index]), run.device)
        with torch.autocast(labels.device.type, enabled=False):
            if self.arch == "ce":
                return torch.nn.functional.binary_cross_entropy_with_logits(out.float(), labels.float())
            return self.loss_fn.compute_loss_from_embeddings([out[0].float(), out[1].float()], labels)


def load_teacher(folder: Path, device: str = "auto") -> tuple[PairScorer, dict, object]:
    """A teacher folder written by ``defsent teacher``: (its scorer, its defsent.json, the loaded model)."""
    from ..encoder.models import load_model
    from ..formats.checkpoint import read_info

    info = read_info(Path(folder))
    if info.get("kind") != "teacher":
        raise DefsentError("is not a teacher written by defsent teacher (defsent.json kind 'teacher')", path=folder)
    loaded = load_model(folder, device, regression_head=info.get("arch") == "ce")
    model = loaded.model
    model.eval()
    max_length = loaded.token_limit(info.get("max_length"))
    scorer = PairScorer(model, loaded.tokenizer, info.get("arch", "ce"), max_length, info.get("special_tokens", True))
    return scorer, info, loaded
