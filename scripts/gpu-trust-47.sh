#!/usr/bin/env bash
# Issue 47 on a GPU, with a release bundle built elsewhere ($B, default .gpu/xtask), from the
# workbook root. PART (comma-separated):
#   verify   `verify` of the whole catalog in the sandbox: every untouched exercise still fails for
#            its reason and every fix passes, with the harness's no-spawn filter, inputs passed by
#            descriptor and ncu's turn held by the grader
#   tests    the carried test binaries (.gpu/tests/*: no_spawn, hostile) run where CUDA runs
#   honest   grade of tests/fixtures/honest-variety (11 fixes in other styles): 100, no flag
#   adv      grade of the adversarial class on 03, 57, 05 and 07 (ADV_EX)
#   adv62    the same on 62 and 63
#   adv47    the driver's records (items 4-5): ncu-kernel, ncu-probe, launch-ex and decoy-copy with
#            honest-ref, honest-alt and half-fix as controls, on 57, 62 and 63
#   callclock `verify` of the call-clocked exercises (CALLCLOCK_EX) by $BO and by $B, one after the
#            other (CALLCLOCK_BUNDLES: the bundles instead): their speed and goal lines side by side
#   traced   traced-guess and honest-ref on 62 under two more secrets
#   refs     grade of one student holding every reference fix of REFS_EX (default: the bug track)
#   bench    BENCH_N students x 6 bug exercises graded by $B and by $BO (the bundle before): pairs a
#            minute, in one run (BENCH_BUNDLES: the bundles to grade with instead)
#   kill     issue 50 item 4: a grade of the bench's class (KILL_EX) killed at 5 points (SIGTERM and
#            SIGKILL by turns, KILL_AT seconds into each run), then graded to the end: after each
#            kill, the processes, GPU contexts and cgroups left, and how long the next run took to
#            its first graded pair; at the end, each pair once in the journal
#   alt      grade of every other fix and half-fix of scripts/alt-fixes/ (ALT_EX: exercise numbers),
#            spliced into its solution, as students other-N and half-N (ALT_HALF=0: no half-fixes)
#   record   the grade recordings the replay tests serve (--record-tools): the fixture class and the
#            adversarial class as recorded on 2026-11-25 (its students only), on 03 and 57, with the
#            fixture secret (grader/tests/recordings/grade-fixture, grade-adversarial)
# After the grades: every file written outside the workbook since the start, and whether any
# feedback quotes what exec-child's shell or case-lister printed. Logs and gradebooks go to $OUT
# (tarred); a table is printed last.
set -uo pipefail
B=${B:-.gpu/xtask}
BO=${BO:-.gpu/xtask-old}
OUT=${OUT:-/tmp/trust-47}
PART=${PART:-verify,honest,adv}
ADV_EX=${ADV_EX:-03-race,57-reduction,05-memset,07-leak}
L="$OUT/logs"; mkdir -p "$L"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
SEED=4701
table=()
has() { case ",$PART," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 1))"; }
run() { # run NAME CMD...: output to logs/NAME.txt, exit and seconds to the table
  local name=$1; shift
  local s; s=$(now)
  "$@" > "$L/$name.txt" 2>&1
  local code=$?
  table+=("$name: exit $code, $(secs "$s" "$(now)") s")
}
# The versions first: ncu's first run as root fills /root/Documents with its sections, which is not
# the class's doing.
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -2; ncu --version | tail -1;
  compute-sanitizer --version | tail -1; objdump --version | head -1; uname -r; nproc; } > "$L/env.txt" 2>&1
touch /tmp/trust-47-start; sleep 1

if has verify; then
  run verify $B --isolation strict verify ${VERIFY_EX:-} --record "$OUT/verification.json"
  grep -c "no-spawn filter could not be installed" "$L/verify.txt" > "$L/verify-filter-failures.txt"
fi

if has tests; then
  # The tests find the repository where it was built.
  [ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
  for t in .gpu/tests/*; do
    run "test-$(basename "$t")" env CUDABUGS_REQUIRE_NVCC=1 CUDABUGS_REQUIRE_NAMESPACES=1 "$t" --test-threads 1 --nocapture
  done
fi

if has callclock; then
  CALLCLOCK_EX=${CALLCLOCK_EX:-62-launches 63-transfers 67-zero-copy 68-graphs 69-prefetch 70-default-stream}
  for b in ${CALLCLOCK_BUNDLES:-$BO $B}; do
    tag=$(basename "$b")
    rm -rf .cudabugs/work
    run "callclock-$tag" $b --isolation strict verify $CALLCLOCK_EX --record "$OUT/callclock-$tag.json"
  done
  python3 - "$OUT"/callclock-*.json > "$L/callclock-table.txt" 2>&1 <<'PY'
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    print(path.rsplit('/', 1)[-1], d.get('wall_seconds'))
    for e in d['exercises']:
        for c in e['checks']:
            s = c.get('summary', '')
            if c['name'].startswith(('solution', 'exercise')) and ('original' in s or 'goal' in s or 'flag' in c['name']):
                print(' ', e['id'], c['name'], c['status'], '|', s[:160])
PY
  table+=("$(cat "$L/callclock-table.txt")")
fi

grade() { # grade NAME CLASS EXERCISES: the gradebook in grades-NAME, the json stream in logs
  local name=$1 class=$2 ex=$3
  # RESUME=1 keeps grades-NAME (its journal carried from an earlier call): only what it lacks runs.
  [ -n "${RESUME:-}" ] || rm -rf "grades-$name"
  local s; s=$(now)
  # GRADE_LIMIT (seconds) bounds each grade, so that what follows still runs inside a device call.
  timeout --kill-after=10 "${GRADE_LIMIT:-3600}" $B grade "$class" --exercises "$ex" --secret-seed $SEED --out "grades-$name" --format json > "$L/grade-$name.jsonl" 2> "$L/grade-$name.err"
  local code=$?
  table+=("grade $name: exit $code, $(secs "$s" "$(now)") s")
}
has honest && grade honest tests/fixtures/honest-variety 01-index,03-race,05-memset,06-misaligned,08-launch,09-use-after-free,37-shfl-width,40-half-overflow,41-wmma-layout,68-graphs,70-default-stream
has adv && grade adv tests/fixtures/adversarial "$ADV_EX"
has adv62 && grade adv62 tests/fixtures/adversarial 62-launches,63-transfers
if has adv47; then
  rm -rf adv47; mkdir -p adv47
  for s in ncu-kernel ncu-probe launch-ex decoy-copy traced-guess honest-ref honest-alt half-fix; do
    cp -r "tests/fixtures/adversarial/$s" adv47/
  done
  grade adv47 adv47 57-reduction,62-launches,63-transfers
fi
if has traced; then
  # traced-guess under two more secrets: the traced call's place is drawn from the secret, so each
  # seed shows one of the two ways it loses (its guess right: recorded-call; wrong: uneven-repeats).
  rm -rf traced; mkdir -p traced
  cp -r tests/fixtures/adversarial/traced-guess tests/fixtures/adversarial/honest-ref traced/
  for seed in 4702 4703; do
    SEED=$seed grade "traced-$seed" traced 62-launches
  done
fi
if has refs; then
  REFS_EX=${REFS_EX:-$(ls exercises | grep -E '^(0[1-9]|[1-3][0-9]|4[0-5])-' | tr '\n' ',' | sed 's/,$//')}
  rm -rf refs; mkdir -p refs/ref/exercises
  for id in ${REFS_EX//,/ }; do cp -r "solutions/$id" "refs/ref/exercises/$id"; done
  grade refs refs "$REFS_EX"
fi
if has alt; then
  # Every other fix and half-fix of scripts/alt-fixes/ spliced into its solution and graded as a
  # student: `other-N` holds the exercise's Nth other fix in name order (each should get 100,
  # unflagged), `half-N` its Nth half-fix (points lost for the bug, never a trust flag).
  ALT_EX=${ALT_EX:-$(ls scripts/alt-fixes | grep -oE '^[0-9]+' | sort -u | tr '\n' ' ')}
  rm -rf alt; ids=()
  for n in $ALT_EX; do
    id=$(ls exercises | grep "^$n-"); ids+=("$id"); k=0; h=0
    src=$(ls "solutions/$id" | grep -v exercise-regions)
    for v in $(ls scripts/alt-fixes | grep "^$n-" | sed 's/\.region\.cu$//' | sort); do
      case $v in *-half) [ "${ALT_HALF:-1}" = 1 ] || continue; h=$((h + 1)); who=half-$h ;; *) k=$((k + 1)); who=other-$k ;; esac
      mkdir -p "alt/$who/exercises/$id"
      scripts/splice-region.sh "solutions/$id/$src" "scripts/alt-fixes/$v.region.cu" > "alt/$who/exercises/$id/$src"
      echo "$who $id $v" >> "$L/alt-students.txt"
    done
  done
  grade "alt${ALT_TAG:-}" alt "$(IFS=,; echo "${ids[*]}")"
fi
if has bench; then
  n=${BENCH_N:-10}
  BENCH_EX=${BENCH_EX:-01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds}
  rm -rf bench-class
  python3 scripts/grade-bench-class.py bench-class "$n" ${BENCH_EX//,/ }
  for b in ${BENCH_BUNDLES:-$BO $B}; do
    tag=$(basename "$b")
    rm -rf "grades-bench-$tag" .cudabugs/work
    s=$(now)
    $b grade bench-class --exercises "$BENCH_EX" --secret-seed 7 --out "grades-bench-$tag" --format json > "$L/bench-$tag.jsonl" 2> "$L/bench-$tag.err"
    code=$?
    t=$(secs "$s" "$(now)")
    pairs=$(grep -c '"graded"\|"event":"graded"' "$L/bench-$tag.jsonl")
    k=$(echo "$BENCH_EX" | tr ',' '\n' | wc -l)
    table+=("bench $tag: exit $code, $t s, $pairs graded events, $(python3 -c "print(round($n*$k/$t*60,1))") pairs/min")
  done
fi

if has kill; then
  # The bench's class (60 pairs, about 100 s on an H200), so that every kill falls mid-run: the
  # fixture class of 22 pairs was graded whole before the third kill (2026-11-29).
  KILL_EX=${KILL_EX:-01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds}
  rm -rf grades-kill kill-class
  python3 scripts/grade-bench-class.py kill-class 10 ${KILL_EX//,/ }
  leftovers() { # processes of a grade's runs, GPU contexts, the grader's run cgroups
    local p g c
    p=$(ps -eo args= | grep -E 'compute-sanitizer|/ncu |\.cudabugs/work|harness|sleep' | grep -v -E 'grep|gpu-trust' | wc -l)
    g=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | grep -c .)
    c=$(find /sys/fs/cgroup -maxdepth 6 -type d -name 'cudabugs-*' 2>/dev/null | wc -l)
    echo "processes $p, gpu contexts $g, cgroups $c"
  }
  k=0
  for at in ${KILL_AT:-8 20 12 30 16}; do
    k=$((k + 1))
    sig=$([ $((k % 2)) = 1 ] && echo TERM || echo KILL)
    s=$(now)
    $B grade kill-class --exercises "$KILL_EX" --secret-seed $SEED --out grades-kill --format json > "$L/kill-$k.jsonl" 2> "$L/kill-$k.err" &
    pid=$!
    sleep "$at"; kill -"$sig" $pid; wait $pid; code=$?
    right=$(leftovers); sleep 3; later=$(leftovers)
    first=$(python3 - "$L/kill-$k.jsonl" "$s" <<'PY'
import json, sys
already, first = '?', 'no chunk ended'
for line in open(sys.argv[1]):
    try: o = json.loads(line)
    except ValueError: continue
    if o.get('event') == 'started': already = o.get('already_graded')
    if o.get('event') == 'chunk': first = 'first chunk ended at %.1f s' % o.get('at', -1); break
print('already graded', already, '-', first)
PY
)
    table+=("kill $k ($sig at ${at}s): exit $code; at once: $right; 3 s later: $later; $(grep -c '"event":"graded"' "$L/kill-$k.jsonl") graded; $first")
  done
  s=$(now)
  $B grade kill-class --exercises "$KILL_EX" --secret-seed $SEED --out grades-kill --format json > "$L/kill-final.jsonl" 2> "$L/kill-final.err"
  code=$?
  once=$(python3 -c "
import json, collections
c = collections.Counter()
for l in open('grades-kill/journal.jsonl'):
    try: o = json.loads(l)
    except ValueError: continue
    c[(o.get('student'), o.get('exercise'))] += 1
print(len(c), 'pairs,', sum(1 for v in c.values() if v > 1), 'journaled more than once')")
  table+=("kill final: exit $code, $(secs "$s" "$(now)") s; $once; $(leftovers)")
fi

if has record; then
  SECRET_DIR=$(mktemp -d); cp tests/fixtures/class-secret.toml "$SECRET_DIR/secret.toml"
  rm -rf rec-grade-fixture rec-grade-adversarial grades-fixture grades-adversarial recorded-class
  s=$(now)
  timeout --kill-after=10 "${RECORD_LIMIT:-600}" $B --record-tools rec-grade-fixture grade tests/fixtures/class --exercises 03-race,57-reduction --secret "$SECRET_DIR/secret.toml" --out grades-fixture --format json > "$L/record-fixture.jsonl" 2> "$L/record-fixture.err"
  table+=("record fixture: exit $?, $(secs "$s" "$(now)") s")
  mkdir -p recorded-class
  for who in $(tail -n +2 book/gpu-runs/2026-11-25-trust/class/grades-adversarial-03-race-57-reduction/grades.csv | cut -d, -f1); do
    cp -r "tests/fixtures/adversarial/$who" recorded-class/
  done
  s=$(now)
  timeout --kill-after=10 "${RECORD_LIMIT:-600}" $B --record-tools rec-grade-adversarial grade recorded-class --exercises 03-race,57-reduction --secret "$SECRET_DIR/secret.toml" --out grades-adversarial --format json > "$L/record-adversarial.jsonl" 2> "$L/record-adversarial.err"
  table+=("record adversarial: exit $?, $(secs "$s" "$(now)") s")
  tar czf "$OUT/recordings.tgz" rec-grade-fixture rec-grade-adversarial
fi

# What the class left outside the workbook (the machine's own logs excepted), and what its feedback quotes.
find / -xdev -newer /tmp/trust-47-start -type f -not -path "$PWD/*" -not -path "$OUT/*" -not -path '/proc/*' \
  -not -path '/sys/*' -not -path '/var/log/*' -not -path '/var/lib/*' -not -path '/root/.nv/*' 2>/dev/null > "$L/written-outside.txt"
table+=("files written outside the workbook: $(wc -l < "$L/written-outside.txt")")
for g in grades-*; do
  [ -d "$g" ] || continue
  quoted=$(grep -rlE 'uid=[0-9]+|case-lister: (found|input)|CBIN' "$g" 2>/dev/null | grep -v journal | wc -l)
  table+=("$g: feedback files quoting exec-child or case-lister output: $quoted")
done
python3 scripts/gpu-trust-47-table.py grades-* > "$L/table.txt" 2>&1
python3 scripts/gpu-driver-47-table.py grades-* > "$L/driver-table.txt" 2>&1
# The harness's driver records as they were written, where a plan kept them (the parser's fixtures).
mkdir -p "$L/driver-samples"
find .cudabugs -name '*.driver' 2>/dev/null > "$L/driver-files.txt"
head -6 "$L/driver-files.txt" | while read -r f; do cp "$f" "$L/driver-samples/$(echo "$f" | tr '/' '_')"; done
tar czf "$OUT/grades.tgz" grades-* 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$OUT" logs
[ -f "$OUT/verification.json" ] && gzip -f "$OUT/verification.json"
cat "$L/table.txt"
tail -30 "$L/driver-table.txt"
printf '%s\n' "${table[@]}"
