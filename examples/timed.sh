# Sourced by the example scripts that keep a times.tsv: `timed NAME COMMAND ...` shows the command on stderr,
# runs it, stops the script with "SCRIPT: FAILED (exit N): COMMAND" when it fails, and appends NAME, its wall
# seconds and the command to "$OUT/times.tsv".
timed() {
  local name=$1 start; shift
  start=$(date +%s)
  echo "+ $*" >&2
  "$@" || { local rc=$?; echo "$(basename "$0"): FAILED (exit $rc): $*" >&2; exit "$rc"; }
  printf '%s\t%s\t%s\n' "$name" "$(( $(date +%s) - start ))" "$*" >> "$OUT/times.tsv"
}
