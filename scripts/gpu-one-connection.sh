#!/usr/bin/env bash
# Does a race between streams still show in the cases with one hardware queue per context
# (`CUDA_DEVICE_MAX_CONNECTIONS=1`, what `grade` gave every untimed run until 2026-11-26)? For each
# exercise of $IDS, after a `verify` (its untouched and fixed release builds), the untouched build
# runs every case $RUNS times with CUDA's defaults and $RUNS times with one connection; each run's
# outputs are compared byte for byte with the reference fix's. A line per exercise and setting:
# how many runs gave some case a different output.
# Usage (GPU machine, workbook root, after verify): IDS="32-event-stream ..." bash scripts/gpu-one-connection.sh
set -u
RUNS=${RUNS:-5}
IDS=${IDS:-"32-event-stream 33-pinned-reuse 34-managed-race"}
tmp=$(mktemp -d)
for id in $IDS; do
  dir=.cudabugs/work/verify/$id
  original=$(ls "$dir"/original/timing/*-original 2>/dev/null | head -1)
  reference=$(ls "$dir"/reference/timing/*-reference 2>/dev/null | head -1)
  if [ -z "$original" ] || [ -z "$reference" ]; then echo "$id: no verify builds"; continue; fi
  flags=""
  grep -q '^host_memory = "pinned"' "exercises/$id/exercise.toml" && flags="--pinned"
  cases=$(ls .cudabugs/cases/"$id"/case*.in)
  args() { for c in $cases; do printf '%s %s ' "$c" "$1/$(basename "$c" .in).out"; done; }
  mkdir -p "$tmp/$id/ref"
  # shellcheck disable=SC2046
  "$reference" $flags $(args "$tmp/$id/ref") >/dev/null 2>&1
  for setting in defaults one-connection; do
    wrong=0
    for k in $(seq 1 "$RUNS"); do
      out="$tmp/$id/$setting-$k"; mkdir -p "$out"
      if [ $setting = one-connection ]; then
        # shellcheck disable=SC2046
        CUDA_DEVICE_MAX_CONNECTIONS=1 "$original" $flags $(args "$out") >/dev/null 2>&1
      else
        # shellcheck disable=SC2046
        "$original" $flags $(args "$out") >/dev/null 2>&1
      fi
      for c in $cases; do
        o=$(basename "$c" .in).out
        if ! cmp -s "$out/$o" "$tmp/$id/ref/$o"; then wrong=$((wrong + 1)); break; fi
      done
    done
    echo "$id $setting: $wrong of $RUNS runs gave a case an output other than the reference fix's"
  done
done
rm -rf "$tmp"
