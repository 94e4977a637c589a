# The GPU call behind docs/results.md section 11 (issue 79): examples/matryoshka.sh at three seeds on a lent GPU.
# Set-up here: ../shared/tools/gpu-bundle, then (for the 64 MiB a call carries) gzip .gpu/minilm16/model.safetensors,
# and .gpu/wiki.txt.gz = gzip of examples/contrastive.sh's wiki.txt (WikiText-2's 9,292 test sentences).
# Called as:  bash docs/results/matryoshka/run.sh   (carry: .gpu; DEADLINE: seconds left for the example)
set -u
[ -f .gpu/minilm16/model.safetensors ] || gunzip -k .gpu/minilm16/model.safetensors.gz
source .gpu/setup.sh || exit 1
W=/tmp/mrl; R=${OUT:-/tmp/out}/mrl; mkdir -p $W $R
T0=$(date +%s)
pack() {  # every result and record back to $OUT, checkpoints' weights left behind
  (cd $W && find . \( -name '*.json' -o -name '*.txt' -o -name '*.log' \) -size -2M -print0 | xargs -0 -r cp --parents -t $R)
  echo "packed at $(( $(date +%s) - T0 )) s" >&2
}
trap pack EXIT
python3 - <<'PY' | tee $R/machine.txt
import os, platform, torch, transformers
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA GPU"
print(f"{gpu}; torch {torch.__version__}, transformers {transformers.__version__}, python {platform.python_version()}, cores {os.cpu_count()}")
PY
gunzip -c .gpu/wiki.txt.gz > $W/wiki.txt
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} SEEDS=${SEEDS:-1 2 3} JOBS=${JOBS:-12} TRAIN_ARGS="--precision fp32" DICT=$DICT \
  WIKI=$W/wiki.txt timeout ${DEADLINE:-470} bash examples/matryoshka.sh $W $MINILM > $W/run.log 2>&1
echo "matryoshka.sh exit $? after $(( $(date +%s) - T0 )) s" | tee -a $W/run.log
grep "matryoshka.sh" $W/run.log
