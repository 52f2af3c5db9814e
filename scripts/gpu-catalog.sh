#!/usr/bin/env bash
# Run on a GPU machine with the CUDA toolkit (no Rust needed) from the workbook root, with a release
# binary built elsewhere ($B):
#   1. verify --survey of the whole catalog in the sandbox: the committed record (book/verification.json),
#      with the raw tool outputs (every tool on every untouched exercise, five plain runs each);
#   2. verify of the whole catalog as a maintainer runs it (no survey): its wall time;
#   3. the runs the 14-async-error lesson quotes: check of the untouched exercise, plainly and with
#      CUDA_LAUNCH_BLOCKING=1, and of the exercise with a check right after the launch, both ways;
#   4. check of 15-global-race (no tool sees its bug) untouched and with the solution: a learner's
#      view of an exercise whose detector is the cases.
set -u
B=${B:-target/release/xtask}
OUT=${OUT:-/tmp/cudabugs-gpu}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
{ nvidia-smi; nvcc --version; compute-sanitizer --version; ncu --version; "$B" toolkit show; nproc; free -g; } >"$OUT/env.txt" 2>&1

t0=$(date +%s%N)
"$B" --isolation strict verify --survey --record "$OUT/verification.json" --keep "$OUT/fixtures" >"$OUT/verify-survey.txt" 2>&1
echo "verify --survey exit=$? wall=$(ms "$t0")ms" >>"$OUT/verify-survey.txt"
t0=$(date +%s%N)
"$B" --isolation strict verify --record "$OUT/verification-lean.json" >"$OUT/verify.txt" 2>&1
echo "verify exit=$? wall=$(ms "$t0")ms" >>"$OUT/verify.txt"

F=exercises/14-async-error/minmax.cu
cp "$F" "$OUT/minmax.orig"
for variant in untouched check-after-launch; do
  [ "$variant" = check-after-launch ] && sed -i 's|^  minmax_blocks<<<blocks, BLOCK>>>(d_x, n, d_partial);|&\n  CB_CHECK(cudaGetLastError());|' "$F"
  for env in "" "CUDA_LAUNCH_BLOCKING=1"; do
    echo "===== $variant ${env:-plain}: check 14-async-error" >>"$OUT/check-14.txt"
    env $env "$B" check 14-async-error >>"$OUT/check-14.txt" 2>&1; echo "exit=$?" >>"$OUT/check-14.txt"
  done
done
cp "$OUT/minmax.orig" "$F" && rm "$OUT/minmax.orig"
G=exercises/15-global-race/degree.cu
cp "$G" "$OUT/degree.orig"
echo "===== 15-global-race untouched" >>"$OUT/check-15.txt"
"$B" check 15-global-race >>"$OUT/check-15.txt" 2>&1; echo "exit=$?" >>"$OUT/check-15.txt"
cp solutions/15-global-race/degree.cu "$G"
echo "===== 15-global-race with the solution" >>"$OUT/check-15.txt"
"$B" check 15-global-race >>"$OUT/check-15.txt" 2>&1; echo "exit=$?" >>"$OUT/check-15.txt"
cp "$OUT/degree.orig" "$G" && rm "$OUT/degree.orig"
tar czf "$OUT/fixtures.tgz" -C "$OUT" fixtures && rm -rf "$OUT/fixtures"
grep "=====\|CUDA error at" "$OUT/check-14.txt"
grep "=====\|exit=\|FAIL\|PASS\|correctness" "$OUT/check-15.txt"
sed -n '/^exercise /,$p' "$OUT/verify-survey.txt"
tail -4 "$OUT/verify.txt"
