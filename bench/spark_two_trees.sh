#!/usr/bin/env bash
# spark-check of two checkouts side by side in one run, alternating, ROUNDS times each:
# local[2], --brokers 4 --max-depth 12, a checkpoint directory (as make spark-check has one).
# Prints each run's exit code, wall seconds, distinct states and transitions (which must be
# equal); the checkpoints' manifests under $OUT hold the seconds per level.
#
#     bench/spark_two_trees.sh /path/to/old-checkout /path/to/new-checkout [ROUNDS]
#
# Each checkout runs its own code (python -m verifier.cli from its directory) with this
# checkout's venv. Run it alone on the machine: it is the measurement.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
py="$here/.venv/bin/python"
rounds=${3:-2}
OUT=${OUT:-$(mktemp -d)}
for round in $(seq "$rounds"); do
  for tree in "$1" "$2"; do
    d="$OUT/$(basename "$tree")-$round"; rm -rf "$d"; mkdir -p "$d"
    start=$(date +%s.%N)
    (cd "$tree" && "$py" -m verifier.cli spark-check --master 'local[2]' --brokers 4 --max-depth 12 \
        --checkpoint-dir "$d/ck" --out "$d/out" -q >"$d/stdout" 2>"$d/stderr")
    rc=$?
    end=$(date +%s.%N)
    counts=$("$py" -c "import json,glob,sys; c=json.load(open(glob.glob(sys.argv[1]+'/out/*/summary.json')[0]))['counts']; print(c['distinct_states'], c['transitions'])" "$d")
    echo "round=$round tree=$tree exit=$rc wall=$("$py" -c "print(round($end-$start,1))") states,transitions=$counts"
  done
done
