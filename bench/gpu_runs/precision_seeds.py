"""In one process (no start-up per run): train 3 seeds x {fp32, bf16} on 10,000 WordNet definitions, eval-sts each."""

import json
import os
import sys
import time

from defsent_cli.cli import app

DICT, BANK, M, OUT = os.environ["DICT"], sys.argv[1], os.environ["MINILM"], os.environ["OUT"]
rows = []
try:
    app(["eval-sts", "-m", M, "-b", "256", "--no-progress", "-o", f"{OUT}/sts-base-fp32.json"], standalone_mode=False)
except SystemExit:
    pass
print("BASE fp32", json.load(open(f"{OUT}/sts-base-fp32.json"))["average"], flush=True)
for prec in ("fp32", "bf16"):
    for seed in (1, 2, 3):
        ck = f"/tmp/ck-{prec}-{seed}"
        t = time.time()
        try:
            app(
                [
                    "train",
                    DICT,
                    "--bank",
                    BANK,
                    "-m",
                    M,
                    "--pooling",
                    "mean",
                    "--pooler",
                    "none",
                    "--limit",
                    "10000",
                    "--seed",
                    str(seed),
                    "--precision",
                    prec,
                    "--save-every",
                    "0",
                    "--no-progress",
                    "-o",
                    ck,
                ],
                standalone_mode=False,
            )
        except SystemExit:
            pass
        tt = time.time() - t
        try:
            app(
                ["eval-sts", "-m", ck, "-b", "256", "--no-progress", "-o", f"{OUT}/sts-{prec}-{seed}.json"],
                standalone_mode=False,
            )
        except SystemExit:
            pass
        info = json.load(open(f"{ck}/defsent.json"))
        sts = json.load(open(f"{OUT}/sts-{prec}-{seed}.json"))
        rows.append(
            (prec, seed, info["precision"], info["definitions_per_second"], round(tt, 1), sts["average"]["spearman"])
        )
        print("RUN", rows[-1], flush=True)
json.dump(rows, open(f"{OUT}/runs.json", "w"))
