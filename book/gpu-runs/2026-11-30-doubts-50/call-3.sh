set -u
G=/tmp/g3; rm -rf $G; mkdir -p $G
export GRADE_LIMIT=200
for v in a5 c1 c2 a6; do
  case $v in a*) b=.gpu/xtask-a ;; *) b=.gpu/xtask-c ;; esac
  B=$b PART=bench BENCH_TAG=-$v OUT=$G/$v bash scripts/gpu-50-margin.sh > $G/$v.txt 2>&1
done
B=.gpu/xtask-c PART=perf OUT=$G/perf-c bash scripts/gpu-50-margin.sh > $G/perf-c.txt 2>&1
(cd $G && tar czf $OUT/call3.tgz .)
for v in a5 c1 c2 a6 perf-c; do echo "== $v"; cut -c1-300 $G/$v.txt; done
