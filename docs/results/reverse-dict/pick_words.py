"""The words of the human-style reverse-dictionary test (docs/results/reverse-dict/README.md).

    python docs/results/reverse-dict/pick_words.py DICT [WORDNET_DIR] > words.txt

DICT is the WordNet dictionary of the project's results (`defsent build-dict --wordnet $DEFSENT_DATA/wordnet
--split 0.9,0.05,0.05 --seed 42`); WORDNET_DIR (default: $DEFSENT_DATA/wordnet) is the WordNet 3.0 database it
was built from, read only for its SemCor tag counts (cntlist.rev). Prints one line per chosen word,
`word<TAB>pos`, pos being the part of speech the word is most often tagged with in SemCor (the quota it fills);
no definition is read or printed.

The procedure, all of it here:

1. the entries of DICT whose split is `test`, that are one word of 4 or more lowercase ASCII letters (no
   capitals: no proper names; no spaces, hyphens or digits);
2. that occur at least once in SemCor (the sum over the word's senses of cntlist.rev's tag counts is >= 1):
   the stand-in for "a word an ordinary English speaker knows" that needs no data beyond WordNet's own;
3. shuffled (sorted first) with random.Random(79);
4. taken in that order while their part of speech's QUOTA is not full, except the words in EXCLUDED below:
   those that an assistant session, going down the seeded list, judged still too rare for an ordinary
   speaker, or could not describe without the word's own stem (the reason is given for each); leaving one
   out takes the next word of the same part of speech in the seeded order.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
from collections import Counter
from pathlib import Path

SEED = 79
QUOTA = {"noun": 111, "adj": 70, "verb": 19, "adv": 20}  # 220 words; the test split holds few tagged verbs
POS_OF_SS_TYPE = {"1": "noun", "2": "verb", "3": "adj", "4": "adv", "5": "adj"}  # 5: adjective satellite
ORDER = ("noun", "verb", "adj", "adv")  # ties between parts of speech go to the first
WORD = re.compile(r"[a-z]{4,}")

# word -> why it was left out (step 3). Filled while writing the descriptions, in the seeded order.
EXCLUDED: dict[str, str] = {
    "knowledge": "its WordNet gloss was seen (reading the dictionary file's first lines) before a description was written",
    "chlorothiazide": "too rare or technical for an ordinary speaker",
    "lexicostatistic": "too rare or technical for an ordinary speaker",
    "noradrenaline": "too rare or technical for an ordinary speaker",
    "rectifier": "too rare or technical for an ordinary speaker",
    "fibrin": "too rare or technical for an ordinary speaker",
    "lobscuse": "too rare or technical for an ordinary speaker",
    "viscoelastic": "too rare or technical for an ordinary speaker",
    "polyphosphate": "too rare or technical for an ordinary speaker",
    "hydrous": "too rare or technical for an ordinary speaker",
    "perchlorate": "too rare or technical for an ordinary speaker",
    "anticoagulation": "too rare or technical for an ordinary speaker",
    "demineralization": "too rare or technical for an ordinary speaker",
    "hermeneutics": "too rare or technical for an ordinary speaker",
    "lobular": "too rare or technical for an ordinary speaker",
    "supernatant": "too rare or technical for an ordinary speaker",
    "transpirate": "too rare or technical for an ordinary speaker",
    "glycerolize": "too rare or technical for an ordinary speaker",
    "unselfconsciousness": "a rare formation: understood from its parts, seldom used",
    "uncombable": "a rare formation: understood from its parts, seldom used",
    "resift": "a rare formation: understood from its parts, seldom used",
    "unnourished": "a rare formation: understood from its parts, seldom used",
    "tensionless": "a rare formation: understood from its parts, seldom used",
    "unthematic": "a rare formation: understood from its parts, seldom used",
    "unlash": "a rare formation: understood from its parts, seldom used",
    "beadle": "archaic or regional, unknown to most speakers",
    "carven": "archaic or regional, unknown to most speakers",
    "areaway": "archaic or regional, unknown to most speakers",
    "landrover": "a brand name",
    "nearest": 'the description written ("the closest one") is an adjective\'s; WordNet has the word only as an adverb',
}


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def test_words(dictionary: Path) -> list[str]:
    """Step 1: the test split's one-word, lowercase, 4+ letter entries."""
    words = []
    try:
        with dictionary.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    entry, split = record["entry"], record.get("split", "train")
                except (ValueError, KeyError, TypeError):
                    fail(f"{dictionary}:{number}: not a dictionary entry (docs/formats.md#dictionary)")
                if split == "test" and WORD.fullmatch(entry):
                    words.append(entry)
    except OSError as exc:
        fail(f"cannot read {dictionary}: {exc.strerror}")
    except UnicodeDecodeError:
        fail(f"{dictionary} is not UTF-8 text")
    return words


def semcor_counts(wordnet: Path) -> Counter:
    """(lemma, pos) -> SemCor tag count summed over the lemma's senses of that part of speech (cntlist.rev:
    `sense_key sense_number tag_count`, the sense key `lemma%ss_type:...`)."""
    path = wordnet / "cntlist.rev"
    counts: Counter = Counter()
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                fields = line.split()
                if len(fields) != 3 or "%" not in fields[0] or not fields[2].isdigit():
                    fail(f"{path}:{number}: not a cntlist.rev line (sense_key sense_number tag_count)")
                lemma, rest = fields[0].split("%", 1)
                pos = POS_OF_SS_TYPE.get(rest[:1])
                if pos is None:
                    fail(f"{path}:{number}: unknown synset type {rest[:1]!r}")
                counts[(lemma, pos)] += int(fields[2])
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror} (WORDNET_DIR is WordNet 3.0's dict/ folder)")
    return counts


def pick(words: list[str], counts: Counter) -> list[tuple[str, str]]:
    """Steps 2-4: the chosen (word, pos) in the seeded order."""
    pool = []
    for word in sorted(set(words)):
        tags = {pos: counts[(word, pos)] for pos in ORDER}
        if sum(tags.values()) >= 1:
            pool.append((word, max(ORDER, key=lambda pos: tags[pos])))  # max keeps the first of equals
    random.Random(SEED).shuffle(pool)  # before step 3: leaving a word out does not reorder the others
    taken: Counter = Counter()
    chosen = []
    for word, pos in pool:
        if word not in EXCLUDED and taken[pos] < QUOTA[pos]:
            taken[pos] += 1
            chosen.append((word, pos))
    short = {pos: QUOTA[pos] - taken[pos] for pos in QUOTA if taken[pos] < QUOTA[pos]}
    if short:
        print(f"note: the pool ran out before the quota: {short} short", file=sys.stderr)
    return chosen


def main(argv: list[str]) -> None:
    if len(argv) not in (1, 2):
        fail("usage: pick_words.py DICT [WORDNET_DIR] (WORDNET_DIR default: $DEFSENT_DATA/wordnet)")
    if len(argv) == 2:
        wordnet = Path(argv[1])
    elif os.environ.get("DEFSENT_DATA"):
        wordnet = Path(os.environ["DEFSENT_DATA"]) / "wordnet"
    else:
        fail("name WordNet's folder: pick_words.py DICT WORDNET_DIR, or set DEFSENT_DATA")
    chosen = pick(test_words(Path(argv[0])), semcor_counts(wordnet))
    sys.stdout.write("".join(f"{word}\t{pos}\n" for word, pos in chosen))


if __name__ == "__main__":
    main(sys.argv[1:])
