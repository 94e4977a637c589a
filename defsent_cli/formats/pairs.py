"""Sentence-pair files (docs/formats.md, "Sentence pairs"): what ``eval-sts --exclude-pairs`` reads, and the
scored pairs a supervised run learns from.

Three layouts, told apart by the first non-blank line:

- **TSV**: ``sentence1<TAB>sentence2`` or ``sentence1<TAB>sentence2<TAB>score`` (no header);
- **STS-B** as SentEval ships it (``sts-train.csv``): ``genre<TAB>file<TAB>year<TAB>id<TAB>score<TAB>s1<TAB>s2``
  (some rows carry more fields after s2, which are ignored);
- **SICK** (``SICK_train.txt``): a header line starting ``pair_ID``, then ``pair_ID<TAB>sentence_A<TAB>sentence_B
  <TAB>relatedness_score<TAB>...``.

Sentences are kept with their whitespace collapsed, as SentEval leaves them. Two pairs are "the same pair"
(:func:`pair_key`) when they hold the same two sentences in either order, case and spacing aside: STS-B was
assembled from STS 2012-2017, and this finds its pairs in the STS12-16 test files (1,002 of STS12's 3,108,
597 of STS13's 1,500, 1,861 of STS14's 3,750 in the SentEval copy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DefsentError, count

LAYOUTS = ("tsv", "stsb", "sick")


@dataclass
class Pairs:
    """The pairs of one file, in file order; ``scores`` None when the file has none (TSV of two fields)."""

    sent1: list[str]
    sent2: list[str]
    scores: list[float] | None
    layout: str
    source: Path
    lines: list[int] = field(default_factory=list, repr=False)  # the file line of each pair

    def __len__(self) -> int:
        return len(self.sent1)


def _clean(text: str) -> str:
    return " ".join(text.split())


def pair_key(sentence1: str, sentence2: str) -> tuple[str, str]:
    """The same two sentences, in either order, case and spacing aside."""
    a, b = ("".join(s.lower().split()) for s in (sentence1, sentence2))
    return (a, b) if a <= b else (b, a)


def _number(text: str, path: Path, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DefsentError(f"score {text.strip()!r} is not a number", path=path, line=line) from None
    if not math.isfinite(value):
        raise DefsentError(f"score {text.strip()!r} is not a finite number", path=path, line=line)
    return value


def _layout(first: str, path: Path) -> str:
    fields = first.split("\t")
    if fields[0] == "pair_ID":
        return "sick"
    if len(fields) >= 7:
        try:
            float(fields[4])
            return "stsb"
        except ValueError:
            pass
    return "tsv"


#: What :func:`looks_like` says of a line of a pairs file with scores (SICK, STS-B, scored TSV).
SCORED_PAIRS_FILES = (
    "a SICK pairs file",
    "an STS-B pairs file",
    "a scored pairs file (sentence1<TAB>sentence2<TAB>score)",
)


def looks_like(line: str) -> str | None:
    """What kind of file a (first) line says it is from, for the error of a file given in the wrong place: a SICK,
    STS-B or scored pairs file, a TSV of two columns, plain text; None for anything else (JSON, say)."""
    fields = line.split("\t")

    def numeric(text: str) -> bool:
        try:
            float(text)
        except ValueError:
            return False
        return True

    if fields[0] == "pair_ID":
        return SCORED_PAIRS_FILES[0]
    if len(fields) >= 7 and numeric(fields[4]):
        return SCORED_PAIRS_FILES[1]
    if len(fields) == 3 and numeric(fields[2]):
        return SCORED_PAIRS_FILES[2]
    if len(fields) == 2:
        return "a TSV of two columns (sentence pairs, or entry<TAB>definition lines)"
    if len(fields) == 1 and not line.lstrip().startswith(("{", "[")):
        return "plain text"
    return None


def read_pairs(path: str | Path) -> Pairs:
    """Every pair of a TSV, STS-B or SICK file (see the module docstring); one-line errors naming the line."""
    from ..io import check_input, iter_lines

    path = check_input(Path(path))
    rows = [(number, line) for number, line in iter_lines(path, "utf-8-sig") if line.strip()]
    if not rows:
        raise DefsentError("holds no sentence pairs", path=path)
    layout = _layout(rows[0][1], path)
    width = len(rows[0][1].split("\t"))  # TSV: 2 or 3 fields, the same on every line
    if layout == "tsv" and width not in (2, 3):
        number, first = rows[0]
        if first.lstrip().startswith("{"):
            holds = "a JSON object (a dictionary JSONL? its definitions are sentences, not pairs)"
        elif width == 1:
            holds = "one sentence and no TAB (a file of sentences? sample-pairs makes pairs from one)"
        else:
            holds = count(width, "TAB-separated field")
        raise DefsentError(
            f"not a sentence-pairs file: this line holds {holds}; expected sentence1<TAB>sentence2 or "
            "sentence1<TAB>sentence2<TAB>score on every line (or SentEval's STS-B / SICK files)",
            path=path,
            line=number,
        )
    sent1, sent2, scores, lines = [], [], [], []
    for number, line in rows[1:] if layout == "sick" else rows:
        fields = line.split("\t")
        if layout == "sick":
            if len(fields) < 4:
                raise DefsentError(
                    "expected pair_ID, sentence_A, sentence_B, relatedness_score", path=path, line=number
                )
            a, b, score = fields[1], fields[2], _number(fields[3], path, number)
        elif layout == "stsb":
            if len(fields) < 7:
                raise DefsentError("expected 7 TAB-separated fields (STS-B layout)", path=path, line=number)
            a, b, score = fields[5], fields[6], _number(fields[4], path, number)
        else:
            if len(fields) != width or width not in (2, 3):
                raise DefsentError(
                    "expected sentence1<TAB>sentence2 or sentence1<TAB>sentence2<TAB>score on every line "
                    f"(the first line has {count(width, 'field')}), got {count(len(fields), 'field')}",
                    path=path,
                    line=number,
                )
            a, b = fields[0], fields[1]
            score = _number(fields[2], path, number) if len(fields) == 3 else None
        if not a.strip() or not b.strip():
            raise DefsentError("a sentence of the pair is empty", path=path, line=number)
        sent1.append(_clean(a))
        sent2.append(_clean(b))
        lines.append(number)
        if score is not None:
            scores.append(score)
    if not sent1:
        raise DefsentError("holds no sentence pairs", path=path)
    return Pairs(sent1, sent2, scores if scores else None, layout, path, lines)


def read_scored_pairs(
    path: str | Path, max_score: float, command: str, arch: str | None = None, quiet: bool = False
) -> Pairs:
    """The pairs a supervised run learns from (``train-pairs``, ``teacher``), checked before anything slow loads:
    scores there, and in the range the loss reads once divided by ``max_score``: [-1, 1] for a cosine
    (train-pairs, a Cross-Bi-Encoder), [0, 1] for a Cross-Encoder's binary cross-entropy (``arch`` ce). Scores
    that use a small part of the scale (0-1 scores with --max-score 5) are warned about (unless ``quiet``: the
    command line checks the file before it imports torch, the trainer reads it again and warns)."""
    from ..log import warn

    found = read_pairs(path)
    if found.scores is None:
        raise DefsentError(f"has no scores: {command} learns from sentence1<TAB>sentence2<TAB>score", path=path)
    low, high = min(found.scores), max(found.scores)
    largest = max(abs(low), abs(high))
    if largest > max_score:
        raise DefsentError(
            f"scores run from {low:g} to {high:g}; --max-score {max_score:g} must be at least the largest magnitude "
            "(scores are divided by it; a Cross-Bi-Encoder's silver scores may be negative)",
            path=path,
        )
    if arch == "ce" and low < 0:
        raise DefsentError(
            f"scores run from {low:g} to {high:g}: a Cross-Encoder learns score / --max-score as a probability in "
            "[0, 1] (binary cross-entropy), which a negative score is not; shift the scores to 0 and up, or train "
            "a Cross-Bi-Encoder (--arch cbe), whose cosine takes [-1, 1]",
            path=path,
        )
    if 0 < largest * 4 <= max_score and not quiet:
        warn(
            f"{path}: the scores run from {low:g} to {high:g}, a small part of --max-score {max_score:g}: the model "
            f"learns targets up to {largest / max_score:.2g} only; pass --max-score {_round_up(largest):g} if that "
            "is the top of their scale"
        )
    return found


def _round_up(value: float) -> float:
    """The scale a file's largest score suggests: 1, 5, 10, 100 ... (the first of them not below it)."""
    for scale in (1, 5, 10, 100):
        if value <= scale:
            return scale
    return value


def pair_keys(paths: list[Path]) -> set[tuple[str, str]]:
    """The :func:`pair_key` of every pair of every file."""
    keys = set()
    for path in paths:
        pairs = read_pairs(path)
        keys.update(pair_key(a, b) for a, b in zip(pairs.sent1, pairs.sent2, strict=True))
    return keys
