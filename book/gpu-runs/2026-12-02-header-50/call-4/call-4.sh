#!/usr/bin/env bash
# Call 4: the performance class cold, then again with its builds and kept profiles (warm), in one
# call (call 3's warm grade found no class: the working tree is copied afresh each call); then the
# bug bench again.
set -uo pipefail
. .gpu/common.sh
rm -rf perf-class; python3 scripts/grade-bench-class.py perf-class 6 51-coalesce 52-bank-conflicts 57-reduction > /dev/null
LIMIT=220 graded perf6cold2 perf-class 51-coalesce,52-bank-conflicts,57-reduction
LIMIT=220 graded perf6warm perf-class 51-coalesce,52-bank-conflicts,57-reduction keep
cmp -s "$OUT/perf6cold2-grades.csv" "$OUT/perf6warm-grades.csv" && echo "  the two perf gradebooks are identical" >> "$T"
cat "$OUT/perf6warm-grades.csv" >> "$T"
BENCH_EX=01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds
rm -rf bench-class; python3 scripts/grade-bench-class.py bench-class 10 ${BENCH_EX//,/ } > /dev/null
LIMIT=200 graded bench2 bench-class "$BENCH_EX"
cmp -s "$OUT/bench2-grades.csv" .gpu/ref-bench.csv && echo "  bench2 gradebook identical to call 3's" >> "$T"
(cd "$OUT" && tar czf logs-4.tgz perf6cold2.* perf6warm.* bench2.* && rm -f perf6cold2.jsonl perf6cold2.err perf6warm.jsonl perf6warm.err bench2.jsonl bench2.err)
cat "$T"
