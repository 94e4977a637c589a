"""The tables of docs/results.md section 1 from an examples/tuned.sh run: every row as mean +- sd over seeds.

    python examples/tuned_tables.py OUT [--order plain,cosine,...]
    python examples/tuned_tables.py OUT --choose     (the recipe with the best mean dev composite; prints the
                                                      folder of its best-dev seed, or "base" when none beats it)

Reads OUT/<row>-sts.json (test STS, 'all'), OUT/<row>-dev.json (STS-B dev, SICK-R trial), OUT/<row>-dict.json
(reverse dictionary, held-out test entries), OUT/<row>-cluster.json and -senteval.json (clustering accuracy and
NMI, the transfer average: columns shown when any row has them; --sets stackoverflow,... adds each named set's
accuracy and NMI), the checkpoints' defsent.json (kept step, alpha) and
OUT/times.tsv; prints Markdown. The tables select nothing; --choose selects on the dev composite only
(the mean of STS-B dev and SICK-R trial), never on test scores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")
#: the columns of OUT/<row>-cluster.json and -senteval.json, when there are any
MORE = {"cluster": ("cluster acc", "cluster NMI"), "senteval": ("transfer",)}


def load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def scores(out: Path, name: str) -> dict | None:
    """Every number of one evaluated model, or None when its evaluations are not all there."""
    sts, dev, dic = (load(out / f"{name}-{kind}.json") for kind in ("sts", "dev", "dict"))
    if sts is None or dev is None:
        return None
    row = {task: sts["tasks"][task]["spearman"] for task in TASKS if task in sts["tasks"]}
    row["Avg."] = sts["average"]["spearman"]
    row["STS-B dev"] = dev["tasks"]["STS-B"]["spearman"]
    row["SICK-R trial"] = dev["tasks"]["SICK-R"]["spearman"]
    row["dev"] = (row["STS-B dev"] + row["SICK-R trial"]) / 2
    if dic is not None:
        row["MRR"] = dic["mrr"]
    cluster, senteval = load(out / f"{name}-cluster.json"), load(out / f"{name}-senteval.json")
    if cluster is not None:  # eval-cluster: mean over the sets of the mean over the k-means runs
        row["cluster acc"], row["cluster NMI"] = cluster["average"]["acc"], cluster["average"]["nmi"]
        for name, task in cluster.get("tasks", {}).items():  # and each set's (the columns of --sets)
            row[f"{name} acc"], row[f"{name} NMI"] = task["acc"], task["nmi"]
    if senteval is not None:  # eval-senteval: the transfer tasks' average accuracy
        row["transfer"] = senteval["average"]["acc"]
    words = load(out / f"{name}-words.json")  # DefSent's word prediction over the vocabulary (variant defsent)
    if words is not None:
        # DefSent's MRR counts only hits in the top 10 (mrr10); older files have only the full-rank mrr
        if "mrr10" in words:
            row["word MRR@10"] = words["mrr10"]
        row["word top-1"], row["word top-10"] = words["top1"], words["top10"]
    return row


def cell(values: list[float], digits: int) -> str:
    if not values:
        return "-"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def partial_cell(values: list[float], seeds: int, digits: int) -> str:
    """A row's cell; when only some of its seeds have this evaluation (SentEval run on the dev-best seed
    alone, say), the cell says how many it averages."""
    if 0 < len(values) < seeds:
        return f"{cell(values, digits)} ({len(values)} of {seeds} seeds)"
    return cell(values, digits)


def info_of(folder: Path) -> dict:
    """A model's defsent.json: in its checkpoint folder (a run), or beside its results as NAME-defsent.json
    (the copy in docs/results/tuned, which keeps no weights)."""
    return load(folder / "defsent.json") or load(folder.parent / f"{folder.name}-defsent.json") or {}


def group(out: Path, variant: str, prefix: str) -> tuple[list[dict], list[Path]]:
    """The evaluated seeds of a variant (prefix seed), of their merges (prefix wise) or, for the variant tsdae,
    of the TSDAE models the DefSent+ step started from (prefix tsdae)."""
    found, folders = [], []
    names = {p.name.split("-sts.json")[0] for p in (out / variant).glob(f"{prefix}-*-sts.json")}
    for name in sorted(names):
        if name.split("-")[-1].isdigit():
            row = scores(out, f"{variant}/{name}")
            if row is not None:
                found.append(row)
                folders.append(out / variant / name)
    return found, folders


def choose(out: Path, variants: list[str]) -> str:
    """The group (variant seeds or their WiSE-FT merges) with the best mean dev composite over its seeds;
    within it, the seed with the best dev composite. "base" when no group's mean beats the base's dev."""
    base = scores(out, "base/base")
    best_mean, best_folder = (base["dev"] if base else float("-inf")), "base"
    for variant in variants:
        for prefix in ("tsdae", "seed", "wise"):
            rows, folders = group(out, variant, prefix)
            if not rows:
                continue
            mean = statistics.fmean(r["dev"] for r in rows)
            print(f"{variant}/{prefix}: mean dev {mean:.2f} over {len(rows)} seeds", file=sys.stderr)
            if mean > best_mean:
                best_mean = mean
                best_folder = str(max(zip(rows, folders, strict=True), key=lambda pair: pair[0]["dev"])[1])
    return best_folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--order", default="author,plain,cosine,smooth,lpft,cosine-lpft,cosine-long")
    parser.add_argument("--choose", action="store_true", help="print the dev-chosen recipe's best seed folder")
    parser.add_argument("--words", action="store_true", help="add DefSent's word-prediction columns")
    parser.add_argument("--sets", default="", help="clustering sets whose accuracy and NMI get their own columns")
    args = parser.parse_args()
    out = args.out
    if args.choose:
        print(choose(out, args.order.split(",")))
        return
    columns = [*TASKS, "Avg.", "STS-B dev", "SICK-R trial", "dev", "MRR"]
    if args.words:
        columns += ["word MRR@10", "word top-1", "word top-10"]
    # the clustering and transfer columns, when any model has those results (examples/contrastive.sh EVALS)
    columns += [c for kind, cs in MORE.items() if next(out.rglob(f"*-{kind}.json"), None) for c in cs]
    columns += [f"{name} {metric}" for name in filter(None, args.sets.split(",")) for metric in ("acc", "NMI")]
    digits = {"MRR": 3, "word MRR@10": 3, "word top-1": 3, "word top-10": 3}
    print("| model | seeds | " + " | ".join(columns) + " | kept step / alpha |")
    print("|---|---|" + "---|" * (len(columns) + 1))
    # the base, and the base under CLS pooling when a CLS method was run (examples/contrastive.sh simcse-cls)
    for name, label in (("base", "base"), ("base-cls", "base, CLS pooling")):
        base = scores(out, f"base/{name}")
        if base:
            print(
                f"| {label} | - | "
                + " | ".join(cell([base[c]], digits.get(c, 2)) if c in base else "-" for c in columns)
                + " | - |"
            )
    for variant in args.order.split(","):
        labels = (("tsdae", "TSDAE alone"), ("seed", variant), ("wise", f"{variant} + WiSE-FT"))
        for prefix, label in labels:
            rows, folders = group(out, variant, prefix)
            if not rows:
                continue
            infos = [info_of(f) for f in folders]
            extra = [f"{i.get('alpha', '')}" if prefix == "wise" else str(i.get("kept_step", "last")) for i in infos]
            cells = [partial_cell([r[c] for r in rows if c in r], len(rows), digits.get(c, 2)) for c in columns]
            print(f"| {label} | {len(rows)} | " + " | ".join(cells) + f" | {', '.join(extra)} |")
        soup = scores(out, f"{variant}/soup")
        if soup:
            info = info_of(out / variant / "soup")
            kept = len(info.get("soup", []))
            cells = [cell([soup[c]], digits.get(c, 2)) if c in soup else "-" for c in columns]
            print(
                f"| {variant} greedy soup ({kept} kept) + WiSE-FT | 1 | "
                + " | ".join(cells)
                + f" | {info.get('alpha', '')} |"
            )
    times = out / "times.tsv"
    if times.is_file():
        print("\n| stage | seconds |\n|---|---|")
        for line in times.read_text().splitlines():
            name, seconds, _ = line.split("\t", 2)
            print(f"| {name} | {seconds} |")


if __name__ == "__main__":
    main()
