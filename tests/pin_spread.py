"""Measure what the training pins' tolerance must hold and must catch (issue 68 item 0).

Each case of ``tests/test_training_pins.py`` is run as the test runs it (the same tiny models, inputs and
command lines, each run in a process of its own), once as it is and then:

- under other CPU kernels, as another machine of this kind picks them: ATen's vector code at another
  capability, MKL's and oneDNN's at AVX2, MKL's conditional-reproducibility mode, one thread, all at once;
- with a real change: one step more, one step fewer, another batch size, another learning rate.

It prints, per case, the largest deviation of the whole record and of the weights alone (``test_training_pins.deviation``, in the tolerance's units) of
each variant from the plain run, and the plain run's from the stored pins (written on another machine), and
writes them all as JSON:

    .venv/bin/python tests/pin_spread.py -o docs/results/pins/spread.json [CASE ...]

Kept out of the test run (a minute per case on 2 cores); docs/testing.md says what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import conftest  # noqa: E402
import test_training_pins as pins  # noqa: E402

KERNELS = {
    "aten-default": {"ATEN_CPU_CAPABILITY": "default"},
    "aten-avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "mkl-avx2": {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "mkl-cbwr": {"MKL_CBWR": "COMPATIBLE"},
    "onednn-avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
    "one-thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "all-at-once": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    },
}


def _changed(args: list[str], option: str, change) -> list[str] | None:
    """``args`` with ``option``'s value changed by ``change`` (None where the change makes no run)."""
    args = list(args)
    at = args.index(option)
    value = change(args[at + 1])
    if value is None:
        return None
    args[at + 1] = value
    return args


CHANGES = {
    "one-step-more": lambda a: _changed(a, "--max-steps", lambda v: str(int(v) + 1)),
    "one-step-fewer": lambda a: _changed(a, "--max-steps", lambda v: str(int(v) - 1) if int(v) > 1 else None),
    "batch-3": lambda a: _changed(a, "-b", lambda v: "3"),
    "lr-x1.1": lambda a: _changed(a, "--lr", lambda v: repr(float(v) * 1.1)),
}


def _inputs(root: Path, env: dict) -> dict:
    """The pins' inputs (``test_training_pins.inputs``), the bank built under ``env``."""
    root.mkdir(parents=True, exist_ok=True)
    rows = pins.input_rows()
    dictionary = root / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = root / "bank.h5"
    subprocess.run(
        [*conftest.DEFSENT, "embed-entries", dictionary, "-m", MODELS["bert"], "-o", bank, "--device", "cpu", "-q"],
        env=env,
        check=True,
        capture_output=True,
    )
    sentences = root / "sentences.txt"
    sentences.write_text("".join(line + "\n" for line in conftest.CORPUS))
    pairs = root / "pairs.tsv"
    pairs.write_text(pins.pairs_text())
    return {"dictionary": dictionary, "bank": bank, "sentences": sentences, "pairs": pairs}


def _run(args: list, out: Path, env: dict) -> dict:
    done = subprocess.run(
        [*map(str, conftest.DEFSENT), *map(str, args), "-o", str(out), "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, args))}: {done.stderr}")
    return json.loads(json.dumps(pins.record(out)))


def _parts(got: dict, want: dict) -> dict:
    """The deviation of the whole record and of its weights alone (a real change in the code may leave the
    record's settings as they were: the weights must show it)."""
    return {"all": pins.deviation(got, want), "weights": pins.deviation(got["weights"], want["weights"])}


MODELS: dict[str, Path] = {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=pins.CASE_NAMES)
    parser.add_argument("-o", "--output", type=Path, required=True)
    options = parser.parse_args()
    stored = json.loads(pins.PINS.read_text())
    base_env = {**os.environ, "DEFSENT_NO_PROGRESS": "1"}
    report: dict = {"tolerance": pins.TOLERANCE, "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        MODELS["bert"] = conftest.build_tiny_bert(tmp / "bert")
        MODELS["roberta"] = conftest.build_tiny_roberta(tmp / "roberta")
        MODELS["st"] = conftest.wrap_sentence_transformers(MODELS["bert"], tmp / "st")
        inputs = {"plain": _inputs(tmp / "in-plain", base_env)}
        for name, env in KERNELS.items():
            inputs[name] = _inputs(tmp / f"in-{name}", {**base_env, **env})
        for case in options.cases:
            args = pins.case_args(inputs["plain"], MODELS["bert"], MODELS["roberta"], MODELS["st"])[case]
            plain = _run(args, tmp / f"{case}-plain", base_env)
            pinned = {k: v for k, v in stored[f"run/{case}"].items() if k != "stderr"}
            row = {"pins (another machine)": _parts(plain, pinned)}
            for name, env in KERNELS.items():
                kernel_args = pins.case_args(inputs[name], MODELS["bert"], MODELS["roberta"], MODELS["st"])[case]
                got = _run(kernel_args, tmp / f"{case}-{name}", {**base_env, **env})
                row[name] = _parts(got, plain)
            for name, change in CHANGES.items():
                changed = change(args)
                if changed is not None:
                    row[name] = _parts(_run(changed, tmp / f"{case}-{name}", base_env), plain)
            report["cases"][case] = row
            print(case, flush=True)
            for name, parts in row.items():
                print(f"  {name:24}", "  ".join(f"{part} {far:.3g}" for part, (far, _) in parts.items()), flush=True)
    noise = [v["all"][0] for row in report["cases"].values() for k, v in row.items() if k not in CHANGES]
    change = [v["weights"][0] for row in report["cases"].values() for k, v in row.items() if k in CHANGES]
    report["largest_noise"], report["smallest_change"] = max(noise), min(change)
    print(
        f"largest deviation from kernels and machines {max(noise):.3g}; smallest of the weights' from a real change {min(change):.3g}"
    )
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
