#!/usr/bin/env bash
# Call 4: one student holding every reference fix of the performance track (21 exercises, a chunk
# each), cold: with call 3's bug track, one student's whole catalog.
set -uo pipefail
. .gpu/common.sh
PERF_EX=$(ls exercises | grep -E '^(5[1-9]|6[0-9]|7[0-9])-' | tr '\n' ',' | sed 's/,$//')
rm -rf prefs; mkdir -p prefs/ref/exercises
for id in ${PERF_EX//,/ }; do cp -r "solutions/$id" "prefs/ref/exercises/$id"; done
LIMIT=330 graded perf-refs prefs "$PERF_EX"
python3 - "$OUT/perf-refs.jsonl" >> "$T" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    try: o = json.loads(l)
    except ValueError: continue
    if o.get('event') == 'chunk':
        p = o['phases']
        print('  %-22s at %6.1f tools %5.1f timing %5.1f (calls %4.1f) fresh %4.1f' % (o['exercise'], o['at'], p['tools'], p['timing'], p['calls'], p['fresh']))
PY
echo "  total $(tail -1 "$OUT/perf-refs-grades.csv" | awk -F, '{print $(NF-1)" of "$NF}'); $(grep -c 'cannot start' "$OUT/perf-refs.jsonl") stages that could not start" >> "$T"
(cd "$OUT" && tar czf logs-4.tgz perf-refs* && rm -f perf-refs.jsonl perf-refs.err)
cat "$T"
