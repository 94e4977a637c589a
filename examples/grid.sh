#!/usr/bin/env bash
# The paper's step-1 grid: (CLS, AMP), (Mean, AMP), (CLS, AC), (Mean, AC), one PST step each.
#
#   examples/grid.sh --model BASE --dict dict.jsonl --out runs/grid [any pst.sh option, e.g. --seeds "1 2" --limit 20000]
#
# Runs examples/pst.sh --steps 1 for every combination into OUT/<pooling>-<kind>/ (the two banks
# are built once each and shared through symlinks), then prints the STS averages side by side.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT="" ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[ -n "$OUT" ] || { echo "grid.sh: --out is required (see --help)" >&2; exit 2; }
trap 'echo "grid.sh: FAILED: $BASH_COMMAND" >&2' ERR
for kind in AMP AC; do
  for pooling in cls mean; do
    dir=$OUT/$pooling-$kind
    mkdir -p "$dir/step-1"
    other=$OUT/$([ "$pooling" = cls ] && echo mean || echo cls)-$kind/step-1/bank.h5
    # share the bank of the same kind (it does not depend on the training pooling)
    if [ ! -e "$dir/step-1/bank.h5" ] && [ -f "$other" ]; then ln -s "$(cd "$(dirname "$other")" && pwd)/bank.h5" "$dir/step-1/bank.h5"; fi
    bash "$HERE/pst.sh" "${ARGS[@]}" --pooling "$pooling" --kind "$kind" --steps 1 --out "$dir"
  done
done
python - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
for path in sorted(out.glob("*/step-1/sts.json")):
    result = json.loads(path.read_text())
    print(f"{path.parent.parent.name:<10} STS avg {result['average']['spearman']:.2f}")
PY
