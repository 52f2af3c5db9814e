#!/bin/bash
# N CUDA processes started at once, plain and under compute-sanitizer: one line per process
# (label N round started main context kernel ended) in starts.txt; summary.py reads it.
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -arch=sm_90 -o start start.cu
nvcc -G -g -arch=sm_90 -o start-g start.cu
out=${OUT:-.}/starts.txt
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
for round in 1 2; do
  for n in 1 4 8 16 32; do batch plain $n ./start; done
  for n in 1 8 16; do batch memcheck $n compute-sanitizer --tool memcheck ./start-g; done
  for n in 1 16; do batch racecheck $n compute-sanitizer --tool racecheck ./start-g; done
  for n in 1 16; do batch initcheck $n compute-sanitizer --tool initcheck ./start-g; done
done
nproc
nvidia-smi --query-gpu=name,persistence_mode,driver_version --format=csv,noheader
