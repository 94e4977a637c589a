#!/bin/bash
# Issue 72: bf16 autocast against fp32 training on this AMX CPU, two recipes, three seeds each, alternating.
set -euo pipefail
export PATH=/work/main/.venv/bin:$PATH DEFSENT_DATA=/work/shared/data DEFSENT_NO_PROGRESS=1
R=/work/runs-72
# A. docs/train.md's recipe (8,000 WordNet entries, the bundled all-MiniLM-L6-v2, its defaults)
A=$R/wordnet; mkdir -p $A
[ -f $A/dict.jsonl ] || defsent build-dict --wordnet $DEFSENT_DATA/wordnet --sample 8000 --split 0.8,0.1,0.1 -o $A/dict.jsonl --stats
[ -f $A/bank.h5 ] || defsent embed-entries $A/dict.jsonl -o $A/bank.h5
for s in 1 2 3; do for p in fp32 bf16; do
  [ -d $A/$p-$s ] || defsent train $A/dict.jsonl --bank $A/bank.h5 --limit 10000 --seed $s --precision $p -o $A/$p-$s
  [ -f $A/$p-$s-dev.json ] || defsent eval-sts --split dev -m $A/$p-$s -o $A/$p-$s-dev.json
  [ -f $A/$p-$s-sts.json ] || defsent eval-sts -m $A/$p-$s -o $A/$p-$s-sts.json
done; done
# B. results.md 10.2's FOLDOC recipe (AC bank, mean pooling, no head, lr 1e-5)
B=$R/foldoc; mkdir -p $B
[ -f $B/dict.jsonl ] || defsent build-dict /usr/share/dictd/foldoc.index --first-sentence --split 0.8,0.1,0.1 -o $B/dict.jsonl --stats
[ -f $B/bank.h5 ] || defsent embed-entries $B/dict.jsonl --pool cls -o $B/bank.h5
for s in 1 2 3; do for p in fp32 bf16; do
  [ -d $B/$p-$s ] || defsent train $B/dict.jsonl --bank $B/bank.h5 --pooling mean --pooler none --lr 1e-5 --seed $s --precision $p -o $B/$p-$s
  [ -f $B/$p-$s-dev.json ] || defsent eval-sts --split dev -m $B/$p-$s -o $B/$p-$s-dev.json
  [ -f $B/$p-$s-sts.json ] || defsent eval-sts -m $B/$p-$s -o $B/$p-$s-sts.json
done; done
echo ALL DONE
