#!/usr/bin/env bash
# verify of the whole catalog (no survey) under several binaries and settings, one after another on
# one GPU, for the time each takes: VARIANTS="name:binary:sanitizer_jobs:cold|warm ...". A cold
# run starts without the build cache; every run finds the harness built and the peak measured
# (`peak` first). Each run's text and record go to $OUT/NAME.txt and NAME.json; a table last.
set -u
OUT=${OUT:-/tmp/verify-speed}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
first=${VARIANTS%%:*}
B0=$(echo "$VARIANTS" | cut -d: -f2)
$B0 peak > "$OUT/peak.txt" 2>&1
table=()
for v in $VARIANTS; do
  IFS=: read -r name bin jobs cache <<< "$v"
  [ "$cache" = cold ] && rm -rf .cudabugs/work/build-cache
  rm -rf .cudabugs/work/verify
  CUDABUGS_SANITIZER_JOBS=$jobs "$bin" --isolation strict verify --record "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  code=$?
  table+=("$name ($bin, $jobs jobs, $cache): exit $code; $(grep '^verify took' "$OUT/$name.txt")")
done
printf '%s\n' "${table[@]}" | tee "$OUT/table.txt"
