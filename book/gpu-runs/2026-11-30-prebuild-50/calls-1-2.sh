set -u
G=/tmp/g; mkdir -p $G
export GRADE_LIMIT=200
B=.gpu/xtask PART=warm OUT=$G/warm bash scripts/gpu-50-margin.sh > $G/warm.txt 2>&1
for v in old1 new1 new2 old2; do
  case $v in old*) b=.gpu/xtask-old ;; *) b=.gpu/xtask ;; esac
  B=$b PART=bench BENCH_TAG=-$v OUT=$G/$v bash scripts/gpu-50-margin.sh > $G/$v.txt 2>&1
done
(cd $G && tar czf $OUT/call1.tgz .)
for v in warm old1 new1 new2 old2; do echo "== $v"; cat $G/$v.txt | tr ';' '\n'; done
