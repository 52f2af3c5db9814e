#!/usr/bin/env bash
# Call 5 (8fe2fa3, dev bundle): an honest 05-memset fix that uses std::vector with only
# <algorithm> included (tests/fixtures/honest-variety/host-vector), checked as a learner's file:
# it must build with the old headers (the build steps say so) and pass.
set -uo pipefail
B=.gpu/xtask-dev
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
cp tests/fixtures/honest-variety/host-vector/histogram.cu exercises/05-memset/histogram.cu
s=$(date +%s.%N)
timeout -k 10 240 $B --format json check 05-memset > "$OUT/check-55.json" 2> "$OUT/check-55.err"
code=$?
echo "check 05-memset with host-vector: exit $code in $(python3 -c "print(round($(date +%s.%N) - $s, 1))") s" > "$OUT/table.txt"
python3 - "$OUT/check-55.json" >> "$OUT/table.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print({k: v for k, v in r.items() if not isinstance(v, (list, dict))})
for s in r.get('steps', []):
    print(' ', s['name'], '|', s['status'], '|', s['summary'][:200])
PY
cat "$OUT/table.txt"
