# The fourth call: the sandbox's filter now refuses sched_setaffinity. What CUDA needs must still
# work under it: nvcc in the sandbox, the four sanitizers, the cases and the served timed calls
# (`warm`: a grade of two students on 03), ncu with the cuBLAS baseline (`verify` of 57 and 54,
# sandbox strict), and a check of the untouched 03 (fails for its reason: racecheck).
set -u
G=/tmp/g4; rm -rf $G; mkdir -p $G
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
B=.gpu/xtask PART=warm OUT=$G/warm bash scripts/gpu-50-margin.sh > $G/warm.txt 2>&1
s=$(date +%s.%N); .gpu/xtask --isolation strict verify 57-reduction 54-matmul --record $G/verification.json > $G/verify.txt 2>&1; echo "verify 57 54: exit $? in $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $G/plans.txt
s=$(date +%s.%N); .gpu/xtask --format json check 03-race > $G/check-03.json 2> $G/check-03.err; echo "check 03-race: exit $? in $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $G/plans.txt
grep -h "Operation not permitted\|EPERM" $G/verify.txt $G/check-03.err $G/warm/logs/*.err 2>/dev/null | head -5 > $G/eperm.txt
(cd $G && tar czf $OUT/call4.tgz .)
cut -c1-300 $G/warm.txt; cat $G/plans.txt; tail -4 $G/verify.txt; echo "EPERM lines: $(wc -l < $G/eperm.txt)"; cat $G/eperm.txt; true
