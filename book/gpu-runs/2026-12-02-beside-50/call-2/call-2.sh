#!/usr/bin/env bash
# Call 2: one student holding every reference fix of the bug track (45 exercises, a chunk each),
# cold, graded with the student's whole calls alone on the GPU (CUDABUGS_BESIDE_CALLS=0) and then
# beside the tools (the default now).
set -uo pipefail
. .gpu/common.sh
REFS_EX=$(ls exercises | grep -E '^(0[1-9]|[1-3][0-9]|4[0-5])-' | tr '\n' ',' | sed 's/,$//')
rm -rf refs; mkdir -p refs/ref/exercises
for id in ${REFS_EX//,/ }; do cp -r "solutions/$id" "refs/ref/exercises/$id"; done
CUDABUGS_BESIDE_CALLS=0 LIMIT=280 graded refs-alone refs "$REFS_EX"
LIMIT=280 graded refs-beside refs "$REFS_EX"
python3 - "$OUT" >> "$T" <<'PY'
import csv, sys, os
rows = {n: list(csv.reader(open(os.path.join(sys.argv[1], n + '-grades.csv')))) for n in ['refs-alone', 'refs-beside'] if os.path.exists(os.path.join(sys.argv[1], n + '-grades.csv'))}
if len(rows) == 2:
    a, b = rows['refs-alone'], rows['refs-beside']
    print('  gradebooks:', 'same' if a == b else 'differ: %s' % [(h, x, y) for h, x, y in zip(a[0], a[1], b[1]) if x != y])
    print('  beside total:', b[1][-2], 'of', b[1][-1])
PY
(cd "$OUT" && tar czf logs-2.tgz refs-* && rm -f refs-*.jsonl refs-*.err)
cat "$T"
