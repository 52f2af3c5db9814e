#!/usr/bin/env bash
# Call 2: one student's reference fixes of the bug track (45 pairs), graded by main before this
# session (ebfc5a9, the GPU shared phase by phase: .gpu/xtask-old) and after (run by run:
# .gpu/xtask), by turns, after one small grade that warms the machine.
set -uo pipefail
. .gpu/common.sh
rm -rf warm-class; python3 scripts/grade-bench-class.py warm-class 2 03-race > /dev/null
LIMIT=60 graded warm warm-class 03-race
REFS_EX=$(ls exercises | grep -E '^(0[1-9]|[1-3][0-9]|4[0-5])-' | tr '\n' ',' | sed 's/,$//')
rm -rf refs; mkdir -p refs/ref/exercises
for id in ${REFS_EX//,/ }; do cp -r "solutions/$id" "refs/ref/exercises/$id"; done
for run in old1:.gpu/xtask-old new1:.gpu/xtask old2:.gpu/xtask-old; do
  name=${run%%:*}; B=${run#*:}
  LIMIT=185 graded "$name" refs "$REFS_EX"
  echo "  $name ($B): $(grep -c 'cannot start' "$OUT/$name.jsonl") stages that could not start; total $(tail -1 "$OUT/$name-grades.csv" | awk -F, '{print $(NF-1)" of "$NF}')" >> "$T"
done
(cd "$OUT" && tar czf logs-2.tgz warm* old* new* && rm -f warm*.jsonl warm*.err old*.jsonl old*.err new*.jsonl new*.err)
cat "$T"
