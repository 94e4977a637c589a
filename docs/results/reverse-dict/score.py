"""Score the reverse-dictionary test of this folder against a whole bank (docs/results/reverse-dict/README.md).

    python score.py queries descriptions.jsonl > q.txt                 # the descriptions, one a line
    python score.py queries descriptions.jsonl --glosses DICT > q.txt  # the same words' first gloss in DICT
    defsent lookup -m MODEL --bank BANK -k 1000 --json < q.txt > hits.jsonl
    python score.py score descriptions.jsonl hits.jsonl [--pos-from WORDNET_DIR] > scores.json

`eval-dict` scores only the definitions of the dictionary its bank was built from; these queries are not in it,
so their entries are ranked by `lookup --json` (one JSON line per query, in the queries' order) and scored here:
the rank of a query's word is 1 + the hits scoring higher than it (entries that share its definitions share its
bank row and score: they do not count against it, as in eval-dict; scores as `lookup` prints them, 4 decimals),
`> K` when it is not among the K hits.
top-1/10/100 are exact while K >= 100; MRR counts a word past K as 0 (it is short of the exact MRR by less
than 1/(K+1)); the median rank is exact while fewer than half the words are past K.

--pos-from WORDNET_DIR adds the same figures with a part-of-speech filter, emulated: the hits whose entry has no
sense of the query's `pos` in WordNet's index files are dropped before ranking (exact within the K hits: a word
ranked within K stays within K); with --gloss-pos (for the hits of `queries --glosses`) the part of speech is the
gloss's own, that of the WordNet synset it glosses (14 of the 220 first glosses are of another part of speech than
the word's description: "recapture", a verb in its description, is first glossed as a noun).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

INDEX = {"noun": "index.noun", "verb": "index.verb", "adj": "index.adj", "adv": "index.adv"}


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        fail(f"{path}:{number}: not a JSON object")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror}")
    return rows


def queries(args: argparse.Namespace) -> None:
    tests = read_jsonl(args.descriptions)
    if args.glosses is None:
        texts = [row["definitions"][0] for row in tests]
    else:
        first = {row["entry"]: row["definitions"][0] for row in read_jsonl(args.glosses)}
        missing = [row["entry"] for row in tests if row["entry"] not in first]
        if missing:
            fail(f"{args.glosses} has no entry {missing[0]!r} ({len(missing)} missing)")
        texts = [first[row["entry"]] for row in tests]
    for text in texts:
        if "\n" in text or not text.strip():
            fail(f"a query is blank or spans lines: {text!r}")
    sys.stdout.write("".join(text + "\n" for text in texts))


def wordnet_pos(folder: Path) -> dict[str, set[str]]:
    """lemma (spaces for WordNet's underscores, lowercased) -> its parts of speech in WordNet's index files."""
    parts: dict[str, set[str]] = {}
    for pos, name in INDEX.items():
        try:
            with (folder / name).open(encoding="utf-8") as lines:
                for line in lines:
                    if line and not line.startswith(" "):
                        parts.setdefault(line.split(" ", 1)[0].replace("_", " "), set()).add(pos)
        except OSError as exc:
            fail(f"cannot read {folder / name}: {exc.strerror} (WORDNET_DIR is WordNet 3.0's dict/ folder)")
    return parts


def gloss_pos(folder: Path, queries: list[tuple[str, str]]) -> list[str]:
    """The part of speech of each (word, gloss) query: that of the WordNet synset holding the word whose gloss
    (data.POS: `... | gloss; "examples"`) starts with the query's text."""
    glosses: dict[str, list[tuple[str, str]]] = {word: [] for word, _ in queries}
    for pos, name in INDEX.items():
        path = folder / name.replace("index.", "data.")
        try:
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    if line.startswith(" ") or " | " not in line:
                        continue
                    head, gloss = line.split(" | ", 1)
                    fields = head.split()
                    for i in range(int(fields[3], 16)):  # w_cnt, then word lex_id pairs
                        word = fields[4 + 2 * i].split("(")[0].replace("_", " ").lower()
                        if word in glosses:
                            glosses[word].append((pos, gloss.strip()))
        except (OSError, ValueError, IndexError) as exc:
            fail(f"cannot read {path}: {exc} (WORDNET_DIR is WordNet 3.0's dict/ folder)")
    found = []
    for word, text in queries:
        parts = [pos for pos, gloss in glosses[word.lower()] if gloss.startswith(text)]
        if not parts:
            fail(f"no WordNet synset of {word!r} has the gloss {text!r}: were the queries made with --glosses?")
        found.append(parts[0])
    return found


def metrics(ranks: list[int | None], k: int) -> dict:
    """top-1/10/100, MRR (a rank past k counts 0) and the median rank (None when over half are past k)."""
    n = len(ranks)
    found = sorted(r for r in ranks if r is not None)
    past = n - len(found)
    median = statistics.median(found + [k + 1] * past) if past < n / 2 else None
    return {
        "n": n,
        "top1": sum(r <= 1 for r in found) / n,
        "top10": sum(r <= 10 for r in found) / n,
        "top100": sum(r <= 100 for r in found) / n,
        "mrr": sum(1 / r for r in found) / n,
        "median_rank": median,
        "past_k": past,
    }


def rank_of(word: str, hits: list[tuple[str, float]]) -> int | None:
    """1 + the hits scoring higher than ``word`` (a tie, such as an entry sharing its definitions and so its bank
    row, does not count against it, as in eval-dict); None when ``word`` is not among the hits."""
    for entry, value in hits:
        if entry == word:
            return 1 + sum(other > value for _, other in hits)
    return None


def score(args: argparse.Namespace) -> None:
    tests, hits = read_jsonl(args.descriptions), read_jsonl(args.hits)
    if len(tests) != len(hits):
        fail(f"{args.hits} has {len(hits)} lines for the {len(tests)} queries of {args.descriptions}")
    ks = {len(row["results"]) for row in hits}
    if len(ks) != 1:
        fail(f"{args.hits}: the queries have different numbers of hits ({sorted(ks)}): one lookup -k K run")
    k = ks.pop()
    if args.gloss_pos and not args.pos_from:
        fail("--gloss-pos takes the part of speech from WordNet: give --pos-from WORDNET_DIR")
    pos_of = wordnet_pos(args.pos_from) if args.pos_from else None
    wanted = [test.get("pos") for test in tests]
    if args.gloss_pos:
        wanted = gloss_pos(args.pos_from, [(t["entry"], row["query"]) for t, row in zip(tests, hits, strict=True)])
    plain, filtered = [], []
    for test, row, pos in zip(tests, hits, wanted, strict=True):
        # a result may hold several words (lookup groups synonyms: same definitions, same score): each is a hit
        found = [(word, hit["score"]) for hit in row["results"] for word in hit.get("words") or [hit["entry"]]]
        plain.append(rank_of(test["entry"], found))
        if pos_of is not None:
            kept = [(e, s) for e, s in found if pos in pos_of.get(e.lower(), ())]
            filtered.append(rank_of(test["entry"], kept))
    out = {"k": k, "hits": args.hits.name, "tests": args.descriptions.name, "all": metrics(plain, k)}
    if pos_of is not None:
        out["pos_filter"] = metrics(filtered, k)
        out["pos_of_query"] = "the gloss's synset" if args.gloss_pos else "the description's pos"
    out["lookup_provenance"] = hits[0].get("provenance")  # the lookup run: its command, model weights, bank
    out["ranks"] = {t["entry"]: r for t, r in zip(tests, plain, strict=True)}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("queries", help="print the queries, one a line")
    make.add_argument("descriptions", type=Path)
    make.add_argument("--glosses", type=Path, help="a dictionary JSONL: its first gloss of each word instead")
    make.set_defaults(run=queries)
    rank = commands.add_parser("score", help="score lookup --json's hits")
    rank.add_argument("descriptions", type=Path)
    rank.add_argument("hits", type=Path)
    rank.add_argument("--pos-from", type=Path, metavar="WORDNET_DIR", help="add the part-of-speech filter's figures")
    rank.add_argument(
        "--gloss-pos",
        action="store_true",
        help="with --pos-from, for the hits of `queries --glosses`: filter on each gloss's own part of speech "
        "(its WordNet synset's) instead of the description's",
    )
    rank.set_defaults(run=score)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
