#!/usr/bin/env bash
# Issue 57: bench/train.py before the +NM change (main@72edf90) and after (main@2f383bb), alternating, both orders,
# on an idle machine (nothing else running): the path without --nm-weight must not have slowed
set -eu
cd /work/runs-58
PY=/work/main/.venv/bin/python
for round in 1 2; do
  for tree in /work/wt-pre /work/main /work/main /work/wt-pre; do
    echo "== round $round: $tree ($(git -C $tree rev-parse --short HEAD))"
    PYTHONPATH=$tree DEFSENT_NO_PROGRESS=1 $PY $tree/bench/train.py --dictionary entries/wn.jsonl --bank entries/wn-bank.h5 --skip-reference 2>&1 | grep -v "^model:"
  done
done
