#!/usr/bin/env bash
# splice-region.sh BASE REGION: BASE with the marked region that REGION holds (// ANCHOR: name ...
# // ANCHOR_END: name, its first anchor naming it) replaced by REGION's lines, on stdout. How the
# scripts put an alternative or half fix (scripts/alt-fixes/*.region.cu) into a solution.
set -euo pipefail
name=$(grep -m1 -o 'ANCHOR: [A-Za-z0-9_-]*' "$2" | sed 's/ANCHOR: //')
awk -v region="$2" -v name="$name" '
  $0 ~ "ANCHOR: "name"$" { while ((getline l < region) > 0) print l; skip = 1; next }
  skip && $0 ~ "ANCHOR_END: "name"$" { skip = 0; next }
  !skip { print }' "$1"
