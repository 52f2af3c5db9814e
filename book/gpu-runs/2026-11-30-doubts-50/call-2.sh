set -u
G=/tmp/g2; rm -rf $G; mkdir -p $G
export GRADE_LIMIT=200
for v in b3 a3 a4 b4; do
  case $v in a*) b=.gpu/xtask-a ;; *) b=.gpu/xtask-b ;; esac
  B=$b PART=bench BENCH_TAG=-$v OUT=$G/$v bash scripts/gpu-50-margin.sh > $G/$v.txt 2>&1
done
(cd $G && tar czf $OUT/call2.tgz .)
for v in b3 a3 a4 b4; do echo "== $v"; cut -c1-200 $G/$v.txt; done
