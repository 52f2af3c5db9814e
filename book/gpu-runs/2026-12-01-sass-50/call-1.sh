# Call 1: warm-up; the SASS read per cubin on the GPU (five adversarial students on 03, against
# book/gpu-runs/2026-11-30-objects-49/3-new); the bug bench with one lane and with two.
set -u
G=/tmp/g1; rm -rf $G; mkdir -p $G
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin" GRADE_LIMIT=300
B=.gpu/xtask PART=warm OUT=$G/warm bash scripts/gpu-50-margin.sh > $G/warm.txt 2>&1
rm -rf sass-class && mkdir sass-class
for s in honest-ref honest-alt half-fix tool-aware profiler-aware; do cp -r tests/fixtures/adversarial/$s sass-class/; done
rm -rf .cudabugs/work grades-sass
s=$(date +%s.%N)
timeout --kill-after=10 300 .gpu/xtask grade sass-class --exercises 03-race --secret-seed 7 --out grades-sass --format events > $G/sass.jsonl 2> $G/sass.err
echo "sass: exit $? in $(python3 -c "print(round($(date +%s.%N) - $s, 1))") s" > $G/sass.txt
cp -r grades-sass $G/
for v in l1:1 l2:2 l1b:1 l2b:2; do
  CUDABUGS_GRADE_LANES=${v#*:} B=.gpu/xtask PART=bench BENCH_TAG=-${v%:*} OUT=$G/${v%:*} bash scripts/gpu-50-margin.sh > $G/${v%:*}.txt 2>&1
done
(cd $G && tar czf $OUT/call1.tgz .)
cat $G/sass.txt; for v in warm l1 l2 l1b l2b; do echo "== $v"; cut -c1-400 $G/$v.txt 2>/dev/null; done; true
