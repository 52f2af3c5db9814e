#!/usr/bin/env bash
# Issue 50 item 3 on a GPU (from the workbook root, release bundles in $B and optionally $BO, logs in
# $OUT). PART (comma-separated):
#   probe   what the driver says of a sandboxed run's memory: nvidia-smi's compute apps sampled every
#           0.2 s while the hog fixture is graded, with each listed pid's cgroup and namespace pid
#   hog     HOG_N honest students (reference fixes of HOG_EX, each file unique) graded alone, then
#           with the adversarial `hog` beside them (03 only), by each bundle in HOG_BUNDLES: each
#           chunk's time, and the honest students' grades
#   bench   BENCH_N students x 6 bug exercises (scripts/grade-bench-class.py) graded by each bundle
#           in BENCH_BUNDLES, one after the other in this call: pairs a minute
#   warm    one grade of a small class first (the harness, the peak measurement, nvcc's caches), so
#           that the first timed class does not pay for them
#   managed 34-managed-race: `verify --survey` (its managed_inputs rule), and a grade of the managed
#           attack (tests/fixtures/adversarial-managed) beside the reference fix
set -uo pipefail
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/gpu-50}
PART=${PART:-probe,hog,managed}
L="$OUT/logs"; mkdir -p "$L"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
has() { case ",$PART," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 1))"; }
table=()
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -2; nproc; uname -r; } > "$L/env.txt" 2>&1

class_of() { # class_of DIR N EXERCISES [extra student folders...]: N unique reference copies, plus extras
  local dir=$1 n=$2 ex=$3; shift 3
  rm -rf "$dir"; mkdir -p "$dir"
  python3 - "$dir" "$n" ${ex//,/ } <<'PY'
import os, re, sys
out, n, ids = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for s in range(n):
    for ex in ids:
        src = next(f for f in os.listdir(os.path.join("solutions", ex)) if f.endswith(".cu") and f != "exercise-regions.cu")
        text = open(os.path.join("solutions", ex, src)).read()
        text = re.sub(r"(// ANCHOR: (\w+)\n)", lambda m: m.group(1) + f"// honest {s:03d}\n", text, count=1)
        path = os.path.join(out, f"honest{s:03d}", "exercises", ex, src)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(text)
PY
  for extra in "$@"; do cp -r "$extra" "$dir/"; done
}

if has warm; then
  class_of warm-class 2 03-race
  s=$(now)
  $B grade warm-class --exercises 03-race --secret-seed 3 --out grades-warm --format json > "$L/warm.jsonl" 2> "$L/warm.err"
  table+=("warm-up grade: exit $?, $(secs "$s" "$(now)") s")
fi

if has probe; then
  rm -rf probe-class; mkdir -p probe-class/hog/exercises/03-race
  cp tests/fixtures/adversarial/hog/reduce.cu probe-class/hog/exercises/03-race/
  ( while :; do
      ts=$(date +%s.%N)
      nvidia-smi --query-compute-apps=pid,used_memory,process_name --format=csv,noheader 2>&1 | while IFS=, read -r pid mem name; do
        pid=$(echo "$pid" | tr -d ' ')
        [ -n "$pid" ] || continue
        cg=$(cat /proc/$pid/cgroup 2>/dev/null | tr '\n' ' ')
        ns=$(grep NSpid /proc/$pid/status 2>/dev/null | tr '\t' ' ')
        echo "$ts $pid |$mem |$name | $cg | $ns"
      done
      sleep 0.2
    done ) > "$L/probe-smi.txt" 2>&1 &
  poller=$!
  s=$(now)
  $B grade probe-class --exercises 03-race --secret-seed 5 --out grades-probe --format json > "$L/probe-grade.jsonl" 2> "$L/probe-grade.err"
  code=$?
  kill $poller 2>/dev/null
  table+=("probe: grade exit $code, $(secs "$s" "$(now)") s; $(wc -l < "$L/probe-smi.txt") smi lines, $(grep -c cudabugs "$L/probe-smi.txt") with a cudabugs cgroup, max MiB $(awk -F'|' '{gsub(/[^0-9]/,"",$2); if ($2+0>m) m=$2+0} END {print m+0}' "$L/probe-smi.txt")")
fi

if has hog; then
  HOG_N=${HOG_N:-10}; HOG_EX=${HOG_EX:-03-race,05-memset}
  class_of hog-alone "$HOG_N" "$HOG_EX"
  class_of hog-beside "$HOG_N" "$HOG_EX" tests/fixtures/adversarial/hog
  for b in ${HOG_BUNDLES:-$B}; do
    tag=$(basename "$b")
    for c in ${HOG_ORDER:-hog-alone hog-beside}; do
      rm -rf "grades-$c-$tag" .cudabugs/work/grade
      s=$(now)
      $b grade "$c" --exercises "$HOG_EX" --secret-seed 9 --out "grades-$c-$tag" --format json > "$L/$c-$tag.jsonl" 2> "$L/$c-$tag.err"
      code=$?
      cp "grades-$c-$tag/grades.csv" "$L/grades-$c-$tag.csv" 2>/dev/null
      t=$(secs "$s" "$(now)")
      chunks=$(python3 -c "
import json,sys
out=[]
for l in open('$L/$c-$tag.jsonl'):
    try: o=json.loads(l)
    except ValueError: continue
    if o.get('event')=='chunk':
        p=o['phases']; out.append('%s %d pairs: tools %.1f timing %.1f calls %.1f fresh %.1f' % (o['exercise'], o['pairs'], p.get('tools',0), p.get('timing',0), p.get('calls',0), p.get('fresh',0)))
print('; '.join(out))")
      honest=$(python3 -c "
import csv
rows=list(csv.reader(open('grades-$c-$tag/grades.csv')))
h=[r for r in rows[1:] if r[0].startswith('honest')]
print(len(h), 'honest students; their points', sorted(set(v for r in h for v in r[4:])), '; others', [r[0]+':'+'/'.join(r[4:]) for r in rows[1:] if not r[0].startswith('honest')])" 2>&1)
      held=$(grep -rl "while other runs shared it" "grades-$c-$tag" 2>/dev/null | wc -l)
      table+=("$c $tag: exit $code, $t s; $honest; feedback files naming a run held to its GPU memory share: $held; $chunks")
    done
  done
fi

if has bench; then
  n=${BENCH_N:-10}
  BENCH_EX=${BENCH_EX:-01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds}
  rm -rf bench-class
  python3 scripts/grade-bench-class.py bench-class "$n" ${BENCH_EX//,/ }
  for b in ${BENCH_BUNDLES:-$B}; do
    tag=$(basename "$b")
    rm -rf "grades-bench-$tag" .cudabugs/work
    s=$(now)
    $b grade bench-class --exercises "$BENCH_EX" --secret-seed 7 --out "grades-bench-$tag" --format json > "$L/bench-$tag.jsonl" 2> "$L/bench-$tag.err"
    code=$?
    t=$(secs "$s" "$(now)")
    k=$(echo "$BENCH_EX" | tr ',' '\n' | wc -l)
    table+=("bench $tag: exit $code, $t s, $(grep -c '"event":"graded"' "$L/bench-$tag.jsonl") graded, $(python3 -c "print(round($n*$k/$t*60,1))") pairs/min; grades $(tail -n +2 "grades-bench-$tag/grades.csv" | cut -d, -f5- | tr ',' '\n' | sort | uniq -c | tr '\n' ' ')")
  done
fi

if has managed; then
  s=$(now)
  $B --isolation strict verify --survey 34-managed-race --record "$L/v34.json" > "$L/v34.txt" 2>&1
  table+=("verify --survey 34: exit $?, $(secs "$s" "$(now)") s; $(grep -E '^(PASS|FAIL|exit)|passed|failed' "$L/v34.txt" | tail -2 | tr '\n' ' ')")
  rm -rf managed-class; mkdir -p managed-class/managed-split/exercises/34-managed-race managed-class/honest-ref/exercises/34-managed-race
  cp tests/fixtures/adversarial-managed/managed-split/growth.cu managed-class/managed-split/exercises/34-managed-race/
  cp solutions/34-managed-race/growth.cu managed-class/honest-ref/exercises/34-managed-race/
  s=$(now)
  $B grade managed-class --exercises 34-managed-race --secret-seed 11 --out grades-managed --format json > "$L/managed.jsonl" 2> "$L/managed.err"
  table+=("grade managed-class: exit $?, $(secs "$s" "$(now)") s; $(tr '\n' ' ' < grades-managed/grades.csv)")
fi

tar czf "$OUT/grades.tgz" grades-* 2>/dev/null
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
printf '%s\n' "${table[@]}"
