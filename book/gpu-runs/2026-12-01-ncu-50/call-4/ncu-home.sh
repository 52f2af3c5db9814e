#!/bin/bash
# Issue 50: what a fresh HOME costs an ncu run (the grader gives every sandboxed run its own).
# Each row: 4 runs of ncu (the grader's flags) on start.cu; wall seconds, then whether
# HOME/Documents appeared.
export PATH="$PATH:/usr/local/cuda/bin"
nvcc -O3 -o /tmp/start .gpu/start.cu || exit 1
F="--csv --print-units base --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum --clock-control base --cache-control all --log-file /tmp/l.csv"
mkdir -p /tmp/empty-sections /tmp/kept-home
row() { # name env... -- extra ncu flags; fresh HOME each run unless HOME_KEPT
  local name=$1; shift; local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  printf '%-34s' "$name"
  for i in 1 2 3 4; do
    local h=/tmp/home-$RANDOM$RANDOM; mkdir -p $h; [ -n "${HOME_KEPT:-}" ] && h=/tmp/kept-home
    local s=$(date +%s.%N)
    env HOME=$h "${envs[@]}" ncu $F "$@" /tmp/start > /tmp/o.txt 2>&1
    local e=$(date +%s.%N)
    printf ' %.3f' $(python3 -c "print($e-$s)")
    [ -d $h/Documents ] && printf '(D%s)' $(find $h/Documents -type f | wc -l)
    grep -q gpu__time_duration /tmp/l.csv || printf '(nocsv)'
  done; echo
}
row "fresh HOME" X=1 --
row "fresh HOME, no deployment" NV_COMPUTE_PROFILER_DISABLE_STOCK_FILE_DEPLOYMENT=1 --
row "fresh HOME, empty section folder" X=1 -- --section-folder /tmp/empty-sections
row "fresh, no deploy, empty sections" NV_COMPUTE_PROFILER_DISABLE_STOCK_FILE_DEPLOYMENT=1 -- --section-folder /tmp/empty-sections
HOME_KEPT=1 row "kept HOME" X=1 --
row "fresh HOME (again)" X=1 --
head -c 600 /tmp/o.txt
