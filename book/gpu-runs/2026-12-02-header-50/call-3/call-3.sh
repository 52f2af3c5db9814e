#!/usr/bin/env bash
# Call 3 (the machine of call 2, still warm): the performance class again with call 2's builds and
# kept profiles, then the bug bench (10 students x 6 exercises) cold.
set -uo pipefail
. .gpu/common.sh
ls -d .cudabugs/work >> "$T" 2>&1
LIMIT=220 graded perf6warm perf-class 51-coalesce,52-bank-conflicts,57-reduction keep
cat "$OUT/perf6warm-grades.csv" >> "$T"
BENCH_EX=01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds
rm -rf bench-class; python3 scripts/grade-bench-class.py bench-class 10 ${BENCH_EX//,/ } > /dev/null
LIMIT=250 graded bench bench-class "$BENCH_EX"
python3 - "$OUT/bench-grades.csv" >> "$T" <<'PY'
import csv, sys, collections
c = collections.Counter()
for r in list(csv.reader(open(sys.argv[1])))[1:]:
    c.update(r[4:-2])
print('  bench points:', dict(c))
PY
(cd "$OUT" && tar czf logs-3.tgz perf6warm.* bench.* && rm -f perf6warm.jsonl perf6warm.err bench.jsonl bench.err)
cat "$T"
