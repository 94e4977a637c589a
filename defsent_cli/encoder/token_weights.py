"""Token weights for weighted poolings: idf weighting and dropped "bias" tokens.

A weighting turns a batch of token ids into a (B, T) weight matrix that multiplies the attention
mask inside the pooling (see :mod:`defsent_cli.pooling`):

- ``idf`` (Stankevičius & Lukoševičius 2024, Sec. 3.3): idf_t = log(N / df_t) over the lines of
  a corpus, each line one document, tokenised exactly as the inputs are (template and special
  tokens included, so tokens present in every line, like [CLS] and [SEP], get idf 0). The mean
  pooling then rescales the weights of each text to sum to 1: Σ_n w_n h_n. Our choices where the
  paper is silent: a token absent from the corpus counts as df = 1 (the rarest seen, idf = log N);
  a text whose weights are all 0 falls back to the plain mean. Without a corpus file the
  weights are fitted on the texts being encoded (the paper's idf^T, "target" setting).
- ``drop`` (``--drop-tokens biases``; PromptBERT, Jiang et al. 2022, via Stankevičius &
  Lukoševičius's "-biases"): weight 0 for the most frequent tokens (the package file
  ``data/promptbert_bias_tokens.txt``), punctuation tokens and subword continuation pieces
  (WordPiece ``##x``; SentencePiece / byte-level BPE pieces without the word-start marker, which
  for byte-level BPE also catches a text's first word: an approximation, exact for WordPiece). The
  vectors are left out at pooling time (the text is encoded whole); special tokens are kept.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources

import numpy as np
import torch

from ..errors import DefsentError
from .tokenize import on_device

DROP_GROUPS = ("frequent", "punctuation", "subword")
DROP_ALIASES = {"biases": DROP_GROUPS}
WORD_START_MARKERS = ("Ġ", "▁")


def bias_tokens() -> list[str]:
    """PromptBERT's most frequent bert-base-uncased tokens (the package's cited list)."""
    text = resources.files("defsent_cli").joinpath("data/promptbert_bias_tokens.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("# ")]


@dataclass
class IdfWeighting:
    """idf_t = log(N / df_t) from a corpus; ``df`` None means "fit on the encoded texts" (target)."""

    corpus: str = "target"
    df: np.ndarray | None = None
    n_docs: int = 0
    kind: str = "idf"
    name: str = "idf"
    _table: torch.Tensor | None = field(default=None, repr=False)

    @property
    def fitted(self) -> bool:
        return self.df is not None

    def fit(self, id_lists: Sequence[Sequence[int]], vocab_size: int) -> IdfWeighting:
        """Document frequencies over ``id_lists`` (one document each); returns a fitted copy."""
        if not id_lists:
            raise DefsentError("idf weighting needs at least one corpus line")
        df = np.zeros(vocab_size, dtype=np.int64)
        for ids in id_lists:
            df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
        return IdfWeighting(corpus=self.corpus, df=df, n_docs=len(id_lists))

    def table(self) -> torch.Tensor:
        """idf per token id (df 0 counted as 1)."""
        if self.df is None:
            raise DefsentError("idf weighting used before it was fitted")
        if self._table is None:
            self._table = torch.as_tensor(np.log(self.n_docs / np.maximum(self.df, 1)), dtype=torch.float32)
        return self._table

    def weights(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        table = self._table = on_device(self.table(), input_ids.device)
        ids = input_ids.clamp(max=len(table) - 1)
        w = table[ids] * attention_mask.to(table.dtype)
        empty = w.sum(dim=1, keepdim=True) <= 0
        return torch.where(empty, attention_mask.to(table.dtype), w)

    def describe(self) -> dict:
        documents = self.n_docs if self.fitted else "each call's distinct texts (per task in the evaluations)"
        return {"kind": "idf", "corpus": self.corpus, "documents": documents, "formula": "log(N/df), df>=1"}


@dataclass
class DropTokens:
    """Weight 0 for the token ids in ``dropped``; everything else 1."""

    dropped: frozenset[int]
    groups: tuple[str, ...]
    vocab_size: int
    kind: str = "drop"
    name: str = "drop"
    _table: torch.Tensor | None = field(default=None, repr=False)

    def weights(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if self._table is None:
            table = torch.ones(self.vocab_size, dtype=torch.float32)
            table[list(self.dropped)] = 0.0
            self._table = table
        table = self._table = on_device(self._table, input_ids.device)
        return table[input_ids.clamp(max=len(table) - 1)] * attention_mask.to(table.dtype)

    def describe(self) -> dict:
        return {"kind": "drop", "groups": list(self.groups), "tokens": len(self.dropped)}


def _is_punctuation(token: str) -> bool:
    core = token.lstrip("".join(WORD_START_MARKERS)).removeprefix("##")
    return bool(core) and all(ch in string.punctuation or unicodedata.category(ch).startswith("P") for ch in core)


def _is_subword(token: str, marked_vocab: bool) -> bool:
    if token.startswith("##"):
        return True
    return marked_vocab and not token.startswith(WORD_START_MARKERS)


def parse_drop_groups(spec: str) -> tuple[str, ...]:
    """``biases`` or a comma list of frequent, punctuation, subword."""
    if spec in DROP_ALIASES:
        return DROP_ALIASES[spec]
    groups = tuple(g.strip() for g in spec.split(",") if g.strip())
    unknown = [g for g in groups if g not in DROP_GROUPS]
    if unknown or not groups:
        raise DefsentError(f"--drop-tokens {spec!r}: use biases (= all) or a comma list of {', '.join(DROP_GROUPS)}")
    return groups


def drop_tokens_for(tokenizer, spec: str) -> DropTokens:
    """The ids of the chosen bias groups in this tokenizer's vocabulary (special tokens never dropped)."""
    groups = parse_drop_groups(spec)
    vocab: dict[str, int] = tokenizer.get_vocab()
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    marked = any(token.startswith(WORD_START_MARKERS) for token in list(vocab)[:5000])
    dropped: set[int] = set()
    if "frequent" in groups:
        for word in bias_tokens():
            for form in (word, f"Ġ{word}", f"▁{word}"):
                if form in vocab:
                    dropped.add(vocab[form])
    for token, index in vocab.items():
        if ("punctuation" in groups and _is_punctuation(token)) or ("subword" in groups and _is_subword(token, marked)):
            dropped.add(index)
    return DropTokens(frozenset(dropped - special), groups, max(len(tokenizer), max(vocab.values()) + 1))


def build_weighting(
    tokenizer, weighting: str | None = None, idf_corpus: Sequence[str] | None = None, drop: str | None = None
):
    """The weighting the options ask for (None when none); idf on a corpus is fitted by the caller."""
    if weighting not in (None, "none", "idf"):
        raise DefsentError(f"--weighting {weighting!r}: choose idf or none")
    if weighting == "idf" and drop:
        raise DefsentError("--weighting idf and --drop-tokens are separate methods; use one")
    if drop:
        return drop_tokens_for(tokenizer, drop)
    if weighting == "idf":
        return IdfWeighting(corpus="target" if idf_corpus is None else "file")
    if idf_corpus is not None:
        raise DefsentError("--idf-corpus needs --weighting idf")
    return None
