#!/usr/bin/env bash
# Where an ncu timing run's time goes (the largest share of grade's timing phase): `check` of a
# fixed exercise with its tool runs recorded gives the exact ncu command grade uses; it runs again
# as is, without cache control, with the time metric alone, and the program without ncu, 3 times
# each. Usage: scripts/gpu-ncu-cost.sh EXERCISE SOLUTION_FILE EXERCISE_FILE OUTDIR
set -uo pipefail
B=${B:-.gpu/xtask}
ex=$1 solution=$2 dest=$3 out=$4
mkdir -p "$out"
cp "$dest" /tmp/ncu-cost-backup; cp "$solution" "$dest"
rm -rf rec-ncu-cost
CUDABUGS_NO_INSTALL=1 $B --format json --record-tools rec-ncu-cost check "$ex" > "$out/check.json" 2>&1
cp /tmp/ncu-cost-backup "$dest"
rec=$(grep -l '"command": ".*ncu ' rec-ncu-cost/*.json | grep -v '\.1\.json' | grep learner | head -1)
[ -n "$rec" ] || rec=$(grep -l '"command": ".*ncu ' rec-ncu-cost/*.json | head -1)
cmd=$(python3 -c "import json,sys; print(json.load(open('$rec'))['command'])")
echo "recording: $rec" > "$out/ncu-cost.txt"
echo "command: $cmd" >> "$out/ncu-cost.txt"
program_and_args=$(python3 -c "
import shlex; a = shlex.split('''$cmd''')
i = a.index('--log-file'); print(shlex.join(a[i + 2:]))")
variant() {
  local name=$1; shift
  for k in 1 2 3; do
    local s e; s=$(date +%s.%N)
    eval "$@" > "$out/$name.$k.log" 2>&1
    e=$(date +%s.%N)
    echo "$name $k $(python3 -c "print(round($e - $s, 3))") s; $(grep -c 'pass' "$out/$name.$k.log") lines naming passes" >> "$out/ncu-cost.txt"
  done
}
variant as-is "$cmd"
variant no-cache-control "$(echo "$cmd" | sed 's/--cache-control all/--cache-control none/')"
variant time-only "$(echo "$cmd" | sed -E 's/--metrics [^ ]+/--metrics gpu__time_duration.sum/')"
variant no-clock-control "$(echo "$cmd" | sed 's/--clock-control base/--clock-control none/')"
variant program-alone "$program_and_args"
grep -h "PROF" "$out/as-is.1.log" | head -20 >> "$out/ncu-cost.txt"
cat "$out/ncu-cost.txt"
