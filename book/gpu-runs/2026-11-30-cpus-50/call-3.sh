# The third call: the performance class (6 students x 51, 52, 57) without and with the timed
# calls' own cores, then one more bench each way.
set -u
G=/tmp/g3; rm -rf $G; mkdir -p $G
export GRADE_LIMIT=200 CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
R=book/gpu-runs/2026-11-30-cpus-50
bash $R/probe.sh > $G/probe.txt 2>&1
B=.gpu/xtask PART=warm OUT=$G/warm bash scripts/gpu-50-margin.sh > $G/warm.txt 2>&1
start=$(date +%s)
for v in pa:0 pd:2; do
  CUDABUGS_TIMED_CORES=${v#*:} B=.gpu/xtask PART=perf OUT=$G/${v%:*} bash scripts/gpu-50-margin.sh > $G/${v%:*}.txt 2>&1
done
for v in d4:2 a4:0; do
  if [ $(( $(date +%s) - start )) -gt 380 ]; then echo "no time for $v" >> $G/skipped.txt; continue; fi
  bash $R/bench.sh ${v%:*} ${v#*:} $G
done
(cd $G && tar czf $OUT/call3.tgz .)
for v in warm pa pd d4 a4; do echo "== $v"; cut -c1-300 $G/$v.txt 2>/dev/null; done; cat $G/skipped.txt 2>/dev/null; true
