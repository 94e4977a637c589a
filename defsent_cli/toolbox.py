"""The training-free toolbox as one set of options: pooling, layers, template, Ditto head, token
weights and post-processing, shared by ``encode``, ``eval-sts``, ``eval-senteval`` and ``fit-post``.

:class:`Toolbox` holds what the user asked for (strings and paths, checked before anything slow);
:meth:`Toolbox.pooling_for` makes the :class:`~defsent_cli.pooling.Pooling` for a loaded model and
:meth:`Toolbox.post_for` the post-processing chain: fitted on ``--fit-on FILE`` (encoded with the
same model and pooling), loaded from ``--post-file``, or left unfitted, which means the published
"target" setting: fitted on the very texts being encoded (per call, so per evaluation task).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from . import io
from .console import err_console
from .errors import DefsentError
from .pooling import Pooling, build_pooling
from .token_weights import build_weighting, parse_drop_groups


@dataclass
class Toolbox:
    """Every option that changes how texts become vectors, as the user gave it."""

    pooling: str | None = None
    layers: str | None = None
    template: str | None = None
    ditto_head: str | None = None
    weighting: str | None = None
    idf_corpus: Path | None = None
    drop_tokens: str | None = None
    post: list[str] = field(default_factory=list)
    fit_on: Path | None = None
    post_file: Path | None = None

    def check(self) -> None:
        """Validate the combination without a model (one-line DefsentError)."""
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
            if path is not None and not Path(path).is_file():
                raise DefsentError("file not found", path=path)
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
            from .postprocess import parse_post

            parse_post(self.post)

    def pooling_for(self, loaded, max_length: int | None = None) -> Pooling | None:
        """The pooling for this model (None: the model's own default, when nothing was asked)."""
        from .encoding import prepare_pooling

        if not any((self.pooling, self.layers, self.template, self.ditto_head, self.weighting, self.drop_tokens)):
            return None
        weighting = build_weighting(
            loaded.tokenizer,
            None if self.weighting == "none" else self.weighting,
            None if self.idf_corpus is None else [],
            self.drop_tokens,
        )
        pooling = build_pooling(
            self.pooling or loaded.default_pooling, self.layers, self.template, self.ditto_head, weighting
        )
        corpus = None if self.idf_corpus is None else io.read_texts([self.idf_corpus], skip_blank=True)
        pooling = prepare_pooling(pooling, loaded, idf_corpus=corpus, max_length=max_length)
        if corpus is not None:
            pooling.weighting.corpus = str(self.idf_corpus)
        return pooling

    def post_for(self, loaded, pooling, batch_size: int = 32, max_length: int | None = None, show_progress=None):
        """The post-processing chain: loaded, fitted on --fit-on, or unfitted (target); None without --post."""
        if self.post_file is None and not self.post:
            return None
        from .postprocess import PostChain, parse_post

        if self.post_file is not None:
            chain = PostChain.load(self.post_file)
            label = getattr(pooling, "label", None) or self.pooling or loaded.default_pooling
            fitted_with = chain.attrs.get("pooling")
            if fitted_with is not None and fitted_with != label:
                err_console.print(
                    f"[yellow]warning:[/yellow] {self.post_file} was fitted on {fitted_with} vectors; "
                    f"applying it to {label} vectors",
                    soft_wrap=True,
                )
            chain.attrs["post_file"] = str(self.post_file)
            return chain
        chain = parse_post(self.post)
        if self.fit_on is not None:
            from .encoding import encode

            texts = io.read_texts([self.fit_on], skip_blank=True)
            vectors = encode(
                texts,
                loaded,
                pooling=pooling,
                batch_size=batch_size,
                max_length=max_length,
                show_progress_bar=show_progress,
                description=f"fit set {Path(self.fit_on).name}",
            )
            chain.fit(vectors)
            chain.attrs["fit_on"] = str(self.fit_on)
        return chain


def apply_post(chain, vectors: np.ndarray) -> np.ndarray:
    """Transform with a fitted chain, or fit on ``vectors`` themselves first (the "target" setting)."""
    if chain is None or not chain:
        return vectors
    if chain.fitted:
        return chain.transform(vectors)
    from .postprocess import parse_post

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
