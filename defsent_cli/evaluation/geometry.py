"""The geometry of a sentence embedding space (``defsent inspect --model``): every isotropy figure of
:mod:`defsent_cli.space.isotropy` (IsoScore included) on the embeddings of a corpus, and alignment and
uniformity (Wang & Isola 2020) on STS-B.

- corpus: by default the WikiText-2 test sentences (``wikitext-2/wiki.test.raw`` beside ``senteval/``):
  non-blank lines that are not ``= heading =`` lines, split after a `` . ``, `` ! `` or `` ? `` token
  (the file is tokenised), kept when at least 10 characters long (9,292 sentences); or any text file,
  one sentence per line.
- alignment: STS-B train pairs scored 5.0; uniformity: all distinct sentences of STS-B train (t = 2).
  Both on L2-normalised vectors (their definition is on the unit sphere; ``normalized`` says so), as
  SimCSE computes them (SimCSE takes pairs scored above 4; the issue asks for 5.0).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..formats.plain import plain_check
from ..formats.results import number, results_header
from ..io import iter_lines, read_texts
from ..space.isotropy import alignment, space_figures, uniformity
from .common import as_encoder, encode_unique, find_data_folder, resolve_data_root
from .sts_data import load_stsb

MIN_CHARS = 10
ALIGNMENT_SCORE = 5.0
_SENTENCE_END = re.compile(r"(?<= [.!?]) (?=\S)")


def wikitext_sentences(path: Path, min_chars: int = MIN_CHARS) -> list[str]:
    """Sentences of a WikiText raw file (see the module docstring), in file order."""
    sentences = []
    for _, line in iter_lines(path, "utf-8-sig"):
        text = line.strip()
        if not text or (text.startswith("=") and text.endswith("=")):
            continue
        sentences.extend(s.strip() for s in _SENTENCE_END.split(text) if len(s.strip()) >= min_chars)
    if not sentences:
        raise DefsentError(f"no sentences of at least {min_chars} characters", path=path)
    return sentences


def load_corpus(
    data: str | Path | None, corpus: Path | None = None, limit: int | None = None, seed: int = 0
) -> tuple[list[str], str]:
    """The sentences to describe and where they came from: ``corpus`` (one per line, blank lines skipped)
    or the WikiText-2 test sentences; ``limit`` keeps a seeded random sample."""
    if corpus is not None:
        check = plain_check("; --corpus takes one sentence per line")
        sentences = [
            line.strip() for line in read_texts([corpus], skip_blank=True, check_first=check, encoding="utf-8-sig")
        ]
        if len(sentences) < 2:
            raise DefsentError("the corpus needs at least 2 non-blank lines", path=corpus)
        source = str(corpus)
    else:
        path = find_data_folder(data, "wikitext-2", "the WikiText-2 corpus") / "wiki.test.raw"
        if not path.exists():
            raise DefsentError("wiki.test.raw not found; pass --corpus FILE or fix --data", path=path.parent)
        sentences = wikitext_sentences(path)
        source = f"{path} (sentences of >= {MIN_CHARS} characters)"
    if limit is not None and limit < len(sentences):
        keep = np.sort(np.random.default_rng(seed).choice(len(sentences), size=limit, replace=False))
        sentences = [sentences[i] for i in keep]
    return sentences, source


def load_stsb_pairs(data: str | Path | None) -> tuple[list[str], list[str], list[str], str]:
    """STS-B train: the two sides of the pairs scored 5.0, every distinct sentence, the file."""
    task = load_stsb(resolve_data_root(data), "train")
    (subset,) = task.subsets
    top = subset.gold >= ALIGNMENT_SCORE
    if not top.any():
        raise DefsentError(f"STS-B train has no pair scored {ALIGNMENT_SCORE:g}", path=subset.source)
    a = [s for s, keep in zip(subset.sent1, top, strict=True) if keep]
    b = [s for s, keep in zip(subset.sent2, top, strict=True) if keep]
    return a, b, list(dict.fromkeys([*subset.sent1, *subset.sent2])), str(subset.source)


@dataclass
class GeometryData:
    """What :func:`sentence_geometry` encodes, loaded once for every model."""

    sentences: list[str]
    source: str
    limit: int | None = None
    stsb: tuple[list[str], list[str], list[str], str] | None = None

    @classmethod
    def load(
        cls,
        data: str | Path | None,
        corpus: Path | None = None,
        limit: int | None = None,
        seed: int = 0,
        stsb: bool = True,
    ) -> GeometryData:
        """The corpus (:func:`load_corpus`) and, unless ``stsb`` is False, the STS-B train pairs."""
        sentences, source = load_corpus(data, corpus, limit, seed)
        return cls(sentences, source, limit, load_stsb_pairs(data) if stsb else None)


def sentence_geometry(
    model: object, inputs: GeometryData, pairs: int = 100_000, seed: int = 0, pooling=None, post=None, **settings
) -> dict:
    """Isotropy figures (IsoScore included) of an encoder's corpus embeddings, and alignment / uniformity
    on STS-B train when ``inputs`` has it: one report, JSON-ready."""
    encoder = as_encoder(model, pooling, post, **settings)
    sentences, source, limit, stsb_data = inputs.sentences, inputs.source, inputs.limit, inputs.stsb
    started = time.perf_counter()
    vectors = encode_unique(encoder, sentences, f"corpus ({len(set(sentences)):,} sentences)")
    figures = space_figures(vectors, pairs=pairs, seed=seed)
    report = {
        **results_header("geometry", encoder.name, encoder.label, None, **encoder.describe()),
        "path": encoder.name,
        "describe": f"{encoder.name} ({encoder.label}) on {len(sentences):,} corpus sentences",
        "corpus": source,
        "limit": limit,
        **{k: (None if isinstance(v, float) and v != v else v) for k, v in figures.items()},
    }
    if stsb_data is not None:
        a, b, everything, path = stsb_data
        # one call, so a "target" post-processing is fitted on all of STS-B train, not on the pairs alone
        vu = encode_unique(encoder, everything, f"STS-B train ({len(everything):,} sentences)")
        row = {text: i for i, text in enumerate(everything)}
        va, vb = vu[[row[t] for t in a]], vu[[row[t] for t in b]]
        report.update(
            {
                "alignment": number(alignment(va, vb), 6),
                "uniformity": number(uniformity(vu), 6),
                "alignment_pairs": len(a),
                "uniformity_sentences": len(everything),
                "normalized": True,
                "geometry_data": path,
                "geometry_meaning": "alignment = mean ||u - v||^2 over STS-B train pairs scored 5.0; uniformity = "
                "log mean exp(-2 ||u - v||^2) over all pairs of distinct STS-B train sentences; both on "
                "L2-normalised vectors (Wang & Isola 2020); lower is better for both",
            }
        )
    report["seconds"] = round(time.perf_counter() - started, 2)
    return report
