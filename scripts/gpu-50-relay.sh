#!/usr/bin/env bash
# Issue 50's throughput on a GPU: the timed runs as a relay (engine/relay.rs) against one after
# another (CUDABUGS_RELAY=0), with one bundle, in one call. From the workbook root; the release
# bundle in $B, logs in $OUT. PART (comma-separated):
#   warm    one grade of a small class first (the harness, the peak, nvcc's caches)
#   bench   BENCH_N students x 6 bug exercises (scripts/grade-bench-class.py), graded once for each
#           value of CUDABUGS_RELAY in RELAYS (default "1 0"): pairs a minute, and each chunk's phases
#   perf    PERF_N students x 51, 52, 57 (the same generator), likewise
#   jobs    the bench class again, relay on, once for each CUDABUGS_SANITIZER_JOBS in JOBS
#   adv     the adversarial class (tests/fixtures/adversarial) on ADV_EX, relay on
#   slow    the slow-start fixture beside SLOW_N honest reference copies on 03, relay on
set -uo pipefail
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/gpu-50-relay}
PART=${PART:-warm,bench,perf}
L="$OUT/logs"; mkdir -p "$L"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
has() { case ",$PART," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 1))"; }
table=()
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -2; nproc; uname -r; } > "$L/env.txt" 2>&1

# chunks JSONL: each chunk's phases, one line
chunks() {
  python3 - "$1" <<'PY'
import json, sys
out = []
for l in open(sys.argv[1]):
    try: o = json.loads(l)
    except ValueError: continue
    if o.get('event') == 'chunk':
        p = o['phases']
        out.append('%s %d: tools %.1f timing %.1f fresh %.1f' % (o['exercise'], o['pairs'], p.get('tools', 0), p.get('timing', 0), p.get('fresh', 0)))
print('; '.join(out))
PY
}

# points CSV: how many pairs got each number of points
points() { tail -n +2 "$1" | cut -d, -f5- | tr ',' '\n' | sort | uniq -c | tr '\n' ' '; }

# graded NAME CLASS EXERCISES RELAY: one grade, its line in the table
graded() {
  local name=$1 class=$2 ex=$3 relay=$4
  rm -rf "grades-$name" .cudabugs/work
  local s; s=$(now)
  CUDABUGS_RELAY=$relay timeout --kill-after=10 "${GRADE_LIMIT:-400}" $B grade "$class" --exercises "$ex" --secret-seed 7 --out "grades-$name" --format json > "$L/$name.jsonl" 2> "$L/$name.err"
  local code=$? t; t=$(secs "$s" "$(now)")
  local pairs; pairs=$(grep -c '"event":"graded"' "$L/$name.jsonl")
  table+=("$name (CUDABUGS_RELAY=$relay): exit $code, $t s, $pairs pairs, $(python3 -c "print(round($pairs/$t*60,1))") pairs/min; points $(points "grades-$name/grades.csv"); $(chunks "$L/$name.jsonl")")
}

if has warm; then
  rm -rf warm-class; python3 scripts/grade-bench-class.py warm-class 2 03-race
  graded warm warm-class 03-race 1
fi

if has bench; then
  BENCH_EX=${BENCH_EX:-01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds}
  rm -rf bench-class; python3 scripts/grade-bench-class.py bench-class "${BENCH_N:-10}" ${BENCH_EX//,/ }
  for r in ${RELAYS:-1 0}; do graded "bench-relay$r" bench-class "$BENCH_EX" "$r"; done
fi

if has jobs; then
  BENCH_EX=${BENCH_EX:-01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds}
  [ -d bench-class ] || python3 scripts/grade-bench-class.py bench-class "${BENCH_N:-10}" ${BENCH_EX//,/ }
  for j in ${JOBS:-8 24}; do CUDABUGS_SANITIZER_JOBS=$j graded "bench-jobs$j" bench-class "$BENCH_EX" 1; done
fi

if has perf; then
  PERF_EX=${PERF_EX:-51-coalesce,52-bank-conflicts,57-reduction}
  rm -rf perf-class; python3 scripts/grade-bench-class.py perf-class "${PERF_N:-6}" ${PERF_EX//,/ }
  for r in ${RELAYS:-1 0}; do graded "perf-relay$r" perf-class "$PERF_EX" "$r"; done
fi

if has adv; then
  graded adv tests/fixtures/adversarial "${ADV_EX:-57-reduction,62-launches,63-transfers}" 1
  cp "grades-adv/grades.csv" "$L/adv-grades.csv"
fi

if has slow; then
  rm -rf slow-class; python3 scripts/grade-bench-class.py slow-class "${SLOW_N:-6}" 03-race
  cp -r tests/fixtures/adversarial/slow-start slow-class/
  graded slow slow-class 03-race 1
  cp "grades-slow/grades.csv" "$L/slow-grades.csv"
fi

tar czf "$OUT/grades.tgz" grades-* 2>/dev/null
printf '%s\n' "${table[@]}" > "$L/table.txt"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
printf '%s\n' "${table[@]}"
