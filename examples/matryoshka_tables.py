"""The table of docs/results.md section 11 from an examples/matryoshka.sh run: each recipe at each width, mean ± sd
over its seeds.

    python examples/matryoshka_tables.py OUT [--rows base,plain,mrl,simcse,simcse-mrl]

Reads OUT/<row>/<seed>-d<N>-sts.json, -dev.json and -dict.json (OUT/base-d<N>-... for the base) through
tuned_tables.scores, and the checkpoints' defsent.json (kept step, WiSE-FT's alpha); prints Markdown: STS Avg.
(7 sets, 'all'), the dev composite (STS-B dev + SICK-R trial) and the reverse dictionary's MRR, one column group
per width. Selects nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from tuned_tables import cell, info_of, scores  # noqa: E402

LABELS = {
    "base": "base, cut",
    "plain": "DefSent+ (as today), cut",
    "mrl": "DefSent+ --matryoshka",
    "simcse": "SimCSE + WiSE-FT, cut",
    "simcse-mrl": "SimCSE --matryoshka + WiSE-FT",
}
COLUMNS = (("Avg.", 2), ("dev", 2), ("MRR", 3))


def widths(out: Path) -> list[int]:
    found = {int(m.group(1)) for p in out.rglob("*-d*-sts.json") if (m := re.search(r"-d(\d+)-sts\.json$", p.name))}
    return sorted(found, reverse=True)


def members(out: Path, row: str) -> list[str]:
    """The evaluated models of a row: the base, or each seed's checkpoint (its WiSE-FT merge for SimCSE rows)."""
    if row == "base":
        return ["base"]
    prefix = "wise" if row.startswith("simcse") else "seed"
    seeds = sorted({p.name.split("-d")[0] for p in (out / row).glob(f"{prefix}-*-d*-sts.json")})
    return [f"{row}/{seed}" for seed in seeds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", default=",".join(LABELS))
    args = parser.parse_args()
    dims = widths(args.out)
    if not dims:
        sys.exit(f"matryoshka_tables.py: no evaluations under {args.out}")
    head = ["recipe", "seeds"] + [f"{name} @{d}" for d in dims for name, _ in COLUMNS]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in args.rows.split(","):
        names = members(args.out, row)
        if not names:
            continue
        cells = [LABELS.get(row, row), str(len(names))]
        for d in dims:
            found = [s for s in (scores(args.out, f"{name}-d{d}") for name in names) if s is not None]
            for column, digits in COLUMNS:
                values = [s[column] for s in found if column in s]
                cells.append(cell(values, digits) if values else "-")
        print("| " + " | ".join(cells) + " |")
    print()
    for row in args.rows.split(","):  # what dev chose: the kept step, WiSE-FT's alpha
        chosen = []
        for name in members(args.out, row):
            info = info_of(args.out / name) if row != "base" else {}
            if "alpha" in info:
                chosen.append(f"{name.split('/')[-1]} alpha {info['alpha']}")
            elif "kept_step" in info:
                chosen.append(f"{name.split('/')[-1]} step {info['kept_step']}")
        if chosen:
            print(f"- {LABELS.get(row, row)}: {', '.join(chosen)}")


if __name__ == "__main__":
    main()
