# Call 2: the final bundle (the SASS read with its whole-binary fallback): the five students of
# call 1 on 03 again, then the performance class once (6 students x 51, 52, 57).
set -u
G=/tmp/g2; rm -rf $G; mkdir -p $G
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin" GRADE_LIMIT=300
rm -rf sass-class && mkdir sass-class
for s in honest-ref honest-alt half-fix tool-aware profiler-aware; do cp -r tests/fixtures/adversarial/$s sass-class/; done
rm -rf .cudabugs/work grades-sass
s=$(date +%s.%N)
timeout --kill-after=10 300 .gpu/xtask grade sass-class --exercises 03-race --secret-seed 7 --out grades-sass --format events > $G/sass.jsonl 2> $G/sass.err
echo "sass: exit $? in $(python3 -c "print(round($(date +%s.%N) - $s, 1))") s" > $G/sass.txt
cp -r grades-sass $G/
B=.gpu/xtask PART=perf OUT=$G/perf bash scripts/gpu-50-margin.sh > $G/perf.txt 2>&1
(cd $G && tar czf $OUT/call2.tgz .)
cat $G/sass.txt; cut -c1-400 $G/perf.txt; true
