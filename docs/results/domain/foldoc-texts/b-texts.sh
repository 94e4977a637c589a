#!/usr/bin/env bash
# issue 58 item 3, the bank from domain text: FOLDOC's entries embedded from the StackOverflow titles of half A that
# mention them (embed-entries --texts), DefSent+ step 1 on FOLDOC's definitions against it (10.3's settings),
# evaluated on half B's clustering, STS, SearchSnippets and FOLDOC's reverse dictionary (its definition bank)
set -euxo pipefail
cd /work/runs-58; . ./common.sh
H=/work/runs-58/domain-text; F=domain/foldoc/dict.jsonl; mkdir -p $H/texts
[ -f $H/bank.h5 ] || t defsent embed-entries $F -m $MODEL --pool cls --texts $H/so-texts.txt -o $H/bank.h5 --no-progress
for s in ${SEEDS:-1 2 3}; do
  c=$H/texts/seed-$s
  [ -d $c ] || t defsent train $F --bank $H/bank.h5 -m $MODEL --pooling mean --pooler none --lr 1e-5 --seed $s -o $c --no-progress
  [ -f $c-so-b.json ] || t defsent eval-cluster --data $H/data --tasks stackoverflow --runs 10 -m $c -o $c-so-b.json --no-progress
  ev $c $c dev
  [ -f $c-ss.json ] || t defsent eval-cluster --tasks searchsnippets --runs 10 -m $c -o $c-ss.json --no-progress
  ev $c $c sts
  for sp in dev test; do [ -f $c-foldoc-$sp.json ] || t defsent eval-dict $F --split $sp --bank domain/foldoc/bank.h5 -m $c -o $c-foldoc-$sp.json --no-progress; done
done
