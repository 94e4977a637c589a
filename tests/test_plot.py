"""`defsent plot`: the loss and dev curves of real tiny training runs (two seeds), read back exactly as the
trainer logged them, drawn into a real PNG; the moving average by hand; bad input is one line, exit 2, and
leaves no picture behind."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from defsent_cli.formats.curves import moving_average, read_run, read_runs

WORDS = "red blue small large animal tree river stone light dark old new fast slow warm cold".split()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DPI = 110  # plot_curves' resolution: 8 x 7.5 in with a dev panel, 8 x 4.5 in without


def _cli(*args):
    from typer.testing import CliRunner

    from defsent_cli.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory, tiny_bert) -> Path:
    """Two real tiny `defsent train` runs (seeds 1 and 2), 4 steps, a loss row every step and a dict-dev score
    every 2 steps, in ROOT/seed-1 and ROOT/seed-2; a results file beside them that a glob must pass over."""
    root = tmp_path_factory.mktemp("runs")
    rng = np.random.default_rng(0)
    rows = [
        {"entry": f"w{i}", "definitions": [" ".join(rng.choice(WORDS, 5)) for _ in range(2)],
         "split": "dev" if i % 3 == 0 else "train"}
        for i in range(12)
    ]  # fmt: skip
    dictionary = root / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = root / "bank.h5"
    result = _cli("embed-entries", dictionary, "-m", tiny_bert, "-o", bank, "--kind", "AC", "--device", "cpu")
    assert result.exit_code == 0, result.output
    runs = root / "step1"
    runs.mkdir()
    for seed in (1, 2):
        args = ["train", dictionary, "--bank", bank, "-m", tiny_bert, "-o", runs / f"seed-{seed}", "--seed", seed]
        args += ["--device", "cpu", "--pooling", "mean", "--pooler", "none", "--lr", "3e-3", "-b", "2"]
        args += ["--max-steps", "4", "--log-every", "1", "--eval-every", "2", "--eval-on", "dict-dev"]
        result = _cli(*args)
        assert result.exit_code == 0, result.output
    (runs / "seed-1-results.json").write_text("{}\n")  # matched by 'seed-*' but not a run: passed over
    return runs


def _log(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "train_log.jsonl").read_text().splitlines()]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR", data[:16]
    return struct.unpack(">II", data[16:24])


def _write_log(folder: Path, rows: list, name: str = "train_log.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


# --- the library: the curves are the log's numbers ---------------------------------------------------------


def test_the_curves_are_the_logged_numbers(seeds):
    runs = read_runs([str(seeds / "seed-*")])
    assert [run.name for run in runs] == ["seed-1", "seed-2"]  # the glob: both runs, in order, the JSON passed over
    assert [run.path for run in runs] == [seeds / "seed-1", seeds / "seed-2"]
    for run in runs:
        log = _log(run.path)
        info = json.loads((run.path / "defsent.json").read_text())
        loss = [(row["step"], row["loss"]) for row in log if "loss" in row]
        dev = [(row["step"], row["eval"]["dict-dev"]) for row in log if "eval" in row]
        assert [step for step, _ in loss] == [1, 2, 3, 4] and [step for step, _ in dev] == [0, 2, 4]
        assert run.loss == loss  # exactly the logged floats
        assert run.dev == dev == [tuple(p) for p in info["eval_curve"]]
        assert run.loss == [tuple(p) for p in info["loss_curve"]]
        assert run.eval_on == "dict-dev" and run.kept_step == info["kept_step"] in (2, 4)
    assert runs[0].loss != runs[1].loss  # two seeds, two curves


def test_moving_average_by_hand(tmp_path):
    assert moving_average([4.0, 2.0, 6.0, 0.0, 3.0], 1) == [4.0, 2.0, 6.0, 0.0, 3.0]
    assert moving_average([4.0, 2.0, 6.0, 0.0, 3.0], 2) == [4.0, 3.0, 4.0, 3.0, 1.5]
    assert moving_average([4.0, 2.0, 6.0, 0.0, 3.0], 3) == pytest.approx([4.0, 3.0, 4.0, 8 / 3, 3.0])
    assert moving_average([4.0, 2.0, 6.0, 0.0, 3.0], 9) == pytest.approx([4.0, 3.0, 4.0, 3.0, 3.0])
    assert moving_average([], 3) == []
    # a hand-made log: loss rows, dev rows between them, a row of another kind (passed over), no defsent.json
    rows = [{"step": 0, "eval": {"stsb-dev": 10.0}}]
    rows += [{"step": 10 * i, "loss": loss, "lr": 1e-5} for i, loss in enumerate([4, 2, 6, 0, 3], start=1)]
    rows.insert(3, {"step": 20, "eval": {"stsb-dev": 30.5}})
    rows.append({"step": 50, "note": "a row of a kind this defsent does not know"})
    _write_log(tmp_path / "hand", rows)
    run = read_run(tmp_path / "hand")
    assert run.loss == [(10, 4.0), (20, 2.0), (30, 6.0), (40, 0.0), (50, 3.0)]
    assert run.dev == [(0, 10.0), (20, 30.5)] and run.eval_on == "stsb-dev" and run.kept_step is None


def test_smooth_draws_the_moving_average_over_the_raw_curve(tmp_path, monkeypatch):
    from matplotlib.axes import Axes

    drawn = []
    original = Axes.plot

    def spy(self, *args, **kwargs):
        lines = original(self, *args, **kwargs)
        drawn.extend(
            (list(line.get_xdata()), list(line.get_ydata()), line.get_label(), line.get_alpha()) for line in lines
        )
        return lines

    monkeypatch.setattr(Axes, "plot", spy)
    rows = [{"step": 10 * i, "loss": loss} for i, loss in enumerate([4, 2, 6, 0, 3], start=1)]
    _write_log(tmp_path / "hand", rows)
    out = tmp_path / "smooth.png"
    result = _cli("plot", tmp_path / "hand", "--smooth", "2", "-o", out)
    assert result.exit_code == 0, result.output
    steps = [10, 20, 30, 40, 50]
    raw = [(y, alpha) for x, y, label, alpha in drawn if x == steps and label.startswith("_")]  # no legend entry
    assert raw == [([4, 2, 6, 0, 3], 0.25)]  # the raw curve, faint
    assert [y for x, y, label, _ in drawn if label == "hand"] == [[4.0, 3.0, 4.0, 3.0, 1.5]]  # the average of 2
    assert _png_size(out) == (8 * DPI, int(4.5 * DPI))  # no dev rows: the loss panel alone


# --- the command ------------------------------------------------------------------------------------------


def test_plot_overlays_the_seeds_of_a_glob_into_a_png(seeds, tmp_path):
    out = tmp_path / "curves.png"
    result = _cli("plot", str(seeds / "seed-*"), "--title", "two seeds", "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # stdout carries data only
    assert result.stderr.strip().splitlines() == [f"wrote {out}: 2 runs, 2 loss curves, 2 dev"]
    assert _png_size(out) == (8 * DPI, int(7.5 * DPI))  # the loss panel and the dev panel
    import matplotlib.image

    image = matplotlib.image.imread(out)
    assert image.shape[:2] == (int(7.5 * DPI), 8 * DPI) and image.std() > 0.05  # drawn, not blank
    assert [p.name for p in tmp_path.iterdir()] == ["curves.png"]  # no temporary file left
    # several folders name the same runs; .pdf and .svg by suffix
    for suffix, magic in ((".pdf", b"%PDF"), (".svg", b"<?xml")):
        other = tmp_path / f"curves{suffix}"
        assert _cli("plot", seeds / "seed-2", seeds / "seed-1", "-o", other).exit_code == 0
        assert other.read_bytes().startswith(magic)
    # an existing output is replaced only with --force
    before = out.read_bytes()
    refused = _cli("plot", seeds / "seed-1", "-o", out)
    assert refused.exit_code == 2 and "--force" in refused.stderr and str(out) in refused.stderr
    assert out.read_bytes() == before
    assert _cli("plot", seeds / "seed-1", "-o", out, "--force").exit_code == 0
    assert out.read_bytes() != before


def test_a_run_still_going_is_read_from_its_partial_folder(seeds, tmp_path):
    text = (seeds / "seed-1" / "train_log.jsonl").read_text()
    partial = tmp_path / "ckpt.partial"
    partial.mkdir()
    (partial / "log.jsonl").write_text(text + '{"step": 5, "definit')  # the trainer is writing row 5 right now
    run = read_run(tmp_path / "ckpt")  # the checkpoint is not written yet: its .partial/ folder
    assert run.path == partial and run.name == "ckpt.partial" and run.kept_step is None
    assert run.loss == [(r["step"], r["loss"]) for r in _log(seeds / "seed-1") if "loss" in r]
    out = tmp_path / "going.png"
    result = _cli("plot", tmp_path / "ckpt", "-o", out)
    assert result.exit_code == 0, result.output
    assert (
        "warning:" in result.stderr and f"{partial / 'log.jsonl'}:" in result.stderr and "unfinished" in result.stderr
    )
    assert _png_size(out)[0] == 8 * DPI


def test_a_resumed_run_keeps_its_whole_dev_curve(tmp_path):
    # a resume rewrites the log with the saved state's loss rows only (training/run.py): the dev rows before the
    # saved step are gone from train_log.jsonl, while defsent.json's eval_curve (the state carried it) has them
    folder = tmp_path / "resumed"
    rows = [{"step": s, "loss": 3.0 - s / 2} for s in (1, 2, 3, 4)] + [{"step": 4, "eval": {"dev": 71.5}}]
    _write_log(folder, rows)
    info = {"kind": "train", "loss_curve": [[s, 3.0 - s / 2] for s in (1, 2, 3, 4)], "eval_on": "dev"}
    info |= {"eval_curve": [[0, 60.0], [2, 72.25], [4, 71.5]], "kept_step": 2}
    (folder / "defsent.json").write_text(json.dumps(info))
    run = read_run(folder)
    assert run.dev == [(0, 60.0), (2, 72.25), (4, 71.5)] and run.eval_on == "dev" and run.kept_step == 2
    assert run.loss == [(1, 2.5), (2, 2.0), (3, 1.5), (4, 1.0)]
    # a checkpoint whose log is gone: the curves from defsent.json alone
    (folder / "train_log.jsonl").unlink()
    again = read_run(folder)
    assert again.loss == run.loss and again.dev == run.dev


def test_runs_of_one_name_are_told_apart(tmp_path):
    for parent, losses in (("lr-a", [3, 2]), ("lr-b", [5, 1])):
        _write_log(tmp_path / parent / "ckpt", [{"step": s + 1, "loss": v} for s, v in enumerate(losses)])
    runs = read_runs([tmp_path / "lr-a" / "ckpt", tmp_path / "lr-b" / "ckpt"])
    assert [run.name for run in runs] == ["lr-a/ckpt", "lr-b/ckpt"]
    assert [run.loss for run in runs] == [[(1, 3.0), (2, 2.0)], [(1, 5.0), (2, 1.0)]]


# --- bad input: one line naming the path, exit 2, no output ---------------------------------------------------


def _broken(seeds: Path, tmp_path: Path) -> dict[str, Path]:
    broken = {}
    for name, line, text in (("corrupt", 2, '{"step": 2, "loss": 1.2'), ("listed", 3, "[3, 1.5]")):
        folder = tmp_path / name
        shutil.copytree(seeds / "seed-1", folder)
        lines = (folder / "train_log.jsonl").read_text().splitlines()
        lines[line - 1] = text
        (folder / "train_log.jsonl").write_text("\n".join(lines) + "\n")
        broken[name] = folder / "train_log.jsonl"
    _write_log(tmp_path / "stepless", [{"step": 1, "loss": 2.0}, {"loss": 1.0}])
    _write_log(tmp_path / "wordy", [{"step": 1, "loss": "low"}])
    merged = tmp_path / "merged"
    merged.mkdir()
    (merged / "defsent.json").write_text(json.dumps({"kind": "merge", "models": ["a", "b"]}))
    return broken


def test_bad_input_is_one_line_naming_the_path(seeds, tiny_bert, tmp_path, monkeypatch):
    inputs = tmp_path / "in"
    inputs.mkdir()
    broken = _broken(seeds, inputs)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "curves.png"
    cases = [
        ([str(seeds / "none-*")], "no run folder matches this pattern", str(seeds / "none-*")),
        ([seeds / "seed-1", str(inputs / "zz-*")], "no run folder matches", str(inputs / "zz-*")),
        ([inputs / "missing"], "no such run folder", inputs / "missing"),
        ([tiny_bert], "not a training run: no train_log.jsonl or defsent.json", tiny_bert),
        ([seeds / "seed-1-results.json"], "not a folder", seeds / "seed-1-results.json"),
        ([seeds / "seed-1", inputs / "corrupt"], "invalid JSON", f"{broken['corrupt']}:2:"),
        ([inputs / "listed"], "expected a JSON object, found list", f"{broken['listed']}:3:"),
        ([inputs / "stepless"], "without a step", f"{inputs / 'stepless' / 'train_log.jsonl'}:2:"),
        ([inputs / "wordy"], 'loss is "low", not a number', f"{inputs / 'wordy' / 'train_log.jsonl'}:1:"),
        ([inputs / "merged"], "records no loss or dev score", inputs / "merged" / "defsent.json"),
    ]
    for runs, says, names in cases:
        result = _cli("plot", *runs, "-o", out)
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 2, (runs, result.output)
        assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in result.output, lines
        assert says in lines[0] and str(names) in lines[0], (says, names, lines[0])
        assert list(out_dir.iterdir()) == [], runs
    suffix = _cli("plot", seeds / "seed-1", "-o", out_dir / "curves.gif")
    assert suffix.exit_code == 2 and "unknown plot suffix .gif" in suffix.stderr and "curves.gif" in suffix.stderr
    smooth = _cli("plot", seeds / "seed-1", "--smooth", "0", "-o", out)
    assert smooth.exit_code == 2 and "--smooth" in smooth.stderr and len(smooth.stderr.strip().splitlines()) == 1
    # without matplotlib (the plot extra): what to install, before anything is read
    for module in ("matplotlib", "matplotlib.figure", "matplotlib.backends", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(__import__("sys").modules, module, None)
    missing = _cli("plot", seeds / "seed-1", "-o", out)
    assert missing.exit_code == 2 and missing.stderr.count("\n") == 1
    assert "error: defsent plot needs matplotlib: pip install 'defsent-cli[plot]'" in missing.stderr
    assert list(out_dir.iterdir()) == []
