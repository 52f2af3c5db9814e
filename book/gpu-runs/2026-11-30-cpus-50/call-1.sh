set -u
G=/tmp/g1; rm -rf $G; mkdir -p $G
export GRADE_LIMIT=200
R=book/gpu-runs/2026-11-30-cpus-50
bash $R/probe.sh > $G/probe.txt 2>&1
B=.gpu/xtask PART=warm OUT=$G/warm bash scripts/gpu-50-margin.sh > $G/warm.txt 2>&1
start=$(date +%s)
for v in a1:0 d1:2 e1:4 a2:0; do
  if [ $(( $(date +%s) - start )) -gt 330 ]; then echo "no time for $v" >> $G/skipped.txt; continue; fi
  bash $R/bench.sh ${v%:*} ${v#*:} $G
done
(cd $G && tar czf $OUT/call1.tgz .)
cat $G/probe.txt; for v in warm a1 d1 e1 a2; do echo "== $v"; cut -c1-260 $G/$v.txt 2>/dev/null; done; cat $G/skipped.txt 2>/dev/null
