# One bench (scripts/gpu-50-margin.sh PART=bench) with CUDABUGS_TIMED_CORES=$2, tagged $1; the
# cgroup's throttling before and after, and every 1 s which CPU each thread of the grade's
# processes ran on (ps psr), with its nice value.
tag=$1; cores=$2; G=$3
cg=$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup)
grep -E 'nr_throttled|throttled_usec|usage_usec' /sys/fs/cgroup$cg/cpu.stat > $G/$tag-cpustat-before.txt 2>&1
( while true; do echo "t $(date +%s.%N)"; ps -eLo psr,ni,comm --no-headers | awk '$3!~/^(ps|awk|bash|sleep|kworker|ksoftirq|migration|cpuhp|rcu_|idle_inject)/'; sleep 1; done ) > $G/$tag-psr.txt 2>&1 &
sampler=$!
CUDABUGS_TIMED_CORES=$cores B=.gpu/xtask PART=bench BENCH_TAG=-$tag OUT=$G/$tag bash scripts/gpu-50-margin.sh > $G/$tag.txt 2>&1
kill $sampler
grep -E 'nr_throttled|throttled_usec|usage_usec' /sys/fs/cgroup$cg/cpu.stat > $G/$tag-cpustat-after.txt 2>&1
gzip $G/$tag-psr.txt
