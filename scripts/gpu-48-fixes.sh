#!/usr/bin/env bash
# Issue 48's GPU record (from the workbook root, a release bundle in $B, logs in $OUT):
# PART=a: 34-managed-race verified again (with `managed_inputs`) and its other fix and half-fix
#         checked; whether nvcc 13 still takes CUDA 12's form of cudaMemPrefetchAsync and
#         cudaMemAdvise (69's lesson says it does not); every other fix and half-fix of the
#         performance exercises in $PERF_IDS checked as a learner's file, JSON reports kept for
#         `scripts/fix-record.py` (the book's tables of other fixes are filled from them).
# PART=b: the same for the rest of the performance exercises, and a grade of a small class by a
#         dev-profile (unoptimised grader) build in $DEV, against the release build's grade.
set -uo pipefail
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/gpu-48}
PART=${PART:-a}
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
L="$OUT/logs"; mkdir -p "$L"
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -2; compute-sanitizer --version | tail -1; ncu --version | tail -1; nproc; } > "$L/env.txt" 2>&1
table=()
t() { local s=$(date +%s%N); "$@"; local c=$?; table+=("$(printf '%-40s exit %-3s %6d ms' "$LABEL" "$c" $(( ($(date +%s%N) - s) / 1000000 )))"); return $c; }

if [ "$PART" = a ]; then
  LABEL="verify --survey 34" t "$B" --isolation strict verify --survey 34-managed-race --record "$L/v34.json" > "$L/v34.txt" 2>&1
  LABEL="34 other fix and half-fix" t env B="$B" IDS=34-managed-race SKIP_BASE=1 OUT="$L/fixes-34" bash scripts/gpu-bug-fixes.sh > /dev/null 2>&1
  # CUDA 12's forms (a device number) against nvcc 13, then CUDA 13's.
  mkdir -p /tmp/p12 && cat > /tmp/p12/p.cu <<'CU'
#include <cuda_runtime.h>
int main() {
  float* t; cudaMallocManaged(&t, 1 << 20);
#ifdef CUDA12_FORM
  cudaMemPrefetchAsync(t, 1 << 20, 0, 0);
  cudaMemAdvise(t, 1 << 20, cudaMemAdviseSetAccessedBy, 0);
#else
  cudaMemLocation gpu{}; gpu.type = cudaMemLocationTypeDevice; gpu.id = 0;
  cudaMemPrefetchAsync(t, 1 << 20, gpu, 0, 0);
  cudaMemAdvise(t, 1 << 20, cudaMemAdviseSetAccessedBy, gpu);
#endif
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
CU
  { echo "== CUDA 12 form"; nvcc -DCUDA12_FORM -o /tmp/p12/a12 /tmp/p12/p.cu; echo "exit $?";
    echo "== CUDA 13 form"; nvcc -o /tmp/p12/a13 /tmp/p12/p.cu && /tmp/p12/a13; echo "exit $?"; } > "$L/prefetch-forms.txt" 2>&1
  table+=("prefetch forms: $(grep -c error "$L/prefetch-forms.txt") error lines; $(grep exit "$L/prefetch-forms.txt" | tr '\n' ' ')")
fi
if [ "$PART" = b ] && [ -n "${DEV:-}" ]; then
  # The same class graded by the release build and by the dev-profile build: the grades must agree.
  SECRET_DIR=$(mktemp -d); cp tests/fixtures/class-secret.toml "$SECRET_DIR/secret.toml"
  for build in release:"$B" dev:"$DEV"; do
    name=${build%%:*}; bin=${build#*:}
    rm -rf "grades-$name" .cudabugs/work
    LABEL="grade fixture class ($name)" t "$bin" grade tests/fixtures/class --exercises 03-race,57-reduction --secret "$SECRET_DIR/secret.toml" --out "grades-$name" > "$L/grade-$name.txt" 2>&1
    cp "grades-$name/grades.csv" "$L/grades-$name.csv"
  done
  cmp -s "$L/grades-release.csv" "$L/grades-dev.csv" && table+=("dev and release grades.csv: identical") || table+=("dev and release grades.csv: DIFFER")
fi
LABEL="perf other fixes and half-fixes" t env B="$B" IDS="$PERF_IDS" SKIP_BASE=1 NO_TXT=1 OUT="$L/fixes-perf" bash scripts/gpu-bug-fixes.sh > /dev/null 2>&1
cat "$L"/fixes-*/fixes.txt
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
printf '%s\n' "${table[@]}"
