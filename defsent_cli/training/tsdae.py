"""TSDAE (Wang et al. 2021): unsupervised pre-training on plain sentences; ``defsent tsdae``.

Each sentence loses 60% of its words; the encoder pools the damaged sentence into one vector (CLS by
default, mean as an option); a decoder whose cross-attention sees only that vector reconstructs the
original sentence; encoder and decoder weights are tied; only the encoder is kept.

The loss is sentence-transformers' ``DenoisingAutoEncoderLoss`` (decoder = ``AutoModelForCausalLM`` of
the same checkpoint with cross-attention added, its weights tied to the encoder's, cross-entropy of the
original tokens), used as is. What we write around it is what ``defsent train`` already has: the seeded
batches, the loop with progress and a JSONL log, the resumable safetensors state (the decoder's own
weights, e.g. its cross-attention, travel in it), and the checkpoint folder.

The noise is ``sentences.damage`` (see there: NLTK's tokenizer would need a run-time download), drawn
from (seed, step), so a resumed run damages the same sentences the same way.

TSDAE + Noise Matching (Reiml 2023, Table 6.10; ``--nm-weight λ``): on the same batch, the loss adds λ times
Noise Matching's InfoNCE (``contrastive.py``, ``loss.info_nce``, temperature ``--temperature``): the
damaged sentence's vector, the very one the decoder reads (taken from TSDAE's own encoder pass by a forward
hook, so there is no second pass), is the key that learns; the original's vector, from a pass without
gradient (the stop-gradient), its positive; the other damaged sentences of the batch the negatives.

Defaults from the paper: AdamW, constant lr 3e-5, no warm-up, weight decay 0, batch 8, CLS pooling.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from ..encoder.pooling import get_pooling
from ..encoder.tokenize import pad_batch, pad_id, to_device, tokenize
from ..errors import DefsentError, count
from .config import DELETION, TEMPERATURE, TSDAE_POOLINGS, TrainConfig
from .loss import info_nce
from .sentences import check_negatives, damage, sample_sentences, sentence_data
from .trainer import Trainer


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
        self,
        sentences: Path,
        base_model: Path,
        config: TrainConfig,
        deletion: float = DELETION,
        split: str = "train",
        nm_weight: float = 0.0,
        temperature: float = TEMPERATURE,
    ):
        from sentence_transformers.sentence_transformer.losses import DenoisingAutoEncoderLoss

        from .. import distributed
        from ..encoder.models import load_model

        self.config = config.validate()
        if config.pooling not in TSDAE_POOLINGS:
            raise DefsentError(f"tsdae pools with cls or mean, not {config.pooling!r}")
        if not 0 <= deletion < 1:
            raise DefsentError(f"--deletion must be in [0, 1), got {deletion}")
        if not (math.isfinite(nm_weight) and nm_weight >= 0):
            raise DefsentError(f"--nm-weight must be a finite number >= 0, got {nm_weight}")
        if not (math.isfinite(temperature) and temperature > 0):
            raise DefsentError(f"--temperature must be a finite number > 0, got {temperature}")
        self.deletion, self.split, self.nm_weight, self.temperature = deletion, split, nm_weight, temperature
        self.dictionary, self.base_model, self.bank_path = Path(sentences), Path(base_model), None
        texts = sample_sentences(self.dictionary, split, config)
        if nm_weight:  # TSDAE alone reconstructs each sentence by itself; its NM term needs in-batch negatives
            check_negatives(texts, config.batch_size, "--nm-weight's Noise Matching", sentences)
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
        self.data = sentence_data(texts, self.loaded.tokenizer, self.pool, self.max_length)
        self.encoded: list[torch.Tensor] = []  # --nm-weight: the damaged sentences' vectors of TSDAE's pass
        if nm_weight:
            self.encoder.register_forward_hook(lambda module, args, out: self.encoded.append(out["sentence_embedding"]))
        self.head, self.word_head, self.mlm = None, None, None  # Trainer's DefSent+ parts: none here
        params = [p for p in self.loss_model.parameters() if p.requires_grad]
        self._start(
            torch.optim.AdamW(params, lr=config.lr, eps=config.adam_eps, weight_decay=config.weight_decay, fused=True)
        )

    def describe(self) -> str:
        config = self.config
        return (
            f"tsdae{f' + {self.nm_weight:g} x Noise Matching' if self.nm_weight else ''}: {self.base_model} on "
            f"{count(len(self.data), 'sentence')} ({config.pooling} pooling, {self.deletion:.0%} of words deleted, "
            f"lr {config.lr:g} constant, batch {config.batch_size}, {count(self.total_steps, 'step')}, seed {config.seed}"
        )

    def checkpoint_files(self, work_dir: Path) -> dict[str, Path]:
        return {"train_log.jsonl": work_dir / "log.jsonl"}

    def clipped(self):
        return self.loss_model.parameters()

    def _decoder_only(self) -> dict[str, torch.Tensor]:
        """The decoder's weights that are not the encoder's (cross-attention, LM head): saved in the state."""
        shared = {p.data_ptr() for p in self.model.parameters()}
        return {k: v for k, v in self.loss_model.decoder.state_dict().items() if v.data_ptr() not in shared}

    data_argument = "SENTENCES"

    def settings(self) -> dict:
        """What this run adds to :class:`TrainConfig` (recorded, and required equal on --resume)."""
        nm = {"nm_weight": self.nm_weight, "temperature": self.temperature} if self.nm_weight else {}
        return {"deletion": self.deletion, "split": self.split, **nm}

    def extra_state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        return self.settings(), {f"decoder.{k}": v for k, v in self._decoder_only().items()}

    def restore_extra_state(self, extra: dict, tensors: dict[str, torch.Tensor]) -> None:
        # the settings were compared with the saved run's before (state.check_resume)
        decoder = {k.removeprefix("decoder."): v for k, v in tensors.items() if k.startswith("decoder.")}
        self.loss_model.decoder.load_state_dict(decoder, strict=False)

    def train_mode(self) -> None:
        self.loss_model.train()

    def loss_on(self, index: np.ndarray) -> torch.Tensor:
        """Delete words (seeded by seed and step), encode the damaged sentences, reconstruct the originals
        (+ λ · Noise Matching of the damaged sentences' vectors onto their originals')."""
        damaged = damage([self.data.texts[i] for i in index], self.deletion, self.config.seed, self.step)
        tokenizer = self.loaded.tokenizer
        padding = pad_id(tokenizer)
        source = pad_batch(tokenize(damaged, tokenizer, self.pool, self.max_length), padding)
        target = pad_batch([self.data.token_ids[i] for i in index], padding)
        features = [  # pinned, non-blocking copies (tokenize.to_device): the host does not wait for the GPU here
            {"input_ids": to_device(ids, self.device), "attention_mask": to_device(mask, self.device)}
            for ids, mask in (source, target)
        ]
        self.encoded.clear()
        loss = self.loss_model(features, None)
        if not self.nm_weight:
            return loss
        (keys,) = self.encoded  # the damaged sentences' vectors, as the decoder read them (with gradient)
        with torch.no_grad():  # the stop-gradient side: the originals, dropout on as in training
            queries = self.encoder(dict(features[1]))["sentence_embedding"]
        self.encoded.clear()
        return loss + self.nm_weight * info_nce(queries, keys, scale=1.0 / self.temperature)

    def info(self) -> dict:
        return {
            **self.run_info(),
            "kind": "tsdae",
            "pooling": self.config.pooling,
            "train_pooling": self.config.pooling,
            "sentences": str(self.dictionary.resolve()),
            "training_sentences": len(self.data),
            **self.settings(),
            "split": self.split if self.dictionary.suffix.lower() == ".jsonl" else None,
            "kept_step": self.step,
        }
