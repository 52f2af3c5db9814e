#!/usr/bin/env bash
# Run on a GPU machine with the CUDA toolkit (no Rust needed) from the workbook root, with a release
# binary built elsewhere ($B). In order:
#   1. verify --survey in the sandbox (--isolation strict): the committed record, with the raw tool
#      outputs;
#   2. verify with --isolation none: the solution's ncu time inside and outside the sandbox;
#   3. recordings of check and verify of 03-race (--record-tools), replayed by the CPU tests;
#   4. check 03-race untouched, fixed, fixed another way, serialised (too slow); a 04-sync "fix" that
#      hangs in -G builds; check twice on an unchanged file (the second keeps both binaries);
#   5. the hostile submissions of scripts/hostile/: verdict, wall time, processes and files left;
#   6. watch from a failing to a passing save, then Ctrl-C.
# VERIFY_ONLY=1: only steps 1 and 2; SKIP_VERIFY=1: steps 3 to 6.
set -u
B=${B:-target/release/xtask}
OUT=${OUT:-/tmp/cudabugs-gpu}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
{ nvidia-smi; nvcc --version; compute-sanitizer --version; ncu --version; "$B" toolkit show; uname -r; cat /proc/self/cgroup; } >"$OUT/env.txt" 2>&1

# 1-2. verify: sandboxed (the record), without the sandbox, sandboxed again (warm). SKIP_VERIFY=1
#      skips them (steps 3-6 only: after a change that cannot move the record).
if [ "${SKIP_VERIFY:-0}" != 1 ]; then
"$B" --isolation strict verify --survey --record "$OUT/verification.json" --keep "$OUT/fixtures" >"$OUT/verify.txt" 2>&1
echo "verify exit=$?" >>"$OUT/verify.txt"
"$B" --isolation none verify --record "$OUT/verification-none.json" >"$OUT/verify-none.txt" 2>&1
echo "verify exit=$?" >>"$OUT/verify-none.txt"
"$B" --isolation strict verify --record "$OUT/verification-second.json" >"$OUT/verify-second.txt" 2>&1
echo "verify exit=$?" >>"$OUT/verify-second.txt"
python3 - "$OUT" >"$OUT/sandbox-timing.txt" <<'EOF'
import json, sys
d = sys.argv[1]
a, b = (json.load(open(f"{d}/{n}")) for n in ("verification.json", "verification-none.json"))
print(f"{'exercise':<10} {'sandbox ns':>12} {'none ns':>12} {'ratio':>7}   (solution, ncu gpu__time_duration.sum)")
for x, y in zip(a["exercises"], b["exercises"]):
    s, n = (x.get("timing") or {}).get("reference_ns"), (y.get("timing") or {}).get("reference_ns")
    print(f"{x['id']:<10} {s or 0:>12.0f} {n or 0:>12.0f} {(s / n if s and n else 0):>7.4f}")
print(f"verify wall: sandbox {a['wall_seconds']:.1f} s, none {b['wall_seconds']:.1f} s; isolation {a.get('isolation')} / {b.get('isolation')}")
EOF
fi
if [ "${VERIFY_ONLY:-0}" = 1 ]; then
  cat "$OUT/sandbox-timing.txt"; sed -n '/^exercise  /,$p' "$OUT/verify.txt"
  exit 0
fi

# 3. Recordings for the replay tests.
R=exercises/03-race/reduce.cu
cp "$R" "$OUT/orig.cu"
restore() { cp "$OUT/orig.cu" "$R"; }
"$B" --record-tools "$OUT/rec/check-untouched" check race >"$OUT/rec-check-untouched.txt" 2>&1; echo "exit=$?" >>"$OUT/rec-check-untouched.txt"
cp solutions/03-race/reduce.cu "$R"
"$B" --record-tools "$OUT/rec/check-solution" check race >"$OUT/rec-check-solution.txt" 2>&1; echo "exit=$?" >>"$OUT/rec-check-solution.txt"
restore
"$B" --record-tools "$OUT/rec/verify-03-race" verify 03-race >"$OUT/rec-verify.txt" 2>&1; echo "exit=$?" >>"$OUT/rec-verify.txt"

# 4. check: the usual cases.
try() { # try LABEL FILE TARGET ID
  cp "$3" "$OUT/before.cu"; cp "$2" "$3"
  echo "===== $1" >>"$OUT/check.txt"
  local t0; t0=$(date +%s%N)
  "$B" check "$4" >>"$OUT/check.txt" 2>&1; local code=$?
  echo "$1 exit=$code wall=$(ms "$t0")ms" >>"$OUT/check.txt"
  cp "$OUT/before.cu" "$3"
}
echo "===== 03-race untouched" >>"$OUT/check.txt"
"$B" check 03-race >>"$OUT/check.txt" 2>&1; echo "untouched exit=$?" >>"$OUT/check.txt"
try "03-race with the reference solution" solutions/03-race/reduce.cu "$R" 03-race
splice() { scripts/splice-region.sh "$@"; }
splice solutions/03-race/reduce.cu scripts/alt-fixes/03-race-syncwarp.region.cu >/tmp/syncwarp.cu
try "03-race fixed with __syncwarp() instead of shuffles" /tmp/syncwarp.cu "$R" race
sed 's|const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);|const int blocks = 1;|' solutions/03-race/reduce.cu >/tmp/one-block.cu
try "03-race fixed but serialised onto one block" /tmp/one-block.cu "$R" 3
sed 's|^  __syncthreads();$|  if (t % 2 == 0) __syncthreads();\n  __syncthreads();|' solutions/04-sync/smooth.cu >/tmp/hang.cu
CUDABUGS_TIMEOUT_SECS=20 try "04-sync with a fix that hangs in -G builds (barrier hang)" /tmp/hang.cu exercises/04-sync/smooth.cu sync
echo "leftover harness processes: $(pgrep -c -- '-learner$' || true)" >>"$OUT/check.txt"
rm -rf .cudabugs/work/check/03-race
for n in 1 2 3; do
  t0=$(date +%s%N); "$B" --format json check race >"$OUT/check-again-$n.json" 2>/dev/null; code=$?
  echo "check race unchanged, call $n exit=$code wall=$(ms "$t0")ms builds kept: $(grep -c 'binary kept' "$OUT/check-again-$n.json")" >>"$OUT/check.txt"
done

# 5. Hostile submissions: each in place of the learner's 03-race file: the solution with a snippet
#    spliced into cb_run (NAME.run.cu), into the kernel (NAME.kernel.cu) or after the harness's
#    include (NAME.top.cu: file scope, a static constructor).
hostile() { # hostile NAME: the variant on stdout
  local H=scripts/hostile
  cat "$H/headers.h"
  sed -e "/^#include \"cudabugs.cuh\"\$/r $H/$1.top.cu" -e "/^void cb_run(cb::Io& io) {\$/r $H/$1.run.cu" -e "/^  const int t = threadIdx.x;\$/r $H/$1.kernel.cu" solutions/03-race/reduce.cu 2>/dev/null
}
printf '%-13s %-5s %-9s %-8s %-9s %s\n' case exit wall_ms left_proc escaped verdict >"$OUT/hostile.txt"
for name in $(ls scripts/hostile/*.cu | sed 's|.*/||; s|\..*||' | sort -u); do
  rm -f /tmp/cudabugs-escape-probe exercises/03-race/ESCAPED .cudabugs/work/check/03-race/learner/escape-report.txt
  find .cudabugs/work/check/03-race \( -name spawn-report.txt -o -name cases-report.txt \) -delete 2>/dev/null
  hostile "$name" >"$R"
  t0=$(date +%s%N)
  CUDABUGS_TIMEOUT_SECS=20 "$B" check race >"$OUT/hostile-$name.txt" 2>&1; code=$?
  wall=$(ms "$t0"); restore
  sleep 1
  left=$(( $(pgrep -fc 'sleep 3007' || true) + $(pgrep -c -- '-learner$' || true) ))
  # What the program itself says it reached (the escape probe writes it into its own folder).
  cat .cudabugs/work/check/03-race/learner/escape-report.txt >>"$OUT/hostile-$name.txt" 2>/dev/null
  find .cudabugs/work/check/03-race \( -name spawn-report.txt -o -name cases-report.txt \) -exec cat {} + >>"$OUT/hostile-$name.txt" 2>/dev/null
  escaped=$( (ls /tmp/cudabugs-escape-probe exercises/03-race/ESCAPED 2>/dev/null; grep -hE ': (OPENED|WROTE|CONNECTED)' .cudabugs/work/check/03-race/learner/escape-report.txt 2>/dev/null
    find .cudabugs/work/check/03-race -name spawn-report.txt -exec grep -h 'SUCCEEDED' {} + 2>/dev/null | grep -v ' thread: '
    find .cudabugs/work/check/03-race -name cases-report.txt -exec grep -h ': OPENED' {} + 2>/dev/null) | wc -l)
  verdict=$(grep -E '^(PASS|FAIL|TIMEOUT|SKIPPED|TOOL|NOT)' "$OUT/hostile-$name.txt" | head -1)
  printf '%-13s %-5s %-9s %-8s %-9s %s\n' "$name" "$code" "$wall" "$left" "$escaped" "$verdict" >>"$OUT/hostile.txt"
  pkill -9 -f 'sleep 3007' || true
done

# 6. watch on a fresh copy: fail, save the solution, pass and move on, Ctrl-C leaves nothing.
W=$(mktemp -d /tmp/cudabugs-watch.XXXX); cp -r exercises solutions "$W"/
wait_for() { for _ in $(seq "$2"); do grep -q "$1" "$OUT/watch.txt" && return 0; sleep 1; done; echo "gave up waiting for: $1" >>"$OUT/watch.txt"; return 1; }
CUDABUGS_ROOT="$W" "$B" watch race >"$OUT/watch.txt" 2>&1 &
WP=$!
wait_for "watching exercises/03-race/reduce.cu" 240 && cp solutions/03-race/reduce.cu "$W/exercises/03-race/reduce.cu" \
  && wait_for "watching exercises/01-index/transpose.cu" 240
kill -INT "$WP"; wait "$WP"; echo "watch exit=$?" >>"$OUT/watch.txt"
echo "watch left behind: $(pgrep -fc -- "$W" || true)" >>"$OUT/watch.txt"
rm -rf "$W" "$OUT/orig.cu" "$OUT/before.cu"

ls -la .cudabugs/ncu-lock >"$OUT/ncu-lock-dir.txt" 2>&1
kept=$(cd "$OUT" && ls -d fixtures rec 2>/dev/null)
tar czf "$OUT/fixtures.tgz" -C "$OUT" $kept && (cd "$OUT" && rm -rf $kept)
grep -E "exit=|kept:" "$OUT/check.txt"
grep -E "exit=|left behind|passed. Next|gave up" "$OUT/watch.txt"
cat "$OUT/hostile.txt" "$OUT/sandbox-timing.txt" 2>/dev/null
for f in verify.txt verify-none.txt verify-second.txt; do [ -f "$OUT/$f" ] && sed -n '/^exercise  /,$p' "$OUT/$f"; done
# The device returns only a few files: the record and the fixtures stay apart, the logs go together.
(cd "$OUT" && tar czf logs.tgz --exclude verification.json ./*.txt ./*.json && rm -f ./*.txt verification-none.json verification-second.json check-*.json)
