#!/usr/bin/env bash
# Call 1: the whole catalog verified with the lean harness header, then the adversarial class on 57.
set -uo pipefail
. .gpu/common.sh
s=$(now); timeout -k 10 440 $B verify --record "$OUT/verification.json" > "$OUT/verify.txt" 2>&1
echo "verify all 66: exit $? in $(d "$s" "$(now)") s" >> "$T"
python3 - "$OUT/verification.json" >> "$T" <<'PY'
import json, sys
new = {e['id']: e for e in json.load(open(sys.argv[1]))['exercises']}
old = {e['id']: e for e in json.load(open('book/verification.json'))['exercises']}
same = [i for i in old if i in new and str(new[i]['outcome']) == str(old[i]['outcome'])]
print('  outcomes as book/verification.json: %d of %d; differ or missing: %s' % (len(same), len(old), [(i, str(new.get(i, {}).get('outcome'))) for i in old if i not in same]))
for i, e in new.items():
    for c in e.get('checks') or []:
        if 'old_includes' in str(c) or 'no longer' in str(c.get('summary', '')):
            print('  ', i, c['name'], c['summary'][:120])
PY
LIMIT=200 graded adv57 tests/fixtures/adversarial 57-reduction
python3 - "$OUT/adv57-grades.csv" book/gpu-runs/2026-12-01-gate-50/call-1/adv57-grades.csv >> "$T" <<'PY'
import csv, sys
def rows(p):
    return {r[0]: r[1:] for r in csv.reader(open(p))}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
diff = [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
print('  adv57 rows equal to the gate-50 record: %d of %d; differ: %s' % (len(set(a) & set(b)) - len(diff), len(b), diff))
PY
tail -3 "$OUT/verify.txt" >> "$T"
(cd "$OUT" && tar czf logs.tgz verify.txt adv57.jsonl adv57.err && rm -f verify.txt adv57.jsonl adv57.err)
cat "$T"
