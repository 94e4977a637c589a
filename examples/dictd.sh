#!/usr/bin/env bash
# A dictionary from a dictd database as Debian installs it: FOLDOC (the Free On-line Dictionary of
# Computing, Debian's dict-foldoc, installed when missing) by default, split by entry for training, with
# the statistics per split and per source.
# Usage: examples/dictd.sh [WORKDIR] [DATABASE]     (default dictd-out/ and /usr/share/dictd/foldoc.index)
#   DATABASE: a dictd NAME.index, NAME.dict.dz or base name NAME: /usr/share/dictd/gcide.index (apt-get
#   install dict-gcide), /usr/share/dictd/jargon.index (dict-jargon), any other dict-* package's.
# Env:   CATEGORY  keep only this FOLDOC category (e.g. programming; default: all)
#        SPLIT     train,dev,test fractions by entry (default 0.8,0.1,0.1)   SEED (default 42)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac

WORK=${1:-dictd-out}
DATABASE=${2:-/usr/share/dictd/foldoc.index}
SPLIT=${SPLIT:-0.8,0.1,0.1}
SEED=${SEED:-42}
mkdir -p "$WORK"
trap 'echo "dictd: failed at: $BASH_COMMAND" >&2' ERR

# The default database, FOLDOC, is Debian's dict-foldoc: installed when missing (as demo.sh installs wordnet-base).
if [ "$DATABASE" = /usr/share/dictd/foldoc.index ] && [ ! -f "$DATABASE" ]; then
  echo "dictd: installing Debian's dict-foldoc for /usr/share/dictd/foldoc.*" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q dict-foldoc >&2; else sudo apt-get install -y -q dict-foldoc >&2; fi
fi

NAME=$(basename "$DATABASE"); NAME=${NAME%.index}; NAME=${NAME%.dz}; NAME=${NAME%.dict}
FILTER=()
if [ -n "${CATEGORY:-}" ]; then FILTER=(--category "$CATEGORY"); NAME=$NAME-$CATEGORY; fi
OUT=$WORK/$NAME.jsonl
echo "dictd: $DATABASE -> $OUT" >&2

# One definition per sense (GCIDE's numbered senses, FOLDOC's first paragraph), with its part of speech,
# labels and categories as metadata; entries split by entry so dev/test entries are unseen in training.
[ -f "$OUT" ] || defsent build-dict "$DATABASE" "${FILTER[@]}" --split "$SPLIT" --seed "$SEED" --stats -o "$OUT"
echo "dictd: done: $OUT (train with: defsent embed-entries $OUT --model MODEL -o bank.h5, then defsent train)" >&2
