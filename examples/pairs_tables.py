"""The tables of docs/results.md section 9 from an examples/stsb_pairs.sh run: every row mean +- sd over seeds.

    python examples/pairs_tables.py OUT [--data DEFSENT_DATA]

Reads, under OUT: base/base-{clean,dev}.json; supervised/bi-S (checkpoint) and its -clean / -dev JSON (and
-sts, the all-pairs figures of a separate run, where there is one); supervised/{ce,cbe}-S-test.tsv (the
teachers' scores of STS-B test); semi/seed-S/<row> likewise (a row's size from its checkpoint's defsent.json
or the copy <row>-defsent.json kept beside its results) and semi/seed-S/{ce,cbe}-test.tsv (the gold teachers'
scores of STS-B test).
Prints Markdown. A teacher's agreement with the bi-encoder is the Spearman between its scores and the
bi-encoder's cosines on the STS-B test pairs, the bi-encoder of the same seed (encoded here with
sentence-transformers, once: the cosines are kept in supervised/bi-S-test.tsv, so the table can be made again
from the results without the checkpoints). The tables select nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from defsent_cli.formats.pairs import read_pairs

STS12_16 = ("STS12", "STS13", "STS14", "STS15", "STS16")


def load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def cell(values: list[float], digits: int = 2) -> str:
    """mean ± sd (one value: itself); whole numbers (digits 0) with thousands separators."""
    if not values:
        return "-"
    form = f",.{digits}f" if digits == 0 else f".{digits}f"
    if len(values) == 1:
        return format(values[0], form)
    return f"{format(statistics.fmean(values), form)} ± {format(statistics.stdev(values), form)}"


def student(out: Path, name: str) -> dict | None:
    """A bi-encoder's figures: STS-B test, the STS Avg. and the STS12-16 mean on all pairs and on the pairs its
    training file does not hold, the dev composite."""
    clean, dev = load(out / f"{name}-clean.json"), load(out / f"{name}-dev.json")
    if clean is None or dev is None:
        return None
    sts = load(out / f"{name}-sts.json") or clean["all_pairs"]  # a separate all-pairs run, or the same one's

    def mean12_16(result: dict) -> float | None:
        found = [result["tasks"][t]["spearman"] for t in STS12_16 if t in result["tasks"]]
        return statistics.fmean(found) if found else None

    return {
        "STS-B test": sts["tasks"]["STS-B"]["spearman"],
        "Avg. all": sts["average"]["spearman"],
        "Avg. clean": clean["average"]["spearman"],
        "STS12-16 all": mean12_16(sts),
        "STS12-16 clean": mean12_16(clean),
        "excluded": sum(task.get("excluded", 0) for task in clean["tasks"].values()),
        "dev": (dev["tasks"]["STS-B"]["spearman"] + dev["tasks"]["SICK-R"]["spearman"]) / 2,
    }


def read_scores(path: Path) -> np.ndarray:
    return np.asarray(read_pairs(path).scores, dtype=np.float64)


def cosines(model: Path, sent1: list[str], sent2: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(str(model), device="cpu")
    a = encoder.encode(sent1, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    b = encoder.encode(sent2, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    return (a * b).sum(axis=1).astype(np.float64)


def rho(a: np.ndarray, b: np.ndarray) -> float:
    return 100 * float(spearmanr(a, b).statistic)


def supervised(out: Path, test: Path, seeds: list[str]) -> None:
    gold = read_pairs(test)
    rows: dict[str, dict[str, list[float]]] = {}
    for seed in seeds:
        bi = student(out, f"supervised/bi-{seed}")
        if bi is None:
            continue
        rows.setdefault("bi-encoder", {}).setdefault("STS-B test", []).append(bi["STS-B test"])
        saved = out / f"supervised/bi-{seed}-test.tsv"  # the bi-encoder's cosines, kept beside its results
        if not saved.is_file():
            bi_scores = cosines(out / f"supervised/bi-{seed}", gold.sent1, gold.sent2)
            saved.write_text(
                "".join(f"{a}\t{b}\t{c:.6f}\n" for a, b, c in zip(gold.sent1, gold.sent2, bi_scores, strict=True)),
                encoding="utf-8",
            )
        bi_cos = read_scores(saved)
        for arch, label in (("ce", "CE"), ("cbe", "CBE")):
            path = out / f"supervised/{arch}-{seed}-test.tsv"
            if not path.is_file():
                continue
            scores = read_scores(path)
            row = rows.setdefault(label, {})
            row.setdefault("STS-B test", []).append(rho(scores, gold.scores))
            row.setdefault("agreement", []).append(rho(scores, bi_cos))
    print("| model | STS-B test | Spearman with the bi-encoder's cosines | seeds |")
    print("|---|---|---|---|")
    for label, row in rows.items():
        n = len(row["STS-B test"])
        print(f"| {label} | {cell(row['STS-B test'])} | {cell(row.get('agreement', []))} | {n} |")
    print()
    students_table(
        out,
        {"base (all-MiniLM-L6-v2)": ["base/base"], "bi-encoder, STS-B train": [f"supervised/bi-{s}" for s in seeds]},
    )


def students_table(out: Path, groups: dict[str, list[str]], extra: dict[str, list[str]] | None = None) -> None:
    keys = ("STS-B test", "Avg. all", "Avg. clean", "STS12-16 all", "STS12-16 clean", "dev")
    print("| model | " + " | ".join(keys) + " | pairs left out | seeds |")
    print("|" + "---|" * (len(keys) + 3))
    for label, names in groups.items():
        found = [row for row in (student(out, name) for name in names) if row is not None]
        if not found:
            continue
        cells = [cell([row[key] for row in found if row[key] is not None]) for key in keys]
        excluded = sorted({row["excluded"] for row in found})
        left_out = f"{excluded[0]:,}" if len(excluded) == 1 else f"{excluded[0]:,}-{excluded[-1]:,}"
        print(f"| {label} | " + " | ".join(cells) + f" | {left_out} | {len(found)} |")
    print()


def training_pairs(out: Path, name: str) -> int | None:
    """How many pairs a student trained on: its checkpoint's defsent.json, or the copy kept beside its results."""
    for path in (out / name / "defsent.json", out / f"{name}-defsent.json"):
        info = load(path)
        if info is not None:
            return int(info["training_pairs"])
    return None


ARCHS, STRATEGIES = ("ce", "cbe"), ("random", "bm25", "semantic", "kde", "iterative")


def row_order(name: str) -> tuple:
    """CE before CBE, the strategies in the order of the thesis's tables, anything else after."""
    arch, strategy = name.split("-", 1)
    rank = {value: i for i, value in enumerate(STRATEGIES)}
    return (ARCHS.index(arch) if arch in ARCHS else len(ARCHS), rank.get(strategy, len(rank)), name)


def semi(out: Path, test: Path, seeds: list[str]) -> None:
    gold = read_pairs(test)
    sizes = [training_pairs(out, f"semi/seed-{seed}/gold-only") for seed in seeds]
    gold_size = next((n for n in sizes if n is not None), None)
    gold_row = "gold only" + (f" ({gold_size:,} pairs)" if gold_size else "")
    groups = {"base (all-MiniLM-L6-v2)": ["base/base"], gold_row: []}
    silver: dict[str, list[int]] = {}
    teachers: dict[str, list[float]] = {}
    for seed, gold_n in zip(seeds, sizes, strict=True):
        folder = out / f"semi/seed-{seed}"
        groups[gold_row].append(f"semi/seed-{seed}/gold-only")
        names = [path.name.removesuffix("-clean.json") for path in folder.glob("*-clean.json")]  # ARCH-STRATEGY
        for name in sorted((n for n in names if n != "gold-only"), key=row_order):
            arch, strategy = name.split("-", 1)
            label = f"{arch.upper()} teacher, {strategy}"
            groups.setdefault(label, []).append(f"semi/seed-{seed}/{name}")
            n = training_pairs(out, f"semi/seed-{seed}/{name}")
            if n is not None and gold_n is not None:
                silver.setdefault(label, []).append(n - gold_n)
        for arch in ARCHS:
            path = folder / f"{arch}-test.tsv"
            if path.is_file():
                teachers.setdefault(arch.upper(), []).append(rho(read_scores(path), gold.scores))
    if teachers:
        print("| teacher trained on the gold | STS-B test | seeds |")
        print("|---|---|---|")
        for label, values in teachers.items():
            print(f"| {label} | {cell(values)} | {len(values)} |")
        print()
    students_table(out, groups)
    print("| row | silver pairs added to the gold |")
    print("|---|---|")
    for label, counts in silver.items():
        print(f"| {label} | {cell([float(c) for c in counts], 0)} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("DEFSENT_DATA", "../shared/data")))
    args = parser.parse_args()
    out = args.out
    test = args.data / "senteval/downstream/STS/STSBenchmark/sts-test.csv"
    seeds = sorted(p.name.split("-")[1] for p in (out / "supervised").glob("bi-*-clean.json"))
    if seeds:
        print("## supervised (STS-B train, 5,749 pairs)\n")
        supervised(out, test, seeds)
    semi_seeds = sorted(p.name.split("-")[1] for p in (out / "semi").glob("seed-*"))
    if semi_seeds:
        print("## semi-supervised (gold: pairs drawn from STS-B train)\n")
        semi(out, test, semi_seeds)
    if not seeds and not semi_seeds:
        sys.exit(f"pairs_tables.py: nothing under {out} (run examples/stsb_pairs.sh first)")


if __name__ == "__main__":
    main()
