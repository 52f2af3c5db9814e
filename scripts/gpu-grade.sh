#!/usr/bin/env bash
# The GPU run of `grade`: STEP=fixture grades the fixture class whole (tests/fixtures/class, with
# the tool runs recorded for CI's replay), then a SIGKILL in the middle of a batch and the same
# command again, then the throughput benchmark; STEP=bench only the benchmark, once per GPU set
# in GPU_SETS ("0" "0,1"; "0,1@CUDABUGS_SANITIZER_JOBS=8" runs that set with the variables after the
# @); STARTUP=1 then measures what one CUDA process costs (scripts/gpu-startup-bench.py).
# Logs and gradebooks go to $OUT (tarred), a table is printed last.
set -uo pipefail
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/grade-out}
STEP=${STEP:-fixture}
EXERCISES=${EXERCISES:-01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds}
STUDENTS=${STUDENTS:-10}
GPU_SETS=${GPU_SETS:-""}
export CUDABUGS_NO_INSTALL=1
L="$OUT/logs"; mkdir -p "$L"
SECRET_DIR=$(mktemp -d); cp tests/fixtures/class-secret.toml "$SECRET_DIR/secret.toml"
nvidia-smi -L > "$L/gpus.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv >> "$L/gpus.txt"; nproc >> "$L/gpus.txt"
table=()
rm -rf bench-class; python3 scripts/grade-bench-class.py bench-class "$STUDENTS" ${EXERCISES//,/ }
pairs=$(( STUDENTS * $(echo "$EXERCISES" | tr ',' '\n' | wc -l) ))

if [ "$STEP" = fixture ]; then
  rm -f /tmp/cudabugs-heidi-was-here
  rm -rf grades-fixture rec-grade .cudabugs/work
  s=$(date +%s.%N)
  $B --record-tools rec-grade grade tests/fixtures/class --exercises 03-race,57-reduction --secret "$SECRET_DIR/secret.toml" --out grades-fixture > "$L/fixture.txt" 2>&1
  code=$?; e=$(date +%s.%N)
  table+=("fixture class: exit $code, $(python3 -c "print(round($e - $s, 1))") s")
  [ -e /tmp/cudabugs-heidi-was-here ] && table+=("ESCAPE: heidi wrote /tmp") || table+=("heidi's marker outside: absent (good)")
  ps -eo pid,pgid,etimes,cmd | grep -E "sleep 600|\.gpu/xtask grade|ncu |compute-sanitizer " | grep -v -E "grep|device-run|gpu-grade.sh" > "$L/left-running.txt"
  table+=("processes left after the fixture: $(wc -l < "$L/left-running.txt")")
  cp -r grades-fixture "$OUT/" ; tar czf "$OUT/rec-grade.tgz" rec-grade
  # A SIGKILL in the middle of a batch, then the same command again.
  rm -rf grades-kill .cudabugs/work
  $B grade bench-class --exercises "$EXERCISES" --secret-seed 7 --out grades-kill > "$L/kill-first.txt" 2>&1 &
  pid=$!
  sleep "${KILL_AFTER:-45}"; kill -9 $pid; wait $pid 2>/dev/null
  sleep 2
  before=$(wc -l < grades-kill/journal.jsonl)
  $B grade bench-class --exercises "$EXERCISES" --secret-seed 7 --out grades-kill > "$L/kill-second.txt" 2>&1
  code=$?
  python3 - "$pairs" > "$L/kill-check.txt" <<'PY'
import json, sys, collections
want = int(sys.argv[1])
lines = [l for l in open("grades-kill/journal.jsonl") if l.strip()]
keys = collections.Counter((json.loads(l)["student"], json.loads(l)["exercise"]) for l in lines)
print(f"lines {len(lines)} distinct pairs {len(keys)} want {want} duplicated {sum(1 for v in keys.values() if v > 1)}")
print("EXACTLY ONCE" if len(keys) == want and all(v == 1 for v in keys.values()) else "BROKEN")
PY
  table+=("SIGKILL after ${KILL_AFTER:-45}s: $before pairs journaled; rerun exit $code; $(tail -2 "$L/kill-check.txt" | tr '\n' ' ')")
  cp grades-kill/journal.jsonl "$L/kill-journal.jsonl"
fi

# Throughput: a cold work folder (every build counted), the peak already cached.
first_grades=""
for entry in ${GPU_SETS:-default}; do
  rm -rf grades-bench .cudabugs/work
  set=${entry%%@*}; vars=(); [ "$entry" != "$set" ] && IFS=, read -ra vars <<< "${entry#*@}"
  gpus=(); [ "$set" != default ] && gpus=(--gpus "$set")
  set=$(echo "$entry" | sed 's/@/_/; s/=/-/g')
  # How busy the cores and the GPUs were, each second.
  (command -v vmstat > /dev/null && vmstat -n 1 > "$L/vmstat-$set.txt") & vm=$!
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu --format=csv -l 1 > "$L/gpu-util-$set.csv" 2>&1 & sm=$!
  s=$(date +%s.%N)
  env "${vars[@]}" $B grade bench-class --exercises "$EXERCISES" --secret-seed 7 --out grades-bench "${gpus[@]}" --format json > "$L/bench-$set.jsonl" 2> "$L/bench-$set.err"
  code=$?; e=$(date +%s.%N)
  kill $vm $sm 2>/dev/null; pkill -f "vmstat -n 1" 2>/dev/null
  secs=$(python3 -c "print(round($e - $s, 1))")
  table+=("throughput gpus=$set: $pairs pairs in $secs s = $(python3 -c "print(round($pairs * 60 / $secs, 1))") per minute (exit $code)")
  cp grades-bench/summary.md "$L/bench-$set-summary.md"; cp grades-bench/grades.csv "$L/bench-$set-grades.csv"
  # Every set grades the class alike (the speed points may move with a time at a boundary).
  if [ -z "$first_grades" ]; then first_grades="$L/bench-$set-grades.csv"
  elif cmp -s "$first_grades" "$L/bench-$set-grades.csv"; then table+=("  grades: the same as the first set's")
  else table+=("  grades: DIFFER from the first set's ($(diff "$first_grades" "$L/bench-$set-grades.csv" | grep -c '^>') rows)"); fi
done
# What one CUDA process costs, alone and many at once (STARTUP=1; STARTUP_ARGS e.g. "--gpus 0,1").
if [ -n "${STARTUP:-}" ]; then
  python3 scripts/gpu-startup-bench.py .cudabugs/work 03-race student001 "$L/startup.json" ${STARTUP_ARGS:-} > "$L/startup.txt" 2>&1
  table+=("startup bench (exit $?):" "$(sed -n '/^probe /,$p' "$L/startup.txt")")
fi
tar czf "$OUT/logs.tgz" -C "$OUT" logs $( [ -d "$OUT/grades-fixture" ] && echo grades-fixture )
rm -rf "$OUT/logs" "$OUT/grades-fixture"
printf '%s\n' "${table[@]}" | tee "$OUT/table.txt"
