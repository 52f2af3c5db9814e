#!/usr/bin/env bash
# Call 1: the GPU shared run by run (engine::gpu_share) and two lanes by default. (A) may ncu start
# before its turn behind a gate; (B) the bug bench (10 students x 6 exercises) cold: default lanes
# (2), then one lane, then two again; (C) one student holding every reference fix of the bug track.
set -uo pipefail
. .gpu/common.sh
OUT=$OUT bash .gpu/gate.sh > "$OUT/gate.txt" 2>&1
echo "== gate" >> "$T"; cat "$OUT/gate.txt" >> "$T"
BENCH_EX=01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds
rm -rf bench-class; python3 scripts/grade-bench-class.py bench-class 10 ${BENCH_EX//,/ } > /dev/null
LIMIT=150 graded l2a bench-class "$BENCH_EX"
CUDABUGS_GRADE_LANES=1 LIMIT=150 graded l1 bench-class "$BENCH_EX"
LIMIT=150 graded l2b bench-class "$BENCH_EX"
REFS_EX=$(ls exercises | grep -E '^(0[1-9]|[1-3][0-9]|4[0-5])-' | tr '\n' ',' | sed 's/,$//')
rm -rf refs; mkdir -p refs/ref/exercises
for id in ${REFS_EX//,/ }; do cp -r "solutions/$id" "refs/ref/exercises/$id"; done
LIMIT=200 graded refs refs "$REFS_EX"
echo "  refs: $(grep -c 'cannot start' "$OUT/refs.jsonl") stages that could not start; total $(tail -1 "$OUT/refs-grades.csv" | awk -F, '{print $(NF-1)" of "$NF}')" >> "$T"
python3 - "$OUT" >> "$T" <<'PY'
import csv, sys, os
books = {}
for n in ['l2a', 'l1', 'l2b']:
    f = os.path.join(sys.argv[1], n + '-grades.csv')
    if os.path.exists(f):
        books[n] = [r[:-2] for r in csv.reader(open(f))]
base = books.get('l2a')
for n, b in books.items():
    diff = [(x, y) for x, y in zip(base or [], b) if x != y]
    print('  gradebook %s vs l2a: %s' % (n, 'same' if base and not diff and len(b) == len(base) else '%d rows differ %s' % (len(diff), diff[:3])))
PY
(cd "$OUT" && tar czf logs-1.tgz l2a* l1* l2b* refs* && rm -f l2a*.jsonl l2a*.err l1*.jsonl l1*.err l2b*.jsonl l2b*.err refs*.jsonl refs*.err)
cat "$T"
