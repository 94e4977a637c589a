"""defsent's encoders against sentence-transformers' own fast backends, same model, same sentences, one run.

    make bench          (creates .venv-bench: sentence-transformers[onnx] with optimum, next to defsent)
    .venv-bench/bin/python bench/encode.py [--repeats 3] [--batch-size 32] [--definitions 20000]
    .venv-bench/bin/python bench/encode.py --precision fp32 bf16 int8 --peers torch onnx openvino   (issue 72)

Peers (all.MiniLM-L6-v2, CPU, batch 32): sentence-transformers with its default torch backend (fp32),
its ONNX backend (``backend="onnx"``, the graph optimum exports, fp32) and its int8 model made by
``export_dynamic_quantized_onnx_model(model, "avx512_vnni", ...)``; defsent ``encode`` with
``--runtime torch`` (fp32) and ``--runtime onnx`` in fp32 and int8. Two sets: the 2,758 STS-B test
sentences and a seeded sample of 20,000 WordNet definitions. Everything runs in this one process,
alternating, after an untimed warm-up of each; the best of ``--repeats`` timings is reported as
sentences/s, with the ratio of each defsent encoder to each peer, the max |difference| of the
L2-normalised vectors against defsent's torch fp32 output, and the STS-B test Spearman x100 of each.
``--precision`` picks defsent's encoders (fp32: torch and ONNX Runtime fp32; bf16: torch with bf16 weights,
fast on a CPU with AMX; int8: ONNX Runtime on integers, activations quantized per token; int8-batch: the int8
graph of before issue 80, ONNX Runtime's ``quantize_dynamic``, one activation scale per batch) and ``--peers``
sentence-transformers' backends (torch-bf16: the torch backend with ``model_kwargs={"torch_dtype": torch.bfloat16}``; openvino:
``backend="openvino"``, which picks bf16 itself on an AMX CPU; needs ``pip install 'sentence-transformers[openvino]'``,
which could not be installed beside sentence-transformers 6 and transformers 5 here: docs/cpu.md).
The peers' graphs are exported into a copy of the model folder under bench/out/ (the installed model
is not touched).

Each table also gives sentences per CPU-second (the process's CPU time: steadier than the wall clock when others
share the cores) and, for defsent's encoders, how a text's vector depends on its batch: ``--alone`` texts of the set
(every ``n // alone``-th) encoded one at a time, against their rows of the batched run, the smallest cosine and
the largest |difference| (issue 80: the same text must get the same vector, whatever its batch-mates).

    .venv/bin/python bench/encode.py --precision fp32 bf16 int8-batch int8 --peers torch --definitions 2000
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, data_root, int8_per_batch, minilm_path, stsb_test_sentences  # noqa: E402


def wordnet_definitions(n: int, seed: int = 0) -> list[str]:
    from defsent_cli.dictionary.sources import read_wordnet

    glosses = sorted({gloss for _, gloss, _ in read_wordnet(data_root() / "wordnet")})
    return random.Random(seed).sample(glosses, n)


def spearman(vectors: np.ndarray, gold: np.ndarray) -> float:
    from defsent_cli.evaluation.correlations import correlations, cosine_pairs

    n = len(gold)
    return correlations(cosine_pairs(vectors[:n], vectors[n:]), gold)[0]


def stsb_gold() -> np.ndarray:
    path = data_root() / "senteval" / "downstream" / "STS" / "STSBenchmark" / "sts-test.csv"
    return np.asarray([float(line.split("\t")[4]) for line in path.read_text(encoding="utf-8").splitlines()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--definitions", type=int, default=20000)
    parser.add_argument(
        "--precision", nargs="+", default=["fp32", "int8"], choices=["fp32", "bf16", "int8-batch", "int8"]
    )
    parser.add_argument("--alone", type=int, default=64, help="texts per set encoded alone (0: none)")
    parser.add_argument(
        "--peers", nargs="+", default=["torch", "onnx"], choices=["torch", "torch-bf16", "onnx", "openvino"]
    )
    args = parser.parse_args()

    import onnxruntime
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    from defsent_cli.encoder.encode import encode, encode_workers
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.onnx_runtime import OnnxModel, graph_for, use_runtime

    source = Path(minilm_path())
    work = REPO / "bench" / "out" / "minilm"
    if not work.is_dir():
        shutil.copytree(source, work, ignore=shutil.ignore_patterns("onnx"))
    if "onnx" in args.peers and not (work / "onnx" / "model.onnx").is_file():
        from sentence_transformers import export_dynamic_quantized_onnx_model

        exported = SentenceTransformer(str(work), device="cpu", backend="onnx")  # optimum exports onnx/model.onnx
        exported.save_pretrained(str(work))
        export_dynamic_quantized_onnx_model(exported, "avx512_vnni", str(work))
    b = args.batch_size

    def st(model):
        return lambda texts: model.encode(texts, batch_size=b, convert_to_numpy=True, normalize_embeddings=True)

    def ours(loaded):
        return lambda texts: encode(
            texts, loaded, "mean", batch_size=b, normalize_embeddings=True, show_progress_bar=False
        )

    encoders = {}
    if "torch" in args.peers:
        encoders["st torch fp32"] = st(SentenceTransformer(str(work), device="cpu"))
    if "onnx" in args.peers:
        encoders["st onnx fp32"] = st(SentenceTransformer(str(work), device="cpu", backend="onnx"))
        encoders["st onnx int8"] = st(
            SentenceTransformer(
                str(work), device="cpu", backend="onnx", model_kwargs={"file_name": "onnx/model_qint8_avx512_vnni.onnx"}
            )
        )
    if "torch-bf16" in args.peers:  # sentence-transformers' own way to bf16 weights: model_kwargs torch_dtype
        bf16 = {"torch_dtype": torch.bfloat16}
        encoders["st torch bf16"] = st(SentenceTransformer(str(work), device="cpu", model_kwargs=bf16))
    if "openvino" in args.peers:
        encoders["st openvino"] = st(SentenceTransformer(str(work), device="cpu", backend="openvino"))
    encoders["defsent torch fp32"] = ours(load_model(work, "cpu"))  # the reference of max|diff|
    if "bf16" in args.precision:
        encoders["defsent torch bf16"] = ours(use_runtime(load_model(work, "cpu"), "torch", "bf16"))
    if "fp32" in args.precision:
        encoders["defsent onnx fp32"] = ours(use_runtime(load_model(work, "cpu"), "onnx", "fp32"))
    if "int8-batch" in args.precision:  # before issue 80: quantize_dynamic, one activation scale per batch
        loaded = load_model(work, "cpu")
        graph = int8_per_batch(graph_for(loaded, "fp32")[0], work / "int8-per-batch" / "model.onnx")
        loaded.runtime = OnnxModel(graph, "int8", max(1, torch.get_num_threads() // encode_workers("cpu")))
        loaded.precision = "int8"
        encoders["defsent int8 per batch"] = ours(loaded)
    if "int8" in args.precision:
        encoders["defsent onnx int8"] = ours(use_runtime(load_model(work, "cpu"), "onnx", "int8"))
    versions = f"onnxruntime {onnxruntime.__version__}, sentence-transformers {sentence_transformers.__version__}"
    if "openvino" in args.peers:
        import openvino

        versions += f", openvino {openvino.__version__}"
    print(
        f"model all-MiniLM-L6-v2, torch {torch.__version__} ({torch.get_num_threads()} threads), {versions}, "
        f"batch {b}, best of {args.repeats}"
    )
    sets = {"STS-B test": stsb_test_sentences(), "WordNet definitions": wordnet_definitions(args.definitions)}
    gold = stsb_gold()
    for set_name, texts in sets.items():
        for fn in encoders.values():  # untimed warm-up
            fn(texts[:256])
        times: dict[str, list[float]] = {name: [] for name in encoders}
        cpu: dict[str, list[float]] = {name: [] for name in encoders}
        outputs: dict[str, np.ndarray] = {}
        for _ in range(args.repeats):
            for name, fn in encoders.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                outputs[name] = fn(texts)
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
        rate = {name: len(texts) / min(t) for name, t in times.items()}
        reference = outputs["defsent torch fp32"]
        print(f"\n{set_name}: {len(texts):,} texts")
        sts = set_name == "STS-B test"
        print(
            f"{'encoder':<26} {'sent/s':>8} {'sent/cpu-s':>10} {'max|diff|':>10} {'1-cos':>9}"
            + (f" {'STS-B':>7}" if sts else "")
            + (f" {'alone cos':>10} {'alone |diff|':>12}" if args.alone else "")
        )
        for name, fn in encoders.items():
            diff = float(np.abs(outputs[name] - reference).max())
            off = float(np.mean(1 - np.sum(outputs[name] * reference, axis=1)))
            line = f"{name:<26} {rate[name]:8.1f} {len(texts) / min(cpu[name]):10.1f} {diff:10.2e} {off:9.2e}"
            if sts:
                line += f" {spearman(outputs[name], gold):7.2f}"
            if args.alone and name.startswith("defsent "):
                line += " {:10.6f} {:12.2e}".format(*alone_vs_batched(fn, texts, outputs[name], args.alone))
            print(line)
        for ours_name in [name for name in encoders if name.startswith("defsent ")]:
            ratios = ", ".join(f"{rate[ours_name] / rate[p]:.2f}x {p}" for p in encoders if p.startswith("st "))
            print(f"{ours_name}: {ratios}")


def alone_vs_batched(fn, texts: list[str], batched: np.ndarray, count: int) -> tuple[float, float]:
    """``count`` of ``texts`` (evenly spaced) encoded one at a time against their rows of ``batched``: the smallest
    cosine and the largest |difference| (both runs L2-normalised)."""
    picked = np.linspace(0, len(texts) - 1, min(count, len(texts))).astype(int)
    alone = np.stack([fn([texts[i]])[0] for i in picked])
    return float(np.sum(alone * batched[picked], axis=1).min()), float(np.abs(alone - batched[picked]).max())


if __name__ == "__main__":
    main()
