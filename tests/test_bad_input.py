"""Bad input, full disks, broken files, interrupted runs: never a traceback, never a silent wrong result,
never lost or orphaned work.

A table of cases, every subcommand x the kinds of bad input a user gives (missing and wrong-kind paths,
empty, blank, undecodable and wrongly formatted files, non-finite and out-of-range numbers, outputs that
exist or cannot be written). Each case asserts: the documented exit code (2 bad input, 1 failure while
running), exactly one line on stderr starting with ``error:``, no traceback, the message naming the file
when a file is at fault, and no file left behind in the output folder. Then full disks (a file-size
limit for files, /dev/full for stdout), interrupted training, a crafted resume state, and
property-based tests of the readers.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pytest
from conftest import build_mini, kill_tree, run_bounded, run_warm

DEFSENT = [sys.executable, "-m", "defsent_cli"]
ENV = {**os.environ, "DEFSENT_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
DEADLINE = 300  # seconds: no wait on a subprocess is longer (a hang fails, it does not stall the suite)
WORDS = "red blue small large animal tree river stone light dark old new fast slow warm cold".split()


def _cli(*args, input=None, env=None):
    from typer.testing import CliRunner

    from defsent_cli.cli import app

    return CliRunner(env=env).invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def w(tmp_path_factory, tiny_bert, tiny_roberta) -> SimpleNamespace:
    """Every good file a command needs, made once; each case breaks one thing."""
    root = tmp_path_factory.mktemp("bad")
    rng = np.random.default_rng(0)
    rows = [
        {"entry": f"w{i}", "definitions": [" ".join(rng.choice(WORDS, 5))], "split": ["train", "dev", "test"][i % 3]}
        for i in range(30)
    ]
    dictionary = root / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = root / "bank.h5"
    assert _cli("embed-entries", dictionary, "-m", tiny_bert, "-o", bank, "--kind", "AC").exit_code == 0
    ckpt = root / "ckpt"
    result = _cli("train", dictionary, "--bank", bank, "-m", tiny_bert, "-o", ckpt, "--max-steps", "2", "-b", "4")
    assert result.exit_code == 0, result.output
    texts = root / "texts.txt"
    texts.write_text("\n".join(" ".join(rng.choice(WORDS, 6)) for _ in range(120)) + "\n")
    data = build_mini(root / "mini") / "senteval"
    post = root / "post.h5"
    assert _cli("fit-post", "-m", tiny_bert, "--post", "zscore", "-i", texts, "-o", post).exit_code == 0
    vectors = root / "vectors.npy"
    assert _cli("encode", "-m", tiny_bert, "-i", texts, "-o", vectors).exit_code == 0
    broken = root / "broken"
    broken.mkdir()
    bad = {
        "empty": broken / "empty.txt",
        "blank": broken / "blank.txt",
        "latin1": broken / "latin1.txt",
        "array": broken / "array.jsonl",
        "dupe": broken / "dupe.jsonl",
        "blank_def": broken / "blank_def.jsonl",
        "text": broken / "text.h5",
        "not_bank": broken / "not_bank.h5",
        "flat_bank": broken / "flat_bank.h5",
        "nan_bank": broken / "nan_bank.h5",
        "empty_npy": broken / "empty.npy",
        "flat_npy": broken / "flat.npy",
        "no_tokenizer": broken / "no-tokenizer",
        "no_weights": broken / "no-weights",
        "list_info": broken / "list-info",
        "other_dict": broken / "other.jsonl",
        "zero_post": broken / "zero-post.h5",
        "reshaped_post": broken / "reshaped-post.h5",
        "future_info": broken / "future-info",
        "narrow_bank": broken / "narrow-bank.h5",
        "pairs": broken / "pairs.tsv",  # a good scored pairs file, given where something else belongs
        "negative_pairs": broken / "negative.tsv",
        "equal_scores": broken / "equal.tsv",
        "ragged_pairs": broken / "ragged.tsv",
        "one_sentence": broken / "one.txt",
        "tab_pool": broken / "tab-pool.txt",
        "dict_txt": broken / "dict.txt",
        "huge_bank": broken / "huge-bank.h5",
        "dup_ids": broken / "dup-ids.jsonl",
        "nan_id": broken / "nan-id.jsonl",
        "inf_id": broken / "inf-id.jsonl",
    }
    bad["empty"].write_text("")
    bad["blank"].write_text("\n  \n\n")
    bad["latin1"].write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    bad["array"].write_text('["giraffe", "a long-necked animal"]\n')
    bad["dupe"].write_text('{"entry": "dog", "definitions": ["a pet"]}\n{"entry": "dog", "definitions": ["barks"]}\n')
    bad["blank_def"].write_text('{"entry": "dog", "definitions": ["  "]}\n')
    bad["text"].write_text("not an HDF5 file\n")
    with h5py.File(bad["not_bank"], "w") as h5:
        h5.create_dataset("x", data=[1, 2, 3])
    import shutil

    for name, change in (("flat_bank", "flat"), ("nan_bank", "nan")):
        shutil.copy(bank, bad[name])
        with h5py.File(bad[name], "a") as h5:
            vectors_ = h5["vectors"][()]
            del h5["vectors"]
            if change == "flat":
                h5.create_dataset("vectors", data=vectors_.reshape(-1))
            else:
                vectors_[3, 0] = np.nan
                h5.create_dataset("vectors", data=vectors_)
    bad["empty_npy"].write_bytes(b"")
    np.save(bad["flat_npy"], np.arange(5.0))
    for name, drop in (("no_tokenizer", ("tokenizer.json", "vocab.txt")), ("no_weights", ("model.safetensors",))):
        shutil.copytree(tiny_bert, bad[name])
        for file in drop:
            (bad[name] / file).unlink(missing_ok=True)
    shutil.copytree(ckpt, bad["list_info"])
    (bad["list_info"] / "defsent.json").write_text("[1, 2]\n")
    assert _cli("ica", bank, "--method", "whiten", "--n-components", "8", "-o", bad["narrow_bank"]).exit_code == 0
    shutil.copytree(ckpt, bad["future_info"])
    info = json.loads((ckpt / "defsent.json").read_text())
    (bad["future_info"] / "defsent.json").write_text(json.dumps({**info, "format": "defsent-checkpoint/9"}))
    bad["other_dict"].write_text(dictionary.read_text().replace('"w1"', '"zz"'))
    scored = [(" ".join(rng.choice(WORDS, 4)), " ".join(rng.choice(WORDS, 4)), s) for s in rng.uniform(0, 5, 24)]
    bad["pairs"].write_text("".join(f"{a}\t{b}\t{s:.2f}\n" for a, b, s in scored))
    bad["negative_pairs"].write_text("".join(f"{a}\t{b}\t{s - 2.5:.2f}\n" for a, b, s in scored))  # silver of a CBE
    bad["equal_scores"].write_text("".join(f"{a}\t{b}\t4\n" for a, b, _ in scored))
    bad["ragged_pairs"].write_text("a dog\tan animal\t4.0\na cat alone\n")
    bad["one_sentence"].write_text("the only sentence there is\n")
    bad["tab_pool"].write_text("a red tree\nan old stone\tby the river\na dark river\n")
    bad["dict_txt"].write_text(dictionary.read_text())  # a dictionary under a name that says text
    bad["dup_ids"].write_text(
        '{"t": "a red tree", "id": 1}\n{"t": "an old stone", "id": "1"}\n{"t": "a river", "id": 1.0}\n'
    )
    bad["nan_id"].write_text('{"t": "a red tree", "id": 1}\n{"t": "an old stone", "id": NaN}\n')
    bad["inf_id"].write_text('{"t": "a red tree", "id": 1e999}\n')
    shutil.copy(bank, bad["huge_bank"])  # finite float32, beyond float16's range
    with h5py.File(bad["huge_bank"], "a") as h5:
        h5["vectors"][...] = h5["vectors"][()] * 1e6
    for name, change in (("zero_post", "zero"), ("reshaped_post", "reshape")):  # damaged fitted chains
        shutil.copy(post, bad[name])
        with h5py.File(bad[name], "a") as h5:
            step = h5[next(iter(h5))]
            std = step["std"][()]
            del step["std"]
            step.create_dataset("std", data=np.zeros_like(std) if change == "zero" else std[:-3])
    senteval = build_mini(root / "transfer") / "senteval" / "downstream"
    (senteval / "MR").mkdir()
    (senteval / "MR" / "rt-polarity.pos").write_text("a great film\nsuch a great cast\n")
    (senteval / "MR" / "rt-polarity.neg").write_text("")  # a class with no examples
    return SimpleNamespace(
        root=root, bert=tiny_bert, roberta=tiny_roberta, dictionary=dictionary, bank=bank, ckpt=ckpt, texts=texts,
        data=data, post=post, vectors=vectors, bad=bad, transfer=senteval.parent, missing=root / "no-such-thing",
    )  # fmt: skip


@dataclass
class Case:
    """``argv(w, out)`` -> the arguments; the expected exit code and message; the file it must name."""

    name: str
    argv: object
    code: int = 2
    says: str = ""
    names: object = None  # w -> path the message names
    stdin: str | None = None
    env: dict = field(default_factory=dict)


def _o(out: Path, name: str = "out") -> Path:
    return out / name


CASES = [
    # ------------------------------------------------------------------ build-dict
    Case("build-dict missing source", lambda w, o: ["build-dict", w.missing, "--format", "tsv", "-o", _o(o, "d.jsonl")], 2, "no such file", lambda w: w.missing),
    Case("build-dict folder as tsv", lambda w, o: ["build-dict", w.root / "broken", "--format", "tsv", "-o", _o(o, "d.jsonl")], 2, "is a directory", lambda w: w.root / "broken"),
    Case("build-dict undecodable", lambda w, o: ["build-dict", w.bad["latin1"], "--format", "tsv", "-o", _o(o, "d.jsonl")], 2, "--encoding", lambda w: w.bad["latin1"]),
    Case("build-dict utf-8 read as utf-16", lambda w, o: ["build-dict", w.texts, "--format", "tsv", "--encoding", "utf-16", "-o", _o(o, "d.jsonl")], 2, "not valid utf-16", lambda w: w.texts),
    Case("build-dict blank file", lambda w, o: ["build-dict", w.bad["blank"], "--format", "tsv", "-o", _o(o, "d.jsonl")], 2, "no entries left"),
    Case("build-dict json array", lambda w, o: ["build-dict", w.bad["array"], "-o", _o(o, "d.jsonl")], 2, "expected a JSON object", lambda w: w.bad["array"]),
    Case("build-dict blank definition", lambda w, o: ["build-dict", w.bad["blank_def"], "-o", _o(o, "d.jsonl")], 2, "non-empty strings", lambda w: w.bad["blank_def"]),
    Case("build-dict bad split", lambda w, o: ["build-dict", w.dictionary, "--split", "nan,0,1", "-o", _o(o, "d.jsonl")], 2, "--split"),
    Case("build-dict negative seed", lambda w, o: ["build-dict", w.dictionary, "--seed", "-5", "-o", _o(o, "d.jsonl")], 2, "--seed"),
    Case("build-dict huge seed", lambda w, o: ["build-dict", w.dictionary, "--seed", str(2**40), "-o", _o(o, "d.jsonl")], 2, "--seed"),
    Case("build-dict unknown encoding", lambda w, o: ["build-dict", w.dictionary, "--encoding", "klingon", "-o", _o(o, "d.jsonl")], 2, "--encoding"),
    Case("build-dict output exists", lambda w, o: ["build-dict", w.dictionary, "-o", w.texts], 2, "--force", lambda w: w.texts),
    Case("build-dict output is a folder", lambda w, o: ["build-dict", w.dictionary, "-o", o, "--force"], 2, "is a folder"),
    Case("build-dict output folder missing", lambda w, o: ["build-dict", w.dictionary, "-o", o / "no" / "d.jsonl"], 2, "does not exist", lambda w: "no"),
    Case("build-dict single-token no tokenizer", lambda w, o: ["build-dict", w.dictionary, "--single-token", w.bad["no_tokenizer"], "-o", _o(o, "d.jsonl")], 2, "no tokenizer files", lambda w: w.bad["no_tokenizer"]),
    # ------------------------------------------------------------------ dict-stats
    Case("dict-stats missing", lambda w, o: ["dict-stats", w.missing], 2, "no such file", lambda w: w.missing),
    Case("dict-stats folder", lambda w, o: ["dict-stats", w.root], 2, "directory", lambda w: w.root),
    Case("dict-stats empty", lambda w, o: ["dict-stats", w.bad["empty"]], 2, "no entries", lambda w: w.bad["empty"]),
    Case("dict-stats not json", lambda w, o: ["dict-stats", w.texts], 2, "invalid JSON", lambda w: f"{w.texts}:1"),
    Case("dict-stats repeated entry", lambda w, o: ["dict-stats", w.bad["dupe"]], 2, "repeats line 1", lambda w: f"{w.bad['dupe']}:2"),
    Case("dict-stats undecodable", lambda w, o: ["dict-stats", w.bad["latin1"]], 2, "not valid utf-8", lambda w: w.bad["latin1"]),
    Case("dict-stats tokenizer missing", lambda w, o: ["dict-stats", w.dictionary, "--tokenizer", w.missing], 2, "no such folder", lambda w: w.missing),
    # ------------------------------------------------------------------ embed-entries
    Case("embed-entries dictionary missing", lambda w, o: ["embed-entries", w.missing, "-m", w.bert, "-o", _o(o, "b.h5")], 2, "no such file", lambda w: w.missing),
    Case("embed-entries dictionary is a folder", lambda w, o: ["embed-entries", w.root, "-m", w.bert, "-o", _o(o, "b.h5")], 2, "folder", lambda w: w.root),
    Case("embed-entries repeated entry", lambda w, o: ["embed-entries", w.bad["dupe"], "-m", w.bert, "-o", _o(o, "b.h5")], 2, "repeats", lambda w: w.bad["dupe"]),
    Case("embed-entries model missing", lambda w, o: ["embed-entries", w.dictionary, "-m", w.missing, "-o", _o(o, "b.h5")], 2, "no such folder", lambda w: w.missing),
    Case("embed-entries no tokenizer", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bad["no_tokenizer"], "-o", _o(o, "b.h5")], 2, "no tokenizer files", lambda w: w.bad["no_tokenizer"]),
    Case("embed-entries no weights", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bad["no_weights"], "-o", _o(o, "b.h5")], 2, "no model weights", lambda w: w.bad["no_weights"]),
    Case("embed-entries not h5", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "-o", _o(o, "b.npy")], 2, ".h5 suffix"),
    Case("embed-entries bad split", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--splits", "valid", "-o", _o(o, "b.h5")], 2, "unknown split"),
    Case("embed-entries texts missing", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--texts", w.missing, "-o", _o(o, "b.h5")], 2, "no such file", lambda w: w.missing),
    Case("embed-entries texts is a folder", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--texts", w.root, "-o", _o(o, "b.h5")], 2, "folder", lambda w: w.root),
    Case("embed-entries texts blank", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--texts", w.bad["blank"], "-o", _o(o, "b.h5")], 2, "no text in the file", lambda w: w.bad["blank"]),
    Case("embed-entries texts undecodable", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--texts", w.bad["latin1"], "-o", _o(o, "b.h5")], 2, "not valid utf-8", lambda w: w.bad["latin1"]),
    Case("embed-entries texts on stdin", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--texts", "-", "-o", _o(o, "b.h5")], 2, "not stdin"),
    Case("embed-entries second texts on stdin", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--texts", w.texts, "--texts", "-", "-o", _o(o, "b.h5")], 2, "not stdin"),
    Case("embed-entries texts given twice", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--texts", w.texts, "--texts", w.texts, "-o", _o(o, "b.h5")], 2, "given twice with --texts", lambda w: w.texts),
    Case("embed-entries texts-per-entry 0", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--texts", w.texts, "--texts-per-entry", "0", "-o", _o(o, "b.h5")], 2, "--texts-per-entry"),
    Case("embed-entries max-length too long", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "--max-length", "100000", "-o", _o(o, "b.h5")], 2, "--max-length 100000", lambda w: w.bert),
    Case("embed-entries batch 0", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "-b", "0", "-o", _o(o, "b.h5")], 2, "--batch-size"),
    Case("embed-entries output exists", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "-o", w.bank], 2, "--force", lambda w: w.bank),
    # ------------------------------------------------------------------ ica, inspect
    Case("ica bank missing", lambda w, o: ["ica", w.missing, "-o", _o(o, "i.h5")], 2, "no such bank", lambda w: w.missing),
    Case("ica not hdf5", lambda w, o: ["ica", w.bad["text"], "-o", _o(o, "i.h5")], 2, "cannot read HDF5", lambda w: w.bad["text"]),
    Case("ica not a bank", lambda w, o: ["ica", w.bad["not_bank"], "-o", _o(o, "i.h5")], 2, "not a defsent bank", lambda w: w.bad["not_bank"]),
    Case("ica 1-D vectors", lambda w, o: ["ica", w.bad["flat_bank"], "-o", _o(o, "i.h5")], 2, "wrong shapes", lambda w: w.bad["flat_bank"]),
    Case("ica NaN row", lambda w, o: ["ica", w.bad["nan_bank"], "-o", _o(o, "i.h5")], 2, "NaN", lambda w: w.bad["nan_bank"]),
    Case("ica scale 0", lambda w, o: ["ica", w.bank, "--scale", "0", "-o", _o(o, "i.h5")], 2, "--scale"),
    Case("ica scale nan", lambda w, o: ["ica", w.bank, "--scale", "nan", "-o", _o(o, "i.h5")], 2, "--scale"),
    Case("ica scale inf", lambda w, o: ["ica", w.bank, "--scale", "inf", "-o", _o(o, "i.h5")], 2, "--scale"),
    Case("ica tol nan", lambda w, o: ["ica", w.bank, "--tol", "nan", "-o", _o(o, "i.h5")], 2, "--tol"),
    Case("ica too many components", lambda w, o: ["ica", w.bank, "--n-components", "500", "-o", _o(o, "i.h5")], 2, "--n-components", lambda w: w.bank),
    Case("ica rescale plain bank", lambda w, o: ["ica", w.bank, "--rescale", "--scale", "1", "-o", _o(o, "i.h5")], 2, "--rescale", lambda w: w.bank),
    Case("ica rescale with fitting options", lambda w, o: ["ica", w.bad["narrow_bank"], "--rescale", "--n-components", "3", "-o", _o(o, "i.h5")], 2, "drop --n-components"),
    Case("inspect empty npy", lambda w, o: ["inspect", w.bad["empty_npy"]], 2, "cannot read .npy", lambda w: w.bad["empty_npy"]),
    Case("inspect 1-D npy", lambda w, o: ["inspect", w.bad["flat_npy"]], 2, "2-D float", lambda w: w.bad["flat_npy"]),
    Case("inspect missing", lambda w, o: ["inspect", w.missing], 2, "no such", lambda w: w.missing),
    Case("inspect NaN bank", lambda w, o: ["inspect", w.bad["nan_bank"]], 2, "NaN", lambda w: w.bad["nan_bank"]),
    Case("inspect plot suffix", lambda w, o: ["inspect", w.bank, "--plot", _o(o, "p.gif")], 2, "plot suffix"),
    # ------------------------------------------------------------------ train
    Case("train dictionary missing", lambda w, o: ["train", w.missing, "--bank", w.bank, "-m", w.bert, "-o", _o(o)], 2, "no such file", lambda w: w.missing),
    Case("train bank of another dictionary", lambda w, o: ["train", w.bad["other_dict"], "--bank", w.bank, "-m", w.bert, "-o", _o(o)], 2, "another dictionary", lambda w: w.bank),
    Case("train 1-D bank", lambda w, o: ["train", w.dictionary, "--bank", w.bad["flat_bank"], "-m", w.bert, "-o", _o(o)], 2, "wrong shapes", lambda w: w.bad["flat_bank"]),
    Case("train lr nan", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--lr", "nan"], 2, "--lr"),
    Case("train lr inf", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--lr", "inf"], 2, "--lr"),
    Case("train lr negative", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--lr", "-1"], 2, "--lr"),
    Case("train clip negative", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--max-grad-norm", "-1"], 2, "--max-grad-norm"),
    Case("train warmup 1", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--warmup-ratio", "1"], 2, "--warmup-ratio"),
    Case("train smoothing 1", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--label-smoothing", "1"], 2, "--label-smoothing"),
    Case("train seed negative", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--seed", "-5"], 2, "--seed"),
    Case("train nm-weight negative", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--nm-weight", "-1"], 2, "'--nm-weight': must be a finite number >= 0, got -1.0"),
    Case("train nm-temperature 0", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--nm-weight", "0.1", "--nm-temperature", "0"], 2, "'--nm-temperature': must be a finite number > 0, got 0.0"),
    Case("train-pairs nm-deletion 1", lambda w, o: ["train-pairs", w.texts, "-m", w.bert, "-o", _o(o), "--nm-weight", "0.1", "--nm-deletion", "1"], 2, "'--nm-deletion': must be a finite number in [0, 1), got 1.0"),
    Case("simcse nm with --nm-weight", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--objective", "nm", "--nm-weight", "0.1"], 2, "--objective nm is Noise Matching already"),
    Case("train seed too large", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--seed", str(2**40)], 2, "--seed"),
    Case("train max-length too long", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--max-length", "100000"], 2, "--max-length 100000"),
    Case("train inference pooling", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--inference-pooling", "nonsense"], 2, "'nonsense' is not one of"),
    Case("train keep best alone", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--keep", "best"], 2, "--eval-every"),
    Case("train eval without data", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--eval-every", "2", "--data", w.missing], 2, "data folder not found", lambda w: w.missing),
    Case("train output is a file", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", w.texts, "--force"], 2, "is a file", lambda w: w.texts),
    Case("train defsent with a bank", lambda w, o: ["train", w.dictionary, "--objective", "defsent", "--bank", w.bank, "-m", w.bert, "-o", _o(o)], 2, "uses no --bank"),
    Case("train defsent shard-bank", lambda w, o: ["train", w.dictionary, "--objective", "defsent", "-m", w.bert, "-o", _o(o), "--shard-bank"], 2, "--shard-bank: DefSent+ options"),
    Case("train defsent with a pooler", lambda w, o: ["train", w.dictionary, "--objective", "defsent", "--pooler", "none", "-m", w.bert, "-o", _o(o)], 2, "--pooler"),
    Case("train mlm weight negative", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--mlm-weight", "-1"], 2, "--mlm-weight"),
    Case("train mlm probability 1", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--mlm-weight", "0.1", "--mlm-probability", "1"], 2, "--mlm-probability"),
    Case("train unknown word head", lambda w, o: ["train", w.dictionary, "--objective", "defsent", "--word-head", "lm", "-m", w.bert, "-o", _o(o)], 2, "'lm' is not one of"),
    # ------------------------------------------------------------------ tsdae
    Case("tsdae sentences missing", lambda w, o: ["tsdae", w.missing, "-m", w.bert, "-o", _o(o)], 2, "no such file", lambda w: w.missing),
    Case("tsdae empty file", lambda w, o: ["tsdae", w.bad["empty"], "-m", w.bert, "-o", _o(o)], 2, "no sentences", lambda w: w.bad["empty"]),
    Case("tsdae deletion 1", lambda w, o: ["tsdae", w.texts, "-m", w.bert, "-o", _o(o), "--deletion", "1"], 2, "--deletion"),
    Case("tsdae lr zero", lambda w, o: ["tsdae", w.texts, "-m", w.bert, "-o", _o(o), "--lr", "0"], 2, "--lr"),
    Case("tsdae max pooling", lambda w, o: ["tsdae", w.texts, "-m", w.bert, "-o", _o(o), "--pooling", "max"], 2, "'max' is not one of"),
    # ------------------------------------------------------------------ simcse
    Case("simcse sentences missing", lambda w, o: ["simcse", w.missing, "-m", w.bert, "-o", _o(o)], 2, "no such file", lambda w: w.missing),
    Case("simcse empty file", lambda w, o: ["simcse", w.bad["empty"], "-m", w.bert, "-o", _o(o)], 2, "no sentences", lambda w: w.bad["empty"]),
    Case("simcse temperature zero", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--temperature", "0"], 2, "--temperature"),
    Case("simcse temperature nan", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--temperature", "nan"], 2, "--temperature"),
    Case("simcse deletion 1", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--objective", "nm", "--deletion", "1"], 2, "--deletion"),
    Case("simcse unknown objective", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--objective", "cse"], 2, "'cse' is not one of"),
    Case("simcse unknown stop-gradient", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--objective", "nm", "--stop-gradient", "both"], 2, "'both' is not one of"),
    Case("simcse max pooling", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--pooling", "max"], 2, "'max' is not one of"),
    Case("simcse dict-dev", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--eval-every", "2", "--eval-on", "dict-dev"], 2, "dict-dev"),
    Case("simcse eval without data", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--eval-every", "2", "--data", w.missing], 2, "data folder not found", lambda w: w.missing),
    Case("simcse keep best alone", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--keep", "best"], 2, "--eval-every"),
    Case("simcse mlm without an mlm head", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--mlm-weight", "0.1", "--mlm-probability", "1"], 2, "--mlm-probability"),
    Case("tsdae nm weight negative", lambda w, o: ["tsdae", w.texts, "-m", w.bert, "-o", _o(o), "--nm-weight", "-1"], 2, "--nm-weight"),
    # ------------------------------------------------------------------ train-pairs
    Case("train-pairs missing", lambda w, o: ["train-pairs", w.missing, "-m", w.bert, "-o", _o(o), "--eval-every", "0"], 2, "no such file", lambda w: w.missing),
    Case("train-pairs unscored", lambda w, o: ["train-pairs", w.texts, "-m", w.bert, "-o", _o(o), "--eval-every", "0"], 2, "sentence1<TAB>sentence2", lambda w: w.texts),
    Case("train-pairs max-score nan", lambda w, o: ["train-pairs", w.texts, "-m", w.bert, "-o", _o(o), "--max-score", "nan"], 2, "--max-score"),
    # ------------------------------------------------------------------ teacher, label
    Case("teacher unknown arch", lambda w, o: ["teacher", w.texts, "-m", w.bert, "-o", _o(o), "--arch", "xe"], 2, "'xe' is not one of"),
    Case("teacher unscored", lambda w, o: ["teacher", w.texts, "-m", w.bert, "-o", _o(o), "--eval-every", "0"], 2, "sentence1<TAB>sentence2", lambda w: w.texts),
    Case("label not a teacher", lambda w, o: ["label", w.texts, "-m", w.bert, "-o", o / "s.tsv"], 2, "sentence1<TAB>sentence2", lambda w: w.texts),
    # ------------------------------------------------------------------ sample-pairs, kde-filter
    Case("sample-pairs missing", lambda w, o: ["sample-pairs", w.missing, "-o", o / "p.tsv", "--strategy", "random"], 2, "no such file", lambda w: w.missing),
    Case("sample-pairs unknown strategy", lambda w, o: ["sample-pairs", w.texts, "-o", o / "p.tsv", "--strategy", "tfidf"], 2, "--strategy"),
    Case("kde-filter unscored silver", lambda w, o: ["kde-filter", w.texts, "--gold", w.texts, "-o", o / "k.tsv"], 2, "sentence1<TAB>sentence2", lambda w: w.texts),
    Case("kde-filter bad plot suffix", lambda w, o: ["kde-filter", w.texts, "--gold", w.texts, "-o", o / "k.tsv", "--plot", o / "p.gif"], 2, "unknown plot suffix"),
    Case("kde-filter gold of one score", lambda w, o: ["kde-filter", w.bad["pairs"], "--gold", w.bad["equal_scores"], "-o", o / "k.tsv"], 2, "all its 24 pairs score 4: kde-filter needs at least two different scores", lambda w: w.bad["equal_scores"]),
    Case("kde-filter silver of one score", lambda w, o: ["kde-filter", w.bad["equal_scores"], "--gold", w.bad["pairs"], "-o", o / "k.tsv"], 2, "two different scores", lambda w: w.bad["equal_scores"]),
    # ------------------------------------------------------------------ plot
    Case("plot missing run", lambda w, o: ["plot", w.missing, "-o", o / "c.png"], 2, "no such run folder", lambda w: w.missing),
    Case("plot not a run", lambda w, o: ["plot", w.bert, "-o", o / "c.png"], 2, "not a training run", lambda w: w.bert),
    Case("plot bad suffix", lambda w, o: ["plot", w.ckpt, "-o", o / "c.gif"], 2, "unknown plot suffix"),
    # ------------------------------------------------------------------ select-best, merge
    Case("select-best missing checkpoint", lambda w, o: ["select-best", w.missing, "--by", "dict-dev"], 2, "not a checkpoint folder", lambda w: w.missing),
    Case("select-best info not an object", lambda w, o: ["select-best", w.bad["list_info"], "--by", "dict-dev"], 2, "JSON object", lambda w: w.bad["list_info"]),
    Case("select-best link folder missing", lambda w, o: ["select-best", w.ckpt, "--by", "dict-dev", "--link", o / "no" / "best"], 2, "does not exist"),
    Case("select-best unknown checkpoint format", lambda w, o: ["select-best", w.bad["future_info"], "--by", "dict-dev"], 2, "defsent-checkpoint/9", lambda w: w.bad["future_info"]),
    Case("select-best copy alone", lambda w, o: ["select-best", w.ckpt, "--copy"], 2, "--link"),
    Case("select-best no data", lambda w, o: ["select-best", w.ckpt, "--by", "stsb-dev", "--data", w.missing], 2, "data folder", lambda w: w.missing),
    Case("merge different architectures", lambda w, o: ["merge", w.bert, w.roberta, "-o", _o(o)], 2, "different architectures"),
    Case("merge alpha out of range", lambda w, o: ["merge", w.bert, w.ckpt, "--alpha", "2", "-o", _o(o)], 2, "between 0"),
    Case("merge alpha nan", lambda w, o: ["merge", w.bert, w.ckpt, "--alpha", "nan", "-o", _o(o)], 2, "between 0"),
    Case("merge missing model", lambda w, o: ["merge", w.bert, w.missing, "-o", _o(o)], 2, "not a model folder", lambda w: w.missing),
    Case("merge a model twice", lambda w, o: ["merge", w.ckpt, w.ckpt, "--method", "uniform", "-o", _o(o)], 2, "more than once", lambda w: w.ckpt),
    Case("merge select dict-dev", lambda w, o: ["merge", w.bert, w.ckpt, "--alpha", "0:1:0.5", "--select", "dict-dev", "-o", _o(o)], 2, "'dict-dev' is not one of"),
    Case("merge output exists", lambda w, o: ["merge", w.bert, w.ckpt, "-o", w.bad["no_weights"]], 2, "--force", lambda w: w.bad["no_weights"]),
    # ------------------------------------------------------------------ lookup, eval-dict
    Case("lookup no query", lambda w, o: ["lookup", "-m", w.ckpt, "--bank", w.bank], 2, "no query", stdin=""),
    Case("lookup blank queries only", lambda w, o: ["lookup", "-m", w.ckpt, "--bank", w.bank], 2, "blank query line", lambda w: "<stdin>:1", stdin="\n \n"),
    Case("lookup blank query line", lambda w, o: ["lookup", "-m", w.ckpt, "--bank", w.bank], 2, "blank query line", lambda w: "<stdin>:2", stdin="a pet\n\nan animal\n"),
    Case("lookup blank argument", lambda w, o: ["lookup", "-m", w.ckpt, "--bank", w.bank, ""], 2, "blank"),
    Case("lookup bank missing", lambda w, o: ["lookup", "-m", w.ckpt, "--bank", w.missing, "a pet"], 2, "no such bank", lambda w: w.missing),
    Case("lookup NaN bank", lambda w, o: ["lookup", "-m", w.ckpt, "--bank", w.bad["nan_bank"], "a pet"], 2, "NaN", lambda w: w.bad["nan_bank"]),
    Case("lookup bank of another width", lambda w, o: ["lookup", "-m", w.ckpt, "--bank", w.bad["narrow_bank"], "a pet"], 2, "8 dims but the model", lambda w: w.bad["narrow_bank"]),
    Case("eval-dict bank of another width", lambda w, o: ["eval-dict", w.dictionary, "-m", w.ckpt, "--bank", w.bad["narrow_bank"]], 2, "8 dims but the model", lambda w: w.bad["narrow_bank"]),
    Case("lookup k 0", lambda w, o: ["lookup", "-m", w.ckpt, "--bank", w.bank, "-k", "0", "a pet"], 2, "--top-k"),
    Case("eval-dict bank of another dictionary", lambda w, o: ["eval-dict", w.bad["other_dict"], "-m", w.ckpt, "--bank", w.bank], 2, "another dictionary", lambda w: w.bank),
    Case("eval-dict neither bank nor word head", lambda w, o: ["eval-dict", w.dictionary, "-m", w.bert], 2, "--word-head"),
    Case("eval-dict bank and word head", lambda w, o: ["eval-dict", w.dictionary, "-m", w.ckpt, "--bank", w.bank, "--word-head", "mlm"], 2, "pass one of them"),
    Case("lookup neither bank nor word head", lambda w, o: ["lookup", "-m", w.bert, "a pet"], 2, "--word-head"),
    Case("define neither bank nor dictionary", lambda w, o: ["define", "piglet"], 2, "--bank"),
    Case("define bank missing", lambda w, o: ["define", "piglet", "--bank", w.missing], 2, "no such", lambda w: w.missing),
    Case("define dictionary missing", lambda w, o: ["define", "piglet", "--dictionary", w.missing], 2, "no such", lambda w: w.missing),
    Case("define no such entry", lambda w, o: ["define", "no-such-word-here", "--dictionary", w.dictionary], 2, "no-such-word-here", lambda w: w.dictionary),
    Case("define not a dictionary", lambda w, o: ["define", "piglet", "--dictionary", w.bad["array"]], 2, "", lambda w: w.bad["array"]),
    Case("eval-dict limit 0", lambda w, o: ["eval-dict", w.dictionary, "-m", w.ckpt, "--bank", w.bank, "--limit", "0"], 2, "--limit"),
    Case("eval-dict output exists", lambda w, o: ["eval-dict", w.dictionary, "-m", w.ckpt, "--bank", w.bank, "-o", w.texts], 2, "--force", lambda w: w.texts),
    # ------------------------------------------------------------------ encode
    Case("encode blank line", lambda w, o: ["encode", "-m", w.bert, "-o", _o(o, "v.npy")], 2, "blank input line", lambda w: "<stdin>:2", stdin="a dog\n\nthe cat\n"),
    Case("encode undecodable", lambda w, o: ["encode", "-m", w.bert, "-i", w.bad["latin1"], "-o", _o(o, "v.npy")], 2, "not valid utf-8", lambda w: f"{w.bad['latin1']}:1"),
    Case("encode stdin twice", lambda w, o: ["encode", "-m", w.bert, "-i", "-", "-i", "-", "-o", _o(o, "v.npy")], 2, "once", stdin="a dog\n"),
    Case("encode field missing", lambda w, o: ["encode", "-m", w.bert, "-i", w.dictionary, "--field", "text", "-o", _o(o, "v.npy")], 2, "no field 'text'", lambda w: f"{w.dictionary}:1"),
    Case("encode bad suffix", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "-o", _o(o, "v.csv")], 2, "suffix"),
    Case("encode max-length", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "--max-length", "100000", "-o", _o(o, "v.npy")], 2, "--max-length"),
    Case("encode post unknown", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "--post", "bogus", "-o", _o(o, "v.npy")], 2, "post-processing step"),
    Case("encode fit-on missing", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "--post", "zscore", "--fit-on", w.missing, "-o", _o(o, "v.npy")], 2, "no such file", lambda w: w.missing),
    Case("encode idf corpus is a folder", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "--weighting", "idf", "--idf-corpus", w.root, "-o", _o(o, "v.npy")], 2, "is a folder", lambda w: w.root),
    Case("encode empty idf corpus", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "--pooling", "mean", "--weighting", "idf", "--idf-corpus", w.bad["blank"], "-o", _o(o, "v.npy")], 2, "no lines", lambda w: w.bad["blank"]),
    Case("encode post-file not one", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "--post-file", w.bank, "-o", _o(o, "v.npy")], 2, "post-processing file", lambda w: w.bank),
    Case("encode empty file", lambda w, o: ["encode", "-m", w.bert, "-i", w.bad["empty"], "-o", _o(o, "v.npy")], 2, "no sentences", lambda w: w.bad["empty"]),
    Case("encode empty stdin", lambda w, o: ["encode", "-m", w.bert, "-o", _o(o, "v.npy")], 2, "no sentences in stdin", stdin=""),
    Case("encode post-file zero scale", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "--post-file", w.bad["zero_post"], "-o", _o(o, "v.npy")], 2, "damaged post-processing file", lambda w: w.bad["zero_post"]),
    Case("encode post-file reshaped", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "--post-file", w.bad["reshaped_post"], "-o", _o(o, "v.npy")], 2, "damaged post-processing file", lambda w: w.bad["reshaped_post"]),
    Case("inspect one path for both outputs", lambda w, o: ["inspect", w.bank, "-o", _o(o, "same.svg"), "--plot", _o(o, "same.svg")], 2, "same path", lambda w: "same.svg"),
    Case("encode output is a folder", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "-o", o, "--force"], 2, "is a folder"),
    Case("encode blank argument", lambda w, o: ["encode", "-m", w.bert, "a dog", " ", "-o", _o(o, "v.npy")], 2, "text 2 is blank"),
    Case("encode repeated id", lambda w, o: ["encode", "-m", w.bert, "-i", w.bad["dup_ids"], "--field", "t", "--id-field", "id", "-o", _o(o, "v.jsonl")], 2, "id 1.0 (--id-field id) is repeated", lambda w: f"{w.bad['dup_ids']}:3"),
    Case("encode NaN id", lambda w, o: ["encode", "-m", w.bert, "-i", w.bad["nan_id"], "--field", "t", "--id-field", "id", "-o", _o(o, "v.jsonl")], 2, "NaN is not a JSON number", lambda w: f"{w.bad['nan_id']}:2"),
    Case("encode infinite id", lambda w, o: ["encode", "-m", w.bert, "-i", w.bad["inf_id"], "--field", "t", "--id-field", "id", "-o", _o(o, "v.jsonl")], 2, "not a finite number", lambda w: f"{w.bad['inf_id']}:1"),
    Case("encode a file twice", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "-i", w.texts, "-f", "jsonl", "-o", _o(o, "v.jsonl")], 2, "given twice", lambda w: w.texts),
    Case("encode -o twice", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "-o", _o(o, "a.npy"), "-o", _o(o, "b.npy")], 2, "--output/-o was given more than once"),
    # ------------------------------------------------------------------ index, search, serve
    Case("index missing texts", lambda w, o: ["index", w.missing, "-m", w.bert, "-o", _o(o, "i.h5")], 2, "no such file", lambda w: w.missing),
    Case("index of a dictionary as text", lambda w, o: ["index", w.bad["dict_txt"], "-m", w.bert, "-o", _o(o, "i.h5")], 2, "not plain text", lambda w: w.bad["dict_txt"]),
    Case("index to stdout", lambda w, o: ["index", w.texts, "-m", w.bert, "-o", "-"], 2, "standard output"),
    Case("index repeated id", lambda w, o: ["index", w.bad["dup_ids"], "--field", "t", "--id-field", "id", "-m", w.bert, "-o", _o(o, "i.h5")], 2, "is repeated: it was the id of", lambda w: f"{w.bad['dup_ids']}:3"),
    Case("index infinite id", lambda w, o: ["index", w.bad["inf_id"], "--field", "t", "--id-field", "id", "-m", w.bert, "-o", _o(o, "i.h5")], 2, "not a finite number", lambda w: f"{w.bad['inf_id']}:1"),
    Case("index a file twice", lambda w, o: ["index", w.texts, w.texts, "-m", w.bert, "-o", _o(o, "i.h5")], 2, "given twice", lambda w: w.texts),
    Case("search blank query line", lambda w, o: ["search", "--index", w.bank, "-m", w.bert], 2, "blank query line", lambda w: "<stdin>:2", stdin="a pet\n \nan animal\n"),
    Case("search --index twice", lambda w, o: ["search", "--index", w.bank, "--index", w.bad["nan_bank"], "a pet"], 2, "--index was given more than once"),
    # (and a port that cannot be: where the repeat went through, a server would start, never to return)
    Case("serve --bank twice", lambda w, o: ["serve", "-m", w.bert, "--bank", w.bank, "--bank", w.bank, "--port", "-1"], 2, "--bank was given more than once"),
    Case("search missing index", lambda w, o: ["search", "--index", w.missing, "a query"], 2, "no such file", lambda w: w.missing),
    Case("search a text file as the index", lambda w, o: ["search", "--index", w.texts, "a query"], 2, "cannot read HDF5", lambda w: w.texts),
    Case("serve missing bank", lambda w, o: ["serve", "-m", w.bert, "--bank", w.missing], 2, "no such bank file", lambda w: w.missing),
    # ------------------------------------------------------------------ eval-sts, eval-senteval, fit-post, ditto-search
    Case("eval-sts no data", lambda w, o: ["eval-sts", "-m", w.bert, "--data", w.missing], 2, "data folder not found", lambda w: w.missing),
    Case("eval-sts unknown task", lambda w, o: ["eval-sts", "-m", w.bert, "--data", w.data, "--tasks", "STS99"], 2, "unknown STS task"),
    Case("eval-sts STS12 dev", lambda w, o: ["eval-sts", "-m", w.bert, "--data", w.data, "--tasks", "STS12", "--split", "dev"], 2, "only a test split"),
    Case("eval-sts layout", lambda w, o: ["eval-sts", "-m", w.bert, "--data", w.data, "--layout", "nonsense"], 2, "'nonsense' is not one of"),
    Case("eval-sts output not json", lambda w, o: ["eval-sts", "-m", w.bert, "--data", w.data, "-o", _o(o, "r.txt")], 2, ".json"),
    Case("eval-senteval empty class", lambda w, o: ["eval-senteval", "-m", w.bert, "--data", w.transfer, "--tasks", "MR"], 2, "no sentences", lambda w: w.transfer / "downstream" / "MR" / "rt-polarity.neg"),
    Case("eval-senteval unknown task", lambda w, o: ["eval-senteval", "-m", w.bert, "--data", w.data, "--tasks", "SNLI"], 2, "unknown transfer task"),
    Case("eval-cluster no data", lambda w, o: ["eval-cluster", "-m", w.bert, "--data", w.missing], 2, "data folder not found", lambda w: w.missing),
    Case("eval-cluster no clustering folder", lambda w, o: ["eval-cluster", "-m", w.bert, "--data", w.data, "--tasks", "tweet"], 2, "clustering/ not found"),
    Case("eval-cluster unknown task", lambda w, o: ["eval-cluster", "-m", w.bert, "--data", w.data, "--tasks", "news"], 2, "unknown clustering task"),
    Case("eval-cluster no model matches", lambda w, o: ["eval-cluster", "-m", str(w.root / "none-*"), "--data", w.data], 2, "no model folder matches"),
    Case("fit-post no steps", lambda w, o: ["fit-post", "-m", w.bert, "-i", w.texts, "-o", _o(o, "p.h5")], 2, "--post"),
    Case("fit-post empty input", lambda w, o: ["fit-post", "-m", w.bert, "--post", "zscore", "-i", w.bad["blank"], "-o", _o(o, "p.h5")], 2, "no sentences", lambda w: w.bad["blank"]),
    Case("fit-post input missing", lambda w, o: ["fit-post", "-m", w.bert, "--post", "zscore", "-i", w.missing, "-o", _o(o, "p.h5")], 2, "no such file", lambda w: w.missing),
    Case("fit-post input is a folder", lambda w, o: ["fit-post", "-m", w.bert, "--post", "zscore", "-i", w.root, "-o", _o(o, "p.h5")], 2, "is a folder", lambda w: w.root),
    Case("ditto-search layers", lambda w, o: ["ditto-search", "-m", w.bert, "--data", w.data, "--layers", "first,last"], 2, "--layers"),
    Case("ditto-search no data", lambda w, o: ["ditto-search", "-m", w.bert, "--data", w.missing], 2, "data folder not found", lambda w: w.missing),
    # ------------------------------------------------------------------ input that would make a run meaningless
    Case("simcse one sentence", lambda w, o: ["simcse", w.bad["one_sentence"], "-m", w.bert, "-o", _o(o)], 2, "holds one sentence", lambda w: w.bad["one_sentence"]),
    Case("simcse nm one sentence", lambda w, o: ["simcse", w.bad["one_sentence"], "-m", w.bert, "-o", _o(o), "--objective", "nm"], 2, "no negatives", lambda w: w.bad["one_sentence"]),
    Case("simcse batch of one", lambda w, o: ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "-b", "1"], 2, "--batch-size 1 leaves none"),
    Case("tsdae nm-weight batch of one", lambda w, o: ["tsdae", w.texts, "-m", w.bert, "-o", _o(o), "--nm-weight", "1", "-b", "1"], 2, "--batch-size 1 leaves none"),
    Case("simcse scored pairs as sentences", lambda w, o: ["simcse", w.bad["pairs"], "-m", w.bert, "-o", _o(o)], 2, "looks like a scored pairs file", lambda w: w.bad["pairs"]),
    Case("tsdae dictionary named .txt", lambda w, o: ["tsdae", w.bad["dict_txt"], "-m", w.bert, "-o", _o(o)], 2, "a dictionary JSONL", lambda w: w.bad["dict_txt"]),
    Case("train-pairs cosent batch of one", lambda w, o: ["train-pairs", w.bad["pairs"], "-m", w.bert, "-o", _o(o), "--loss", "cosent", "-b", "1", "--eval-every", "0"], 2, "--batch-size 1 puts one pair"),
    Case("train-pairs cosent equal scores", lambda w, o: ["train-pairs", w.bad["equal_scores"], "-m", w.bert, "-o", _o(o), "--loss", "cosent", "--eval-every", "0"], 2, "the same score", lambda w: w.bad["equal_scores"]),
    Case("teacher ce negative scores", lambda w, o: ["teacher", w.bad["negative_pairs"], "-m", w.bert, "-o", _o(o), "--eval-every", "0"], 2, "a negative score is not", lambda w: w.bad["negative_pairs"]),
    Case("label a dictionary", lambda w, o: ["label", w.dictionary, "-m", w.ckpt, "-o", o / "s.tsv"], 2, "a dictionary JSONL?", lambda w: w.dictionary),
    Case("train-pairs a file of sentences", lambda w, o: ["train-pairs", w.texts, "-m", w.bert, "-o", _o(o), "--eval-every", "0"], 2, "one sentence and no TAB", lambda w: w.texts),
    Case("sample-pairs TAB in a sentence", lambda w, o: ["sample-pairs", w.bad["tab_pool"], "--strategy", "random", "-o", o / "p.tsv"], 2, "holds a TAB", lambda w: f"{w.bad['tab_pool']}:2"),
    # ------------------------------------------------------------------ diagnoses that name the real cause
    Case("train pairs file as the dictionary", lambda w, o: ["train", w.bad["pairs"], "--bank", w.bank, "-m", w.bert, "-o", _o(o)], 2, "looks like a scored pairs file", lambda w: w.bad["pairs"]),
    Case("train float16 bank beyond float16", lambda w, o: ["train", w.dictionary, "--bank", w.bad["huge_bank"], "-m", w.bert, "-o", _o(o), "--bank-dtype", "float16"], 2, "beyond float16's range", lambda w: w.bad["huge_bank"]),
    Case("eval-sts excluding every pair", lambda w, o: ["eval-sts", "-m", w.bert, "--data", w.data, "--tasks", "STS-B", "--exclude-pairs", w.data / "downstream" / "STS" / "STSBenchmark" / "sts-test.csv"], 2, "--exclude-pairs leaves 0 of 5 pairs of STS-B"),
    Case("train-pairs undecodable", lambda w, o: ["train-pairs", w.bad["latin1"], "-m", w.bert, "-o", _o(o), "--eval-every", "0"], 2, "not valid utf-8 text", lambda w: w.bad["latin1"]),
    # ------------------------------------------------------------------ help that offers only what a command takes
    Case("train-pairs --eval-on dict-dev", lambda w, o: ["train-pairs", w.bad["pairs"], "-m", w.bert, "-o", _o(o), "--eval-on", "dict-dev"], 2, "'dict-dev' is not one of"),
    Case("teacher --eval-on sts-avg", lambda w, o: ["teacher", w.bad["pairs"], "-m", w.bert, "-o", _o(o), "--eval-on", "sts-avg"], 2, "'sts-avg' is not one of"),
    Case("teacher --eval-on dict-dev", lambda w, o: ["teacher", w.bad["pairs"], "-m", w.bert, "-o", _o(o), "--eval-on", "dict-dev"], 2, "'dict-dev' is not one of"),
    # ------------------------------------------------------------------ usage
    Case("unknown option", lambda w, o: ["encode", "--nope"], 2, "No such option"),
    Case("unknown command", lambda w, o: ["encdoe"], 2, "No such command"),
    Case("option without its value", lambda w, o: ["encode", "-m"], 2, "see 'defsent encode --help'"),
    Case("missing option", lambda w, o: ["train", w.dictionary], 2, "Missing option"),
]  # fmt: skip


def check_one_line_error(result, case: Case, w, out: Path, before: set) -> None:
    stderr = result.stderr
    assert result.exit_code == case.code, f"{case.name}: exit {result.exit_code}\n{stderr}\n{result.stdout[:500]}"
    assert "Traceback" not in stderr + result.stdout, case.name
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1].startswith("error:"), f"{case.name}: {stderr!r}"
    assert case.says in errors[0], f"{case.name}: {errors[0]!r} does not say {case.says!r}"
    if case.names is not None:
        assert str(case.names(w)) in errors[0], f"{case.name}: {errors[0]!r} does not name {case.names(w)}"
    assert set(out.rglob("*")) == before, f"{case.name}: left {set(out.rglob('*')) - before}"
    assert not [p for p in w.root.rglob("*") if p.name.startswith(".") and p.name.endswith((".tmp", ".writing"))]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line_and_leaves_nothing(case, w, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    before = set(out.rglob("*"))
    result = _cli(*case.argv(w, out), input=case.stdin, env={"DEFSENT_DATA": "", **case.env})
    check_one_line_error(result, case, w, out, before)


def test_the_table_covers_every_command():
    from defsent_cli.cli.app import app

    commands = {command.name for command in app.registered_commands}
    covered = {case.argv(SimpleNamespace(**dict.fromkeys(
        "root bert roberta dictionary bank ckpt texts data post vectors transfer missing".split(), Path("x")),
        bad={k: Path("x") for k in ("empty", "blank", "latin1", "array", "dupe", "blank_def", "text", "not_bank", "flat_bank",
             "nan_bank", "empty_npy", "flat_npy", "no_tokenizer", "no_weights", "list_info", "other_dict", "zero_post",
             "reshaped_post", "future_info", "narrow_bank", "pairs", "negative_pairs", "equal_scores", "ragged_pairs",
             "one_sentence", "tab_pool", "dict_txt", "huge_bank", "dup_ids", "nan_id", "inf_id")}), Path("o"))[0]
        for case in CASES}  # fmt: skip
    assert commands <= covered, commands - covered
    assert len(CASES) >= 100


# ---------------------------------------------------------------------------- full disks, closed pipes


def _limited(max_bytes: int):
    def limit() -> None:  # the file-size limit makes writes fail with EFBIG, as a full disk fails them
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return limit


FULL_DISK = [
    ("build-dict", lambda w, o: ["build-dict", w.dictionary, "-o", o / "d.jsonl"]),
    ("embed-entries", lambda w, o: ["embed-entries", w.dictionary, "-m", w.bert, "-o", o / "b.h5"]),
    ("encode npy", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "-o", o / "v.npy"]),
    ("encode h5", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "-o", o / "v.h5"]),
    ("encode jsonl", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "-o", o / "v.jsonl"]),
    (
        "train",
        lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", o / "ckpt", "--max-steps", "1"],
    ),
    ("ica whiten", lambda w, o: ["ica", w.bank, "--method", "whiten", "--n-components", "8", "-o", o / "i.h5"]),
    (
        "ica fit-rows",  # the streamed output
        lambda w, o: ["ica", w.bank, "--method", "whiten", "--n-components", "8", "--fit-rows", "50", "-o", o / "f.h5"],
    ),
    ("fit-post", lambda w, o: ["fit-post", "-m", w.bert, "--post", "whiten", "-i", w.texts, "-o", o / "p.h5"]),
    ("merge", lambda w, o: ["merge", w.bert, w.ckpt, "-o", o / "m"]),
    (
        "eval-sts",
        lambda w, o: ["eval-sts", "-m", w.bert, "--data", w.data, "--tasks", "STS12,STS-B,SICK-R", "-o", o / "r.json"],
    ),
    ("eval-dict", lambda w, o: ["eval-dict", w.dictionary, "-m", w.ckpt, "--bank", w.bank, "-o", o / "r.json"]),
    ("inspect", lambda w, o: ["inspect", w.bank, "-o", o / "r.json", "--plot", o / "p.png"]),
    ("select-best", lambda w, o: ["select-best", w.ckpt, "--by", "dict-dev", "-o", o / "r.json"]),
]


@pytest.mark.parametrize("name,argv", FULL_DISK, ids=[name for name, _ in FULL_DISK])
def test_a_full_disk_fails_in_one_line_and_leaves_nothing(name, argv, w, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    run = run_warm(
        [*DEFSENT, *map(str, argv(w, out))], env=ENV, capture_output=True, text=True, preexec_fn=_limited(256)
    )
    assert run.returncode == 1, f"{name}: {run.returncode}\n{run.stderr}"
    assert "Traceback" not in run.stderr
    error = run.stderr.strip().splitlines()[-1]
    assert error.startswith("error:") and "file too large" in error and str(out) in error, error
    assert list(out.iterdir()) == [], f"{name} left {list(out.iterdir())}"


STDOUT = [
    ("encode", lambda w: ["encode", "-m", w.bert, "-i", w.texts]),
    ("lookup", lambda w: ["lookup", "-m", w.ckpt, "--bank", w.bank, "-k", "5", "a red tree"]),
    ("dict-stats", lambda w: ["dict-stats", w.dictionary, "--json"]),
    ("inspect", lambda w: ["inspect", w.bank, "--json"]),
    ("select-best", lambda w: ["select-best", w.ckpt, "--by", "dict-dev"]),
]


@pytest.mark.parametrize("name,argv", STDOUT, ids=[name for name, _ in STDOUT])
def test_a_stdout_that_cannot_be_written_is_an_error(name, argv, w):
    with open("/dev/full", "w") as full:
        run = run_warm([*DEFSENT, *map(str, argv(w))], env=ENV, stdout=full, stderr=subprocess.PIPE, text=True)
    assert run.returncode == 1, f"{name}: {run.stderr}"
    assert run.stderr.strip().splitlines()[-1] == "error: <stdout>: no space left on the device"


def test_a_closed_pipe_is_an_error_and_a_slow_pipe_gets_everything(w):
    """stdout unbuffered (PYTHONUNBUFFERED=1 or python -u) takes part of a large write per call: all of it
    must arrive; and a reader that goes away is reported, not taken for success."""
    env = {**ENV, "PYTHONUNBUFFERED": "1"}
    many = w.root / "many.txt"
    many.write_text(w.texts.read_text() * 20)  # 2,400 vectors: 300 KB, more than a pipe holds
    args = [*DEFSENT, "encode", "-m", str(w.bert), "-i", str(many)]
    run = subprocess.run(args, env=env, capture_output=True)
    assert run.returncode == 0 and len(run.stdout) == 128 + 2400 * 32 * 4  # .npy header + 2,400 x 32 float32
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.read(16)
    process.stdout.close()
    assert process.wait(timeout=DEADLINE) == 1
    assert process.stderr.read().decode().strip().splitlines()[-1] == "error: <stdout>: output closed (broken pipe)"


def test_a_closed_stdout_is_an_error_for_data_and_no_matter_for_files(w, tmp_path):
    """``>&-``: writing data to stdout fails in one line (exit 1); a command writing a file works as usual."""
    closed = ["bash", "-c", 'exec "$@" >&-', "-"]
    run = subprocess.run([*closed, *DEFSENT, "lookup", "-m", str(w.ckpt), "--bank", str(w.bank), "a red tree"],
                         env=ENV, capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip().splitlines()[-1] == "error: <stdout>: output closed (bad file descriptor)"
    out = tmp_path / "v.npy"
    run = subprocess.run([*closed, *DEFSENT, "encode", "-m", str(w.bert), "-i", str(w.texts), "-o", str(out)],
                         env=ENV, capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert np.load(out).shape == (120, 32)


# An output folder that cannot be written is found before any work, and the error names the user's path (never a
# temporary file); an output whose side output (--plot, --link) then fails is not left behind either.


@pytest.fixture
def blocked(tmp_path):
    """A folder where nothing can be created: immutable for root (chattr +i: "operation not permitted"),
    read-only otherwise ("permission denied")."""
    folder = tmp_path / "blocked"
    folder.mkdir()
    if os.geteuid() == 0:
        import shutil

        made = shutil.which("chattr") and subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
        if not made or made.returncode != 0:
            pytest.skip("root cannot make a folder unwritable here (no chattr +i)")
        undo = ["chattr", "-i", str(folder)]
    else:
        folder.chmod(0o555)
        undo = None
    yield folder
    if undo:
        subprocess.run(undo, check=True)
    else:
        folder.chmod(0o755)


UNWRITABLE = [
    ("sample-pairs", lambda w, b, o: ["sample-pairs", w.texts, "--strategy", "semantic", "-m", w.bert, "-o", b / "s.tsv"], "s.tsv"),
    ("label", lambda w, b, o: ["label", w.texts, "-m", w.ckpt, "-o", b / "s.tsv"], "s.tsv"),
    ("encode", lambda w, b, o: ["encode", "-m", w.bert, "-i", w.texts, "-o", b / "v.npy"], "v.npy"),
    ("embed-entries", lambda w, b, o: ["embed-entries", w.dictionary, "-m", w.bert, "-o", b / "b.h5"], "b.h5"),
    ("train", lambda w, b, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", b / "ckpt", "--max-steps", "1"], "ckpt"),
    ("simcse", lambda w, b, o: ["simcse", w.texts, "-m", w.bert, "-o", b / "ckpt", "--max-steps", "1"], "ckpt"),
    ("merge", lambda w, b, o: ["merge", w.bert, w.ckpt, "-o", b / "m"], "m"),
    ("eval-sts", lambda w, b, o: ["eval-sts", "-m", w.bert, "--data", w.data, "--tasks", "STS-B", "-o", b / "r.json"], "r.json"),
    ("kde-filter --plot", lambda w, b, o: ["kde-filter", o / "silver.tsv", "--gold", o / "silver.tsv", "-o", o / "k.tsv", "--plot", b / "p.png"], "p.png"),
    ("inspect --plot", lambda w, b, o: ["inspect", w.bank, "-o", o / "r.json", "--plot", b / "p.png"], "p.png"),
    ("select-best --link", lambda w, b, o: ["select-best", w.ckpt, "--by", "dict-dev", "-o", o / "r.json", "--link", b / "best"], "best"),
]  # fmt: skip


@pytest.mark.parametrize("name,argv,named", UNWRITABLE, ids=[case[0] for case in UNWRITABLE])
def test_an_unwritable_output_folder_fails_first_naming_the_output(name, argv, named, w, blocked, tmp_path):
    ok = tmp_path / "ok"
    ok.mkdir()
    rng = np.random.default_rng(0)
    (ok / "silver.tsv").write_text("".join(f"a {i}\tb {i}\t{s:.2f}\n" for i, s in enumerate(rng.uniform(0, 5, 40))))
    before = set(ok.iterdir())
    result = _cli(*argv(w, blocked, ok))
    assert result.exit_code == 1, f"{name}: exit {result.exit_code}: {result.stderr}"
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("error:") and "Traceback" not in result.stderr, error
    assert f"{blocked / named}: " in error and ".tmp" not in error and ".partial" not in error, error
    assert "wrote" not in result.stderr and "training" not in result.stderr, f"{name} worked first: {result.stderr}"
    assert set(ok.iterdir()) == before and list(blocked.iterdir()) == [], f"{name} left {set(ok.iterdir()) - before}"


SIDE_OUTPUT_FAILS = [  # the side output fails after the main one was written (a full disk while drawing the plot)
    ("kde-filter --plot", "defsent_cli.augment.kde.plot_histograms", lambda w, o: ["kde-filter", o / "silver.tsv", "--gold", o / "silver.tsv", "-o", o / "k.tsv", "--plot", o / "p.png"]),
    ("inspect --plot", "defsent_cli.space.plots.plot_spaces", lambda w, o: ["inspect", w.bank, "-o", o / "r.json", "--plot", o / "p.png"]),
    ("select-best --link", "defsent_cli.evaluation.selection.link_winner", lambda w, o: ["select-best", w.ckpt, "--by", "dict-dev", "-o", o / "r.json", "--link", o / "best"]),
]  # fmt: skip


@pytest.mark.parametrize("name,target,argv", SIDE_OUTPUT_FAILS, ids=[case[0] for case in SIDE_OUTPUT_FAILS])
def test_a_failed_side_output_takes_the_main_output_with_it(name, target, argv, w, tmp_path, monkeypatch):
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "side"))

    monkeypatch.setattr(target, full)
    rng = np.random.default_rng(0)
    (tmp_path / "silver.tsv").write_text(
        "".join(f"a {i}\tb {i}\t{s:.2f}\n" for i, s in enumerate(rng.uniform(0, 5, 40)))
    )
    result = _cli(*argv(w, tmp_path))
    assert result.exit_code == 1 and "no space left" in result.stderr, f"{name}: {result.stderr}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["silver.tsv"], f"{name} left {list(tmp_path.iterdir())}"


# An output that is one of the command's own inputs (or a folder holding one) is refused before any work, even
# with --force: each case runs on copies, and the copies must come out byte for byte unchanged.
CLOBBER = [
    ("train -o the base model", lambda w, c: ["train", w.dictionary, "--bank", w.bank, "-m", c["bert"], "-o", c["bert"]]),
    ("train -o the folder of its dictionary", lambda w, c: ["train", c["dict"], "--bank", w.bank, "-m", w.bert, "-o", c["dict"].parent]),
    ("merge -o one of its models", lambda w, c: ["merge", w.bert, c["ckpt"], "-o", c["ckpt"]]),
    ("ica -o its bank", lambda w, c: ["ica", c["bank"], "-o", c["bank"], "--n-components", "8"]),
    ("build-dict -o its source", lambda w, c: ["build-dict", c["dict"], "-o", c["dict"]]),
    ("embed-entries -o its dictionary", lambda w, c: ["embed-entries", c["dict"], "-m", w.bert, "-o", c["dict"]]),
    ("encode -o its input", lambda w, c: ["encode", "-m", w.bert, "-i", c["dict"], "--field", "entry", "-o", c["dict"]]),
    ("select-best --link one of its checkpoints", lambda w, c: ["select-best", w.ckpt, c["ckpt"], "--by", "dict-dev", "--link", c["ckpt"]]),
]  # fmt: skip


@pytest.mark.parametrize("name,argv", CLOBBER, ids=[name for name, _ in CLOBBER])
def test_an_output_never_replaces_an_input_even_with_force(name, argv, w, tmp_path):
    import shutil

    copies = {"bert": tmp_path / "bert", "ckpt": tmp_path / "ckpt", "bank": tmp_path / "bank.h5"}
    shutil.copytree(w.bert, copies["bert"])
    shutil.copytree(w.ckpt, copies["ckpt"])
    shutil.copy(w.bank, copies["bank"])
    (tmp_path / "d").mkdir()
    copies["dict"] = tmp_path / "d" / "dict.jsonl"
    shutil.copy(w.dictionary, copies["dict"])

    def snapshot():
        return {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    before = snapshot()
    result = _cli(*argv(w, copies), "--force")
    assert result.exit_code == 2, f"{name}: exit {result.exit_code}: {result.stderr}"
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("error:") and "write the output elsewhere" in error, error
    assert snapshot() == before, f"{name} changed its inputs"


def test_force_over_a_symlinked_output_replaces_the_link_and_leaves_nothing_beside_it(w, tmp_path):
    """select-best --link makes OUTPUT a symlink: --force replaces the link (its target stays as it was), and no
    ``.OUTPUT.old`` is left beside it."""
    import shutil

    target = tmp_path / "seed-1"
    shutil.copytree(w.ckpt, target)
    before = {p.name: p.read_bytes() for p in target.iterdir() if p.is_file()}
    link = tmp_path / "best"
    link.symlink_to(target.name, target_is_directory=True)
    result = _cli("merge", w.bert, w.ckpt, "-o", link, "--force")
    assert result.exit_code == 0, result.stderr
    assert not link.is_symlink() and (link / "model.safetensors").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best", "seed-1"], list(tmp_path.iterdir())
    assert {p.name: p.read_bytes() for p in target.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("rank", ["0", "1"])
def test_under_torchrun_a_documented_error_is_printed_by_rank_0_alone(rank, w, tmp_path):
    """Every process of torchrun reads the same arguments and files and meets the same bad input: one line in
    all, rank 0's (the same holds for a usage error and for the ``interrupted`` line)."""
    env = {"WORLD_SIZE": "2", "RANK": rank, "LOCAL_RANK": rank, "LOCAL_WORLD_SIZE": "2"}
    bad = _cli("train", w.missing, "--bank", w.bank, "-m", w.bert, "-o", tmp_path / "o", env=env)
    usage = _cli("train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", tmp_path / "o", "--nope", env=env)
    for result in (bad, usage):
        assert result.exit_code == 2
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == (1 if rank == "0" else 0), result.stderr


# ---------------------------------------------------------------------------- options that cannot take effect
# Given on the command line where they cannot act, an option is warned about (one line, the run goes on);
# the same option where it acts, or set by its environment variable, is not.


def _train(w, o: Path) -> list:
    return ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", _o(o), "--max-steps", "1", "-b", "4"]


def _tsdae(w, o: Path, sentences) -> list:
    return ["tsdae", sentences, "-m", w.bert, "-o", _o(o), "--max-steps", "1", "-b", "2"]


def _simcse(w, o: Path) -> list:
    return ["simcse", w.texts, "-m", w.bert, "-o", _o(o), "--max-steps", "1", "-b", "2"]


INEFFECTIVE = [
    ("train --eval-on without --eval-every", lambda w, o: [*_train(w, o), "--eval-on", "dev"], {}, "--eval-on has no effect"),
    ("train --eval-every 0 --eval-on", lambda w, o: [*_train(w, o), "--eval-every", "0", "--eval-on", "stsb-dev"], {}, "--eval-on has no effect"),
    ("train --data without --eval-every", lambda w, o: [*_train(w, o), "--data", w.data], {}, "--data (the evaluation data) has no effect"),
    ("train DEFSENT_DATA without --eval-every", lambda w, o: _train(w, o), {"DEFSENT_DATA": "DATA"}, None),
    ("train --mlm-probability without --mlm-weight", lambda w, o: [*_train(w, o), "--mlm-probability", "0.3"], {}, "--mlm-probability has no effect"),
    ("train --mlm-probability with --mlm-weight", lambda w, o: [*_train(w, o), "--mlm-weight", "0.1", "--mlm-probability", "0.3"], {}, None),
    ("train --word-head without --mlm-weight", lambda w, o: [*_train(w, o), "--word-head", "embeddings"], {}, "--word-head has no effect"),
    ("train --head-lr with --pooler none", lambda w, o: [*_train(w, o), "--pooler", "none", "--head-lr", "1e-3"], {}, "--head-lr has no effect"),
    ("train --head-lr with a head", lambda w, o: [*_train(w, o), "--pooler", "linear", "--head-lr", "1e-3"], {}, None),
    ("tsdae --split on a text file", lambda w, o: [*_tsdae(w, o, w.texts), "--split", "all"], {}, "--split has no effect"),
    ("tsdae --split on a dictionary", lambda w, o: [*_tsdae(w, o, w.dictionary), "--split", "all"], {}, None),
    ("tsdae --temperature without --nm-weight", lambda w, o: [*_tsdae(w, o, w.texts), "--temperature", "0.1"], {}, "--temperature has no effect"),
    ("simcse --deletion with simcse", lambda w, o: [*_simcse(w, o), "--deletion", "0.3"], {}, "--deletion has no effect"),
    ("simcse --deletion with nm", lambda w, o: [*_simcse(w, o), "--objective", "nm", "--deletion", "0.3"], {}, None),
    ("simcse --stop-gradient with simcse", lambda w, o: [*_simcse(w, o), "--stop-gradient", "none"], {}, "--stop-gradient has no effect"),
    ("simcse --word-head without --mlm-weight", lambda w, o: [*_simcse(w, o), "--word-head", "embeddings"], {}, "--word-head has no effect"),
    ("simcse --eval-on without --eval-every", lambda w, o: [*_simcse(w, o), "--eval-on", "stsb-dev"], {}, "--eval-on has no effect"),
    ("simcse --split on a text file", lambda w, o: [*_simcse(w, o), "--split", "all"], {}, "--split has no effect"),
    ("train --nm-temperature without --nm-weight", lambda w, o: [*_train(w, o), "--nm-temperature", "0.1"], {}, "--nm-temperature has no effect"),
    ("train --nm-deletion with --nm-weight", lambda w, o: [*_train(w, o), "--nm-weight", "0.1", "--nm-deletion", "0.3"], {}, None),
    ("simcse --nm-deletion without --nm-weight", lambda w, o: [*_simcse(w, o), "--nm-deletion", "0.3"], {}, "--nm-deletion has no effect"),
]  # fmt: skip


@pytest.mark.parametrize("name,argv,env,says", INEFFECTIVE, ids=[case[0] for case in INEFFECTIVE])
def test_an_option_that_cannot_take_effect_is_warned_about(name, argv, env, says, w, tmp_path):
    env = {k: str(w.data) if v == "DATA" else v for k, v in env.items()}
    result = _cli(*argv(w, tmp_path), env={"DEFSENT_DATA": "", **env})
    assert result.exit_code == 0, f"{name}: {result.stderr}"
    assert (tmp_path / "out" / "model.safetensors").is_file()  # the run went on
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:") and "has no effect" in line]
    if says is None:
        assert warned == [], f"{name}: {result.stderr}"
    else:
        assert len(warned) == 1 and says in warned[0], f"{name}: {result.stderr}"


def _encode(w, o: Path, *extra) -> list:
    return ["encode", "-m", w.bert, "-i", w.texts, "-o", o / "v.npy", *extra]


def _build(w, o: Path, *extra) -> list:
    return ["build-dict", w.dictionary, "-o", o / "d.jsonl", *extra]


#: Options that cannot take effect, beyond training's (the run goes on; its output is there): (name, argv, env,
#: the warning, the output).
INEFFECTIVE_ELSEWHERE = [
    ("encode --store-text into npy", lambda w, o: _encode(w, o, "--store-text"), {}, "--store-text has no effect on npy", "v.npy"),
    ("encode --store-text into h5", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "-o", o / "v.h5", "--store-text"], {}, "--store-text has no effect on h5", "v.h5"),
    ("encode --store-text into jsonl", lambda w, o: ["encode", "-m", w.bert, "-i", w.texts, "-o", o / "v.jsonl", "--store-text"], {}, None, "v.jsonl"),
    ("encode --field with arguments", lambda w, o: ["encode", "-m", w.bert, "--field", "text", "a dog", "-o", o / "v.npy"], {}, "--field has no effect", "v.npy"),
    ("build-dict --split-by without --split", lambda w, o: _build(w, o, "--split-by", "entry"), {}, "--split-by has no effect without --split", "d.jsonl"),
    ("build-dict --split-by with --split", lambda w, o: _build(w, o, "--split-by", "entry", "--split", "0.8,0.1,0.1"), {}, None, "d.jsonl"),
    ("build-dict --seed without --split or --sample", lambda w, o: _build(w, o, "--seed", "3"), {}, "--seed has no effect", "d.jsonl"),
    ("build-dict --seed with --sample", lambda w, o: _build(w, o, "--seed", "3", "--sample", "5"), {}, None, "d.jsonl"),
    ("DEFSENT_NO_PROGRESS=maybe", lambda w, o: _encode(w, o), {"DEFSENT_NO_PROGRESS": "maybe"}, "DEFSENT_NO_PROGRESS='maybe' is not understood", "v.npy"),
    ("DEFSENT_PROGRESS_SECONDS=soon", lambda w, o: _encode(w, o), {"DEFSENT_NO_PROGRESS": "0", "DEFSENT_PROGRESS_SECONDS": "soon"}, "DEFSENT_PROGRESS_SECONDS='soon' is not understood", "v.npy"),
    ("DEFSENT_NO_PROGRESS=yes", lambda w, o: _encode(w, o), {"DEFSENT_NO_PROGRESS": "yes"}, None, "v.npy"),
]  # fmt: skip


@pytest.mark.parametrize("name,argv,env,says,output", INEFFECTIVE_ELSEWHERE, ids=[c[0] for c in INEFFECTIVE_ELSEWHERE])
def test_an_option_or_switch_that_cannot_take_effect_is_warned_about(name, argv, env, says, output, w, tmp_path):
    result = _cli(*argv(w, tmp_path), env={"DEFSENT_DATA": "", **env})
    assert result.exit_code == 0, f"{name}: {result.stderr}"
    assert (tmp_path / output).is_file()  # the run went on
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    if says is None:
        assert warned == [], f"{name}: {result.stderr}"
    else:
        assert len(warned) == 1 and says in warned[0], f"{name}: {result.stderr}"


def test_an_environment_switch_reads_one_way(monkeypatch, library_log):
    from defsent_cli import environment
    from defsent_cli.encoder.precision import AMX_ENV, cpu_amx_bf16

    for value, expected in (("1", True), ("Yes", True), ("on", True), ("0", False), ("false", False), ("", False)):
        monkeypatch.setenv("DEFSENT_X", value)
        assert environment.switch("DEFSENT_X") is expected
    assert library_log == []
    monkeypatch.setenv(AMX_ENV, "sometimes")
    cpu_amx_bf16()  # not understood: detected, as if unset, and said
    monkeypatch.setenv(AMX_ENV, "true")
    assert cpu_amx_bf16() is True
    assert [level for level, text in library_log if AMX_ENV in text and "'sometimes' is not understood" in text] == [
        "warning"
    ]


# ---------------------------------------------------------------------------- messages, help and defaults


def test_messages_count_in_the_singular(w, tmp_path):
    ragged = _cli("kde-filter", w.bad["ragged_pairs"], "--gold", w.bad["pairs"], "-o", tmp_path / "k.tsv")
    assert ragged.exit_code == 2 and "got 1 field" in ragged.stderr and "1 fields" not in ragged.stderr, ragged.stderr
    one = _cli("simcse", w.texts, "-m", w.bert, "-o", tmp_path / "one", "--max-steps", "1", "-b", "4")
    assert one.exit_code == 0, one.stderr
    assert "1 step" in one.stderr and "1 steps" not in one.stderr, one.stderr


@pytest.mark.parametrize("command,what", [("simcse", "sentences"), ("tsdae", "sentences"), ("train-pairs", "pairs"),
                                          ("teacher", "pairs"), ("train", "definitions")])  # fmt: skip
def test_limit_says_what_it_samples(command, what):
    help_text = " ".join(_cli(command, "--help", env={"COLUMNS": "200"}).stdout.split())
    assert f"Use a seeded random sample (--seed) of this many {what}" in help_text, help_text


def test_sample_pairs_without_a_model_draws_random_pairs_and_reads_a_dictionarys_definitions(w, tmp_path):
    plain = _cli("sample-pairs", w.texts, "-o", tmp_path / "p.tsv")  # the default strategy needs no --model
    assert plain.exit_code == 0, plain.stderr
    assert "random" in plain.stderr and (tmp_path / "p.tsv").read_text().count("\t") > 0
    found = _cli("sample-pairs", w.dictionary, "-o", tmp_path / "d.tsv")
    assert found.exit_code == 0, found.stderr
    definitions = {d for line in w.dictionary.read_text().splitlines() for d in json.loads(line)["definitions"]}
    sides = {side for line in (tmp_path / "d.tsv").read_text().splitlines() for side in line.split("\t")}
    assert sides <= definitions and "definitions" in found.stderr


WARNED = [
    ("train --max-steps 1 with a warm-up of 1 step", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", o, "--max-steps", "1", "--warmup-ratio", "0.6"], "learning rate 0 at every step"),
    ("train, a head warm-up as long as the run", lambda w, o: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", o, "--max-steps", "2", "-b", "2", "--pooler", "linear", "--head-warmup-steps", "2"], "--head-warmup-steps 2 covers all 2 steps"),
    ("train-pairs on 0-1 scores with --max-score 5", lambda w, o: ["train-pairs", w.root / "unit.tsv", "-m", w.bert, "-o", o, "--max-steps", "1", "--eval-every", "0"], "pass --max-score 1"),
    ("kde-filter silver and gold on two scales", lambda w, o: ["kde-filter", w.root / "unit.tsv", "--gold", w.bad["pairs"], "-o", o], "different scales"),
]  # fmt: skip


@pytest.mark.parametrize("name,argv,says", WARNED, ids=[case[0] for case in WARNED])
def test_a_run_that_would_mislead_is_warned_about(name, argv, says, w, tmp_path):
    unit = w.root / "unit.tsv"
    if not unit.exists():
        lines = w.bad["pairs"].read_text().splitlines()
        unit.write_text("".join(f"{a}\t{b}\t{float(s) / 5:.3f}\n" for a, b, s in (line.split("\t") for line in lines)))
    result = _cli(*argv(w, tmp_path / "out"))
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:") and says in line]
    assert len(warned) == 1, f"{name}: exit {result.exit_code}: {result.stderr}"


BEFORE_TORCH = [
    ("train-pairs", lambda w: ["train-pairs", w.bad["ragged_pairs"], "-m", w.bert, "-o", w.root / "never"]),
    ("teacher", lambda w: ["teacher", w.bad["negative_pairs"], "-m", w.bert, "-o", w.root / "never"]),
    ("train", lambda w: ["train", w.bad["pairs"], "--bank", w.bank, "-m", w.bert, "-o", w.root / "never"]),
]


@pytest.mark.parametrize("name,argv", BEFORE_TORCH, ids=[case[0] for case in BEFORE_TORCH])
def test_a_bad_pairs_or_dictionary_file_fails_before_torch_loads(name, argv, w):
    """A file that is not what the command reads is found in a fraction of a second, not after torch, the
    sentence-transformers losses and the model have loaded (2-10 s)."""
    script = (
        "import sys\nfrom defsent_cli.cli import run\nsys.argv = ['defsent', *sys.argv[1:]]\n"
        "try:\n    run()\nexcept SystemExit as exc:\n    print(exc.code, 'torch' in sys.modules)\n"
    )
    found = run_bounded([sys.executable, "-c", script, *map(str, argv(w))], DEADLINE, env=ENV, capture_output=True)
    assert found.stdout.decode().split() == ["2", "False"], found.stderr.decode()


# ---------------------------------------------------------------------------- interrupted and crafted training state


def _train_args(w, out: Path, *extra, epochs: int = 50) -> list[str]:
    args = ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-o", out, "-b", "1", "--epochs", epochs]
    return [*DEFSENT, *map(str, [*args, *extra])]


def _wait_for(predicate, seconds: float = DEADLINE) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def _interrupt_after(
    w, tmp_path: Path, steps: int, *extra, sig: int = signal.SIGINT
) -> tuple[int, str, Path, list[str]]:
    """Train (output in ``tmp_path/work``), send ``sig`` (SIGINT: Ctrl-C; SIGTERM: kill, timeout, Slurm) once
    ``steps`` steps are done; (exit code, stderr, output, the files in ``tmp_path/work`` when it was sent).

    tests/pause_after_step.py holds the run still after ``steps`` steps and says so in a marker file: the signal
    is sent at that known point, never raced against the machine's speed (a fast machine finished a run of
    500 steps before the signal once arrived, and the run exited 0).
    """
    work = tmp_path / "work"
    work.mkdir()
    out, marker, stderr = work / "ckpt", tmp_path / "paused", tmp_path / "stderr.txt"
    env = {**ENV, "PAUSE_AFTER_STEP": str(steps), "PAUSE_MARKER": str(marker)}
    command = [sys.executable, str(Path(__file__).with_name("pause_after_step.py"))]
    command += _train_args(w, out, *extra, epochs=2)[len(DEFSENT) :]  # 20 steps of 1 definition
    with open(stderr, "w") as errors:
        process = subprocess.Popen(command, env=env, stderr=errors, text=True)
    try:
        _wait_for(lambda: marker.is_file() or process.poll() is not None)
        assert marker.is_file(), f"the run ended before step {steps}: {stderr.read_text()}"
        assert marker.read_text() == f"{steps}\n"
        assert process.poll() is None  # still there, waiting
        files = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
        process.send_signal(sig)
        code = process.wait(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            kill_tree(process.pid)
            process.wait()
    return code, stderr.read_text(), out, files


INTERRUPTS = [signal.SIGINT, signal.SIGTERM]  # SIGTERM is answered as Ctrl-C is (README, "Conventions")


@pytest.mark.parametrize("sig", INTERRUPTS, ids=[s.name for s in INTERRUPTS])
def test_an_interrupt_before_the_first_save_leaves_nothing(sig, w, tmp_path):
    args = ["--save-every", "0", "--log-every", "1"]
    code, stderr, out, files = _interrupt_after(w, tmp_path, 3, *args, sig=sig)
    assert files == ["ckpt.partial", "ckpt.partial/log.jsonl"]  # what was there when the signal came
    assert code == 130, stderr
    assert stderr.strip().splitlines()[-1] == (
        "interrupted: no training state was saved yet (--save-every 0: none is saved), so nothing is kept; run the "
        "command again to start over"
    )
    assert "Traceback" not in stderr
    assert list(out.parent.iterdir()) == []  # not even the log of the 3 steps done


@pytest.mark.parametrize("sig", INTERRUPTS, ids=[s.name for s in INTERRUPTS])
def test_an_interrupt_after_a_save_keeps_the_state_and_it_is_never_dropped_silently(sig, w, tmp_path):
    code, stderr, out, files = _interrupt_after(w, tmp_path, 3, "--save-every", "2", sig=sig)
    assert "ckpt.partial/state.safetensors" in files and "ckpt" not in files
    assert code == 130, stderr
    assert stderr.strip().splitlines()[-1].startswith("interrupted: the state of step 2 of 20 is kept in ")
    state = out.with_name("ckpt.partial") / "state.safetensors"
    assert state.is_file() and not out.exists()
    again = run_bounded(_train_args(w, out), DEADLINE, env=ENV, capture_output=True, text=True)
    assert again.returncode == 2 and "pass --resume" in again.stderr and "--force" in again.stderr
    assert state.is_file()
    resumed = run_bounded(
        [*_train_args(w, out, epochs=2), "--resume"], DEADLINE, env=ENV, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from step 2 of 20" in resumed.stderr  # the state of step 2 (saved every 2), not lost
    assert json.loads((out / "defsent.json").read_text())["steps"] == 20 and not state.parent.exists()


def test_the_state_kept_on_an_interrupt_follows_the_umask_and_the_last_line_resumes_it(w, tmp_path):
    """Under umask 022 the state kept on Ctrl-C is 644 like the rest of the run's files (safetensors writes its
    file 600), and the interrupt's last line names the step kept, where, and a command that resumes it as printed."""
    import shlex
    import stat

    mask = os.umask(0o022)
    try:
        code, stderr, out, _ = _interrupt_after(w, tmp_path, 3, "--save-every", "2")
    finally:
        os.umask(mask)
    assert code == 130, stderr
    work = out.with_name("ckpt.partial")
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in [work, *work.iterdir()]}
    assert modes == {"ckpt.partial": 0o755, "log.jsonl": 0o644, "state.safetensors": 0o644}, modes
    kept, _, command = stderr.strip().splitlines()[-1].partition("; resume with ")
    assert kept == f"interrupted: the state of step 2 of 20 is kept in {work}"
    argv = shlex.split(command)
    assert argv[0] == "defsent" and argv[1] == "train" and argv[-1] == "--resume", command
    resumed = run_bounded([*DEFSENT, *argv[1:]], DEADLINE, env=ENV, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from step 2 of 20" in resumed.stderr and (out / "defsent.json").is_file()


def _loss_log(folder: Path, losses: list[float]) -> Path:
    """A run folder whose train_log.jsonl holds these losses, one row a step, as the trainer writes them (a NaN
    as JSON's NaN)."""
    folder.mkdir()
    rows = [{"step": step, "definitions": 4 * step, "loss": loss, "lr": 2e-5, "elapsed": 0.1 * step}
            for step, loss in enumerate(losses, start=1)]  # fmt: skip
    (folder / "train_log.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def test_plot_says_a_run_diverged(tmp_path):
    """A run whose every loss is NaN is an error when nothing else is drawn (no empty picture, exit 0), a warning
    beside runs that are fine; a run that diverged half-way is drawn as far as it is finite, and said."""
    pytest.importorskip("matplotlib")
    nan = float("nan")
    diverged = _loss_log(tmp_path / "diverged", [nan, nan, nan])
    fine = _loss_log(tmp_path / "fine", [2.0, 1.5, 1.2])
    halfway = _loss_log(tmp_path / "halfway", [2.0, 1.8, nan, float("inf")])
    alone = _cli("plot", diverged, "-o", tmp_path / "alone.png")
    assert alone.exit_code == 2 and "Traceback" not in alone.stderr
    lines = alone.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: every logged loss of {diverged} is NaN or infinite: "), lines
    assert "the run diverged (from step 1)" in lines[0] and "--lr" in lines[0]
    assert not (tmp_path / "alone.png").exists()
    together = _cli("plot", diverged, fine, halfway, "-o", tmp_path / "together.png")
    assert together.exit_code == 0, together.stderr
    assert (tmp_path / "together.png").stat().st_size > 0
    assert (
        f"warning: {diverged}: the run diverged: 3 of its 3 logged losses are NaN or infinite, from step 1; its loss "
        "curve is not drawn (train again with a lower --lr)"
    ) in together.stderr
    assert (
        f"warning: {halfway}: the run diverged: 2 of its 4 logged losses are NaN or infinite, from step 3; only its 2 "
        "finite ones are drawn"
    ) in together.stderr
    assert f"warning: {fine}" not in together.stderr


def test_a_crafted_pickle_state_never_runs(w, tmp_path):
    """An old or crafted state.pt would run code when unpickled: it is refused, never loaded."""
    import pickle

    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    partial = tmp_path / "ckpt.partial"
    partial.mkdir()
    (partial / "state.pt").write_bytes(pickle.dumps(Payload()))
    run = subprocess.run(_train_args(w, tmp_path / "ckpt", "--resume"), env=ENV, capture_output=True, text=True)
    assert run.returncode == 2 and "pickled" in run.stderr and not marker.exists()
    # a state.safetensors whose metadata is not ours is refused too, without running anything
    (partial / "state.pt").unlink()
    import torch
    from safetensors.torch import save_file

    save_file({"x": torch.zeros(1)}, str(partial / "state.safetensors"), metadata={"defsent": '{"format": "other"}'})
    run = subprocess.run(_train_args(w, tmp_path / "ckpt", "--resume"), env=ENV, capture_output=True, text=True)
    assert run.returncode == 2 and "not a defsent training state" in run.stderr


# A resume continues the saved run or is refused: every resumable command compares the settings and the input
# files (by SHA-256: another file, the same file edited or reordered) with the saved run's, and names what differs.


@pytest.fixture(scope="module")
def r(w) -> SimpleNamespace:
    """The other inputs a resume may be handed: another corpus, the same one reordered, pairs, another bank."""
    root = w.root / "resume"
    root.mkdir()
    lines = w.texts.read_text().splitlines()
    other, reordered = root / "other.txt", root / "reordered.txt"
    other.write_text("\n".join(" ".join(reversed(line.split())) + " again" for line in lines) + "\n")
    reordered.write_text("\n".join(reversed(lines)) + "\n")
    rng = np.random.default_rng(1)
    pairs, other_pairs = root / "pairs.tsv", root / "other-pairs.tsv"
    for path in (pairs, other_pairs):
        path.write_text("".join(
            f"{' '.join(rng.choice(WORDS, 4))}\t{' '.join(rng.choice(WORDS, 4))}\t{rng.uniform(0, 5):.2f}\n"
            for _ in range(24)))  # fmt: skip
    amp = root / "amp.h5"  # a bank of the same dictionary, built another way
    assert _cli("embed-entries", w.dictionary, "-m", w.bert, "-o", amp, "--kind", "AMP").exit_code == 0
    copy = root / "moved" / "corpus.txt"  # the same bytes under another name: the same data
    copy.parent.mkdir()
    copy.write_bytes(w.texts.read_bytes())
    return SimpleNamespace(other=other, reordered=reordered, pairs=pairs, other_pairs=other_pairs, amp=amp, copy=copy)


_LOOP = ["--save-every", "1", "--max-steps", "4", "--log-every", "1"]
RESUME = [
    ("train on another bank", lambda w, r, again: ["train", w.dictionary, "--bank", r.amp if again else w.bank, "-m", w.bert, "-b", "2"], "--bank"),
    ("train from another base model", lambda w, r, again: ["train", w.dictionary, "--bank", w.bank, "-m", w.ckpt if again else w.bert, "-b", "2"], "--model"),
    ("simcse on another corpus", lambda w, r, again: ["simcse", r.other if again else w.texts, "-m", w.bert, "-b", "4"], "SENTENCES"),
    ("simcse on the corpus reordered", lambda w, r, again: ["simcse", r.reordered if again else w.texts, "-m", w.bert, "-b", "4"], "SENTENCES"),
    ("simcse with another --limit", lambda w, r, again: ["simcse", w.texts, "-m", w.bert, "-b", "4", "--limit", "60" if again else "80"], "--limit 60 (saved: 80)"),
    ("tsdae on another corpus", lambda w, r, again: ["tsdae", r.other if again else w.texts, "-m", w.bert, "-b", "2"], "SENTENCES"),
    ("train with another --nm-weight", lambda w, r, again: ["train", w.dictionary, "--bank", w.bank, "-m", w.bert, "-b", "2", "--nm-weight", "0.5" if again else "0.1"], "--nm-weight 0.5 (saved: 0.1)"),
    ("simcse with --nm-weight added", lambda w, r, again: ["simcse", w.texts, "-m", w.bert, "-b", "4", *(["--nm-weight", "0.1"] if again else [])], "--nm-weight 0.1 (saved: not given)"),
    ("tsdae with --nm-weight added", lambda w, r, again: ["tsdae", w.texts, "-m", w.bert, "-b", "2", *(["--nm-weight", "1"] if again else [])], "--nm-weight 1.0 (saved: not given)"),
    ("train-pairs on other pairs", lambda w, r, again: ["train-pairs", r.other_pairs if again else r.pairs, "-m", w.bert, "-b", "4", "--eval-every", "0"], "PAIRS"),
    ("teacher on other pairs", lambda w, r, again: ["teacher", r.other_pairs if again else r.pairs, "-m", w.bert, "-b", "4", "--eval-every", "0"], "PAIRS"),
]  # fmt: skip


def _interrupted_in_process(monkeypatch, argv: list, steps: int):
    """Run ``argv`` in this process and stop it with KeyboardInterrupt once ``steps`` steps are done."""
    from defsent_cli.training.loop import Loop

    train_step = Loop.train_step

    def stop(self, index):
        if self.step == steps:
            raise KeyboardInterrupt
        return train_step(self, index)

    monkeypatch.setattr(Loop, "train_step", stop)
    try:
        return _cli(*argv)
    finally:
        monkeypatch.setattr(Loop, "train_step", train_step)


@pytest.mark.parametrize("name,argv,says", RESUME, ids=[case[0] for case in RESUME])
def test_a_resume_on_other_inputs_is_refused_naming_what_differs(name, argv, says, w, r, tmp_path, monkeypatch):
    out = tmp_path / "run"
    first = _interrupted_in_process(monkeypatch, [*argv(w, r, False), "-o", out, *_LOOP], 2)
    assert first.exit_code == 130, first.stderr
    state = tmp_path / "run.partial" / "state.safetensors"
    assert state.is_file()
    again = _cli(*argv(w, r, True), "-o", out, *_LOOP, "--resume")
    assert again.exit_code == 2, f"{name}: exit {again.exit_code}: {again.stderr}"
    error = again.stderr.strip().splitlines()[-1]
    assert error.startswith("error:") and "cannot resume" in error and says in error, error
    assert "Traceback" not in again.stderr and state.is_file() and not out.exists()
    same = _cli(*argv(w, r, False), "-o", out, *_LOOP, "--resume")  # the saved run's own inputs resume it
    assert same.exit_code == 0, same.stderr
    assert "resuming from step 2" in same.stderr and not state.exists()


def test_a_resume_on_the_same_data_moved_elsewhere_goes_on(w, r, tmp_path, monkeypatch):
    """Inputs are recognised by their bytes, not their path: a corpus moved or copied is the same data."""
    args = ["-m", w.bert, "-b", "4", "-o", tmp_path / "run", *_LOOP]
    assert _interrupted_in_process(monkeypatch, ["simcse", w.texts, *args], 2).exit_code == 130
    moved = _cli("simcse", r.copy, *args, "--resume")
    assert moved.exit_code == 0 and "resuming from step 2" in moved.stderr, moved.stderr


# ---------------------------------------------------------------------------- the readers, property-based

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from defsent_cli.dictionary.sources import read_tsv  # noqa: E402
from defsent_cli.errors import DefsentError  # noqa: E402
from defsent_cli.formats.dictionary import Entry, iter_entries, write_dictionary  # noqa: E402
from defsent_cli.io import iter_jsonl  # noqa: E402

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)
LINE = st.one_of(
    JSON.map(lambda v: json.dumps(v)),
    st.fixed_dictionaries({"entry": JSON, "definitions": JSON}, optional={"split": JSON, "sources": JSON}).map(
        json.dumps
    ),
    st.text(max_size=30).filter(lambda t: "\n" not in t and "\r" not in t),
)
# No clock anywhere: no per-example deadline, and no "too slow" health check (it times the data generation,
# which a loaded 2-core machine can fail).
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(lines=st.lists(LINE, max_size=6))
def test_the_dictionary_reader_accepts_valid_entries_or_names_the_line(lines, tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    try:
        entries = list(iter_entries(path))
    except DefsentError as exc:
        assert str(exc).startswith(f"{path}:")  # always the file and the line
        return
    for entry in entries:
        assert isinstance(entry, Entry) and entry.entry.strip() and entry.definitions
        assert all(isinstance(d, str) and d.strip() for d in entry.definitions)
        assert entry.split in ("train", "dev", "test")
    assert len({e.entry for e in entries}) == len(entries)


ENTRY = st.builds(
    Entry,
    entry=st.text(min_size=1, max_size=12).filter(str.strip),
    definitions=st.lists(st.text(min_size=1, max_size=20).filter(str.strip), min_size=1, max_size=3),
    sources=st.lists(st.text(min_size=1, max_size=5).filter(str.strip), max_size=2),
    split=st.sampled_from(["train", "dev", "test"]),
)


@SETTINGS
@given(entries=st.lists(ENTRY, max_size=8, unique_by=lambda e: e.entry))
def test_dictionary_write_then_read_is_the_identity(entries, tmp_path):
    path = tmp_path / "d.jsonl"
    write_dictionary(path, entries)
    assert list(iter_entries(path)) == entries


@SETTINGS
@given(text=st.text(max_size=120))
def test_the_tsv_reader_yields_pairs_or_names_the_line(text, tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text(text, encoding="utf-8", newline="")
    try:
        pairs = list(read_tsv(path))
    except DefsentError as exc:
        assert str(exc).startswith(f"{path}:")
        return
    for entry, definition, source in pairs:
        assert entry.strip() and isinstance(definition, str) and source == "d"


@SETTINGS
@given(data=st.binary(max_size=80))
def test_the_jsonl_reader_never_raises_anything_else(data, tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    try:
        rows = list(iter_jsonl(path))
    except DefsentError as exc:
        assert str(exc).startswith(f"{path}:")
        return
    assert all(isinstance(obj, dict) and number >= 1 for number, obj in rows)
