#!/bin/bash
# The sanitizers as the grader runs them (one hardware queue, CUDA_DEVICE_MAX_CONNECTIONS=1) and
# with CUDA's eight, one process alone and 16 at once, three rounds: starts-san.txt.
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
[ -x start-g ] || nvcc -G -g -arch=sm_90 -o start-g start.cu
out=${OUT:-.}/starts-san.txt
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
  for tool in memcheck racecheck initcheck synccheck; do
    for n in 1 16; do
      batch "$tool" $n compute-sanitizer --tool $tool ./start-g
      batch "$tool-one" $n env CUDA_DEVICE_MAX_CONNECTIONS=1 compute-sanitizer --tool $tool ./start-g
    done
  done
done
