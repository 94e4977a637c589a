"""Tables for people (stderr, or stdout when the table is the command's output). The library returns
data; only the command line turns it into rich tables."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..console import QUIET, err_console

#: The width a table is laid out in when its stream is not a terminal (a log file, a pipe): wider than any
#: table, so each comes out at its own width, a path on one line, instead of wrapped at rich's default 80.
FULL_WIDTH = 100_000


def fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def show(renderable, to_stdout: bool) -> None:
    """A table on stdout when it is the command's output (no ``-o`` given: the results are the table, so
    ``-q`` keeps it), else on stderr beside the notes, where ``-q`` leaves it out (docs/conventions.md: errors
    and warnings only). On a terminal it fits the window; elsewhere it is laid out at its full width."""
    if QUIET["on"] and not to_stdout:
        return
    console = Console(highlight=False) if to_stdout else err_console
    if not console.is_terminal:
        console = Console(stderr=not to_stdout, highlight=False, width=FULL_WIDTH)
    console.print(renderable)


def render_table(title: str, columns: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]], caption: str = ""):
    """A title line, a rich table (one header row of task names, then labelled rows) and caption lines."""
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("", style="bold")
    for column in columns:
        table.add_column(column, justify="right")
    for label, cells in rows:
        table.add_row(label, *cells)
    parts = [Text(title, style="bold"), table]
    parts.extend(Text(line, style="dim") for line in caption.splitlines() if line)
    return Group(*parts)


def sts_table(result: dict):
    """The papers' table: STS12 ... SICK-R, Avg.; Spearman, Pearson and pair counts."""
    from ..evaluation.sts_data import STS_YEARS  # numpy: imported when a table is drawn, not for --help

    tasks = result["tasks"]
    columns = [*tasks, "Avg."]
    spearman = [fmt(t["spearman"]) for t in tasks.values()] + [fmt(result["average"]["spearman"])]
    pearson = [fmt(t["pearson"]) for t in tasks.values()] + [fmt(result["average"]["pearson"])]
    pairs = []
    for t in tasks.values():
        cell = f"{t['n']:,}"
        if not t["complete"]:
            expected = f"/{t['expected_n']:,}" if t["expected_n"] else ""
            cell = f"[yellow]{cell}{expected}![/yellow]"
        pairs.append(cell)
    pairs.append(f"{sum(t['n'] for t in tasks.values()):,}")
    has_years = any(name in STS_YEARS for name in tasks)
    title = f"STS ({result['split']}): Spearman x100 of cosine similarity vs gold"
    caption = []
    if has_years:
        caption.append(f"STS12-16 aggregation: {result['aggregation']} = {result['aggregation_meaning']}")
    caption.append(f"model {result['model']}")
    caption.append(f"pooling {result['pooling']} | backend {result['backend']} | {result['seconds']:.0f} s")
    rows = [("Spearman", spearman), ("Pearson", pearson), ("pairs", pairs)]
    if "all_pairs" in result:  # --exclude-pairs: the rows above are the clean pairs; the same with every pair
        every = result["all_pairs"]
        rows[0] = ("Spearman, clean", spearman)
        rows.insert(
            1,
            (
                "Spearman, all",
                [fmt(every["tasks"][name]["spearman"]) for name in tasks] + [fmt(every["average"]["spearman"])],
            ),
        )
        rows[-1] = ("pairs, clean", pairs)
        caption.append("clean: without the pairs of --exclude-pairs (a model trained on them has seen them)")
    return render_table(title, columns, rows, "\n".join(caption))


def senteval_table(result: dict):
    """The papers' table: MR ... MRPC, Avg. (test accuracy), with dev accuracy, MRPC F1 and sizes; the
    relatedness tasks (STS-B-5, SICK-R-5) with Pearson / Spearman x100 of the expected score."""
    tasks = result["tasks"]
    columns = [*tasks, "Avg."]
    related = [t["protocol"] == "relatedness" for t in tasks.values()]
    acc = [fmt(t.get("acc")) if not r else "" for t, r in zip(tasks.values(), related, strict=True)]
    acc.append(fmt(result["average"]["acc"]))
    dev = [fmt(t["devpearson"] if r else t["devacc"]) for t, r in zip(tasks.values(), related, strict=True)] + [""]
    f1 = [fmt(t["f1"]) if "f1" in t else "" for t in tasks.values()] + [""]
    sizes = [
        f"{t['ndev']:,}/{t['ntest']:,}" if t["protocol"] != "inner-kfold" else f"{t['ntest']:,} (cv)"
        for t in tasks.values()
    ] + [""]
    rows = [("test acc", acc)]
    if any(related):
        rows.append(("test Pearson", [fmt(t["pearson"]) if "pearson" in t else "" for t in tasks.values()] + [""]))
        rows.append(("test Spearman", [fmt(t["spearman"]) if "spearman" in t else "" for t in tasks.values()] + [""]))
        rows.append(("score (all)", [fmt(t["score"]) for t in tasks.values()] + [fmt(result["average"]["score"])]))
    rows.append(("dev acc" if not any(related) else "dev acc|Pearson", dev))
    if any("f1" in t for t in tasks.values()):
        rows.append(("F1", f1))
    rows.append(("train|dev/test", sizes))
    cls = result["classifier"]
    title = "SentEval transfer: test accuracy x100 of a logistic-regression probe on frozen features"
    caption = "\n".join(
        [
            f"config {result['config']}: kfold {cls['kfold']}, {cls['optim']}, batch {cls['batch_size']}, "
            f"tenacity {cls['tenacity']}, epoch_size {cls['epoch_size']}; seed {result['seed']}; "
            f"MRPC features {result['mrpc_features']}",
            f"model {result['model']}",
            f"pooling {result['pooling']} | {result['seconds']:.0f} s",
        ]
    )
    return render_table(title, columns, rows, caption)


def cluster_table(result: dict):
    """Clustering accuracy and NMI x100 per set and Avg., mean ± sd over the k-means seeds."""
    tasks = result["tasks"]
    columns = [*tasks, "Avg."]

    def cells(key: str) -> list[str]:
        out = [
            f"{fmt(t[key])} ± {fmt(t[key + '_sd'])}" if t[key + "_sd"] is not None else fmt(t[key])
            for t in tasks.values()
        ]
        return out + [fmt(result["average"][key])]

    rows = [
        ("accuracy", cells("acc")),
        ("NMI", cells("nmi")),
        ("texts / k", [f"{t['n']:,} / {t['k']}" for t in tasks.values()] + [""]),
    ]
    seeds = result["seeds"]
    caption = "\n".join(
        [
            f"k-means (scikit-learn, k = classes) with seeds {seeds[0]}-{seeds[-1]}: mean ± sd over {len(seeds)} runs",
            f"model {result['model']}",
            f"pooling {result['pooling']} | {result['seconds']:.0f} s",
        ]
    )
    return render_table("Short-text clustering: accuracy (Hungarian mapping) and NMI x100", columns, rows, caption)


def summary_table(result: dict):
    """Several models (seeds) of one evaluation: each figure's mean ± sd per task and for Avg."""
    summary = result["summary"]
    columns = [*summary["tasks"], "Avg."]
    keys = list(dict.fromkeys(key for task in summary["tasks"].values() for key in task))

    def cell(spread: dict | None) -> str:
        if not spread or spread["mean"] is None:
            return "" if not spread else "—"
        return f"{spread['mean']:.2f} ± {spread['sd']:.2f}" if spread["sd"] is not None else f"{spread['mean']:.2f}"

    rows = [
        (key, [cell(task.get(key)) for task in summary["tasks"].values()] + [cell(summary["average"].get(key))])
        for key in keys
    ]
    caption = "\n".join(
        [*(f"{i}: {m}" for i, m in enumerate(result["models"], start=1)), f"pooling {result['pooling']}"]
    )
    title = f"{result['kind']}: mean ± sample sd over {result['n_runs']} models"
    return render_table(title, columns, rows, caption)


def stats_table(stats: dict[str, dict], title: str = "dictionary"):
    """A rich table of :func:`dictionary_stats` output."""
    table = Table(title=title)
    with_tokens = any("max_tokens" in row for row in stats.values())
    shared = [
        f"{split} {row['in_train']:,} of {row['definitions']:,} ({100 * row['in_train'] / row['definitions']:.1f}%)"
        for split, row in stats.items()
        if "in_train" in row and row["definitions"]
    ]
    if shared and "train" in stats:  # held-out definitions that are also training ones
        table.caption = f"held-out definitions also in train: {', '.join(shared)}"
    table.add_column("split")
    table.add_column("entries", justify="right")
    table.add_column("definitions", justify="right")
    table.add_column("defs/entry", justify="right")
    if with_tokens:
        table.add_column("max tokens", justify="right")
        table.add_column("median tokens", justify="right")
    for split, row in stats.items():
        per = row["definitions"] / row["entries"] if row["entries"] else 0.0
        cells = [split, f"{row['entries']:,}", f"{row['definitions']:,}", f"{per:.2f}"]
        if with_tokens:
            cells += [str(row.get("max_tokens")), str(row.get("median_tokens"))]
        if split == "total":
            table.add_section()
        table.add_row(*cells)
    return table


def reverse_dictionary_table(metrics: dict, n_entries: int):
    table = Table(
        title=f"reverse dictionary, {metrics['split']} split ({metrics['n']:,} definitions, {n_entries:,} entries)"
    )
    for name in ("MRR", "top-1", "top-3", "top-10", "median rank"):
        table.add_column(name, justify="right")
    table.add_row(
        f"{metrics['mrr']:.4f}",
        f"{metrics['top1']:.4f}",
        f"{metrics['top3']:.4f}",
        f"{metrics['top10']:.4f}",
        f"{metrics['median_rank']:g}",
    )
    return table


def ranking_table(ranking: list[dict], criterion: str, meaning: str):
    table = Table(title=f"select-best by {criterion}: {meaning}")
    for name in ("rank", "checkpoint", "seed", "score"):
        table.add_column(name, justify="left" if name == "checkpoint" else "right")
    for row in ranking:
        table.add_row(str(row["rank"]), row["path"], str(row["seed"]), f"{row['score']:.2f}")
    return table


def _figure(value: float | int | None) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return f"{value:,}"
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return f"{value:.3e}"
    return f"{value:.4f}"


def inspect_table(reports: list[dict], title: str = "entry-space figures"):
    """One column per space: the isotropy figures of ``space_report`` (and, for sentence spaces,
    alignment and uniformity)."""
    from pathlib import Path

    from rich.markup import escape

    from ..space.isotropy import FIGURES, PAIR_FIGURES

    table = Table(title=title, title_justify="left")
    table.add_column("figure", no_wrap=True)
    for number, report in enumerate(reports, start=1):
        table.add_column(f"{number}: {escape(Path(report['path']).name)}", justify="right", overflow="fold")
    labels = {"n": "vectors", "d": "dimensions", **FIGURES, "pairs": "pairs for the cosine"}
    if any("alignment" in r for r in reports):
        labels.update(PAIR_FIGURES)
    for key, label in labels.items():
        table.add_row(label, *(_figure(r.get(key)) for r in reports))
    return table
