# The script behind docs/results.md 10.4's GPU rows (WordNet + GCIDE, one full epoch, seeds 1-3 on an NVIDIA H200).
# (On the GPU this file was .gpu/merge.sh; the calls below name it so.)
# Set-up here: ../shared/tools/gpu-bundle; then, for the 64 MiB a call may carry, .gpu/wordnet.jsonl.gz replaced by an
# empty gzip (unused), docs/results moved aside for the two calls, and added to .gpu/: wn-gcide.jsonl.xz (xz -9 of
# /work/runs-58/entries/wn-gcide.jsonl, sha256 ac3dd18a...) and banksample.npz (2,000 rows of the CPU's ONNX int8 bank
# wn-gcide-bank.h5, drawn with numpy.random.default_rng(0).choice(223857, 2000, replace=False), with their entries).
# Call 1 (seeds 2 and 3 at once, the base's evaluations, the bank comparison, 127 GPU tests beside them; 443 s):
#   TESTS="tests/test_gpu.py tests/test_objective_plugin.py tests/test_noise_matching.py tests/test_train.py
#     tests/test_objectives.py tests/test_train_knobs.py tests/test_train_pairs.py tests/test_contrastive.py" \
#     WORKERS=6 TEST_DEADLINE=450 TRAIN_DEADLINE=475 bash .gpu/merge.sh
# Call 2 (the machine still warm, call 1's bank reused; seed 1 alone; 325 s):
#   SEEDS=1 SKIPBASE=1 TRAIN_DEADLINE=335 bash .gpu/merge.sh
# (call 1 ran this script before its two `[ -f $W/bank.h5 ] ||` and SKIPBASE guards were added)
# Issue 58 item 2: seeds 2 and 3 of DefSent+ step 1 on WordNet + GCIDE merged, one full epoch, on the lent GPU,
# the same settings as seed 1 on the CPU (l-fullepoch.sh) but --precision fp32 --device cuda --save-every 0,
# the bank rebuilt here (torch fp32 on the GPU; the CPU's was ONNX int8: compared on 2,000 sampled rows).
# Both seeds train at once (a MiniLM step is bound by the host). CUDA tests run beside them, niced.
set -u
source .gpu/setup.sh || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
W=/tmp/w; R=$W/r; mkdir -p $R; DEV=${DEV:-cuda}; EXTRA=${EXTRA:-}; SEEDS=${SEEDS:-2 3}
pack() { cp "$0" $R/merge.sh 2>/dev/null; tar czf $OUT/results.tgz -C $W r; echo "packed at $(el) s"; }
trap pack EXIT
log() { echo "[$(el) s] $*" | tee -a $R/log.txt; }
python3 - <<'PY' | tee $R/machine.txt
import platform, torch, transformers
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA GPU"
print(f"{gpu}; torch {torch.__version__}, transformers {transformers.__version__}, python {platform.python_version()}, cores {__import__('os').cpu_count()}")
PY
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open('.gpu/wn-gcide.jsonl.xz'), open('$W/wn-gcide.jsonl','wb'))"
head -n ${HEADN:-999999999} $W/wn-gcide.jsonl > $W/d.jsonl; D=$W/d.jsonl
sha256sum $D | tee -a $R/log.txt
log "bank start"
[ -f $W/bank.h5 ] || /usr/bin/time -f "bank %e s" defsent embed-entries $D --pool cls -m $MINILM --device $DEV --precision fp32 -b 256 --batch-tokens 32768 --no-progress -o $W/bank.h5 2>&1 | tail -3 | tee -a $R/log.txt
log "bank done"
[ -n "${SKIPBASE:-}" ] || python3 - $W/bank.h5 <<'PY' | tee $R/bankcmp.txt
import sys, h5py, numpy as np, json
s = np.load('.gpu/banksample.npz'); f = h5py.File(sys.argv[1])
names = [e.decode() if isinstance(e, bytes) else e for e in f['entries'][:]]
pos = {n: i for i, n in enumerate(names)}
rows = [(j, pos[n]) for j, n in enumerate(s['entries']) if n in pos]
a = s['vectors'][[j for j, _ in rows]]; b = f['vectors'][sorted(i for _, i in rows)]
order = np.argsort([i for _, i in rows]); a = a[order]
cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
same_index = int(sum(int(s['idx'][j]) == i for j, i in rows))
print(json.dumps({"rows_compared": len(rows), "same_row_index": same_index, "bank_rows": len(names),
  "cosine_mean": float(cos.mean()), "cosine_min": float(cos.min()), "cosine_p01": float(np.quantile(cos, 0.01)),
  "rel_l2_mean": float((np.linalg.norm(a - b, axis=1) / np.linalg.norm(a, axis=1)).mean())}))
PY
pids=""
for s in $SEEDS; do
  OMP_NUM_THREADS=4 timeout $(( ${TRAIN_DEADLINE:-470} - $(el) )) defsent train $D --bank $W/bank.h5 -m $MINILM --pooling mean \
    --pooler none --lr 1e-5 --seed $s --eval-every 1000 --eval-on dev --keep last --precision fp32 --device $DEV \
    --save-every 0 --no-progress $EXTRA -o $W/seed-$s > $R/train-$s.log 2>&1 &
  pids="$pids $!"
done
[ -n "${SKIPBASE:-}" ] || ( for sp in dev test; do defsent eval-sts --split $sp -m $MINILM --device $DEV --no-progress -o $R/base-$sp.json; done
  defsent eval-dict $D --split test --limit 2000 --bank $W/bank.h5 -m $MINILM --device $DEV --no-progress -o $R/base-dict.json
) > $R/base-eval.log 2>&1
log "base evals done"
if [ -n "${TESTS:-}" ]; then
  OUT=$W/suite SECONDS_LEFT=$(( ${TEST_DEADLINE:-440} - $(el) )) WORKERS=${WORKERS:-4} nice -n 19 bash bench/gpu_runs/suite.sh $TESTS > $R/suite-summary.txt 2>&1 &
fi
wait $pids; log "training done"
for s in $SEEDS; do
  c=$W/seed-$s; cp $c/defsent.json $R/seed-$s-defsent.json; cp $c/train_log.jsonl $R/seed-$s-train_log.jsonl
  ( defsent eval-sts --split dev -m $c --device $DEV --no-progress -o $R/seed-$s-dev.json
    defsent eval-sts -m $c --device $DEV --no-progress -o $R/seed-$s-sts.json
    defsent eval-dict $D --split test --limit 2000 --bank $W/bank.h5 -m $c --device $DEV --no-progress -o $R/seed-$s-dict.json
  ) > $R/eval-$s.log 2>&1 &
done
wait; log "all done"
[ -d $W/suite ] && cp -r $W/suite $R/suite
grep -h '"dev\|Avg\|mrr' $R/*.json | head -40
