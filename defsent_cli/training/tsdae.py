"""TSDAE (Wang et al. 2021): unsupervised pre-training on plain sentences; ``defsent tsdae``.

Each sentence loses 60% of its words; the encoder pools the damaged sentence into one vector (CLS by
default, mean as an option); a decoder whose cross-attention sees only that vector reconstructs the
original sentence; encoder and decoder weights are tied; only the encoder is kept.

The loss is sentence-transformers' ``DenoisingAutoEncoderLoss`` (decoder = ``AutoModelForCausalLM`` of
the same checkpoint with cross-attention added, its weights tied to the encoder's, cross-entropy of the
original tokens), used as is. What we write around it is what ``defsent train`` already has: the seeded
batches, the loop with progress and a JSONL log, the resumable safetensors state (the decoder's own
weights, e.g. its cross-attention, travel in it), and the checkpoint folder.

The noise is written here, not taken from sentence-transformers: its example splits words with NLTK's
``word_tokenize``, whose Punkt model is a run-time download (nothing may download here). Words are split
as the Treebank tokenizer would for this purpose (runs of word characters, each punctuation mark on its
own), each is kept with probability 1 - 0.6, at least one is kept, and the rest are joined by spaces
(the subword tokenizers of BERT and RoBERTa split punctuation off anyway). The draw is a pure function
of (seed, step), so a resumed run damages the same sentences the same way.

Defaults from the paper: AdamW, constant lr 3e-5, no warm-up, weight decay 0, batch 8, CLS pooling.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from .. import __version__
from ..encoder.pooling import get_pooling
from ..encoder.tokenize import pad_batch, pad_id, tokenize
from ..errors import DefsentError
from ..formats.checkpoint import CHECKPOINT_FORMAT
from ..formats.dictionary import seeded_sample
from .config import DELETION, DICTIONARY_SPLITS, TSDAE_POOLINGS, TrainConfig
from .data import TrainingData
from .trainer import Trainer

_WORDS = re.compile(r"\w+|[^\w\s]")


def delete_words(text: str, ratio: float, rng: np.random.Generator) -> str:
    """``text`` with each word (or punctuation mark) deleted with probability ``ratio``; at least one stays."""
    words = _WORDS.findall(text)
    if not words:
        return text
    keep = rng.random(len(words)) > ratio
    if not keep.any():
        keep[rng.integers(len(words))] = True
    return " ".join(word for word, kept in zip(words, keep, strict=True) if kept)


def read_sentences(path: Path, split: str = "train") -> list[str]:
    """One sentence per line of a text file, or the definitions of a dictionary JSONL (``.jsonl``) of one split
    (default train, so that held-out definitions stay unseen; ``all``: every split)."""
    from ..formats.dictionary import iter_entries
    from ..io import check_input, read_texts

    path = check_input(path)
    if split not in DICTIONARY_SPLITS:
        raise DefsentError(f"--split must be one of {', '.join(DICTIONARY_SPLITS)}, not {split!r}")
    if path.suffix.lower() == ".jsonl":
        texts = [d for entry in iter_entries(path) if split in ("all", entry.split) for d in entry.definitions]
    else:
        texts = read_texts([path], skip_blank=True)
    if not texts:
        raise DefsentError("holds no sentences", path=path)
    return texts


def sentence_transformer(transformer_dir: Path, pooling: str, device):
    """A sentence-transformers model (Transformer + Pooling) of a local folder, for the loss."""
    try:
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:
        raise DefsentError(
            "defsent tsdae uses sentence-transformers' DenoisingAutoEncoderLoss: pip install 'defsent-cli[tsdae]'"
        ) from None
    transformer = Transformer(str(transformer_dir))
    dim = transformer.auto_model.config.hidden_size
    return SentenceTransformer(modules=[transformer, Pooling(dim, pooling)], device=str(device))


class TsdaeTrainer(Trainer):
    """The denoising auto-encoder run: the :class:`Trainer` loop and state, another model and loss."""

    def __init__(
        self, sentences: Path, base_model: Path, config: TrainConfig, deletion: float = DELETION, split: str = "train"
    ):
        from sentence_transformers.sentence_transformer.losses import DenoisingAutoEncoderLoss

        from .. import distributed
        from ..encoder.models import load_model

        self.config = config.validate()
        if config.pooling not in TSDAE_POOLINGS:
            raise DefsentError(f"tsdae pools with cls or mean, not {config.pooling!r}")
        if not 0 <= deletion < 1:
            raise DefsentError(f"--deletion must be in [0, 1), got {deletion}")
        self.deletion, self.split = deletion, split
        self.dictionary, self.base_model, self.bank_path = Path(sentences), Path(base_model), None
        texts = read_sentences(self.dictionary, split)
        keep = seeded_sample(len(texts), config.limit, config.seed)
        if keep is not None:
            texts = [texts[i] for i in keep]
        self.rank, self.world = distributed.rank(), distributed.world()
        if self.world > 1:
            raise DefsentError("defsent tsdae runs in one process (not under torchrun)")
        torch.manual_seed(config.seed)
        # the folder is checked and the tokenizer / limits read as everywhere; sentence-transformers loads the model
        self.loaded = load_model(base_model, config.device)
        self.device = self.loaded.device
        self.encoder = sentence_transformer(
            self.loaded.transformer_dir or self.loaded.path, config.pooling, self.device
        )
        self.loss_model = DenoisingAutoEncoderLoss(self.encoder, tie_encoder_decoder=True).to(self.device)
        self.model = self.encoder[0].auto_model  # what the checkpoint keeps (its weights are tied to the decoder's)
        self.loaded.model = self.model
        self.max_length = self.loaded.token_limit(config.max_length)
        self.pool = get_pooling(config.pooling)
        self.data = TrainingData(
            tokenize(texts, self.loaded.tokenizer, self.pool, self.max_length), np.zeros(len(texts)), 0, texts
        )
        self.head, self.word_head, self.mlm = None, None, None  # Trainer's DefSent+ parts: none here
        params = [p for p in self.loss_model.parameters() if p.requires_grad]
        self._start(
            torch.optim.AdamW(params, lr=config.lr, eps=config.adam_eps, weight_decay=config.weight_decay, fused=True)
        )

    def describe(self) -> str:
        config = self.config
        return (
            f"tsdae: {self.base_model} on {len(self.data):,} sentences ({config.pooling} pooling, {self.deletion:.0%} "
            f"of words deleted, lr {config.lr:g} constant, batch {config.batch_size}, {self.total_steps:,} steps, "
            f"seed {config.seed}"
        )

    def checkpoint_files(self, work_dir: Path) -> dict[str, Path]:
        return {"train_log.jsonl": work_dir / "log.jsonl"}

    def clipped(self):
        return self.loss_model.parameters()

    def _decoder_only(self) -> dict[str, torch.Tensor]:
        """The decoder's weights that are not the encoder's (cross-attention, LM head): saved in the state."""
        shared = {p.data_ptr() for p in self.model.parameters()}
        return {k: v for k, v in self.loss_model.decoder.state_dict().items() if v.data_ptr() not in shared}

    def extra_state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        settings = {"deletion": self.deletion, "split": self.split}
        return settings, {f"decoder.{k}": v for k, v in self._decoder_only().items()}

    def restore_extra_state(self, extra: dict, tensors: dict[str, torch.Tensor]) -> None:
        differ = [f"--{k}" for k, v in (("deletion", self.deletion), ("split", self.split)) if extra.get(k, v) != v]
        if differ:
            raise DefsentError(f"cannot resume: settings differ from the saved run ({', '.join(differ)})")
        decoder = {k.removeprefix("decoder."): v for k, v in tensors.items() if k.startswith("decoder.")}
        self.loss_model.decoder.load_state_dict(decoder, strict=False)

    def train_mode(self) -> None:
        self.loss_model.train()

    def loss_on(self, index: np.ndarray) -> torch.Tensor:
        """Delete words (seeded by seed and step), encode the damaged sentences, reconstruct the originals."""
        rng = np.random.default_rng([self.config.seed, self.step])
        damaged = [delete_words(self.data.texts[i], self.deletion, rng) for i in index]
        tokenizer = self.loaded.tokenizer
        padding = pad_id(tokenizer)
        source = pad_batch(tokenize(damaged, tokenizer, self.pool, self.max_length), padding)
        target = pad_batch([self.data.token_ids[i] for i in index], padding)
        features = [
            {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device)} for ids, mask in (source, target)
        ]
        return self.loss_model(features, None)

    def info(self) -> dict:
        config = self.config
        return {
            "format": CHECKPOINT_FORMAT,
            "kind": "tsdae",
            "defsent_version": __version__,
            "base_model": str(self.base_model.resolve()),
            "pooling": config.pooling,
            "normalize": self.loaded.normalize,
            "train_pooling": config.pooling,
            "sentences": str(self.dictionary.resolve()),
            "training_sentences": len(self.data),
            "deletion": self.deletion,
            "split": self.split if self.dictionary.suffix.lower() == ".jsonl" else None,
            "config": asdict(config),
            "precision": self.precision,
            "steps": self.step,
            "max_length": self.max_length,
            "seconds": round(self.elapsed, 1),
            "final_loss": self.log[-1]["loss"] if self.log else None,
            "loss_curve": [[row["step"], row["loss"]] for row in self.log],
            "kept_step": self.step,
        }
