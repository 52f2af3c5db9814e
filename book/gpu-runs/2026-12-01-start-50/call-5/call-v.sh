#!/bin/bash
# Validation of grade's one queue for the cases' runs: the stream exercises (and 15, 63) graded
# before (.gpu/xtask-exp with the experiment off: main's settings) and after (.gpu/xtask-q), then
# the bug bench after, before, after.
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/out}
export CUDABUGS_EXPERIMENT_JUDGED_ONE_QUEUE=0
S=20-stream-free,32-event-stream,33-pinned-reuse,34-managed-race,68-graphs,70-default-stream,15-global-race,63-transfers
run() { # tag bundle part [bench_n] [bench_ex]
  B=$2 BENCH_TAG=-$1 PART=$3 BENCH_N=${4:-10} BENCH_EX=${5:-01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds} bash scripts/gpu-50-margin.sh | tee -a $OUT/table.txt
  mv $OUT/logs.tgz $OUT/$1-logs.tgz; mv $OUT/grades.tgz $OUT/$1-grades.tgz 2>/dev/null
}
B=.gpu/xtask-q PART=warm bash scripts/gpu-50-margin.sh > /dev/null 2>&1; mv $OUT/logs.tgz $OUT/warm-logs.tgz
run streams-before .gpu/xtask-exp bench 3 $S
run streams-after .gpu/xtask-q bench 3 $S
run bench-after-a .gpu/xtask-q bench
run bench-before .gpu/xtask-exp bench
run bench-after-b .gpu/xtask-q bench
cd $OUT && tar czf logs.tgz *-logs.tgz && tar czf grades.tgz *-grades.tgz && rm -f *-logs.tgz *-grades.tgz
cut -c1-220 $OUT/table.txt
