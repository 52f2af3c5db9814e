set -u
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
L=/tmp/g4; rm -rf $L; mkdir -p $L
B=.gpu/xtask
rm -rf warm-class .cudabugs/work; python3 scripts/grade-bench-class.py warm-class 3 03-race 57-reduction
s=$(date +%s.%N); $B grade warm-class --exercises 03-race,57-reduction --secret-seed 7 --out $L/grades --format events > $L/grade.jsonl 2> $L/grade.err; echo "grade exit $? $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee $L/table.txt
for ex in 03-race 57-reduction; do
  f=$(ls exercises/$ex/*.cu | head -1); cp $f $L/$ex-untouched.cu; cp solutions/$ex/$(basename $f) $f
  s=$(date +%s.%N); $B check $ex --format json > $L/check-$ex.json 2> $L/check-$ex.err; c=$?
  echo "check $ex (solution) exit $c $(python3 -c "print(round($(date +%s.%N)-$s,1))") s $(python3 -c "import json;r=json.load(open('$L/check-$ex.json'));print(r.get('outcome'),[(s['name'],s['status']) for s in r['steps'] if 'timing' in s['name'] or 'speed' in s['name']])" 2>&1 | cut -c1-300)" | tee -a $L/table.txt
  cp $L/$ex-untouched.cu $f
done
cat $L/grades/grades.csv | tee -a $L/table.txt
(cd $L && tar czf $OUT/call4.tgz .)
