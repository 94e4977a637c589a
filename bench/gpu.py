"""On a CUDA GPU, in one run: defsent's encoder and training loop against sentence-transformers and plain loops.

    python bench/gpu.py --model MINILM --dictionary wordnet.jsonl [--texts 20000] [-o bench/out/gpu.json]

(on the lent GPU machine: ``source .gpu/setup.sh && python3 bench/gpu.py``: MINILM and DICT come from there.)

Encoding, the same ``--texts`` WordNet definitions (a seeded sample) for every encoder, each warmed up
first, timed with the GPU synchronised, best of ``--repeats``, sentences/s including tokenisation:
- defsent ``encode()`` (the library call behind ``defsent encode``), mean pooling, fp32 / fp16 / bf16
  (``--precision``), batch 32 and 256, and 1,024 with a 32,768-token budget (``--batch-tokens``); and
  through CUDA graphs (``--cuda-graphs``): fp32 at batch 32 and 256, fp16 at 256;
- sentence-transformers ``SentenceTransformer.encode`` fp32 at batch 32 and 256, fp16 (``model.half()``)
  at 256;
- a plain fp16 loop: texts sorted by length, batches of 1,024 tokenised per batch, AutoModel in fp16,
  masked mean, the rows copied back once at the end.
Every row reports max |difference| of its L2-normalised vectors from sentence-transformers fp32 at batch 32.

Training, the same definitions against the same full bank (mean pooling, no head, lr 2e-5), steps timed
after a warm-up, definitions/s: defsent's ``pst_step`` run (``training/definitions.py``) (fp32, and bf16 mixed precision) at batch 32 and
256, and the plain loop of the GPU issue: random batches tokenised per batch, AutoModel, masked mean,
``F.cross_entropy(reps @ bank.T)``, fused AdamW, ``loss.item()`` each step, in fp32 (and bf16 autocast).

Writes a JSON with the GPU's name, versions, every row and the ratios the targets name. Without a CUDA
GPU it says so and exits 0, writing nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO  # noqa: E402

DEVICE = "cuda"  # --smoke-cpu runs every row on the CPU on a few texts, to check the script itself


def sync() -> None:
    import torch

    if DEVICE == "cuda":
        torch.cuda.synchronize()


def empty_cache() -> None:
    import torch

    if DEVICE == "cuda":
        torch.cuda.empty_cache()


def definitions(dictionary: Path, n: int, seed: int = 0) -> list[str]:
    from defsent_cli.formats.dictionary import read_dictionary

    texts = sorted({d for entry in read_dictionary(dictionary) for d in entry.definitions})
    return random.Random(seed).sample(texts, min(n, len(texts)))


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def timed(fn, repeats: int) -> tuple[float, np.ndarray]:
    """Best wall time of ``repeats`` calls (after one untimed warm-up call), and the last result."""

    out = fn()
    best = float("inf")
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        out = fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best, out


def plain_fp16_encode(model_dir: str, texts: list[str], batch: int = 1024):
    """The plain loop the targets name: length-sorted batches, fp16 AutoModel, masked mean, one copy back."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, dtype=torch.float16).to(DEVICE).eval()
    order = np.argsort([-len(t) for t in texts], kind="stable")

    def run() -> np.ndarray:
        rows = []
        with torch.inference_mode():
            for i in range(0, len(order), batch):
                enc = tokenizer(
                    [texts[j] for j in order[i : i + batch]],
                    padding=True,
                    truncation=True,
                    max_length=256,
                    return_tensors="pt",
                ).to(DEVICE)
                states = model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(states.dtype)
                rows.append(((states * mask).sum(1) / mask.sum(1)).float())
        out = np.empty((len(texts), model.config.hidden_size), dtype=np.float32)
        out[order] = torch.cat(rows).cpu().numpy()
        return out

    return run


def bench_encode(args, texts: list[str]) -> list[dict]:
    from sentence_transformers import SentenceTransformer

    from defsent_cli.encoder.encode import encode
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.onnx_runtime import use_runtime

    rows = []

    def add(name: str, batch: int, fn) -> np.ndarray:
        seconds, vectors = timed(fn, args.repeats)
        rows.append({"encoder": name, "batch": batch, "seconds": round(seconds, 4), "per_s": len(texts) / seconds})
        print(f"  {name:<44} batch {batch:>5}: {len(texts) / seconds:>9,.0f} sentences/s", flush=True)
        return vectors

    def st_encode(model, batch: int):
        return lambda: model.encode(texts, batch_size=batch)

    def defsent_encode(loaded, batch: int):
        return lambda: encode(texts, loaded, "mean", batch_size=batch, show_progress_bar=False)

    st = SentenceTransformer(args.model, device=DEVICE)
    st.max_seq_length = 256
    vectors = {"st fp32 b32": add("sentence-transformers fp32", 32, st_encode(st, 32))}
    vectors["st fp32 b256"] = add("sentence-transformers fp32", 256, st_encode(st, 256))
    vectors["st fp16 b256"] = add("sentence-transformers fp16", 256, st_encode(st.half(), 256))
    st = None
    empty_cache()
    vectors["plain fp16 b1024"] = add("plain fp16 loop", 1024, plain_fp16_encode(args.model, texts))
    empty_cache()
    for precision in ("fp32", "fp16", "bf16"):
        loaded = use_runtime(load_model(args.model, DEVICE), "torch", precision)
        loaded.max_length = 256
        for batch, tokens in ((32, None), (256, None), (1024, 32768)):
            loaded.batch_tokens = tokens
            name = f"defsent {precision}" + (f" --batch-tokens {tokens}" if tokens else "")
            vectors[f"defsent {precision} b{batch}"] = add(name, batch, defsent_encode(loaded, batch))
        loaded.batch_tokens, loaded.cuda_graphs = None, True
        for batch in (32, 256) if precision == "fp32" else (256,) if precision == "fp16" else ():
            name = f"defsent {precision} --cuda-graphs"
            vectors[f"defsent {precision} graphs b{batch}"] = add(name, batch, defsent_encode(loaded, batch))
        loaded = None
        empty_cache()
    ref = unit(vectors["st fp32 b32"])
    for row, key in zip(rows, vectors, strict=True):
        row["key"] = key
        row["max_abs_diff"] = float(np.abs(unit(vectors[key]) - ref).max())
    return rows


def plain_train(model_dir: str, texts: list[str], labels: np.ndarray, bank, batch: int, amp: bool, seed: int = 1):
    """The GPU issue's 25-line loop; returns definitions/s over its steps (after a 5-step warm-up)."""
    import torch
    import torch.nn.functional as F
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).to(DEVICE).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, eps=1e-6, weight_decay=0.0, fused=True)
    order = np.random.default_rng(seed).permutation(len(texts))
    steps = [order[i : i + batch] for i in range(0, len(order) - batch + 1, batch)]
    start = None
    for k, index in enumerate(steps):
        if k == 5:
            sync()
            start = time.perf_counter()
        enc = tokenizer([texts[j] for j in index], padding=True, truncation=True, return_tensors="pt").to(DEVICE)
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=amp):
            states = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(states.dtype)
            reps = (states * mask).sum(1) / mask.sum(1)
        loss = F.cross_entropy(reps.float() @ bank.T, torch.from_numpy(labels[index]).to(DEVICE))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss.item()
    sync()
    return (len(steps) - 5) * batch / (time.perf_counter() - start)


def bench_train(args, work: Path) -> list[dict]:

    from defsent_cli.banks.entry_bank import build_bank
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.onnx_runtime import use_runtime
    from defsent_cli.formats.bank import write_bank
    from defsent_cli.training.definitions import pst_step
    from defsent_cli.training.specs import DEFINITIONS  # DefSent+'s loop defaults

    bank_path = work / "bank.h5"
    started = time.perf_counter()
    loaded = use_runtime(load_model(args.model, DEVICE), "torch", "fp16")
    write_bank(
        bank_path, build_bank(args.dictionary, loaded, "AMP", ("train", "dev", "test"), 256, show_progress=False)
    )
    print(f"  full AMP bank (fp16, batch 256): {time.perf_counter() - started:.1f} s", flush=True)
    del loaded
    rows = []
    for batch in (32, 256):
        n = batch * (args.train_steps + 5)
        for precision in ("fp32", "bf16"):
            config = DEFINITIONS.config(
                pooling="mean", lr=2e-5, batch_size=batch, limit=n, seed=1, save_every=0,
                log_every=50, device=DEVICE, precision=precision,
            )  # fmt: skip
            trainer = pst_step(args.dictionary, bank_path, Path(args.model), config, pooler="none")
            for step in range(5):  # warm-up: allocator, cuBLAS handles, kernels chosen
                trainer.train_step(trainer.schedule.batch(step))
            trainer.step = 5
            sync()
            start = time.perf_counter()
            with tempfile.TemporaryDirectory() as out:
                trainer.run(Path(out), show_progress=False)
            sync()
            rate = (trainer.step - 5) * batch / (time.perf_counter() - start)
            rows.append(
                {"loop": f"defsent {precision}", "batch": batch, "per_s": rate, "loss": trainer.log[-1]["loss"]}
            )
            print(f"  defsent Trainer {precision:<5} batch {batch:>4}: {rate:>8,.0f} definitions/s", flush=True)
            texts, labels, bank = trainer.data.texts, trainer.data.labels, trainer.objective.bank.float()
            del trainer
            empty_cache()
        for amp in (False, True):
            rate = plain_train(args.model, texts, labels, bank, batch, amp)
            name = "plain loop " + ("bf16" if amp else "fp32")
            rows.append({"loop": name, "batch": batch, "per_s": rate})
            print(f"  {name:<21} batch {batch:>4}: {rate:>8,.0f} definitions/s", flush=True)
        empty_cache()
    return rows


def common_arguments(parser: argparse.ArgumentParser) -> None:
    """The model, the dictionary the texts come from, how many, and the repeats."""
    parser.add_argument("--model", default=os.environ.get("MINILM"), help="all-MiniLM-L6-v2 folder (env MINILM)")
    parser.add_argument("--dictionary", type=Path, default=os.environ.get("DICT"), help="WordNet JSONL (env DICT)")
    parser.add_argument("--texts", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common_arguments(parser)
    parser.add_argument("--train-steps", type=int, default=200, help="timed training steps per row")
    parser.add_argument("--skip-train", action="store_true")
    parser.add_argument("--smoke-cpu", action="store_true", help="run on the CPU (checks the script, not speed)")
    parser.add_argument("-o", "--output", type=Path, default=REPO / "bench" / "out" / "gpu.json")
    args = parser.parse_args()

    import torch

    global DEVICE
    if args.smoke_cpu:
        DEVICE = "cpu"
    elif not torch.cuda.is_available():
        print("bench/gpu.py: no CUDA GPU here; nothing measured")
        return
    if not args.model or not args.dictionary:
        sys.exit("bench/gpu.py needs --model and --dictionary (or MINILM and DICT)")
    import sentence_transformers
    import transformers

    os.environ["DEFSENT_NO_PROGRESS"] = "1"
    gpu = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (smoke run)"
    print(f"{gpu}; torch {torch.__version__}, transformers {transformers.__version__}, "
          f"sentence-transformers {sentence_transformers.__version__}", flush=True)  # fmt: skip
    texts = definitions(args.dictionary, args.texts)
    print(f"encode: {len(texts):,} WordNet definitions (max 256 tokens)", flush=True)
    encode_rows = bench_encode(args, texts)
    train_rows = []
    if not args.skip_train:
        print("train: the full WordNet bank, mean pooling, no head", flush=True)
        with tempfile.TemporaryDirectory() as work:
            train_rows = bench_train(args, Path(work))
    rate = {row["key"]: row["per_s"] for row in encode_rows}
    ratios = {
        "defsent fp32 / st fp32, batch 32": rate["defsent fp32 b32"] / rate["st fp32 b32"],
        "defsent fp32 / st fp32, batch 256": rate["defsent fp32 b256"] / rate["st fp32 b256"],
        "defsent fp32 --cuda-graphs / st fp32, batch 32": rate["defsent fp32 graphs b32"] / rate["st fp32 b32"],
        "defsent fp32 --cuda-graphs / st fp32, batch 256": rate["defsent fp32 graphs b256"] / rate["st fp32 b256"],
        "defsent fp16 --cuda-graphs / st fp16, batch 256": rate["defsent fp16 graphs b256"] / rate["st fp16 b256"],
        "defsent fp16 / st fp16, batch 256": rate["defsent fp16 b256"] / rate["st fp16 b256"],
        "defsent fp16 b256 / plain fp16 loop": rate["defsent fp16 b256"] / rate["plain fp16 b1024"],
        "defsent fp16 b1024+tokens / plain fp16 loop": rate["defsent fp16 b1024"] / rate["plain fp16 b1024"],
    }
    train = {(row["loop"], row["batch"]): row["per_s"] for row in train_rows}
    if train:
        ratios["train defsent fp32 / plain fp32, batch 32"] = train["defsent fp32", 32] / train["plain loop fp32", 32]
        ratios["train defsent bf16 / plain bf16, batch 256"] = (
            train["defsent bf16", 256] / train["plain loop bf16", 256]
        )
    print("ratios:")
    for name, value in ratios.items():
        print(f"  {name:<48} {value:5.2f}x")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "gpu": gpu,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "texts": len(texts),
        "command": " ".join(["python", *sys.argv]),
        "encode": encode_rows,
        "train": train_rows,
        "ratios": ratios,
    }
    args.output.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
