"""Would CUDA graphs close issue 26's unmet fp32 target (encode >= 1.5x sentence-transformers fp32 at equal batch
size)? An experiment: nothing in the product uses CUDA graphs yet. On an H200 (docs/speed.md, "GPU";
docs/results/speed/gpu/graphs-h200.json) the graphs gave 3.10x sentence-transformers fp32 at batch 32, encode() 1.71x.

    source .gpu/setup.sh && python3 bench/gpu_runs/graphs.py -o $OUT/graphs.json        # on the GPU machine
    .venv/bin/python bench/gpu_runs/graphs.py --smoke-cpu --model M --dictionary D --texts 300   # here

At batch 32 an fp32 MiniLM forward pass is a few hundred small kernels whose launches (host time) cost more than
their arithmetic (docs/speed.md, "GPU"). A CUDA graph records them once per input shape and replays them in one
launch. Graphs need fixed shapes, so this encodes in batches of exactly ``--batch`` rows (the last one filled up
with copies of its first row) whose length is rounded up to a multiple of ``--bucket`` tokens: one graph per
length, captured before the timing (the capture time is reported on its own). The graph holds the forward pass
with a ready-made SDPA mask and the masked mean, so a batch is: tokenise (defsent's threaded tokeniser, once for
all texts, as ``encode()`` does), pad on the host, two non-blocking copies into the graph's input buffers, replay,
keep a device copy of the pooled rows; one copy back at the end.

Rows, the same ``--texts`` WordNet definitions (bench/gpu.py's seeded sample), each warmed up, best of
``--repeats``, sentences/s with tokenisation: sentence-transformers fp32, defsent ``encode()`` fp32, and the
graphs, all at ``--batch``; each with max |diff| of its unit vectors from defsent fp32. With ``--smoke-cpu`` the
same bucketed batches run without graphs on the CPU: that checks the padding, the mask and the pooling
(max |diff| ~1e-6), not the speed. Without a CUDA GPU (and no ``--smoke-cpu``) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import bench.gpu as gpu_bench  # noqa: E402
from bench.gpu import common_arguments, definitions, timed, unit  # noqa: E402


def padded_to(id_lists: list[list[int]], rows: int, length: int, pad: int):
    """(ids, mask) host tensors of shape (rows, length): ``tokenize.pad_batch``'s, with the rows filled up with
    copies of the first list and the columns padded up to ``length``."""
    import torch.nn.functional as F

    from defsent_cli.encoder.tokenize import pad_batch

    ids, mask = pad_batch(list(id_lists) + [id_lists[0]] * (rows - len(id_lists)), pad)
    extra = length - ids.shape[1]
    return F.pad(ids, (0, extra), value=pad), F.pad(mask, (0, extra))


class GraphEncoder:
    """Mean-pooled fp32 vectors from CUDA graphs, one per bucketed length (plain calls with ``graphs=False``)."""

    def __init__(self, loaded, batch: int, bucket: int, graphs: bool) -> None:
        import torch

        from defsent_cli.encoder.tokenize import pad_id

        self.loaded, self.batch, self.bucket, self.graphs = loaded, batch, bucket, graphs
        self.device = torch.device(loaded.device)
        self.pad = pad_id(loaded.tokenizer)
        self.shapes: dict[int, tuple] = {}  # length -> (graph or None, ids buffer, mask buffer, output buffer)
        self.pool = torch.cuda.graph_pool_handle() if graphs else None
        self.capture_seconds = 0.0

    def forward(self, ids, mask):
        from defsent_cli.encoder.encode import model_mask  # SDPA's ready-made mask: no host sync to ask for it
        from defsent_cli.encoder.pooling import masked_mean  # mean pooling's own (tensor operations only)

        states = self.loaded.model(input_ids=ids, attention_mask=model_mask(self.loaded.model, mask, True))
        return masked_mean(states.last_hidden_state, mask)

    def shape(self, length: int):
        import torch

        if length in self.shapes:
            return self.shapes[length]
        ids = torch.full((self.batch, length), self.pad, dtype=torch.long, device=self.device)
        mask = torch.ones((self.batch, length), dtype=torch.long, device=self.device)
        graph, out = None, None
        if self.graphs:
            start = time.perf_counter()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side), torch.inference_mode():
                for _ in range(3):  # warm-up outside the capture, as torch's CUDA-graph notes ask
                    self.forward(ids, mask)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool), torch.inference_mode():
                out = self.forward(ids, mask)
            torch.cuda.synchronize()
            self.capture_seconds += time.perf_counter() - start
        self.shapes[length] = (graph, ids, mask, out)
        return self.shapes[length]

    def plan(self, id_lists: list[list[int]]) -> list[tuple[np.ndarray, int]]:
        """(indices, bucketed length) per batch, longest first."""
        order = np.argsort([-len(ids) for ids in id_lists], kind="stable")
        plan = []
        for i in range(0, len(order), self.batch):
            index = order[i : i + self.batch]
            longest = len(id_lists[index[0]])
            plan.append((index, -(-longest // self.bucket) * self.bucket))
        return plan

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """The ids ``encode()`` reads for mean pooling (defsent's threaded tokeniser)."""
        from defsent_cli.encoder.pooling import build_pooling
        from defsent_cli.encoder.tokenize import tokenize

        return tokenize(texts, self.loaded.tokenizer, build_pooling("mean"), self.loaded.max_length)

    def prepare(self, texts: list[str]) -> None:
        """Every graph ``encode(texts)`` will replay, captured now (outside the timing)."""
        for _, length in self.plan(self.tokenize(texts)):
            self.shape(length)

    def encode(self, texts: list[str]) -> np.ndarray:
        import torch

        id_lists = self.tokenize(texts)
        parts, where = [], []
        with torch.inference_mode():
            for index, length in self.plan(id_lists):
                graph, ids_buffer, mask_buffer, out = self.shape(length)
                ids, mask = padded_to([id_lists[i] for i in index], self.batch, length, self.pad)
                if graph is None:
                    parts.append(self.forward(ids, mask)[: len(index)])
                else:
                    ids_buffer.copy_(ids.pin_memory(), non_blocking=True)
                    mask_buffer.copy_(mask.pin_memory(), non_blocking=True)
                    graph.replay()
                    parts.append(out[: len(index)].clone())  # the buffer is the next replay's
                where.append(index)
            rows = torch.cat(parts).float().cpu().numpy()
        vectors = np.empty_like(rows)
        vectors[np.concatenate(where)] = rows
        return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common_arguments(parser)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--bucket", type=int, default=8, help="lengths rounded up to a multiple of this")
    parser.add_argument("--smoke-cpu", action="store_true", help="no graphs, on the CPU (checks the script)")
    parser.add_argument("-o", "--output", type=Path, default=Path("bench/out/graphs.json"))
    args = parser.parse_args()

    import torch

    if not args.smoke_cpu and not torch.cuda.is_available():
        print("bench/gpu_runs/graphs.py: no CUDA GPU here; nothing measured")
        return
    if not args.model or not args.dictionary:
        sys.exit("graphs.py needs --model and --dictionary (or MINILM and DICT)")
    from sentence_transformers import SentenceTransformer

    from defsent_cli.encoder.encode import encode
    from defsent_cli.encoder.models import load_model

    os.environ["DEFSENT_NO_PROGRESS"] = "1"
    device = gpu_bench.DEVICE = "cpu" if args.smoke_cpu else "cuda"  # timed() synchronises the GPU
    gpu = torch.cuda.get_device_name() if device == "cuda" else "cpu (smoke run)"
    print(f"{gpu}; torch {torch.__version__}", flush=True)
    texts = definitions(args.dictionary, args.texts)

    rows, vectors = [], {}

    def add(name: str, fn) -> None:
        seconds, vectors[name] = timed(fn, args.repeats)
        rows.append({"encoder": name, "batch": args.batch, "seconds": round(seconds, 4), "per_s": len(texts) / seconds})
        print(f"  {name:<36} batch {args.batch}: {len(texts) / seconds:>9,.0f} sentences/s", flush=True)

    st = SentenceTransformer(args.model, device=device)
    st.max_seq_length = 256
    add("sentence-transformers fp32", lambda: st.encode(texts, batch_size=args.batch))
    loaded = load_model(args.model, device)
    loaded.max_length = 256
    add("defsent fp32", lambda: encode(texts, loaded, "mean", batch_size=args.batch, show_progress_bar=False))
    graphs = GraphEncoder(loaded, args.batch, args.bucket, graphs=device == "cuda")
    try:
        graphs.prepare(texts)
        name = "defsent fp32, CUDA graphs" if graphs.graphs else "defsent fp32, bucketed (no graphs)"
        add(name, lambda: graphs.encode(texts))
        failed = None
    except Exception as error:  # a capture that syncs or allocates on the host is the finding, not a crash
        failed = f"{type(error).__name__}: {error}".splitlines()[0]
        print(f"  graphs failed: {failed}", flush=True)
    reference = unit(vectors["defsent fp32"])
    for row in rows:
        row["max_abs_diff_vs_defsent_fp32"] = float(np.abs(unit(vectors[row["encoder"]]) - reference).max())
        print(f"  {row['encoder']:<36} max|diff| {row['max_abs_diff_vs_defsent_fp32']:.1e}")
    rate = {row["encoder"]: row["per_s"] for row in rows}
    ratios = {f"{name} / sentence-transformers fp32": rate[name] / rate["sentence-transformers fp32"] for name in rate}
    for name, value in ratios.items():
        print(f"  {name:<64} {value:5.2f}x")
    result = {
        "gpu": gpu,
        "torch": torch.__version__,
        "texts": len(texts),
        "command": " ".join(["python", *sys.argv]),
        "shapes": len(graphs.shapes),
        "capture_seconds": round(graphs.capture_seconds, 3),
        "graphs_failed": failed,
        "rows": rows,
        "ratios": ratios,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{len(graphs.shapes)} shapes, capture {graphs.capture_seconds:.2f} s; wrote {args.output}")


if __name__ == "__main__":
    main()
