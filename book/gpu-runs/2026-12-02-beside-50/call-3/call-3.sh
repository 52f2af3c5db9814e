#!/usr/bin/env bash
# Call 3: the bundle with the students' calls alone again and a start retried while its program is
# "busy" (ETXTBSY): one student holding every reference fix of the bug track, cold, twice; every
# stage that failed to start, counted.
set -uo pipefail
. .gpu/common.sh
REFS_EX=$(ls exercises | grep -E '^(0[1-9]|[1-3][0-9]|4[0-5])-' | tr '\n' ',' | sed 's/,$//')
rm -rf refs; mkdir -p refs/ref/exercises
for id in ${REFS_EX//,/ }; do cp -r "solutions/$id" "refs/ref/exercises/$id"; done
for k in 1 2; do
  LIMIT=250 graded refs$k refs "$REFS_EX"
  echo "  refs$k: $(grep -c 'cannot start' "$OUT/refs$k.jsonl") stages that could not start; total $(tail -1 "$OUT/refs$k-grades.csv" | awk -F, '{print $(NF-1)" of "$NF}')" >> "$T"
done
(cd "$OUT" && tar czf logs-3.tgz refs* && rm -f refs*.jsonl refs*.err)
cat "$T"
