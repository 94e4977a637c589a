#!/usr/bin/env bash
# Progressive separate training (DefSent+), scripted with the defsent commands.
#
#   examples/pst.sh --model BASE --dict dict.jsonl --out runs/pst [--pooling cls] [--kind AC]
#                   [--seeds "1 2 3"] [--steps 2] [--lr 2e-5] [--ica-last [--ica-scale 100]] [--by stsb-dev]
#                   [--pooler auto] [--head-lr 1e-3] [--limit N] [--eval-pooling cls] [--no-eval] [--senteval]
#                   [--start-from DIR] [--eval-tasks STS-B,SICK-R] [--eval-every N] [--eval-on dev]
#                   [--merge] [--train-args "--logits cosine --scale 20 ..."]
#
# Step k: embed-entries with the previous step's best (step 1: BASE) -> train a FRESH copy of
# BASE for every seed (--eval-every: each run keeps its best checkpoint on --eval-on) -> select-best.
# --merge: the step's best is merged with BASE (WiSE-FT, alpha 0:1:0.1 chosen on --eval-on) into
# OUT/step-K/merged, which is then the step's model (evaluated, and the next step's bank encoder).
# --train-args passes any other train options. --ica-last ICA-transforms the last step's bank. Each step's
# best is evaluated: eval-sts, eval-dict on the dictionary's held-out test split (when it has
# one) and the bank's isotropy figures and picture (inspect --plot); eval-senteval (--senteval)
# on the final best. --start-from DIR reuses DIR's steps 1..STEPS-1 as they are (e.g. an ICA variant of a
# finished run; DIR's last-step bank is reused when it exists). Every file is kept, named by step and seed:
#   OUT/step-K/bank.h5 [bank-ica.h5]  OUT/step-K/seed-S/  OUT/step-K/ranking.json  OUT/step-K/best -> seed-S
#   OUT/step-K/sts.json  OUT/step-K/dict-test.json  OUT/step-K/space.json  OUT/step-K/space.png  OUT/final-senteval.json
# Wall time of each stage goes to OUT/times.tsv.
# A rerun skips finished work (outputs are written atomically, so an existing one is complete)
# and resumes a killed training run. The script stops at the first failure and shows the command.
set -euo pipefail

MODEL="" DICT="" OUT="" POOLING=cls KIND=AC SEEDS="1 2 3" STEPS=2 LR=2e-5 ICA_LAST=0 ICA_SCALE="" BY=stsb-dev
POOLER=auto HEAD_LR="" LIMIT="" EVAL_POOLING="" EVAL=1 SENTEVAL=0 START_FROM="" EVAL_TASKS=()
EVAL_EVERY="" EVAL_ON=dev MERGE=0 TRAIN_ARGS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --dict) DICT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --pooling) POOLING=$2; shift 2 ;;
    --kind) KIND=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --lr) LR=$2; shift 2 ;;
    --ica-last) ICA_LAST=1; shift ;;
    --ica-scale) ICA_SCALE=$2; shift 2 ;;
    --by) BY=$2; shift 2 ;;
    --pooler) POOLER=$2; shift 2 ;;
    --head-lr) HEAD_LR=$2; shift 2 ;;
    --limit) LIMIT=$2; shift 2 ;;
    --eval-pooling) EVAL_POOLING=$2; shift 2 ;;
    --no-eval) EVAL=0; shift ;;
    --senteval) SENTEVAL=1; shift ;;
    --start-from) START_FROM=$2; shift 2 ;;
    --eval-tasks) EVAL_TASKS=(--tasks "$2"); shift 2 ;;
    --eval-every) EVAL_EVERY=$2; shift 2 ;;
    --eval-on) EVAL_ON=$2; shift 2 ;;
    --merge) MERGE=1; shift ;;
    --train-args) TRAIN_ARGS=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "pst.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$MODEL" ] || [ -z "$DICT" ] || [ -z "$OUT" ]; then
  echo "pst.sh: --model, --dict and --out are required (see --help)" >&2; exit 2
fi
EVAL_POOLING=${EVAL_POOLING:-$POOLING}
trap 'echo "pst.sh: FAILED: $BASH_COMMAND" >&2' ERR
run() { echo "+ $*" >&2; "$@" || { local rc=$?; echo "pst.sh: FAILED (exit $rc): $*" >&2; exit "$rc"; }; }
# timed NAME CMD...: run, and append "NAME<TAB>seconds<TAB>command" to OUT/times.tsv
timed() {
  local name=$1 start; shift
  start=$(date +%s)
  run "$@"
  printf '%s\t%s\t%s\n' "$name" "$(( $(date +%s) - start ))" "$*" >> "$OUT/times.tsv"
}
mkdir -p "$OUT"
if [ -n "$START_FROM" ]; then
  for step in $(seq 1 $(( STEPS - 1 ))); do
    [ -e "$OUT/step-$step" ] || ln -s "$(cd "$START_FROM" && pwd)/step-$step" "$OUT/step-$step"
  done
  # the last step's plain bank depends only on the shared step STEPS-1: reuse it when DIR has it
  shared=$START_FROM/step-$STEPS/bank.h5
  if [ -f "$shared" ] && [ ! -e "$OUT/step-$STEPS/bank.h5" ]; then
    mkdir -p "$OUT/step-$STEPS"
    ln -s "$(cd "$(dirname "$shared")" && pwd)/bank.h5" "$OUT/step-$STEPS/bank.h5"
  fi
fi
HAS_TEST=$(grep -q '"split": *"test"' "$DICT" && echo 1 || echo 0)

encoder=$MODEL
for step in $(seq 1 "$STEPS"); do
  dir=$OUT/step-$step
  if [ -n "$START_FROM" ] && [ "$step" -lt "$STEPS" ]; then
    # a shared step of DIR: use its best as it is (--seeds applies to the last step only)
    [ -e "$dir/best" ] || { echo "pst.sh: $START_FROM/step-$step has no best checkpoint" >&2; exit 2; }
    encoder=$dir/best
    continue
  fi
  mkdir -p "$dir"
  bank=$dir/bank.h5
  [ -f "$bank" ] || timed "step-$step embed-entries" defsent embed-entries "$DICT" --model "$encoder" --kind "$KIND" -o "$bank"
  if [ "$ICA_LAST" = 1 ] && [ "$step" = "$STEPS" ]; then
    ica_args=()
    [ -n "$ICA_SCALE" ] && ica_args=(--scale "$ICA_SCALE")
    [ -f "$dir/bank-ica.h5" ] || timed "step-$step ica" defsent ica "$bank" "${ica_args[@]}" -o "$dir/bank-ica.h5"
    bank=$dir/bank-ica.h5
  fi
  for seed in $SEEDS; do
    ckpt=$dir/seed-$seed
    [ -d "$ckpt" ] && continue
    args=(train "$DICT" --bank "$bank" --model "$MODEL" --pooling "$POOLING" --pooler "$POOLER"
          --lr "$LR" --seed "$seed" -o "$ckpt" --resume)
    [ -n "$LIMIT" ] && args+=(--limit "$LIMIT")
    [ -n "$HEAD_LR" ] && args+=(--head-lr "$HEAD_LR")
    [ -n "$EVAL_EVERY" ] && args+=(--eval-every "$EVAL_EVERY" --eval-on "$EVAL_ON")
    # shellcheck disable=SC2206
    [ -n "$TRAIN_ARGS" ] && args+=($TRAIN_ARGS)
    timed "step-$step train seed $seed" defsent "${args[@]}"
  done
  if [ ! -e "$dir/best" ]; then
    # shellcheck disable=SC2086
    run defsent select-best $(for s in $SEEDS; do echo "$dir/seed-$s"; done) --by "$BY" --pooling "$EVAL_POOLING" \
      -o "$dir/ranking.json" --link "$dir/best" > /dev/null
  fi
  encoder=$dir/best
  echo "pst.sh: step $step best: $(readlink "$dir/best")" >&2
  if [ "$MERGE" = 1 ]; then
    [ -d "$dir/merged" ] || timed "step-$step merge" defsent merge "$MODEL" "$dir/best" --alpha 0:1:0.1 \
      --select "$EVAL_ON" --pooling "$EVAL_POOLING" -o "$dir/merged"
    encoder=$dir/merged
  fi
  if [ "$EVAL" = 1 ]; then
    [ -f "$dir/sts.json" ] || timed "step-$step eval-sts" defsent eval-sts --model "$encoder" --pooling "$EVAL_POOLING" \
      "${EVAL_TASKS[@]}" -o "$dir/sts.json"
    if [ "$HAS_TEST" = 1 ] && [ ! -f "$dir/dict-test.json" ]; then
      timed "step-$step eval-dict" defsent eval-dict "$DICT" --split test --model "$encoder" --bank "$bank" -o "$dir/dict-test.json" > /dev/null
    fi
    [ -f "$dir/space.json" ] || timed "step-$step inspect" defsent inspect "$bank" --plot "$dir/space.png" -o "$dir/space.json" > /dev/null
  fi
done

if [ "$EVAL" = 1 ]; then
  if [ "$SENTEVAL" = 1 ]; then
    [ -f "$OUT/final-senteval.json" ] || timed "final eval-senteval" defsent eval-senteval --model "$encoder" \
      --pooling "$EVAL_POOLING" -o "$OUT/final-senteval.json"
  fi
fi
echo "pst.sh: done; final model $encoder" >&2
