#!/usr/bin/env bash
# issue 58 item 3, the bank from domain text: WiSE-FT of each seed with the base (alpha on the STS dev composite),
# and 10.3's foldoc + WiSE-FT seeds clustered on half B too
set -euxo pipefail
cd /work/runs-58; . ./common.sh
while pgrep -f "b-texts.sh" > /dev/null; do sleep 20; done
H=/work/runs-58/domain-text; F=domain/foldoc/dict.jsonl
for s in 1 2 3; do
  c=$H/texts/wise-$s
  [ -d $c ] || t defsent merge "$MODEL" $H/texts/seed-$s --alpha 0:1:0.1 --select dev -o $c --no-progress
  [ -f $c-so-b.json ] || t defsent eval-cluster --data $H/data --tasks stackoverflow --runs 10 -m $c -o $c-so-b.json --no-progress
  ev $c $c dev
  [ -f $c-ss.json ] || t defsent eval-cluster --tasks searchsnippets --runs 10 -m $c -o $c-ss.json --no-progress
  ev $c $c sts
  for sp in dev test; do [ -f $c-foldoc-$sp.json ] || t defsent eval-dict $F --split $sp --bank domain/foldoc/bank.h5 -m $c -o $c-foldoc-$sp.json --no-progress; done
done
for s in 1 2 3; do
  o=$H/eval/foldoc-wise-$s-so-b.json
  [ -f $o ] || t defsent eval-cluster --data $H/data --tasks stackoverflow --runs 10 -m domain/foldoc/wise-$s -o $o --no-progress
done
