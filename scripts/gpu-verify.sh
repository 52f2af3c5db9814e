#!/usr/bin/env bash
# Run on a GPU machine with the CUDA toolkit (no Rust needed) from the workbook root, with a release
# binary built elsewhere: verify everything, then check 03-race untouched and fixed, a "fix" that
# serialises the work (must fail the speed target) and a 04-sync "fix" that hangs (must time out);
# check twice on an unchanged file (binaries kept); watch from a failing to a passing save.
# VERIFY_ONLY=1: only `verify`, twice (a cold and a warm run).
set -u
B=${B:-target/release/xtask}
OUT=${OUT:-/tmp/cudabugs-gpu}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
{ nvidia-smi; nvcc --version; compute-sanitizer --version; ncu --version; "$B" toolkit show; } >"$OUT/env.txt" 2>&1

# verify twice: the first (cold) run is the record; the second (warm) gives the wall time again.
"$B" verify --record "$OUT/verification.json" --keep "$OUT/fixtures" >"$OUT/verify.txt" 2>&1
echo "verify exit=$?" >>"$OUT/verify.txt"
"$B" verify --record "$OUT/verification-second.json" >"$OUT/verify-second.txt" 2>&1
echo "verify exit=$?" >>"$OUT/verify-second.txt"
tar czf "$OUT/fixtures.tgz" -C "$OUT" fixtures && rm -rf "$OUT/fixtures"
if [ "${VERIFY_ONLY:-0}" = 1 ]; then
  sed -n '/^exercise  /,$p' "$OUT/verify.txt" "$OUT/verify-second.txt"
  exit 0
fi
# NCU_SERIAL=1: once more with ncu strictly serial, to show that parallel ncu processes time the same.
if [ "${NCU_SERIAL:-0}" = 1 ]; then
  CUDABUGS_NCU_JOBS=1 "$B" verify --record "$OUT/verification-serial-ncu.json" >"$OUT/verify-serial-ncu.txt" 2>&1
  echo "verify (serial ncu) exit=$?" >>"$OUT/verify-serial-ncu.txt"
fi

restore() { cp "$OUT/orig.cu" "$1"; }
try() { # try LABEL FILE ID: check ID with FILE in place of the learner's file
  cp "$3" "$OUT/orig.cu"; cp "$2" "$3"
  echo "===== $1" >>"$OUT/check.txt"
  "$B" check "$4" >>"$OUT/check.txt" 2>&1; echo "$1 exit=$?" >>"$OUT/check.txt"
  restore "$3"
}
R=exercises/03-race/reduce.cu
echo "===== 03-race untouched" >>"$OUT/check.txt"
"$B" check 03-race >>"$OUT/check.txt" 2>&1; echo "untouched exit=$?" >>"$OUT/check.txt"
try "03-race with the reference solution" solutions/03-race/reduce.cu "$R" 03-race
cp "$R" "$OUT/orig.cu"; cp solutions/03-race/reduce.cu "$R"
"$B" --format json check race >"$OUT/check-solution.json" 2>/dev/null; restore "$R"
# splice SOLUTION REGION: the solution with its `bug` region replaced by REGION's lines.
splice() {
  awk -v region="$2" '
    /ANCHOR: bug/ { while ((getline l < region) > 0) print l; skip = 1; next }
    skip && /ANCHOR_END: bug/ { skip = 0; next }
    !skip { print }' "$1"
}
splice solutions/03-race/reduce.cu scripts/alt-fixes/03-race-syncwarp.region.cu >/tmp/syncwarp.cu
try "03-race fixed with __syncwarp() instead of shuffles" /tmp/syncwarp.cu "$R" race
sed 's|const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);|const int blocks = 1;|' solutions/03-race/reduce.cu >/tmp/one-block.cu
try "03-race fixed but serialised onto one block" /tmp/one-block.cu "$R" 3
sed 's|^  __syncthreads();$|  if (t % 2 == 0) __syncthreads();\n  __syncthreads();|' solutions/04-sync/smooth.cu >/tmp/hang.cu
CUDABUGS_TIMEOUT_SECS=20 try "04-sync with a fix that hangs in -G builds" /tmp/hang.cu exercises/04-sync/smooth.cu sync
echo "leftover harness processes: $(pgrep -c -- '-learner$' || true)" >>"$OUT/check.txt"

# check twice on an unchanged file from a cold build folder: the second call keeps the binaries.
rm -rf .cudabugs/build/03-race
for n in 1 2; do
  t0=$(date +%s%N); "$B" --format json check race >"$OUT/check-again-$n.json" 2>/dev/null; code=$?
  echo "check race call $n exit=$code wall=$(( ($(date +%s%N) - t0) / 1000000 ))ms builds kept: $(grep -c 'binary kept' "$OUT/check-again-$n.json")" >>"$OUT/check.txt"
done

# watch on a fresh copy of the workbook: the untouched 03-race fails; saving the solution over it
# passes, and watch moves on to the next pending exercise, 01-index; Ctrl-C then leaves no process
# of the copy behind.
W=$(mktemp -d /tmp/cudabugs-watch.XXXX); cp -r exercises solutions "$W"/
wait_for() { # wait_for TEXT SECONDS
  for _ in $(seq "$2"); do grep -q "$1" "$OUT/watch.txt" && return 0; sleep 1; done
  echo "gave up waiting for: $1" >>"$OUT/watch.txt"; return 1
}
CUDABUGS_ROOT="$W" "$B" watch race >"$OUT/watch.txt" 2>&1 &
WP=$!
wait_for "watching exercises/03-race/reduce.cu" 240 && cp solutions/03-race/reduce.cu "$W/exercises/03-race/reduce.cu" \
  && wait_for "watching exercises/01-index/transpose.cu" 240
kill -INT "$WP"; wait "$WP"; echo "watch exit=$?" >>"$OUT/watch.txt"
echo "watch left behind: $(pgrep -fc -- "$W" || true)" >>"$OUT/watch.txt"
rm -rf "$W"

rm -f "$OUT/orig.cu"
grep -E "exit=|^(PASS|FAIL|TIMEOUT|SKIPPED|TOOL)" "$OUT/check.txt"
grep -E "exit=|left behind|passed. Next|^(PASS|FAIL)|gave up" "$OUT/watch.txt"
sed -n '/^exercise  /,$p' "$OUT/verify.txt"
sed -n '/^exercise  /,$p' "$OUT/verify-second.txt"
# The device returns only a few files: the record and the fixtures stay apart, the logs go together.
(cd "$OUT" && tar czf logs.tgz --exclude verification.json ./*.txt ./*.json && rm -f ./*.txt verification-second.json check-*.json)
