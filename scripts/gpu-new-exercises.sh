#!/usr/bin/env bash
# The exercises of issue 34 on a GPU machine (CUDA toolkit, no Rust), from the workbook root, with
# a release binary built elsewhere ($B):
#   1. `verify --survey` of $IDS: every tool on each untouched file, the solution under all four,
#      the cases and the speed (the record and its transcript);
#   2. every other fix and half-fix of $FIX_IDS (scripts/alt-fixes/), through scripts/gpu-bug-fixes.sh,
#      $JOBS exercises at a time for the bug track (their timing is the check's, not the verdict's)
#      and one at a time for the performance track;
# then a table of verdicts. Logs under $OUT/logs (tar them if the run is cut short).
set -u
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/cudabugs-new}
IDS=${IDS:-"$(ls exercises | grep -E '^(3[1-9]|4[0-9]|6[4-9]|7[0-9])-' | tr '\n' ' ')"}
FIX_IDS=${FIX_IDS:-$IDS}
JOBS=${JOBS:-4}
mkdir -p "$OUT/logs"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
{ nvidia-smi; nvcc --version; compute-sanitizer --version; ncu --version; } >"$OUT/logs/env.txt" 2>&1
t0=$(date +%s)
if [ "${SKIP_SURVEY:-0}" != 1 ]; then
  # shellcheck disable=SC2086
  "$B" verify --survey --record "$OUT/verification-new.json" $IDS >"$OUT/logs/survey.txt" 2>&1
  echo "verify exit=$? in $(( $(date +%s) - t0 )) s" >>"$OUT/logs/survey.txt"
fi
t1=$(date +%s)
bug="" perf=""
for id in $FIX_IDS; do
  ls scripts/alt-fixes/ | grep -q "^${id}-" || continue
  case $id in 5*|6*|7*) perf="$perf $id" ;; *) bug="$bug $id" ;; esac
done
for id in $bug; do
  ( IDS=$id SKIP_BASE=1 OUT="$OUT/logs/fixes-$id" B="$B" bash scripts/gpu-bug-fixes.sh >/dev/null 2>&1 ) &
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 1; done
done
wait
for id in $perf; do
  IDS=$id SKIP_BASE=1 OUT="$OUT/logs/fixes-$id" B="$B" bash scripts/gpu-bug-fixes.sh >/dev/null 2>&1
done
echo "fixes in $(( $(date +%s) - t1 )) s" >"$OUT/logs/fixes.txt"
for f in "$OUT"/logs/fixes-*/fixes.txt; do tail -n +2 "$f"; done >>"$OUT/logs/fixes.txt"
sed -n '/^exercise  /,$p' "$OUT/logs/survey.txt" | head -60
cat "$OUT/logs/fixes.txt"
