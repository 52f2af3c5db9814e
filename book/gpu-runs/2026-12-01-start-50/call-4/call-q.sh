#!/bin/bash
# One queue for the judged untimed runs (correctness, hidden, fresh) too, against main's setting
# (one queue for the sanitizer runs only): the bug bench by turns, one bundle (c6fcd2d with the
# experiment's patch, off unless CUDABUGS_EXPERIMENT_JUDGED_ONE_QUEUE=1).
cd "$(dirname "$0")/.."
export B=.gpu/xtask-exp
export OUT=${OUT:-/tmp/out}
PART=warm bash scripts/gpu-50-margin.sh > /dev/null 2>&1
mv $OUT/logs.tgz $OUT/warm-logs.tgz
for turn in a b; do
  CUDABUGS_EXPERIMENT_JUDGED_ONE_QUEUE=0 BENCH_TAG=-eight-$turn PART=bench bash scripts/gpu-50-margin.sh | tee -a $OUT/table.txt
  mv $OUT/logs.tgz $OUT/eight-$turn-logs.tgz; mv $OUT/grades.tgz $OUT/eight-$turn-grades.tgz
  CUDABUGS_EXPERIMENT_JUDGED_ONE_QUEUE=1 BENCH_TAG=-one-$turn PART=bench bash scripts/gpu-50-margin.sh | tee -a $OUT/table.txt
  mv $OUT/logs.tgz $OUT/one-$turn-logs.tgz; mv $OUT/grades.tgz $OUT/one-$turn-grades.tgz
done
cd $OUT && tar czf bench-logs.tgz eight-*-logs.tgz one-*-logs.tgz warm-logs.tgz && tar czf bench-grades.tgz *-grades.tgz && rm -f eight-*.tgz one-*.tgz warm-logs.tgz grades.tgz
cat $OUT/table.txt | cut -c1-200
