#!/usr/bin/env bash
# The trust boundary and the performance track's loop on a GPU, with a release bundle built elsewhere ($B). PART (comma-separated):
#   smoke   check of the fixed 03, 57, 62 (twice) and 63 (twice), and of two adversarial files; a
#           grade of 62 and 63's reference fixes beside the lazy 63: the served calls end to end
#   mini    check of the fixed 57 and 63 (ncu's shared lock: no busy profiler)
#   record  the check recordings CI replays (03 fixed, 57 untouched and fixed, 03 verify) and the
#           fixture class graded with its tool runs recorded
#   class   the adversarial class graded with its tool runs recorded (CI replays them), one grade
#           per set of CLASS_SETS (default "03-race,57-reduction+62-launches"; all sets record into
#           one folder: its files are named by exercise, student and stage); what the class left
#           behind
#   class63 63 graded apart (its calls' outputs are 256 MiB: not recorded)
#   alone   the honest students graded alone (their points must not depend on the class)
#   check   `check` of the adversarial files of CHECK_EX (default "03-race,57-reduction"), and of
#           CHECK_62_63 (comma-separated student/exercise pairs), for the check-against-grade table
#   bench   grade's throughput on a class of bug exercises (BENCH_ISOLATION=none: without the sandbox)
#   ncucost 03's fix checked with and without the sandbox: where a timed run's time goes
#   perfcheck  the learner's loop on each of PERF_EX (default: every performance exercise): `check`
#           of the untouched file from a cold work folder, then of the reference fix (a changed
#           file: rebuilt, the original's and reference's measurements kept), then of it again;
#           each report's time_spent summed up by scripts/check-time-spent.py (PERF_RUNS: which of
#           cold,fix,again)
#   spread  SPREAD_N (default 5) checks of the reference fix of each of SPREAD_EX (default 62 and
#           63): the noise of the verdicts
#   verify  `verify` of the whole catalog from a cold work folder: its text transcript and record
#   onecon  after verify: the untouched 32, 33 and 34 with CUDA's defaults and with one hardware
#           queue (scripts/gpu-one-connection.sh)
#   gradeperf  grade's throughput on a class of performance exercises (GRADE_PERF_EX, 5 students)
#   verifyjobs `verify` again with VERIFY_JOBS (default 16) sanitizer runs at a time
#           (CUDABUGS_SANITIZER_JOBS): the A/B of that setting
#   callclock  `check` of the call-clock adversaries (tests/fixtures/adversarial-call-clock)
#   linked  a class whose files are links (the submission to the instructor's secret, a workbook
#           copy's harness header to it, a copy's exercises/ to the workbook's solutions/) beside
#           the reference fix: the links are not gradable and no file of the gradebook quotes the
#           secret
#   house   issue 36: `verify` of eight exercises (bug and performance) after the refactors, and
#           whether the verify record and the recordings made by `record` name the workbook's path
# Logs, gradebooks and recordings go to $OUT (tarred); a table is printed last.
set -uo pipefail
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/trust-run}
PART=${PART:-smoke}
L="$OUT/logs"; mkdir -p "$L"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
ADV=tests/fixtures/adversarial
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
with() { # with FILE DEST CMD...: DEST replaced by FILE for one command
  local file=$1 dest=$2; shift 2
  local backup; backup=$(mktemp); cp "$dest" "$backup"; cp "$file" "$dest"
  "$@"; local code=$?
  cp "$backup" "$dest"; rm -f "$backup"
  return $code
}
source_of() { sed -n 's/^source = "\(.*\)"/\1/p' "exercises/$1/exercise.toml"; }
# check_json NAME EXERCISE FILE: `check --format json` of FILE as EXERCISE, one line of the table.
check_json() {
  local name=$1 ex=$2 file=$3 s; s=$(now)
  with "$file" "exercises/$ex/$(source_of "$ex")" $B --format json check "$ex" > "$L/$name.json" 2> "$L/$name.err"
  local code=$?
  secs "$s" "$(now)" > "$L/$name.secs"
  table+=("$name: exit $code, $(cat "$L/$name.secs") s; $(python3 -c "
import json,sys
try: r=json.load(open('$L/$name.json'))
except Exception as e: print('unreadable', e); sys.exit()
bad=[s['name']+': '+s['summary'][:160] for s in r.get('steps',[]) if s['status']!='passed']
t=[s['summary'][:200] for s in r.get('steps',[]) if s['name']=='timing']
print(r.get('outcome'), '|', t[0] if t else '-', '|', '; '.join(bad)[:400] or '-')")")
}
nvidia-smi --query-gpu=name,driver_version,compute_mode,clocks.applications.graphics --format=csv > "$L/gpu.txt" 2>&1
$B toolkit show > "$L/toolkit.txt" 2>&1

if has smoke; then
  check_json smoke-03-fixed 03-race solutions/03-race/reduce.cu
  check_json smoke-57-fixed 57-reduction solutions/57-reduction/sum.cu
  check_json smoke-62-fixed-a 62-launches solutions/62-launches/heat.cu
  check_json smoke-62-fixed-b 62-launches solutions/62-launches/heat.cu
  check_json smoke-63-fixed-a 63-transfers solutions/63-transfers/cool.cu
  check_json smoke-63-fixed-b 63-transfers solutions/63-transfers/cool.cu
  check_json smoke-03-escape 03-race $ADV/escape/reduce.cu
  check_json smoke-62-lazy 62-launches $ADV/lazy-call-62/heat.cu
  rm -rf cls grades-smoke; mkdir -p cls/honest cls/lazy
  cp solutions/62-launches/heat.cu solutions/63-transfers/cool.cu cls/honest/; cp $ADV/lazy-call/cool.cu cls/lazy/
  run smoke-grade $B grade cls --exercises 62-launches,63-transfers --secret-seed 7 --out grades-smoke
  table+=("smoke grades: $(tr '\n' ';' < grades-smoke/grades.csv)")
  cp -r grades-smoke "$L/"
  # What the sandbox left: who owns the run folders, the clock's records.
  { find .cudabugs/work/check/63-transfers -maxdepth 4 -printf '%u %m %s %p\n' | head -60; for c in .cudabugs/work/check/6*/*/clock/*/clock; do echo "== $c"; cat "$c"; done; } > "$L/smoke-files.txt" 2>&1
fi

if has mini; then
  check_json mini-57-fixed 57-reduction solutions/57-reduction/sum.cu
  check_json mini-63-fixed 63-transfers solutions/63-transfers/cool.cu
fi

if has record; then
  SECRET_DIR=$(mktemp -d); cp tests/fixtures/class-secret.toml "$SECRET_DIR/secret.toml"
  rm -rf rec-*
  check_json rec-check-03-fixed 03-race solutions/03-race/reduce.cu
  run rec-check-solution with solutions/03-race/reduce.cu exercises/03-race/reduce.cu $B --format json --record-tools rec-check-solution check race
  run rec-check-57-untouched $B --format json --record-tools rec-check-57-untouched check 57
  run rec-check-57-solution with solutions/57-reduction/sum.cu exercises/57-reduction/sum.cu $B --format json --record-tools rec-check-57-solution check 57
  run rec-verify-03 $B --format json --record-tools rec-verify-03-race verify 03-race
  run rec-fixture $B --record-tools rec-grade-fixture grade tests/fixtures/class --exercises 03-race,57-reduction --secret "$SECRET_DIR/secret.toml" --out grades-fixture
  table+=("fixture grades: $(tr '\n' ';' < grades-fixture/grades.csv)")
  tar czf "$OUT/recordings-checks.tgz" rec-check-* rec-verify-* rec-grade-fixture
  cp -r grades-fixture "$L/"
fi

gradebook_lines() { # gradebook_lines DIR: a student a line, the exercises' points
  python3 -c "
import csv
rows = list(csv.DictReader(open('$1/grades.csv')))
keys = [k for k in rows[0] if k[:2].isdigit()] if rows else []
print('   ', ' '.join(keys))
for r in rows: print('  ', r.get('Student'), ' '.join(r.get(k, '') for k in keys))
" 2>&1
}
left_behind() { # what the class left: escape markers outside the work folders, processes
  { ls -la /var/tmp/cudabugs-escape-marker /tmp/cudabugs-escape-marker 2>&1; find / -xdev -name 'cudabugs-escape-marker' -not -path '*/.cudabugs/work/*' 2>/dev/null; find grades-* -name '*marker*' 2>/dev/null; } > "$L/escape-markers.txt"
  table+=("escape markers outside work folders: $(grep -v 'cannot access' "$L/escape-markers.txt" | grep -c marker) ($(tr '\n' ' ' < "$L/escape-markers.txt" | cut -c1-300))")
  ps -eo pid,ppid,etimes,user,cmd | grep -v -E "ps -eo|grep|gpu-trust" | grep -E "sleep|xtask|ncu|sanitizer|learner|heat|cool|reduce|sum" > "$L/left-running.txt"
  table+=("processes left after the classes: $(wc -l < "$L/left-running.txt") (another stream's checks included, where one runs beside)")
}
if has class; then
  SECRET_DIR=$(mktemp -d); cp tests/fixtures/class-secret.toml "$SECRET_DIR/secret.toml"
  rm -rf rec-grade-adversarial grades-adversarial*
  rm -f /var/tmp/cudabugs-escape-marker /tmp/cudabugs-escape-marker
  sets=${CLASS_SETS:-03-race,57-reduction+62-launches}
  for set in ${sets//+/ }; do
    g=grades-adversarial-${set//,/-}
    run "class-$set" $B --record-tools rec-grade-adversarial grade $ADV --exercises "$set" --secret "$SECRET_DIR/secret.toml" --out "$g"
    table+=("$g:" "$(gradebook_lines "$g")")
    cp -r "$g" "$L/"
  done
  left_behind
  tar czf "$OUT/recordings-class.tgz" rec-grade-adversarial
fi

if has class63; then
  SECRET_DIR=$(mktemp -d); cp tests/fixtures/class-secret.toml "$SECRET_DIR/secret.toml"
  rm -rf grades-adversarial-63-transfers
  run class-63 $B grade $ADV --exercises 63-transfers --secret "$SECRET_DIR/secret.toml" --out grades-adversarial-63-transfers
  table+=("grades-adversarial-63-transfers:" "$(gradebook_lines grades-adversarial-63-transfers)")
  cp -r grades-adversarial-63-transfers "$L/"
  left_behind
fi

if has alone; then
  SECRET_DIR=$(mktemp -d); cp tests/fixtures/class-secret.toml "$SECRET_DIR/secret.toml"
  rm -rf honest-alone grades-honest-alone; mkdir -p honest-alone; cp -r $ADV/honest-ref $ADV/honest-alt $ADV/half-fix honest-alone/
  run honest-alone $B grade honest-alone --exercises 03-race,57-reduction,62-launches,63-transfers --secret "$SECRET_DIR/secret.toml" --out grades-honest-alone
  table+=("grades-honest-alone:" "$(gradebook_lines grades-honest-alone)")
  cp -r grades-honest-alone "$L/"
fi

if has check; then
  exs=${CHECK_EX-03-race,57-reduction}
  for ex in ${exs//,/ }; do
    for dir in $ADV/*/; do
      st=$(basename "$dir"); f="$dir$(source_of "$ex")"
      [ -e "$f" ] || continue
      check_json "check-$st-$ex" "$ex" "$f"
    done
  done
  pairs=${CHECK_62_63-honest-ref/62-launches,forge-clock-sym/62-launches,post-done/62-launches,lazy-call/63-transfers}
  for pair in ${pairs//,/ }; do
    st=${pair%/*}; ex=${pair#*/}
    check_json "check-$st-$ex" "$ex" "$ADV/$st/$(source_of "$ex")"
  done
fi

if has bench; then
  rm -rf bench-class grades-bench
  python3 scripts/grade-bench-class.py bench-class 1 01-index
  run bench-warm-up $B grade bench-class --exercises 01-index --secret-seed 7 --out grades-bench
  rm -rf bench-class .cudabugs/work grades-bench
  n=${BENCH_STUDENTS:-5}
  python3 scripts/grade-bench-class.py bench-class "$n" 01-index 02-bounds 03-race 05-memset 06-misaligned 10-shared-bounds
  s=$(now)
  # BENCH_ISOLATION=none: the same class without the sandbox (what the boundary costs).
  $B ${BENCH_ISOLATION:+--isolation "$BENCH_ISOLATION"} grade bench-class --exercises 01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds --secret-seed 7 --out grades-bench --format json > "$L/bench-bug.jsonl" 2> "$L/bench-bug.err"
  code=$?; t=$(secs "$s" "$(now)")
  table+=("throughput bug: $((n * 6)) pairs in $t s = $(python3 -c "print(round($n * 6 * 60 / $t, 1))") per minute (exit $code)")
  cp grades-bench/grades.csv "$L/bench-bug-grades.csv"
fi
if has ncucost; then
  # Where a timed run's time goes: 03's fix checked in the sandbox and without it, twice each
  # (the second with the builds and the profiles kept); each report's time_spent says which stage.
  for iso in auto none; do
    for k in 1 2; do
      with solutions/03-race/reduce.cu exercises/03-race/reduce.cu $B --isolation $iso --format json check 03-race > "$L/ncucost-$iso-$k.json" 2> "$L/ncucost-$iso-$k.err"
    done
  done
  python3 scripts/check-time-spent.py "$L"/ncucost-*.json > "$L/ncucost.txt" 2>&1
  table+=("$(cat "$L/ncucost.txt")")
fi

PERF_ALL=$(ls exercises | grep -E '^(5|6|7)[0-9]-' | paste -sd, -)
if has perfcheck; then
  exs=${PERF_EX:-$PERF_ALL}
  # The GPU's peak is measured once, by the first check that needs it, and kept: not a check's cost.
  [ -n "$(ls .cudabugs/peak/*.json 2>/dev/null)" ] || $B peak > "$L/peak.txt" 2>&1
  for ex in ${exs//,/ }; do
    src=$(source_of "$ex")
    rm -rf ".cudabugs/work/check/$ex" ".cudabugs/work/kept/$ex" .cudabugs/work/build-cache
    runs=,${PERF_RUNS:-cold,fix,again},
    [[ $runs == *,cold,* ]] && check_json "perf-$ex-cold" "$ex" "exercises/$ex/$src"
    [[ $runs == *,fix,* ]] && check_json "perf-$ex-fix" "$ex" "solutions/$ex/$src"
    [[ $runs == *,again,* ]] && check_json "perf-$ex-again" "$ex" "solutions/$ex/$src"
  done
  python3 scripts/check-time-spent.py "$L"/perf-*.json > "$L/perf-time-spent.txt" 2>&1
  table+=("$(cat "$L/perf-time-spent.txt")")
fi

if has spread; then
  exs=${SPREAD_EX:-62-launches,63-transfers}
  for ex in ${exs//,/ }; do
    for k in $(seq 1 "${SPREAD_N:-5}"); do
      check_json "spread-$ex-$k" "$ex" "solutions/$ex/$(source_of "$ex")"
    done
  done
fi

if has verify; then
  rm -rf .cudabugs/work
  $B peak > "$L/peak.txt" 2>&1
  s=$(now)
  $B verify --record "$L/verify-record.json" > "$L/verify.txt" 2>&1
  code=$?
  table+=("verify of the catalog: exit $code, $(secs "$s" "$(now)") s; $(tail -3 "$L/verify.txt" | tr '\n' ' ')")
fi

if has verifyjobs; then
  rm -rf .cudabugs/work
  $B peak > "$L/peak.txt" 2>&1
  s=$(now); j=${VERIFY_JOBS:-16}
  CUDABUGS_SANITIZER_JOBS=$j $B verify --record "$L/verify-jobs$j-record.json" > "$L/verify-jobs$j.txt" 2>&1
  code=$?
  table+=("verify, $j sanitizer runs at a time: exit $code, $(secs "$s" "$(now)") s; $(tail -3 "$L/verify-jobs$j.txt" | tr '\n' ' ')")
fi

if has callclock; then
  CC=tests/fixtures/adversarial-call-clock
  check_json callclock-forge-clock-62 62-launches $CC/forge-clock/heat.cu
  check_json callclock-threaded-steps-62 62-launches $CC/threaded-steps/heat.cu
  check_json callclock-lucky-skip-68-a 68-graphs $CC/lucky-skip/chain.cu
  check_json callclock-lucky-skip-68-b 68-graphs $CC/lucky-skip/chain.cu
  check_json callclock-lucky-skip-68-c 68-graphs $CC/lucky-skip/chain.cu
fi

if has onecon; then
  bash scripts/gpu-one-connection.sh > "$L/one-connection.txt" 2>&1
  table+=("$(cat "$L/one-connection.txt")")
fi

if has gradeperf; then
  rm -rf perf-class grades-perf
  gex=${GRADE_PERF_EX:-57-reduction,62-launches,63-transfers}
  n=${GRADE_PERF_STUDENTS:-5}
  for k in $(seq 1 "$n"); do
    for ex in ${gex//,/ }; do
      mkdir -p "perf-class/student-$k"; cp "solutions/$ex/$(source_of "$ex")" "perf-class/student-$k/"
    done
  done
  for ex in ${gex//,/ }; do
    s=$(now)
    $B grade perf-class --exercises "$ex" --secret-seed 7 --out "grades-perf-$ex" --format json > "$L/grade-perf-$ex.jsonl" 2> "$L/grade-perf-$ex.err"
    code=$?; t=$(secs "$s" "$(now)")
    table+=("throughput $ex: $n pairs in $t s = $(python3 -c "print(round($n * 60 / $t, 1))") per minute (exit $code); $(tr '\n' ';' < "grades-perf-$ex/grades.csv" | cut -c1-300)")
  done
fi
if has linked; then
  rm -rf linked-class grades-linked; mkdir -p linked-class/honest-ref linked-class/linked-file linked-class/linked-harness/exercises/03-race linked-class/linked-harness/harness
  LSECRET=$(mktemp -d)/instructor-only.toml; { echo "# cudabugs-linked-secret-gpu"; cat tests/fixtures/class-secret.toml; } > "$LSECRET"
  cp solutions/03-race/reduce.cu linked-class/honest-ref/
  ln -s "$LSECRET" linked-class/linked-file/reduce.cu
  cp exercises/03-race/reduce.cu linked-class/linked-harness/exercises/03-race/
  ln -s "$LSECRET" linked-class/linked-harness/harness/cudabugs.cuh
  mkdir -p linked-class/linked-solutions; ln -s "$PWD/solutions" linked-class/linked-solutions/exercises
  run linked-grade $B grade linked-class --exercises 03-race --secret "$LSECRET" --out grades-linked
  table+=("linked grades: $(tr '\n' ';' < grades-linked/grades.csv)")
  table+=("files of the gradebook quoting the secret: $(grep -rl cudabugs-linked-secret-gpu grades-linked | wc -l)")
  cp -r grades-linked "$L/"
fi

if has house; then
  s=$(now)
  $B verify 01-index 03-race 04-sync 14-async-error 26-stack-overflow 57-reduction 62-launches 63-transfers --record "$L/verify-some.json" > "$L/verify-some.txt" 2>&1
  code=$?
  table+=("verify of 8: exit $code, $(secs "$s" "$(now)") s; $(tail -2 "$L/verify-some.txt" | tr '\n' ' ')")
  table+=("the workbook's path ($(pwd)) in the verify record: $(grep -c "$(pwd)" "$L/verify-some.json") lines")
  if ls -d rec-* > /dev/null 2>&1; then
    table+=("the workbook's path in the new recordings: $(grep -rl "$(pwd)/" rec-* | wc -l) files; \${WORKBOOK} in $(grep -rl '${WORKBOOK}' rec-* | wc -l) files")
  fi
fi

dmesg > "$L/dmesg.txt" 2>&1
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$L"
printf '%s\n' "${table[@]}" | tee "$OUT/table.txt"
