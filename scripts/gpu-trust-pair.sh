#!/usr/bin/env bash
# Two streams of scripts/gpu-trust-run.sh at once on a two-GPU machine: GPU 0 in this workbook, GPU
# 1 in a copy of it (a check swaps an exercise's file for a while, and each stream keeps its own
# gradebooks and work folders), each under its own deadline so that a stream cut short still sends
# its logs back. STREAM_A and STREAM_B are the streams' settings, e.g. "PART=class" and
# "PART=alone,check CHECK_EX=". $OUT gets a/ and b/ (tarred), and both tables are printed last.
set -uo pipefail
OUT=${OUT:-/tmp/trust-pair}
DEADLINE=${DEADLINE:-560}
copy=$(mktemp -d)
tar --exclude=./.cudabugs --exclude=./target -cf - . | tar -xf - -C "$copy"
stream() { # stream NAME GPU DIR SETTINGS
  local name=$1 gpu=$2 dir=$3 settings=$4
  mkdir -p "$OUT/$name"
  (cd "$dir" && env $settings CUDA_VISIBLE_DEVICES="$gpu" OUT="$OUT/$name" timeout -s TERM -k 20 "$DEADLINE" bash scripts/gpu-trust-run.sh > "$OUT/$name/stream.txt" 2>&1)
  echo "stream $name exit $?" >> "$OUT/$name/stream.txt"
  # A stream cut short left its logs untarred (and no table): send them as they are.
  if [ -d "$OUT/$name/logs" ]; then tar czf "$OUT/$name/logs-partial.tgz" -C "$OUT/$name" logs && rm -rf "$OUT/$name/logs"; fi
  for rec in "$dir"/rec-*; do [ -d "$rec" ] && [ ! -e "$OUT/$name/recordings-class.tgz" ] && tar czf "$OUT/$name/$(basename "$rec")-partial.tgz" -C "$dir" "$(basename "$rec")"; done
}
stream a 0 "$PWD" "${STREAM_A:-PART=class}" &
stream b 1 "$copy" "${STREAM_B:-PART=alone}" &
wait
for name in a b; do settings=STREAM_${name^^}; gpu=0; [ "$name" = b ] && gpu=1; echo "== stream $name (GPU $gpu; ${!settings:-default})"; tail -n 1 "$OUT/$name/stream.txt"; cat "$OUT/$name/table.txt" 2>/dev/null || tail -n 5 "$OUT/$name/stream.txt"; done
