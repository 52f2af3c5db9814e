#!/usr/bin/env bash
# The GPU run of the trustworthy gradebook (grade's rules against a class that cheats):
#   PART=record  the check recordings CI replays (03 fixed, 57 untouched and fixed), then the
#                fixture class and the adversarial class graded with their tool runs recorded, the
#                honest students graded alone, and what the class left behind;
#   PART=adversarial  only the adversarial class (recorded) and the honest students alone;
#   PART=check   `check` of every adversarial file, for the check-against-grade table;
#   PART=bench   grade's throughput on a class of bug exercises and one of performance exercises,
#                after a warm-up grade (the harness built and the GPU's peak measured once, as on
#                any machine that has graded before).
# PART may name several, comma-separated: PART=adversarial,check.
# Logs, gradebooks and recordings go to $OUT (tarred); a table is printed last.
set -uo pipefail
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/trust-out}
PART=${PART:-record}
L="$OUT/logs"; mkdir -p "$L"
export CUDABUGS_NO_INSTALL=1
SECRET_DIR=$(mktemp -d); cp tests/fixtures/class-secret.toml "$SECRET_DIR/secret.toml"
ADV=tests/fixtures/adversarial
table=()
has() { case ",$PART," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 1))"; }
# run NAME CMD...: the command's output to logs/NAME.txt, its exit and time to the table.
run() {
  local name=$1; shift
  local s; s=$(now)
  "$@" > "$L/$name.txt" 2>&1
  local code=$?
  table+=("$name: exit $code, $(secs "$s" "$(now)") s")
}
# with FILE EXERCISE_DIR CMD...: the exercise's file replaced by FILE for one command.
with() {
  local file=$1 dest=$2; shift 2
  cp "$dest" /tmp/with-backup; cp "$file" "$dest"
  "$@"; local code=$?
  cp /tmp/with-backup "$dest"
  return $code
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$L/gpu.txt"

if has record; then
  rm -rf .cudabugs rec-* grades-*
  run check-03-solution with solutions/03-race/reduce.cu exercises/03-race/reduce.cu $B --format json --record-tools rec-check-solution check race
  run check-57-untouched $B --format json --record-tools rec-check-57-untouched check 57
  run check-57-solution with solutions/57-reduction/sum.cu exercises/57-reduction/sum.cu $B --format json --record-tools rec-check-57-solution check 57
  run fixture $B --record-tools rec-grade-fixture grade tests/fixtures/class --exercises 03-race,57-reduction --secret "$SECRET_DIR/secret.toml" --out grades-fixture
fi
if has record || has adversarial; then
  rm -rf rec-grade-adversarial grades-adversarial grades-honest-alone honest-alone .cudabugs/work
  run adversarial $B --record-tools rec-grade-adversarial grade $ADV --exercises 03-race,57-reduction --secret "$SECRET_DIR/secret.toml" --out grades-adversarial
  mkdir -p honest-alone; cp -r $ADV/honest-ref $ADV/honest-alt $ADV/half-fix honest-alone/
  run honest-alone $B grade honest-alone --exercises 03-race,57-reduction --secret "$SECRET_DIR/secret.toml" --out grades-honest-alone
  # What the class left: processes, files outside the work folders, the work folders' size.
  ps -eo pid,ppid,etimes,cmd | grep -v -E "ps -eo|grep|gpu-trust|device" | grep -E "sleep|xtask|ncu|sanitizer|\.bin|-learner|student" > "$L/left-running.txt"
  table+=("processes left after the classes: $(wc -l < "$L/left-running.txt")")
  { ls -la /tmp/leftover-marker ../leftover-marker 2>&1; du -sh .cudabugs/work/* 2>&1; find .cudabugs -size +200M -printf '%s %p\n' 2>&1; df -h . ; } > "$L/left-files.txt"
  table+=("leftover marker in /tmp: $([ -e /tmp/leftover-marker ] && echo PRESENT || echo absent); files over 200 MB left: $(find .cudabugs -size +200M | wc -l)")
  for g in grades-*; do
    table+=("$g:" "$(python3 -c "
import csv
for r in csv.DictReader(open('$g/grades.csv')):
    print('  ', r.get('Student'), r.get('03-race'), r.get('57-reduction'))
" 2>&1)")
  done
  tar czf "$OUT/recordings.tgz" rec-*
  tar czf "$OUT/gradebooks.tgz" grades-*
fi

if has check; then
  echo "student exercise exit outcome step flags" > "$L/checks.txt"
  for dir in $ADV/*/; do
    st=$(basename "$dir"); [ "${st#_}" != "$st" ] && continue
    for f in "$dir"*.cu; do
      [ -e "$f" ] || continue
      case $(basename "$f") in reduce.cu) ex=03-race ;; sum.cu) ex=57-reduction ;; *) continue ;; esac
      s=$(now)
      with "$f" "exercises/$ex/$(basename "$f")" $B --format json check "$ex" > "$L/check-$st-$ex.json" 2> "$L/check-$st-$ex.err"
      code=$?
      summary=$(python3 -c "
import json,sys
try: r=json.load(open('$L/check-$st-$ex.json'))
except Exception as e: print('unreadable', e); sys.exit()
flags=','.join(f['rule'] for f in r.get('flags',[])) or '-'
print(r.get('outcome'), r.get('step','-'), flags)")
      echo "$st $ex $code $summary $(secs "$s" "$(now)")s" >> "$L/checks.txt"
    done
  done
  table+=("$(cat "$L/checks.txt")")
fi

if has bench; then
  rm -rf bench-class grades-bench
  python3 scripts/grade-bench-class.py bench-class 1 01-index
  run bench-warm-up $B grade bench-class --exercises 01-index --secret-seed 7 --out grades-bench
  # BENCH: which of bug and perf to run.
  for spec in "bug:01-index,02-bounds,03-race,05-memset,06-misaligned,10-shared-bounds:10" "perf:51-coalesce,53-divergence,57-reduction:10"; do
    IFS=: read -r name exercises students <<< "$spec"
    case ",${BENCH:-bug,perf}," in *",$name,"*) ;; *) continue ;; esac
    rm -rf bench-class .cudabugs/work grades-bench
    python3 scripts/grade-bench-class.py bench-class "$students" ${exercises//,/ }
    pairs=$(( students * $(echo "$exercises" | tr ',' '\n' | wc -l) ))
    s=$(now)
    $B grade bench-class --exercises "$exercises" --secret-seed 7 --out grades-bench --format json > "$L/bench-$name.jsonl" 2> "$L/bench-$name.err"
    code=$?; t=$(secs "$s" "$(now)")
    table+=("throughput $name: $pairs pairs in $t s = $(python3 -c "print(round($pairs * 60 / $t, 1))") per minute (exit $code)")
    cp grades-bench/grades.csv "$L/bench-$name-grades.csv"
    grep '"chunk"' "$L/bench-$name.jsonl" > "$L/bench-$name-chunks.jsonl"
    table+=("$(python3 -c "
import json
ph = [json.loads(l)['phases'] for l in open('$L/bench-$name-chunks.jsonl')]
s = {k: round(sum(p.get(k, 0) for p in ph), 1) for k in ('tools', 'scoring', 'timing', 'calls', 'fresh', 'judging', 'waited', 'clean_up')}
print('  chunks: tools', s['tools'], 's, scoring', s['scoring'], 's, timing', s['timing'], 's (of it whole calls', s['calls'], 's), fresh', s['fresh'], 's, judging', s['judging'], 's; waiting for the next builds', s['waited'], 's, clean-up', s['clean_up'], 's; elsewhere', round($t - sum(s[k] for k in ('tools', 'scoring', 'timing', 'fresh', 'judging', 'waited', 'clean_up')), 1), 's (negative: the chunks ends ran beside the next tools)')
")")
    table+=("$(python3 -c "
import json
runs = {}
for l in open('$L/bench-$name-chunks.jsonl'):
    for k, r in json.loads(l)['phases'].get('runs', {}).items():
        a = runs.setdefault(k, [0, 0.0, 0.0]); a[0] += r['count']; a[1] += r['total_s']; a[2] = max(a[2], r['max_s'])
print('  processes: ' + '; '.join(f'{k} {c} x {t / c:.2f} s (max {m:.2f})' for k, (c, t, m) in sorted(runs.items())))
")")
  done
fi
tar czf "$OUT/logs.tgz" -C "$OUT" logs
rm -rf "$OUT/logs"
printf '%s\n' "${table[@]}" | tee "$OUT/table.txt"
