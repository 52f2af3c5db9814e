#!/bin/bash
# The same starts (16 plain processes at once, and one alone) under environment settings that
# might make a CUDA context cheaper to create: one line per process in starts-env.txt, its label
# naming the setting.
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
[ -x start ] || nvcc -O3 -arch=sm_90 -o start start.cu
out=${OUT:-.}/starts-env.txt
: > "$out"
batch() { # label n command...
  local label=$1 n=$2; shift 2
  local dir; dir=$(mktemp -d)
  for i in $(seq "$n"); do
    ( s=$EPOCHREALTIME; "$@" > "$dir/$i" 2>/dev/null; e=$EPOCHREALTIME
      echo "$label $n $round $s $(grep -E '^[0-9]+\.[0-9]+ ' "$dir/$i" | head -1 | cut -d' ' -f1-3) $e" >> "$dir/lines" ) &
  done
  wait
  cat "$dir/lines" >> "$out"
  rm -rf "$dir"
}
for round in 1 2 3; do
  for n in 1 16; do
    batch default $n ./start
    batch connections-1 $n env CUDA_DEVICE_MAX_CONNECTIONS=1 ./start
    batch eager $n env CUDA_MODULE_LOADING=EAGER ./start
    batch no-cache $n env CUDA_CACHE_DISABLE=1 ./start
  done
done
