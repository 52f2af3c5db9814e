#!/bin/bash
# Issue 50, the performance class: main before (xtask-old, 6787a01) and after (xtask: the
# original's build moved out of the timed phase), each a cold grade (.cudabugs removed first: no
# build cache, no kept profile, no peak), then the after bundle again warm. RUNS: tag:bundle:n:cold,...
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/out}
mkdir -p $OUT
for r in ${RUNS//,/ }; do
  IFS=: read tag b n cold <<< "$r"
  [ "$cold" = cold ] && rm -rf .cudabugs
  B=.gpu/$b PART=perf PERF_N=$n bash scripts/gpu-50-margin.sh | sed "s/^/$tag /" | tee -a $OUT/table.txt
  mv $OUT/logs.tgz $OUT/$tag-logs.tgz; mv $OUT/grades.tgz $OUT/$tag-grades.tgz 2>/dev/null
done
cd $OUT && tar czf logs.tgz *-logs.tgz && tar czf grades.tgz *-grades.tgz && rm -f *-logs.tgz *-grades.tgz
cut -c1-330 $OUT/table.txt
