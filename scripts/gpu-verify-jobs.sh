#!/usr/bin/env bash
# Run on a GPU machine from the workbook root, with a release binary built elsewhere ($B): verify of
# the whole catalog (no survey) with several CUDABUGS_SANITIZER_JOBS values in turn, to choose the
# default number of sanitizer and program runs at once. Each run's text goes to $OUT/vJOBS.txt.
set -u
B=${B:-target/release/xtask}
OUT=${OUT:-/tmp/cudabugs-gpu}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
for j in ${JOBS:-8 12 6 12 8}; do
  CUDABUGS_SANITIZER_JOBS=$j "$B" --isolation strict verify --record "$OUT/v$j.json" >"$OUT/v$j.txt" 2>&1
  echo "jobs=$j exit=$? $(grep '^verify took' "$OUT/v$j.txt")"
done
