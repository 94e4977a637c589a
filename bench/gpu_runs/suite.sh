# The test suite on a GPU machine, as issue 26 asks: `pytest -m "not slow"` with every command's --device left
# at auto (so: cuda), and the CUDA-only tests of tests/test_gpu.py. One call of the lent machine, under its
# 10-minute limit; the log and a JUnit report come back in $OUT.
# Here: ../shared/tools/gpu-bundle (then carry .gpu). There:  bash bench/gpu_runs/suite.sh [PYTEST ARGS]
# (default: tests; e.g. tests/test_gpu.py for the GPU tests alone).
# SECONDS_LEFT (default 540) bounds pytest; WORKERS (default: cores - 2) the xdist workers, each with one CPU thread
# (OMP_NUM_THREADS=1: 14 workers of 16 threads each on 16 cores spend their time waiting for each other).
# Each failure is written to $OUT/failures.log as it happens, each finished test to $OUT/done.log
# (bench/gpu_runs/live_failures.py), so a run stopped by the time limit still names its failures, and
# $OUT/not-run.txt lists the collected tests it never finished.
source .gpu/setup.sh
OUT=${OUT:-/tmp/suite-out}
mkdir -p "$OUT"
rm -f "$OUT"/failures.log "$OUT"/done.log "$OUT"/collected.txt "$OUT"/not-run.txt
python3 - <<'EOF' | tee "$OUT/machine.txt"
import platform, torch, transformers
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA GPU"
print(f"{gpu}; torch {torch.__version__}, transformers {transformers.__version__}, python {platform.python_version()}")
EOF
workers=${WORKERS:-$(( $(nproc) > 4 ? $(nproc) - 2 : 1 ))}
parallel=""
if python3 -c "import xdist" 2>/dev/null; then parallel="-n $workers --dist load"; export OMP_NUM_THREADS=1; else echo "no pytest-xdist here: one process"; fi
set -o pipefail
timeout "${SECONDS_LEFT:-540}" python3 -m pytest -q -m "not slow" $parallel -p no:cacheprovider -p bench.gpu_runs.live_failures --tb=short -rfE \
  --junitxml="$OUT/suite.xml" "${@:-tests}" 2>&1 | grep -v -i warning > "$OUT/suite.log"
rc=$?
grep -E "^(FAILED|ERROR)|passed|failed|error" "$OUT/suite.log" | tail -40
[ -f "$OUT/failures.log" ] && grep "^==== " "$OUT/failures.log"
if [ -f "$OUT/collected.txt" ]; then
  comm -23 <(sort "$OUT/collected.txt") <(cut -d' ' -f3- "$OUT/done.log" 2>/dev/null | sort) > "$OUT/not-run.txt"
  echo "$(cat "$OUT/done.log" 2>/dev/null | wc -l) of $(wc -l < "$OUT/collected.txt") tests finished; not run: $(wc -l < "$OUT/not-run.txt") ($OUT/not-run.txt)"
fi
echo "pytest rc $rc"
