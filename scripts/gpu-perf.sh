#!/usr/bin/env bash
# The performance track on a GPU machine (CUDA toolkit, no Rust), from the workbook root, with a
# release binary built elsewhere ($B). STEP selects what runs (each fits one 10-minute device call):
#   STEP=verify  `peak` (measured again) and `verify --survey --isolation strict` of the whole
#                catalog: the committed record (book/verification.json) with the perf exercises'
#                versions, metrics and roofline points;
#   STEP=fixes   `check` of every perf exercise untouched, with its solution, with each different
#                fix (scripts/alt-fixes/NN-*.region.cu other than -half) and with its half-fix
#                (NN-*-half.region.cu), one after the other; a table of speedups and verdicts last.
set -u
B=${B:-target/release/xtask}
OUT=${OUT:-/tmp/cudabugs-gpu}
STEP=${STEP:-verify}
IDS=${IDS:-"51-coalesce 52-bank-conflicts 53-divergence 54-matmul 55-histogram 56-occupancy 57-reduction"}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

if [ "$STEP" = verify ]; then
  { nvidia-smi; nvcc --version; ncu --version; "$B" toolkit show; } >"$OUT/env.txt" 2>&1
  t0=$(date +%s%N); "$B" peak --again >"$OUT/peak.txt" 2>&1; echo "peak exit=$? wall=$(ms "$t0")ms" >>"$OUT/peak.txt"
  "$B" --format json peak >"$OUT/peak.json" 2>>"$OUT/peak.txt"
  t0=$(date +%s%N)
  "$B" --isolation strict verify --survey --record "$OUT/verification.json" --keep "$OUT/fixtures" >"$OUT/verify.txt" 2>&1
  echo "verify exit=$? wall=$(ms "$t0")ms" >>"$OUT/verify.txt"
  (cd "$OUT" && tar czf fixtures.tgz fixtures && rm -rf fixtures)
  cat "$OUT/peak.txt"; sed -n '/^exercise  /,$p' "$OUT/verify.txt"
  exit 0
fi

# STEP=fixes
splice() { scripts/splice-region.sh "$@"; }
printf '%-18s %-26s %-5s %-8s %-9s %s\n' exercise version exit wall_ms speedup verdict >"$OUT/fixes.txt"
for id in $IDS; do
  src=$(ls "solutions/$id" | grep -v exercise-regions)
  learner="exercises/$id/$src"
  cp "$learner" "$OUT/pristine.cu"
  variants="untouched solution $(ls scripts/alt-fixes/ | grep "^${id%%-*}-" | sed 's/\.region\.cu$//' | sort)"
  for v in $variants; do
    case $v in
      untouched) cp "$OUT/pristine.cu" "$learner" ;;
      solution) cp "solutions/$id/$src" "$learner" ;;
      *) splice "solutions/$id/$src" "scripts/alt-fixes/$v.region.cu" >"$learner" ;;
    esac
    t0=$(date +%s%N)
    "$B" --format json check "$id" >"$OUT/check-$id-$v.json" 2>"$OUT/check-$id-$v.err"; code=$?
    wall=$(ms "$t0")
    # What a learner reads, for the lesson: the untouched exercise's text report.
    [ "$v" = untouched ] && "$B" check "$id" >"$OUT/check-$id-$v.txt" 2>&1
    python3 - "$OUT/check-$id-$v.json" "$id" "$v" "$code" "$wall" >>"$OUT/fixes.txt" <<'PY'
import json, sys
path, id, v, code, wall = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{id:<18} {v:<26} {code:<5} {wall:<8} {'-':<9} unreadable report: {e}"); sys.exit()
p = r.get("perf") or {}
mine = next((x for x in p.get("versions", []) if x["version"] == "learner"), None)
speed = f"{mine['speedup']:.2f}x" if mine else "-"
failed = [s for s in r["steps"] if s["status"] != "passed"]
why = "; ".join(f"{s['name']}: {s['summary']}" for s in failed)[:160]
print(f"{id:<18} {v:<26} {code:<5} {wall:<8} {speed:<9} {r['outcome'].upper()} {why}")
PY
  done
  cp "$OUT/pristine.cu" "$learner"
done
rm -f "$OUT/pristine.cu"
(cd "$OUT" && tar czf checks.tgz check-* && rm -f check-*)
cat "$OUT/fixes.txt"
