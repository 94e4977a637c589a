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
Noise Matching's InfoNCE (``noise_matching.NoiseMatching.loss``, temperature ``--temperature``): the
damaged sentence's vector, the very one the decoder reads (taken from TSDAE's own encoder pass by a forward
hook, so there is no second pass), is the key that learns; the original's vector, from a pass without
gradient (the stop-gradient), its positive; the other damaged sentences of the batch the negatives. It is
TSDAE's own term, not the generic ``--nm-weight`` of the other objectives (``forward.py``), because it shares
TSDAE's pass and its damaged sentences (its options keep their names: ``--temperature``, ``--deletion``).

Defaults from the paper: AdamW, constant lr 3e-5, no warm-up, weight decay 0, batch 8, CLS pooling.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..encoder.tokenize import pad_batch, pad_id, to_device, tokenize
from ..errors import DefsentError, count
from .config import TrainConfig
from .loop import ObjectiveRun
from .noise_matching import NoiseMatching
from .objective import Objective, register
from .sentences import check_negatives, damage, sample_sentences, sentence_data
from .specs import TSDAE

_OWN = TSDAE.settings  # its settings' defaults: the spec's (the command's options read them there too)


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


@register
class Tsdae(Objective):
    """The denoising auto-encoder: sentence-transformers' loss, its decoder trained beside the encoder."""

    spec = TSDAE
    unit = "sentences"
    one_process = True

    def __init__(
        self,
        deletion: float = _OWN["deletion"],
        split: str = _OWN["split"],
        nm_weight: float = _OWN["nm_weight"],
        temperature: float = _OWN["temperature"],
    ):
        self.deletion, self.split, self.nm_weight, self.temperature = deletion, split, nm_weight, temperature
        self.nm_term = NoiseMatching(nm_weight, temperature, deletion) if nm_weight else None  # its InfoNCE

    def card(self) -> tuple[str, str]:
        return (
            "TSDAE fine-tune",
            "TSDAE pre-training (Wang et al. 2021): the encoder learns to pool a sentence with 60% of its words deleted "
            "into one vector from which a decoder rebuilds the sentence.",
        )

    def settings(self) -> dict:
        nm = {"nm_weight": self.nm_weight, "temperature": self.temperature} if self.nm_weight else {}
        return {"deletion": self.deletion, "split": self.split, **nm}

    def check(self, config: TrainConfig) -> None:
        super().check(config)
        if config.pooling not in self.spec.poolings:
            raise DefsentError(f"tsdae pools with cls or mean, not {config.pooling!r}")

    def read(self, path: Path, config: TrainConfig) -> list[str]:
        texts = sample_sentences(path, self.split, config)
        if self.nm_weight:  # TSDAE alone reconstructs each sentence by itself; its NM term needs in-batch negatives
            check_negatives(texts, config.batch_size, "--nm-weight's Noise Matching", path)
        return texts

    def setup(self, run: ObjectiveRun, texts: list[str]) -> None:
        from sentence_transformers.sentence_transformer.losses import DenoisingAutoEncoderLoss

        # the folder is checked and the tokenizer / limits read as everywhere; sentence-transformers loads the model
        loaded = run.loaded
        self.encoder = sentence_transformer(loaded.transformer_dir or loaded.path, run.config.pooling, run.device)
        self.loss_model = DenoisingAutoEncoderLoss(self.encoder, tie_encoder_decoder=True).to(run.device)
        run.model = self.encoder[0].auto_model  # what the checkpoint keeps (its weights are tied to the decoder's)
        run.data = sentence_data(texts, loaded.tokenizer, run.pool, run.max_length)
        self.encoded: list[torch.Tensor] = []  # --nm-weight: the damaged sentences' vectors of TSDAE's pass
        if self.nm_weight:
            self.encoder.register_forward_hook(lambda module, args, out: self.encoded.append(out["sentence_embedding"]))
        if run.matryoshka is not None:  # the decoder reads the vector cut to the prefix's width (matryoshka.py)
            self.encoder.register_forward_hook(lambda module, args, out: self._cut(run, out))

    @staticmethod
    def _cut(run: ObjectiveRun, out: dict) -> None:
        """Under --matryoshka: the vector the decoder reads, its dimensions past the current prefix's zeroed (NM's
        hook, registered first, keeps the whole one)."""
        if run.prefix_cache is not None:
            out["sentence_embedding"] = run.prefix_cache.cut(out["sentence_embedding"])

    def modules(self) -> dict[str, torch.nn.Module]:
        return {"decoder": self.loss_model.decoder}

    def loss(self, run: ObjectiveRun, index: np.ndarray) -> torch.Tensor:
        """Delete words (seeded by seed and step), encode the damaged sentences, reconstruct the originals
        (+ λ · Noise Matching of the damaged sentences' vectors onto their originals')."""
        damaged = damage([run.data.texts[i] for i in index], self.deletion, run.config.seed, run.step)
        tokenizer = run.loaded.tokenizer
        padding = pad_id(tokenizer)
        source = pad_batch(tokenize(damaged, tokenizer, run.pool, run.max_length), padding)
        target = pad_batch([run.data.token_ids[i] for i in index], padding)
        features = [  # pinned, non-blocking copies (tokenize.to_device): the host does not wait for the GPU here
            {"input_ids": to_device(ids, run.device), "attention_mask": to_device(mask, run.device)}
            for ids, mask in (source, target)
        ]
        self.encoded.clear()
        loss = self.loss_model(features, None)
        if not self.nm_weight:
            return loss
        (keys,) = self.encoded  # the damaged sentences' vectors, as the decoder read them (with gradient)
        self.encoded.clear()
        cache = run.prefix_cache  # --matryoshka: the NM term once per step, at full width, beside the prefixes
        if cache is not None and cache.replaying:
            return loss
        with torch.no_grad():  # the stop-gradient side: the originals, dropout on as in training
            self.encoder(dict(features[1]))
        queries = self.encoded.pop()  # as NM's hook saw it: whole, before --matryoshka's cut
        self.encoded.clear()
        term = self.nm_term.loss(queries, keys)
        if cache is not None:
            cache.aux = term
            return loss
        return loss + term

    def describe(self, run: ObjectiveRun) -> str:
        config = run.config
        return (
            f"tsdae{f' + {self.nm_weight:g} x Noise Matching' if self.nm_weight else ''}: {run.base_model} on "
            f"{count(len(run.data), 'sentence')} ({config.pooling} pooling, {self.deletion:.0%} of words deleted, "
            f"lr {config.lr:g} constant, batch {config.batch_size}, {count(run.total_steps, 'step')}, seed {config.seed}"
        )

    def state_document(self) -> dict:
        return self.settings()  # the state keeps tsdae's settings as its extra document (as it always has)

    def record(self, run: ObjectiveRun) -> dict:
        return {
            "kind": "tsdae",
            "pooling": run.config.pooling,
            "train_pooling": run.config.pooling,
            "sentences": str(run.dictionary.resolve()),
            "training_sentences": len(run.data),
            **self.settings(),
            "split": self.split if run.dictionary.suffix.lower() == ".jsonl" else None,
            "kept_step": run.step,
        }
