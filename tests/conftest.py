"""Shared fixtures: tiny random BERT / RoBERTa models and tokenizers built on the fly,
small dictionary files, and the CLI runner. Nothing is downloaded.

The suite is written to pass on a machine with a CUDA GPU too, where every command's ``--device auto`` is
the GPU and training's ``--precision auto`` bf16 (bench/gpu_runs/suite.sh runs it there). The rules:
a command's output compared with a computation on the CPU is allowed ``atol=1e-5`` (fp32 kernels on a GPU
differ from the CPU's by ~1e-6); two training runs expected bit-identical add :data:`RESUME_FLAGS`
(``--deterministic`` on a GPU, the README's promise); a test whose fixture was checked on the CPU's
training trajectory (a seed that must differ from another on a tiny dev set), or whose hand computation
runs the model on host tensors, pins ``--device cpu`` / ``device="cpu"``.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("DEFSENT_NO_PROGRESS", "1")
# --precision auto trains in bf16 on a CPU with AMX: the suite runs as on a CPU without it, whatever this one has
# (tests/test_cpu_precision.py stubs the detection both ways)
os.environ["DEFSENT_CPU_AMX"] = "0"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# importing scikit-learn sets KMP_DUPLICATE_LIB_OK and KMP_INIT_AT_FORK: imported first, every environment a test
# module takes from os.environ has them, as the warm server's has (tests/warm_defsent.py: a command whose
# environment differs from the server's in a variable read at import runs as a fresh process)
__import__("sklearn")

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config) -> None:
    """Under pytest-xdist (``make test``) tests go to the workers one at a time (``--maxschedchunk 1``, unless
    given): by default ``--dist load`` hands each worker a first chunk of consecutive tests, a quarter of its
    share, so every test marked ``long`` (all first, below) queued on the first worker, one after another (on
    14 workers, the 11 long tests took one worker more than a lent GPU machine's 10 minutes)."""
    if config.pluginmanager.hasplugin("xdist") and config.getoption("maxschedchunk", None) is None:
        config.option.maxschedchunk = 1


def pytest_collection_modifyitems(items: list) -> None:
    """The tests marked ``long`` (a minute or more: a chain of CLI processes) run first, each followed by one
    short test: xdist starts each worker with two tests even one at a time (its ``--maxschedchunk`` help), so
    the first workers each start one long test, and the others take the rest as workers free up."""
    long = [item for item in items if item.get_closest_marker("long") is not None]
    short = [item for item in items if item.get_closest_marker("long") is None]
    paired = [test for k, item in enumerate(long) for test in (item, *short[k : k + 1])]
    items[:] = paired + short[len(long) :]  # the order within each kind is kept


CORPUS = [
    "a long-necked african animal",
    "give new life or vigor to",
    "the act of running quickly",
    "a domesticated carnivorous mammal kept as a pet",
    "a feeling of great happiness",
    "having the necessary means or skill to do something",
    "this sentence means something about a dog and a cat",
    "an animal that lives in water and swims with fins",
    "two men are playing guitar on the street",
    "a woman is slicing an onion in the kitchen",
]

WORDS = sorted({w for line in CORPUS for w in line.replace("-", " - ").split()} | {"giraffe", "dog", "fish", "joy"})


def data_root() -> Path | None:
    """The real data (SentEval layout + WordNet), from DEFSENT_DATA or ../shared/data."""
    for candidate in (os.environ.get("DEFSENT_DATA"), REPO.parent / "shared" / "data"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def real_data(*folders: str) -> Path:
    """The real data root, or skip the test naming what is missing: each of ``folders`` (paths below the
    root, e.g. ``senteval/downstream/MR``) must be there, so a partial copy skips per missing task."""
    root = data_root()
    missing = [name for name in folders if root is None or not (root / name).exists()]
    if root is None or missing:
        pytest.skip(f"real data not available: {', '.join(missing) or 'no data root'}")
    return root


RESUME_FLAGS = ["--deterministic"] if __import__("torch").cuda.is_available() else []
"""Extra flags for the kill-and-resume tests: on the CPU every resumed run is bit-identical as it is; on a
GPU that is promised under --deterministic (README "Resuming")."""


def _bert_tokenizer(folder: Path):
    from transformers import BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = sorted({c for w in WORDS for c in w} | set("abcdefghijklmnopqrstuvwxyz0123456789.,:;\"'!?()-"))
    vocab = specials + WORDS + chars + [f"##{c}" for c in chars] + ["this", "sentence", "means", '"', ":"]
    seen: list[str] = []
    for token in vocab:
        if token not in seen:
            seen.append(token)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(seen) + "\n")
    return BertTokenizerFast(vocab={token: i for i, token in enumerate(seen)}, do_lower_case=True)


def _roberta_tokenizer(folder: Path):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    bpe = ByteLevelBPETokenizer()
    corpus = CORPUS + ['This sentence : "x" means <mask> .'] * 3
    bpe.train_from_iterator(
        corpus, vocab_size=400, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    folder.mkdir(parents=True, exist_ok=True)
    vocab = bpe.get_vocab()
    bpe.save_model(str(folder))
    lines = (folder / "merges.txt").read_text().splitlines()
    merges = [tuple(m.split(" ")) for m in lines if m and not m.startswith("#")]
    return RobertaTokenizerFast(vocab=vocab, merges=merges)


def build_tiny_bert(
    folder: Path, seed: int = 0, hidden: int = 32, layers: int = 2, heads: int = 2, trained_pooler: bool = True
) -> Path:
    """A 2-layer, 32-dim BERT with pooler and MLM head, saved with its tokenizer (bench/scale.py asks for a
    1-layer, 384-dim one); ``trained_pooler=False`` leaves the pooler as initialised (bias all zero), as in most
    sentence-transformers folders."""
    import torch
    from transformers import BertConfig, BertForPreTraining

    tokenizer = _bert_tokenizer(folder)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    model = BertForPreTraining(config)
    if trained_pooler:  # a pooler that looks trained, as BERT's (random init leaves its bias all zero)
        with torch.no_grad():
            model.bert.pooler.dense.bias.normal_(0.0, 0.02)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_roberta(folder: Path, seed: int = 0) -> Path:
    """A 2-layer, 32-dim RoBERTa with its MLM head, saved with a byte-level BPE tokenizer."""
    import torch
    from transformers import RobertaConfig, RobertaForMaskedLM

    tokenizer = _roberta_tokenizer(folder)
    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    RobertaForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def wrap_sentence_transformers(model_dir: Path, folder: Path, pooling: str = "mean") -> Path:
    """A sentence-transformers style folder around a tiny model (Transformer + Pooling + Normalize)."""
    import shutil

    shutil.copytree(model_dir, folder)
    (folder / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
            ]
        )
    )
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": False}))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {
                "word_embedding_dimension": 32,
                "pooling_mode_cls_token": pooling == "cls",
                "pooling_mode_mean_tokens": pooling == "mean",
                "pooling_mode_max_tokens": pooling == "max",
                "pooling_mode_mean_sqrt_len_tokens": False,
            }
        )
    )
    return folder


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    return build_tiny_roberta(tmp_path_factory.mktemp("tiny-roberta"))


@pytest.fixture(scope="session")
def tiny_st(tmp_path_factory, tiny_bert) -> Path:
    return wrap_sentence_transformers(tiny_bert, tmp_path_factory.mktemp("st") / "tiny-st", pooling="mean")


@pytest.fixture
def runner():
    from typer.testing import CliRunner

    return CliRunner()


@pytest.fixture
def cli(runner):
    """Run ``defsent ARGS...``; returns the click Result (exit_code, stdout, stderr)."""
    from defsent_cli.cli import app

    def invoke(*args: str, input: str | bytes | None = None):
        return runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def tiny_dict(tmp_path) -> Path:
    """A small dictionary JSONL (docs/formats.md, "Dictionary")."""
    rows = [
        {"entry": "giraffe", "definitions": ["a long-necked african animal"], "sources": ["test"], "split": "train"},
        {"entry": "revitalize", "definitions": ["give new life or vigor to"], "sources": ["test"], "split": "train"},
        {
            "entry": "dog",
            "definitions": ["a domesticated carnivorous mammal kept as a pet", "an animal that barks"],
            "sources": ["test"],
            "split": "train",
        },
        {"entry": "joy", "definitions": ["a feeling of great happiness"], "sources": ["test"], "split": "dev"},
        {
            "entry": "fish",
            "definitions": ["an animal that lives in water and swims with fins"],
            "sources": ["test"],
            "split": "test",
        },
    ]
    path = tmp_path / "dict.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ---------------------------------------------------------------- a mini SentEval STS folder

# Hand-computed case. Subset A: predicted [.1 .2 .3] vs gold [1 2 3] -> Spearman 1 (n=3).
# Subset B: predicted [.4 .5 .6 .7] vs gold [3.7 3.2 2.5 1.5] -> Spearman -1 (n=4).
# Concatenated: predicted ranks 1..7, gold ranks [1 3 5 7 6 4 2], sum d^2 = 44,
# rho = 1 - 6*44 / (7*48) = 3/14.
A_PRED, A_GOLD = [0.1, 0.2, 0.3], [1.0, 2.0, 3.0]
B_PRED, B_GOLD = [0.4, 0.5, 0.6, 0.7], [3.7, 3.2, 2.5, 1.5]
EXPECTED = {"all": 100 * 3 / 14, "mean": 0.0, "wmean": 100 * (3 * 1 - 4 * 1) / 7}


def write(path: Path, lines: list[str], newline: str = "\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((newline.join(lines) + newline).encode("utf-8"))


def angle_pair(p: float) -> str:
    """A sentence pair whose fake-encoder cosine is exactly ``p`` (see ``fake_encoder``)."""
    return f"ref\tx {p}"


@pytest.fixture
def mini(tmp_path) -> Path:
    """A SentEval-layout folder: STS12 with 2 of 5 subsets (CRLF, an unscored pair), STS16 in the original
    SemEval naming (4 columns, trailing blank line), STS-B dev/test, SICK test and trial."""
    return build_mini(tmp_path)


def build_mini(tmp_path: Path) -> Path:
    """The ``mini`` folder below ``tmp_path`` (returns ``tmp_path``; the data is in ``senteval/``)."""
    sts = tmp_path / "senteval" / "downstream" / "STS"
    year = sts / "STS12-en-test"
    # MSRpar = subset A, with an unscored pair in the middle, CRLF line endings
    write(
        year / "STS.input.MSRpar.txt",
        [angle_pair(0.1), "not  scored\tat all", angle_pair(0.2), angle_pair(0.3)],
        "\r\n",
    )
    write(year / "STS.gs.MSRpar.txt", ["1.0", "", "2", "3.000"], "\r\n")
    write(year / "STS.input.MSRvid.txt", [angle_pair(p) for p in B_PRED])
    write(year / "STS.gs.MSRvid.txt", [str(g) for g in B_GOLD])
    write(year / "STS.gs.ALL.txt", ["1"] * 7)  # SentEval ships it; no input file, must be ignored
    orig = sts / "STS16-en-test"
    write(
        orig / "STS2016.input.headlines.txt",
        [
            "Dogs  run fast\tA dog runs\tsource a\tsource b",
            "Cats sleep\tThe cat is asleep\ts\ts",
            "Cars\tTrains\ts\ts",
            "",
        ],
    )
    write(orig / "STS2016.gs.headlines.txt", ["4.2", "", "0.4"])
    bench = sts / "STSBenchmark"
    for split, n in (("dev", 4), ("test", 5)):
        rows = [
            f"main-captions\tMSRvid\t2012test\t{i:04d}\t{i * 1.1:.3f}\ta man plays {i}\ta man is playing {i}"
            for i in range(n)
        ]
        write(bench / f"sts-{split}.csv", rows)
    sick = tmp_path / "senteval" / "downstream" / "SICK"
    write(
        sick / "SICK_test_annotated.txt",
        ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        + [f"{i}\tA boy runs {i}\tThe kid is running {i}\t{1 + i * 0.7:.1f}\tNEUTRAL" for i in range(5)],
    )
    trial = [("a dog barks", "an animal that barks", 4.6), ("a feeling of great happiness", "joy", 4.1)]
    trial += [("two men play guitar", "a woman slices an onion", 1.2), ("the cat sleeps", "a fish swims", 1.9)]
    trial += [("give new life or vigor to", "revitalize", 4.8), ("a long-necked african animal", "a pet", 2.4)]
    write(
        sick / "SICK_trial.txt",
        ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        + [f"{i}\t{a}\t{b}\t{score}\tNEUTRAL" for i, (a, b, score) in enumerate(trial)],
    )
    return tmp_path


@pytest.fixture
def library_log():
    """The messages the library sends through ``defsent_cli.log`` while the test runs: [(level, text), ...]."""
    import logging

    records: list[tuple[str, str]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append((record.levelname.lower(), record.getMessage()))

    logger = logging.getLogger("defsent")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield records
    logger.removeHandler(handler)
    logger.setLevel(level)


# ---------------------------------------------------------------- the other data sets, tiny (the real formats)

# Two clustering sets whose texts the fake encoder (``topic_encoder``) places exactly: each label's texts
# share a topic word.
TOPICS = {"1": "dog", "2": "fish", "3": "tree"}


def build_more(tmp_path: Path) -> Path:
    """Below ``tmp_path``: the STS ``mini`` folder plus SST/fine, SICK train/trial/test, STS-B train/dev/test
    (SentEval layout), and, beside ``senteval/``, ``clustering/`` (agnews, tweet), ``scicite/`` and
    ``wikitext-2/``, each in its real format (CRLF where the real file has it). Returns ``tmp_path``."""
    build_mini(tmp_path)
    down = tmp_path / "senteval" / "downstream"
    words = ["good", "bad", "long", "new", "old", "small", "great", "dull", "fine", "poor"]
    rows = [f"{i % 5} {words[i % 10]} film number {i} {'very ' * (i % 3)}{words[(i * 3) % 10]}" for i in range(40)]
    for split in ("train", "dev", "test"):
        write(down / "SST" / "fine" / f"sentiment-{split}", rows)
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"
    judgments = ["NEUTRAL", "ENTAILMENT", "CONTRADICTION"]
    for name, n in (("SICK_train.txt", 30), ("SICK_trial.txt", 12), ("SICK_test_annotated.txt", 12)):
        write(
            down / "SICK" / name,
            [header]
            + [
                f"{i}\ta {words[i % 10]} dog runs {i}\tthe {words[(i + 1) % 10]} dog is running\t{1 + (i % 9) / 2:.1f}"
                f"\t{judgments[i % 3]}"
                for i in range(n)
            ],
        )
    bench = down / "STS" / "STSBenchmark"
    for split, n in (("train", 30), ("dev", 12), ("test", 12)):
        write(
            bench / f"sts-{split}.csv",
            [
                f"main-captions\tMSRvid\t2012test\t{i:04d}\t{(i % 11) / 2:.3f}\ta man plays {words[i % 10]} {i}"
                f"\ta man is playing {words[(i * 7) % 10]}"
                for i in range(n)
            ],
        )
    clustering = tmp_path / "clustering"
    write(
        clustering / "agnews" / "agnewsdataraw-8000",
        [f"{label}\t{TOPICS[label]} story {i}" for i in range(8) for label in TOPICS],
    )
    write(
        clustering / "tweet" / "tweet-original-order.txt",
        [f"{label}\t{TOPICS[label]} tweet {i}" for i in range(4) for label in ("1", "2")],
        "\r\n",
    )
    labels = ["background", "method", "result"]
    for name, n in (("train_reconstructed.jsonl", 24), ("dev.jsonl", 9), ("test.jsonl", 9)):
        write(
            tmp_path / "scicite" / name,
            [
                # AllenAI's release, as pandas wrote it: a missing sectionName is a bare NaN
                json.dumps(
                    {
                        "string": f"as shown by {words[i % 10]} et al. ( {i} )",
                        "label": labels[i % 3],
                        "sectionName": float("nan") if i % 4 == 0 else "Results",
                    }
                )
                for i in range(n)
            ],
        )
    write(
        tmp_path / "wikitext-2" / "wiki.test.raw",
        [
            " = A heading = ",
            " The dog runs fast . A fish swims in water . Ok . The tree is old and tall . ",
            " = = Another heading = = ",
            " Joy is a feeling of great happiness ! Is this a question ? ",
        ],
        "\r\n",
    )
    return tmp_path


@pytest.fixture
def more(tmp_path) -> Path:
    return build_more(tmp_path)


def topic_encoder(texts):
    """A fake encoder: one axis per topic word (TOPICS), so each clustering label is one point."""
    import numpy as np

    axes = list(TOPICS.values())
    return np.asarray([[1.0 if word in t.split() else 0.0 for word in axes] for t in texts], dtype=np.float32)


# --------------------------------------------------------------------------- subprocesses with a deadline


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (Linux ``/proc``; torchrun starts its workers in sessions of their own,
    so a process group does not hold them)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo.extend(children.get(tree[-1], []))
    return tree


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and everything it started (collected first: killed parents orphan their children)."""
    import signal

    for member in process_tree(pid):
        try:
            os.kill(member, signal.SIGKILL)
        except ProcessLookupError:
            pass


def skip_without(module: str, why: str) -> None:
    """Skip the test unless ``module`` is installed, found without importing it: ``pytest.importorskip("bm25s")``
    imports bm25s, which starts JAX where it is installed, and JAX on a GPU machine takes 75% of the card's memory
    in the test's own process, so the commands the test starts ran out of GPU memory (an H100, 2026-11-27)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"could not import {module!r} ({why})")


def run_bounded(cmd: list, timeout: float, *, check: bool = False, **kwargs):
    """``subprocess.run`` that cannot stall the suite: past ``timeout`` seconds the command and every process
    it started are killed and the test fails with the command's stderr (a hang is a failure, not a wait)."""
    import subprocess

    if kwargs.pop("capture_output", False):
        kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    data = kwargs.pop("input", None)
    if data is not None:
        kwargs["stdin"] = subprocess.PIPE
    cmd = [str(c) for c in cmd]
    with subprocess.Popen(cmd, **kwargs) as process:
        try:
            out, err = process.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(process.pid)
            try:
                out, err = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                out, err = None, None
            tail = err.decode(errors="replace")[-2000:] if isinstance(err, bytes) else (err or "")[-2000:]
            pytest.fail(f"did not finish in {timeout:g} s (a hang?), killed: {' '.join(cmd)}\n{tail}")
    if check and process.returncode:
        raise subprocess.CalledProcessError(process.returncode, cmd, out, err)
    return subprocess.CompletedProcess(cmd, process.returncode, out, err)


# ---------------------------------------------------------------- torchrun (tests/test_distributed.py, test_shard_bank.py)

TORCHRUN_ENV = {**os.environ, "DEFSENT_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
for _name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
    TORCHRUN_ENV.pop(_name, None)
DEFSENT = [__import__("sys").executable, "-m", "defsent_cli"]
#: ``python tests/kill_after_step.py ARGS``: ``defsent ARGS`` SIGKILLed after step ``KILL_AFTER_STEP``
KILLER = [DEFSENT[0], str(Path(__file__).with_name("kill_after_step.py"))]


def torchrun(processes: int = 2, *script: str) -> list[str]:
    """The command that starts ``processes`` copies of ``script`` (default: the defsent command line) under
    torchrun (gloo on the CPU with --device cpu)."""
    launch = [DEFSENT[0], "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)]
    return [*launch, *(script or ["-m", "defsent_cli"])]


TORCHRUN_DEADLINE = 300  # seconds; a 2-process run of the tiny model takes ~10 s on 2 cores


def run_torchrun_test(cmd: list, timeout: float = TORCHRUN_DEADLINE, **kwargs):
    """:func:`run_bounded` with the torchrun tests' environment (no progress bars, one thread per process), the
    defsent of ``cmd`` warm (:func:`warm_command`; a command it leaves as it is ignores the warm variable)."""
    env = {**kwargs.pop("env", TORCHRUN_ENV), **warm_defsent()["env"]}
    return run_bounded(warm_command(cmd), timeout, env=env, capture_output=True, **kwargs)


def checkpoint_weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def max_weight_diff(a: Path, b: Path) -> float:
    """The largest absolute difference between two checkpoints' weights (same names)."""
    wa, wb = checkpoint_weights(a), checkpoint_weights(b)
    assert wa.keys() == wb.keys()
    return max(float((wa[k] - wb[k]).abs().max()) for k in wa)


def without_dropout(model: Path, folder: Path) -> Path:
    """A copy of a tiny model with dropout off: torchrun runs then equal one-process runs up to float noise."""
    import shutil

    shutil.copytree(model, folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def without_option(args: list, flag: str) -> list:
    """``args`` with ``flag`` and its value left out: a test that sets an option a shared list already sets (an
    option given twice is refused, cli/boundary.py)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif str(arg) == flag:
            skip = True
        else:
            out.append(arg)
    return out


# ---------------------------------------------------------------- a warm start for the defsent of scripts and torchrun

_WARM: dict = {}


def warm_defsent() -> dict:
    """The warm start of this test process (tests/warm_defsent.py), started on first use: ``{"bin": folder with
    the stand-in defsent, "env": what it needs}``. Each command the stand-in runs forks from one process that
    imported torch and transformers once (~8 s of a 2-core machine saved per command). The server ends with the
    test process (pytest_unconfigure below, or by itself when its parent is gone)."""
    if _WARM:
        return _WARM
    import subprocess
    import sys
    import tempfile
    import time

    import warm_defsent as warm

    # a Unix socket's path has at most 107 bytes: a long TMPDIR gives way to /tmp
    folder = Path(tempfile.mkdtemp(prefix="defsent-warm-", dir=None if len(tempfile.gettempdir()) < 64 else "/tmp"))
    socket_path = folder / "s"
    with (folder / "server.log").open("w") as log:
        server = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("warm_defsent.py")), "serve", str(socket_path)],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "DEFSENT_NO_PROGRESS": "1"},
        )  # fmt: skip
    deadline = time.monotonic() + 300
    while not socket_path.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            kill_tree(server.pid)
            pytest.fail(f"the warm defsent server did not start:\n{(folder / 'server.log').read_text()[-3000:]}")
        time.sleep(0.2)
    warm.write_shim(folder / "bin", json.loads((folder / warm.IMPORTED).read_text()))
    _WARM.update(bin=folder / "bin", env={warm.SOCKET_ENV: str(socket_path)}, server=server, folder=folder)
    return _WARM


def pytest_unconfigure(config) -> None:
    if _WARM:
        import shutil

        kill_tree(_WARM["server"].pid)
        _WARM["server"].wait()
        shutil.rmtree(_WARM["folder"], ignore_errors=True)


def warm_command(cmd: list) -> list:
    """``cmd`` with its Python warm (tests/warm_defsent.py): ``DEFSENT ARGS`` as the stand-in ``defsent``, ``python
    SCRIPT.py ARGS`` (tests/kill_after_step.py, ...) as ``warm-python``, and torchrun (``python -m
    torch.distributed.run``) with its launcher warm and each rank ``--no-python`` the stand-in of its program
    (``-m defsent_cli`` or a script; each rank forked warm, its RANK/WORLD_SIZE/... environment carried); any
    other command as it is."""
    cmd = [str(c) for c in cmd]
    if cmd[:1] != DEFSENT[:1]:
        return cmd
    stand_in = warm_defsent()["bin"]
    if cmd[: len(DEFSENT)] == DEFSENT:
        return [str(stand_in / "defsent"), *cmd[len(DEFSENT) :]]
    if cmd[1:2] != ["-m"]:
        return [str(stand_in / "warm-python"), *cmd[1:]] if cmd[1:2] and cmd[1].endswith(".py") else cmd
    if cmd[1:3] == ["-m", "torch.distributed.run"]:
        for at in range(3, len(cmd)):
            if cmd[at : at + 2] == ["-m", "defsent_cli"]:
                return [
                    str(stand_in / "warm-python"),
                    *cmd[1:at],
                    "--no-python",
                    str(stand_in / "defsent"),
                    *cmd[at + 2 :],
                ]
            if cmd[at].endswith(".py"):
                return [
                    str(stand_in / "warm-python"),
                    *cmd[1:at],
                    "--no-python",
                    str(stand_in / "warm-python"),
                    *cmd[at:],
                ]
    return cmd


def warm_shell_env(env: dict | None = None) -> dict:
    """``env`` (default: this process's) for a shell line or script whose ``defsent`` runs warm: the stand-in
    first on PATH, then this venv's bin, and the variable that finds the warm server (:func:`warm_defsent`)."""
    import sys

    warm, env = warm_defsent(), dict(os.environ if env is None else env)
    env["PATH"] = os.pathsep.join([str(warm["bin"]), str(Path(sys.executable).parent), env.get("PATH", "")])
    return {**env, **warm["env"]}


def run_warm(cmd: list, timeout: float = 300, **kwargs):
    """:func:`run_bounded` with the Python of ``cmd`` warm (:func:`warm_command`), for tests of what a command
    does rather than of its process (those start the installed ``defsent``: signals and interrupts, a closed
    stdout, --help's imports, the Hub's environment, the server)."""
    env = {**(kwargs.pop("env", None) or os.environ), **warm_defsent()["env"]}
    return run_bounded(warm_command(cmd), timeout, env=env, **kwargs)
