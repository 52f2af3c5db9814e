#!/usr/bin/env bash
# Call 1: the bug bench (10 students x 6 exercises), cold, graded four times by turns with the
# students' whole calls alone on the GPU (CUDABUGS_BESIDE_CALLS=0, as before) and beside the
# tools (the default now); then whether the four gradebooks agree.
set -uo pipefail
. .gpu/common.sh
BENCH_EX=01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds
rm -rf bench-class; python3 scripts/grade-bench-class.py bench-class 10 ${BENCH_EX//,/ } > /dev/null
for k in 1 2; do
  CUDABUGS_BESIDE_CALLS=0 LIMIT=150 graded alone$k bench-class "$BENCH_EX"
  LIMIT=150 graded beside$k bench-class "$BENCH_EX"
done
python3 - "$OUT" >> "$T" <<'PY'
import csv, sys, os
books = {}
for n in ['alone1', 'beside1', 'alone2', 'beside2']:
    f = os.path.join(sys.argv[1], n + '-grades.csv')
    if os.path.exists(f):
        books[n] = [r[:-2] for r in csv.reader(open(f))]
base = books.get('alone1')
for n, b in books.items():
    diff = [(x, y) for x, y in zip(base or [], b) if x != y]
    print('  gradebook %s vs alone1: %s' % (n, 'same' if base and not diff and len(b) == len(base) else '%d rows differ %s' % (len(diff), diff[:3])))
PY
(cd "$OUT" && tar czf logs-1.tgz alone* beside* && rm -f alone*.jsonl alone*.err beside*.jsonl beside*.err)
cat "$T"
