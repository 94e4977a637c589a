"""How texts become vectors, resolved once per command.

:class:`EncodeSpec` holds what the user asked for (the pooling and the training-free toolbox:
layers, template, Ditto head, token weights, post-processing), as names and paths, and checks the
combination before anything slow runs. :meth:`EncodeSpec.resolve` turns it, for one loaded model,
into an :class:`Encoder`: the pooling fitted to the model (layer indices, eager attention for
Ditto, idf on ``--idf-corpus``) and the post-processing chain (loaded from ``--post-file``, fitted
on ``--fit-on``, or left unfitted, which means the published "target" setting: fitted on the very
texts of each call, so per evaluation task). Everything downstream takes the Encoder.

Normalisation, like the pooling, defaults to what the model folder says: a sentence-transformers folder
whose ``modules.json`` ends in ``Normalize`` (all-MiniLM-L6-v2) gives unit vectors, as
sentence-transformers does; ``normalize=True/False`` (``--normalize/--no-normalize``) overrides it
(:attr:`Encoder.normalized`, the one rule). It comes after the post-processing, which is fitted on and
applied to the vectors before normalisation. ``--dims N`` (:meth:`Encoder.cut_to`) comes last: the leading N
dimensions, re-normalised where the vectors are normalised (``space/dims.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ..errors import DefsentError
from ..formats.plain import plain_check
from ..io import check_input, read_texts
from ..log import warn
from ..space.dims import check_dims, leading
from ..space.linalg import l2_normalize
from .encode import encode, encode_ids, idf_fitted, prepare_pooling
from .models import LoadedModel
from .pooling import Pooling, build_pooling
from .token_weights import build_weighting, parse_drop_groups


@dataclass(frozen=True)
class EncodeSpec:
    """Every option that changes how texts become vectors, as the user gave it."""

    pooling: str | None = None
    layers: str | None = None
    template: str | None = None
    ditto_head: str | None = None
    weighting: str | None = None
    idf_corpus: Path | None = None
    drop_tokens: str | None = None
    post: tuple[str, ...] = ()
    fit_on: Path | None = None
    post_file: Path | None = None
    normalize: bool | None = None  # None: the model folder's own (a sentence-transformers Normalize module)

    def __post_init__(self) -> None:
        steps = tuple(step.strip() for item in self.post or () for step in str(item).split(",") if step.strip())
        object.__setattr__(self, "post", steps)

    @property
    def toolbox(self) -> bool:
        """True when anything beyond the pooling name was asked for."""
        return any((self.layers, self.template, self.ditto_head, self.weighting, self.drop_tokens))

    def check(self) -> EncodeSpec:
        """Validate the combination without a model (a one-line DefsentError); returns self."""
        weighting = None
        if self.drop_tokens:
            parse_drop_groups(self.drop_tokens)
            weighting = SimpleNamespace(kind="drop", name="drop")  # a stand-in: only its kind is checked here
        elif self.weighting not in (None, "none"):
            weighting = build_weighting(None, self.weighting, None if self.idf_corpus is None else [], None)
        elif self.idf_corpus is not None:
            raise DefsentError("--idf-corpus needs --weighting idf")
        if self.weighting == "idf" and self.drop_tokens:
            raise DefsentError("--weighting idf and --drop-tokens are separate methods; use one")
        if self.pooling is not None:  # else the model's default pooling decides, checked once it is loaded
            build_pooling(self.pooling, self.layers, self.template, self.ditto_head, weighting)
        for path in (self.idf_corpus, self.fit_on, self.post_file):
            if path is not None:
                check_input(path)
        if self.post_file is not None and self.post:
            raise DefsentError("--post-file already holds a fitted --post chain; give one or the other")
        if self.fit_on is not None and not self.post:
            raise DefsentError("--fit-on needs --post (the steps to fit)")
        if self.weighting == "idf" and self.idf_corpus is None and (self.fit_on or self.post_file):
            raise DefsentError(
                "a post-processing fit and the evaluated texts must share one idf: give --idf-corpus with --fit-on "
                "or --post-file"
            )
        if self.post:
            from ..space.postprocess import parse_post

            parse_post(self.post)
        return self

    def resolve(
        self,
        loaded: LoadedModel,
        *,
        batch_size: int = 32,
        max_length: int | None = None,
        show_progress: bool | None = None,
    ) -> Encoder:
        """The Encoder for this model: pooling fitted to it, post-processing loaded or fitted."""
        loaded.token_limit(max_length)  # a --max-length the model cannot take fails before any work
        weighting = build_weighting(
            loaded.tokenizer,
            None if self.weighting == "none" else self.weighting,
            None if self.idf_corpus is None else [],
            self.drop_tokens,
        )
        pooling = build_pooling(
            self.pooling or loaded.default_pooling, self.layers, self.template, self.ditto_head, weighting
        )
        corpus = None
        if self.idf_corpus is not None:
            check = plain_check("; --idf-corpus takes one text per line")
            corpus = read_texts([self.idf_corpus], skip_blank=True, check_first=check)
        if corpus is not None and not corpus:
            raise DefsentError("--idf-corpus has no lines to count document frequencies on", path=self.idf_corpus)
        pooling = prepare_pooling(pooling, loaded, idf_corpus=corpus, max_length=max_length)
        if corpus is not None:
            pooling.weighting.corpus = str(self.idf_corpus)
        encoder = Encoder(loaded, pooling, None, batch_size, max_length, show_progress, self.normalize)
        encoder.post = self._post(encoder)
        return encoder

    def _post(self, encoder: Encoder):
        if self.post_file is None and not self.post:
            return None
        from ..space.postprocess import PostChain, parse_post

        if self.post_file is not None:
            chain = PostChain.load(self.post_file)
            fitted_with = chain.attrs.get("pooling")
            if fitted_with is not None and fitted_with != encoder.label:
                warn(f"{self.post_file} was fitted on {fitted_with} vectors; applying it to {encoder.label} vectors")
            fitted_model = chain.attrs.get("model")
            if fitted_model is not None and Path(str(fitted_model)).resolve() != Path(encoder.loaded.path).resolve():
                warn(f"{self.post_file} was fitted with the model {fitted_model}; applying it to {encoder.loaded.path}")
            chain.attrs["post_file"] = str(self.post_file)
            return chain
        chain = parse_post(self.post)
        if self.fit_on is not None:
            check = plain_check("; --fit-on takes one sentence per line")
            texts = read_texts([self.fit_on], skip_blank=True, check_first=check)
            if not texts:
                raise DefsentError("no sentences to fit the post-processing on", path=self.fit_on)
            plain = replace(encoder, post=None, normalize=False)  # the chain comes before normalisation
            chain.fit(plain(texts, f"fit set {Path(self.fit_on).name}"))
            chain.attrs["fit_on"] = str(self.fit_on)
        return chain


@dataclass
class Encoder:
    """A loaded model with its pooling and post-processing resolved: ``encoder(texts) -> (n, d) float32``."""

    loaded: LoadedModel
    pooling: Pooling
    post: object | None = None  # a space.postprocess.PostChain
    batch_size: int = 32
    max_length: int | None = None
    show_progress: bool | None = None
    normalize: bool | None = None  # None: the model folder's own (see :attr:`normalized`)
    dims: int | None = None  # the leading dims kept (``--dims``; :meth:`cut_to`); None: every one

    @classmethod
    def of(cls, loaded: LoadedModel, pooling: str | Pooling | None = None, **settings) -> Encoder:
        """An Encoder with a named (or the model's default) pooling and no post-processing."""
        return cls(loaded, prepare_pooling(pooling, loaded), **settings)

    @property
    def label(self) -> str:
        return self.pooling.label

    @property
    def name(self) -> str:
        return str(self.loaded.path)

    @property
    def normalized(self) -> bool:
        """Whether the vectors are L2-normalised: as asked, else as the model folder says (a
        sentence-transformers folder's Normalize module; LoadedModel.normalize)."""
        return self.loaded.normalize if self.normalize is None else self.normalize

    def cut_to(self, dims: int | None) -> Encoder:
        """Keep the leading ``dims`` dimensions of every vector (``--dims``; None: all), checked against the model's
        width; returns self."""
        self.dims = check_dims(dims, self.loaded.dim, model=self.loaded.path)
        return self

    @property
    def width(self) -> int:
        """The width of the vectors it gives: ``--dims``, else the model's."""
        return self.dims or self.loaded.dim

    def normalization(self) -> dict:
        """Whether the vectors are normalised and why, for results JSON and output attributes."""
        if self.normalize is not None:
            by = "--normalize" if self.normalize else "--no-normalize"
        elif self.loaded.normalize:
            by = "the model folder's Normalize module"
        else:
            by = "the model folder has no Normalize module"
        return {"normalized": self.normalized, "by": by}

    def __call__(self, texts: Sequence[str], description: str = "encoding", shard: bool = False) -> np.ndarray | None:
        """Encode, apply the post-processing (fitted on these texts when it is not fitted), normalise
        (:attr:`normalized`), keep the leading :attr:`dims` (re-normalised where the vectors are normalised:
        ``space/dims.leading``, the one cut of every path).

        ``shard``: under torchrun the processes share the work; rank 0 gets the matrix, others None.
        """
        vectors = encode(
            list(texts),
            self.loaded,
            pooling=self.pooling,
            batch_size=self.batch_size,
            max_length=self.max_length,
            show_progress_bar=self.show_progress,
            description=description,
            shard=shard,
        )
        return None if vectors is None else self.finish(vectors)

    def encode_ids(self, id_lists: Sequence[Sequence[int]]) -> np.ndarray:
        """The vectors of texts tokenised already, as :func:`~.tokenize.tokenize` tokenises them for this encoder
        (its pooling, its token limit ``loaded.token_limit(max_length)``): the rows ``encoder(texts)`` gives. A
        server tokenises each request once, to count and check its tokens, and hands the ids on."""
        if not id_lists:
            return np.zeros((0, self.width), dtype=np.float32)
        pooling = idf_fitted(self.pooling, id_lists, self.loaded)
        return self.finish(encode_ids(self.loaded, id_lists, pooling, self.batch_size, spread=True))

    def finish(self, vectors: np.ndarray) -> np.ndarray:
        """The pooled rows post-processed, normalised (:attr:`normalized`) and cut (:attr:`dims`)."""
        vectors = apply_post(self.post, vectors)
        return leading(l2_normalize(vectors) if self.normalized else vectors, self.dims, self.normalized)

    def describe(self) -> dict:
        """Every setting that changes the vectors, for results JSON and output attributes."""
        from .onnx_runtime import describe

        info = {"pooling_settings": self.pooling.describe(), "runtime": describe(self.loaded)}
        if self.post:
            info["post"] = post_settings(self.post)
        info["normalization"] = self.normalization()
        if self.dims is not None:
            info["dims"] = self.dims
        return info


def apply_post(chain, vectors: np.ndarray) -> np.ndarray:
    """Transform with a fitted chain, or fit on ``vectors`` themselves first (the "target" setting)."""
    if chain is None or not chain:
        return vectors
    if chain.fitted:
        return chain.transform(vectors)
    from ..space.postprocess import parse_post

    return parse_post(chain.spec()).fit_transform(vectors)


def post_settings(chain) -> dict | None:
    """What a results JSON records about post-processing, including where it was fitted."""
    if chain is None or not chain:
        return None
    info = chain.describe() if chain.fitted else {"post": chain.spec()}
    if not chain.fitted:
        info["fit"] = "target (the evaluated texts of each task)"
    else:
        info["fit"] = str(chain.attrs.get("fit_on", "unknown corpus"))
        if "post_file" in chain.attrs:
            info["post_file"] = chain.attrs["post_file"]
    return info
