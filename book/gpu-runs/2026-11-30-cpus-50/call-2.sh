# The second call: two more benches each way, the adversarial class on 03 with the new default
# (2 cores), then the session's plans end to end: `verify` of 03 and 54 (its cuBLAS baseline now
# timed after the versions' runs) and `check` of the untouched 54 (the session's timed phase and
# baseline), with this call's bundle (the session refactor on top of call 1's).
set -u
G=/tmp/g2; rm -rf $G; mkdir -p $G
export GRADE_LIMIT=200 CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
R=book/gpu-runs/2026-11-30-cpus-50
bash $R/probe.sh > $G/probe.txt 2>&1
B=.gpu/xtask PART=warm OUT=$G/warm bash scripts/gpu-50-margin.sh > $G/warm.txt 2>&1
start=$(date +%s)
for v in d2:2 a3:0; do bash $R/bench.sh ${v%:*} ${v#*:} $G; done
GRADE_LIMIT=260 B=.gpu/xtask PART=adv ADV_EX=03-race ADV_TAG=d OUT=$G/adv bash scripts/gpu-50-margin.sh > $G/adv.txt 2>&1
s=$(date +%s.%N); .gpu/xtask --isolation strict verify 03-race 54-matmul --record $G/verification.json > $G/verify.txt 2>&1; echo "verify: exit $? in $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $G/plans.txt
s=$(date +%s.%N); .gpu/xtask --format json check 54-matmul > $G/check-54.json 2> $G/check-54.err; echo "check 54-matmul: exit $? in $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $G/plans.txt
if [ $(( $(date +%s) - start )) -lt 470 ]; then bash $R/bench.sh d3 2 $G; else echo "no time for d3" >> $G/plans.txt; fi
(cd $G && tar czf $OUT/call2.tgz .)
for v in warm d2 a3 adv d3; do echo "== $v"; cut -c1-230 $G/$v.txt 2>/dev/null; done; cat $G/plans.txt; tail -5 $G/verify.txt
