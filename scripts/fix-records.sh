#!/usr/bin/env bash
# The book's records of other fixes and half-fixes (book/fixes-h100.json, book/fixes-h200.json),
# made from the committed reports of the GPU runs that checked them, oldest first: a later run of
# a version replaces an earlier one. Add a run's folder or archive here after it, and run again.
set -euo pipefail
cd "$(dirname "$0")/.."
R=book/gpu-runs
python3 scripts/fix-record.py H100 book/fixes-h100.json \
  $R/2026-11-22-perf/h100-checks \
  $R/2026-11-22-perf/goals-revised/checks \
  $R/2026-11-24-perf2/fixes \
  $R/2026-11-24-perf3/fixes/h100-59-61-checks.tgz \
  $R/2026-11-24-perf3/fixes/h100-62-63-checks.tgz \
  $R/2026-11-26-catalog66/4-h100-perf-fixes
python3 scripts/fix-record.py H200 book/fixes-h200.json \
  $R/2026-11-24-perf3/fixes/h200-63-checks.tgz
