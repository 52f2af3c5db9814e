#!/usr/bin/env bash
# Call 2: the adversarial class on 03 and on 62, then a cold grade of the performance class.
set -uo pipefail
. .gpu/common.sh
cmp() {  # cmp NEW OLD: rows that differ
  python3 - "$1" "$2" >> "$T" <<'PY'
import csv, sys
def rows(p):
    return {r[0]: r[1:] for r in csv.reader(open(p))}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
diff = [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
print('  rows equal to %s: %d of %d; differ: %s' % (sys.argv[2], len(set(a) & set(b)) - len([x for x in diff if x[1] and x[2]]), len(b), diff))
PY
}
LIMIT=220 graded adv03 tests/fixtures/adversarial 03-race
cmp "$OUT/adv03-grades.csv" .gpu/ref-adv03.csv
LIMIT=150 graded adv62 tests/fixtures/adversarial 62-launches
grep -v ',,,,' "$OUT/adv62-grades.csv" | grep -v ',0,0,100' >> "$T"
rm -rf perf-class; python3 scripts/grade-bench-class.py perf-class 6 51-coalesce 52-bank-conflicts 57-reduction > /dev/null
LIMIT=220 graded perf6cold perf-class 51-coalesce,52-bank-conflicts,57-reduction
cat "$OUT/perf6cold-grades.csv" >> "$T"
(cd "$OUT" && tar czf logs-2.tgz adv03.* adv62.* perf6cold.* && rm -f adv03.jsonl adv03.err adv62.jsonl adv62.err perf6cold.jsonl perf6cold.err)
cat "$T"
