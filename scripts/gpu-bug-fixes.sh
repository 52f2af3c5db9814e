#!/usr/bin/env bash
# The new bug exercises' fixes on a GPU machine (CUDA toolkit, no Rust), from the workbook root, with
# a release binary built elsewhere ($B): `check` of each exercise untouched, with its solution, with
# each different fix (scripts/alt-fixes/NN-*.region.cu other than -half) and with its half-fix
# (NN-*-half.region.cu), one after the other; a table of verdicts last. The transcripts issue 24
# asks for: every untouched exercise and half-fix must FAIL, every solution and other fix PASS.
# A region file holds one marked region; it replaces the region of that name in the solution.
set -u
B=${B:-target/release/xtask}
OUT=${OUT:-/tmp/cudabugs-bug-fixes}
IDS=${IDS:-"$(ls exercises | grep -E '^(1[89]|2[0-9]|3[0-9])-' | tr '\n' ' ')"}
# SKIP_BASE=1: only the other fixes and the half-fixes (the untouched file and the solution ran in
# a survey already).
SKIP_BASE=${SKIP_BASE:-0}
# NO_TXT=1: no second, human-readable check of the failing versions (the JSON reports only).
NO_TXT=${NO_TXT:-0}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

splice() { scripts/splice-region.sh "$@"; }
printf '%-22s %-28s %-5s %-8s %-8s %s\n' exercise version exit wall_ms expect verdict >"$OUT/fixes.txt"
for id in $IDS; do
  src=$(ls "solutions/$id" | grep -v exercise-regions)
  learner="exercises/$id/$src"
  cp "$learner" "$OUT/pristine.cu"
  base="untouched solution"
  [ "$SKIP_BASE" = 1 ] && base=""
  variants="$base $(ls scripts/alt-fixes/ | grep "^${id}-" | sed 's/\.region\.cu$//' | sort)"
  for v in $variants; do
    case $v in
      untouched) cp "$OUT/pristine.cu" "$learner"; expect=FAIL ;;
      solution) cp "solutions/$id/$src" "$learner"; expect=PASS ;;
      *-half) splice "solutions/$id/$src" "scripts/alt-fixes/$v.region.cu" >"$learner"; expect=FAIL ;;
      *) splice "solutions/$id/$src" "scripts/alt-fixes/$v.region.cu" >"$learner"; expect=PASS ;;
    esac
    t0=$(date +%s%N)
    "$B" --format json check "$id" >"$OUT/check-$id-$v.json" 2>"$OUT/check-$id-$v.err"; code=$?
    wall=$(ms "$t0")
    # What a learner reads, for the versions that fail (the binaries are kept: no second build).
    [ "$expect" = FAIL ] && [ "$NO_TXT" = 0 ] && "$B" check "$id" >"$OUT/check-$id-$v.txt" 2>&1
    python3 - "$OUT/check-$id-$v.json" "$id" "$v" "$code" "$wall" "$expect" >>"$OUT/fixes.txt" <<'PY'
import json, sys
path, id, v, code, wall, expect = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{id:<22} {v:<28} {code:<5} {wall:<8} {expect:<8} unreadable report: {e}"); sys.exit()
failed = [s for s in r["steps"] if s["status"] != "passed"]
why = "; ".join(f"{s['name']}: {s['summary']}" for s in failed)[:200]
print(f"{id:<22} {v:<28} {code:<5} {wall:<8} {expect:<8} {r['outcome'].upper()} {why}")
PY
  done
  cp "$OUT/pristine.cu" "$learner"
done
rm -f "$OUT/pristine.cu"
(cd "$OUT" && tar czf checks.tgz check-* && rm -f check-*)
cat "$OUT/fixes.txt"
