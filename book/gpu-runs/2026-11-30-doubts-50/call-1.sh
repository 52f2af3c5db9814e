set -u
G=/tmp/g1; rm -rf $G; mkdir -p $G
export GRADE_LIMIT=200
B=.gpu/xtask-a PART=warm OUT=$G/warm bash scripts/gpu-50-margin.sh > $G/warm.txt 2>&1
for v in a1 b1 b2 a2; do
  case $v in a*) b=.gpu/xtask-a ;; *) b=.gpu/xtask-b ;; esac
  B=$b PART=bench BENCH_TAG=-$v OUT=$G/$v bash scripts/gpu-50-margin.sh > $G/$v.txt 2>&1
done
(cd $G && tar czf $OUT/call1.tgz .)
for v in warm a1 b1 b2 a2; do echo "== $v"; cut -c1-200 $G/$v.txt; done
