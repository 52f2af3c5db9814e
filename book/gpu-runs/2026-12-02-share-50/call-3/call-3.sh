#!/usr/bin/env bash
# Call 3: the bug bench (10 students x 6 exercises) with d599bc4 (builds keep their objects; the
# reference fix's reach read from its builds), cold twice, the first the machine's first grade.
set -uo pipefail
. .gpu/common.sh
BENCH_EX=01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds
rm -rf bench-class; python3 scripts/grade-bench-class.py bench-class 10 ${BENCH_EX//,/ } > /dev/null
LIMIT=150 graded bench1 bench-class "$BENCH_EX"
LIMIT=150 graded bench2 bench-class "$BENCH_EX"
python3 - "$OUT" >> "$T" <<'PY'
import csv, sys, os
a, b = [[r[:-2] for r in csv.reader(open(os.path.join(sys.argv[1], n + '-grades.csv')))] for n in ('bench1', 'bench2')]
print('  gradebook bench2 vs bench1: %s' % ('same' if a == b else 'differ'))
PY
(cd "$OUT" && tar czf logs-3.tgz bench* && rm -f bench*.jsonl bench*.err)
cat "$T"
