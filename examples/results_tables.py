"""Markdown tables for docs/results.md from a results run (examples/results.sh OUT).

python examples/results_tables.py runs/results > tables.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"]
TRANSFER = ["MR", "CR", "SUBJ", "MPQA", "SST-2", "TREC", "MRPC"]


def load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def sts_row(label: str, result: dict, dev: float | None = None) -> str:
    cells = [f"{result['tasks'][t]['spearman']:.2f}" for t in STS]
    shown = f"{dev:.2f}" if dev is not None else "-"
    return f"| {label} | " + " | ".join(cells) + f" | **{result['average']['spearman']:.2f}** | {shown} |"


def selected_dev(ranking: dict | None) -> float | None:
    """The STS-B dev score select-best chose by, when it chose by STS-B dev."""
    return ranking["ranking"][0]["score"] if ranking and ranking.get("criterion") == "stsb-dev" else None


def times(folder: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    path = folder / "times.tsv"
    if path.is_file():
        for line in path.read_text().splitlines():
            name, seconds, _ = line.split("\t", 2)
            out[name] = int(seconds)
    return out


def main(root: Path) -> None:
    print("### STS (Spearman x100, 'all')\n")
    print("| model | " + " | ".join(STS) + " | Avg. | STS-B dev (selection) |")
    print("|---" * (len(STS) + 3) + "|")
    for pooling in ("cls", "mean", "prompt"):
        result = load(root / "base" / f"sts-{pooling}.json")
        dev = load(root / "base" / f"stsb-dev-{pooling}.json")
        if result:
            print(sts_row(f"base, {pooling}", result, dev["tasks"]["STS-B"]["spearman"] if dev else None))
    runs = sorted((root / "grid").glob("*-*")) + sorted(root.glob("pst-*/"))
    for run in runs:
        for step in (1, 2, 3):
            folder = run / f"step-{step}"
            result = load(folder / "sts.json")
            if result and not folder.is_symlink():
                tag = f"{run.name} step {step}" + (" +ICA" if (folder / "bank-ica.h5").exists() else "")
                print(sts_row(tag, result, selected_dev(load(folder / "ranking.json"))))
    print("\n### Reverse dictionary (held-out test entries) and entry space\n")
    print("| run | bank | MRR | top-1 | top-3 | top-10 | mean cos | top-10 var | I(W) unit | skew | kurt |")
    print("|---" * 11 + "|")
    for run in runs:
        for step in (1, 2, 3):
            folder = run / f"step-{step}"
            rd, space = load(folder / "dict-test.json"), load(folder / "space.json")
            if not rd or folder.is_symlink():
                continue
            s = (space.get("banks") or [space])[0] if space else {}
            print(
                f"| {run.name} step {step} | {Path(rd['bank']).name} | {rd['mrr']:.3f} | {rd['top1']:.3f} | "
                f"{rd['top3']:.3f} | {rd['top10']:.3f} | {s.get('mean_cosine', float('nan')):.3f} | "
                f"{s.get('top10_variance_share', float('nan')):.3f} | {s.get('isotropy_I_unit', float('nan')):.3f} | "
                f"{s.get('mean_abs_skewness', float('nan')):.2f} | {s.get('mean_excess_kurtosis', float('nan')):.2f} |"
            )
    print("\n### SentEval (accuracy; MRPC acc / F1)\n")
    print("| model | " + " | ".join(TRANSFER) + " | Avg. |")
    print("|---" * (len(TRANSFER) + 2) + "|")
    bases = [("base", path) for path in sorted((root / "base").glob("senteval-*.json"))]
    finals = [(f"{path.parent.name} final", path) for path in sorted(root.glob("pst-*/final-senteval.json"))]
    for label, path in [*bases, ("final", root / "final-senteval.json"), *finals]:
        result = load(path)
        if result and label == "final":  # results.sh's final model: say which one it is
            label = "final = " + "/".join(Path(result["model"]).parts[-3:-1])
        if result:
            cells = [f"{result['tasks'][t]['acc']:.2f}" for t in TRANSFER]
            cells[-1] += f" / {result['tasks']['MRPC'].get('f1', float('nan')):.1f}"
            print(
                f"| {label} ({result['pooling']}) | " + " | ".join(cells) + f" | **{result['average']['acc']:.2f}** |"
            )
    print("\n### Wall time per stage (s)\n")
    print("| run | stage | s |")
    print("|---|---|---|")
    for folder in [root, *runs]:
        for name, seconds in times(folder).items():
            print(f"| {folder.name} | {name} | {seconds} |")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/results"))
