set -u
G=/tmp/g3; rm -rf $G; mkdir -p $G
export GRADE_LIMIT=200
for v in new1 old1 old2 new2; do
  case $v in old*) b=.gpu/xtask-old ;; *) b=.gpu/xtask ;; esac
  CUDABUGS_BUILD_LOG=$G/buildlog-$v.txt B=$b PART=bench BENCH_TAG=-$v OUT=$G/$v bash scripts/gpu-50-margin.sh > $G/$v.txt 2>&1
done
(cd $G && tar czf $OUT/call3.tgz .)
for v in new1 old1 old2 new2; do echo "== $v $(awk '{print $1}' $G/buildlog-$v.txt | sort | uniq -c | tr '\n' ' ')"; cat $G/$v.txt | tr ';' '\n'; done
