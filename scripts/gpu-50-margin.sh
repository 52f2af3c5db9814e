#!/usr/bin/env bash
# Issue 50 on a GPU with main's bundle (no relay; the timed programs' margins, 7055fa1). From the
# workbook root; the release bundle in $B, logs in $OUT. PART (comma-separated):
#   warm    one grade of a small class first (the harness, the peak, nvcc's caches)
#   adv     the adversarial class (tests/fixtures/adversarial) on ADV_EX
#   slow    slow-start (3 s before main) and the same made 60 s (slow-start-60), beside SLOW_N honest
#           reference copies on 03: the margin must end the 60 s one at 20 s, not the run's limit
#   margin  slow-start made 25 s before main (slow-start-25) and 25 s after it (slow-end-25), beside
#           SLOW_N honest copies on 03: under every shared limit (cases 30 s), past the timed margin
#   bench   BENCH_N students x 6 bug exercises (scripts/grade-bench-class.py)
#   perf    PERF_N students x 51, 52, 57 (the same generator)
set -uo pipefail
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/gpu-50-margin}
PART=${PART:-warm,adv,slow}
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

# graded NAME CLASS EXERCISES: one grade, its line in the table
graded() {
  local name=$1 class=$2 ex=$3
  rm -rf "grades-$name" .cudabugs/work
  local s; s=$(now)
  timeout --kill-after=10 "${GRADE_LIMIT:-400}" $B grade "$class" --exercises "$ex" --secret-seed 7 --out "grades-$name" --format events > "$L/$name.jsonl" 2> "$L/$name.err"
  local code=$? t; t=$(secs "$s" "$(now)")
  local pairs; pairs=$(grep -c '"event":"graded"' "$L/$name.jsonl")
  cp "grades-$name/grades.csv" "$L/$name-grades.csv" 2>/dev/null
  table+=("$name: exit $code, $t s, $pairs pairs, $(python3 -c "print(round($pairs/$t*60,1))") pairs/min; points $(points "grades-$name/grades.csv"); $(chunks "$L/$name.jsonl")")
}

if has warm; then
  rm -rf warm-class; python3 scripts/grade-bench-class.py warm-class 2 03-race
  graded warm warm-class 03-race
fi

if has adv; then
  graded "adv-${ADV_TAG:-a}" tests/fixtures/adversarial "${ADV_EX:-03-race,05-memset,07-leak}"
fi

if has slow; then
  rm -rf slow-class; python3 scripts/grade-bench-class.py slow-class "${SLOW_N:-6}" 03-race
  cp -r tests/fixtures/adversarial/slow-start slow-class/
  mkdir -p slow-class/slow-start-60
  sed 's/sleep(3)/sleep(60)/' tests/fixtures/adversarial/slow-start/reduce.cu > slow-class/slow-start-60/reduce.cu
  grep -c 'sleep(60)' slow-class/slow-start-60/reduce.cu
  graded slow slow-class 03-race
fi

if has margin; then
  rm -rf margin-class; python3 scripts/grade-bench-class.py margin-class "${SLOW_N:-6}" 03-race
  f=tests/fixtures/adversarial/slow-start/reduce.cu
  mkdir -p margin-class/slow-start-25 margin-class/slow-end-25
  sed 's/sleep(3)/sleep(25)/' $f > margin-class/slow-start-25/reduce.cu
  sed 's/SlowStart() { sleep(3); }/SlowStart() {}\n  ~SlowStart() { sleep(25); }/' $f > margin-class/slow-end-25/reduce.cu
  grep -c 'sleep(25)' margin-class/*/reduce.cu
  graded margin margin-class 03-race
fi

if has bench; then
  BENCH_EX=${BENCH_EX:-01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds}
  rm -rf bench-class; python3 scripts/grade-bench-class.py bench-class "${BENCH_N:-10}" ${BENCH_EX//,/ }
  graded "bench${BENCH_TAG:-}" bench-class "$BENCH_EX"
fi

if has perf; then
  PERF_EX=${PERF_EX:-51-coalesce,52-bank-conflicts,57-reduction}
  rm -rf perf-class; python3 scripts/grade-bench-class.py perf-class "${PERF_N:-6}" ${PERF_EX//,/ }
  graded perf perf-class "$PERF_EX"
fi

tar czf "$OUT/grades.tgz" grades-* 2>/dev/null
printf '%s\n' "${table[@]}" > "$L/table.txt"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
printf '%s\n' "${table[@]}"
