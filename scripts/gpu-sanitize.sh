#!/usr/bin/env bash
# Run on a GPU machine from the workbook root with a release binary ($B): `sanitize` on every
# exercise's untouched file and its solution (the verdicts must match verify's: the untouched file
# fails with its intended finding, the solution is clean), and on three programs outside the
# workbook (scripts/sanitize/): a clean one, one with two different bugs, one that hangs; the
# two-bugs program also as a binary built elsewhere (--bin, -lineinfo). Recordings for the CPU
# replay tests go to $OUT/rec.
set -u
B=${B:-target/release/xtask}
OUT=${OUT:-/tmp/cudabugs-sanitize}
mkdir -p "$OUT/rec"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
printf '%-34s %-5s %-8s %s\n' run exit wall_ms 'tools (clean / findings / crashed / timed-out) and findings' >"$OUT/sanitize.txt"
one() { # one LABEL ARGS...: a sanitize run, its JSON kept, a row in the table
  local label=$1; shift
  local t0; t0=$(date +%s%N)
  "$B" --format json "$@" >"$OUT/$label.json" 2>"$OUT/$label.err"; local code=$?
  local wall; wall=$(ms "$t0")
  local summary
  summary=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
tools = " ".join(f"{t[\"tool\"]}={t[\"status\"]}" for t in r["tools"])
found = sorted({f"{f[\"tool\"]}:{f[\"kind\"]}@{f[\"locations\"][0][\"path\"].rsplit(\"/\",1)[-1]}:{f[\"locations\"][0][\"line\"]}" for f in r["findings"] if f.get("follow_on_of") is None and f["locations"]})
print(tools, "|", ", ".join(found[:6]) + (" ..." if len(found) > 6 else ""))
' "$OUT/$label.json" 2>&1)
  printf '%-34s %-5s %-8s %s\n' "$label" "$code" "$wall" "$summary" >>"$OUT/sanitize.txt"
}
for dir in exercises/*/; do
  id=$(basename "$dir"); f=$(ls "$dir"*.cu | head -1); name=$(basename "$f")
  one "$id-untouched" sanitize "$f"
  one "$id-solution" sanitize "solutions/$id/$name"
done
# The recordings the CPU tests replay.
"$B" --record-tools "$OUT/rec/two-bugs" --format json sanitize scripts/sanitize/two-bugs.cu >"$OUT/rec-two-bugs.json" 2>/dev/null
"$B" --record-tools "$OUT/rec/clean" --format json sanitize scripts/sanitize/clean.cu >"$OUT/rec-clean.json" 2>/dev/null
one program-clean sanitize scripts/sanitize/clean.cu
one program-two-bugs sanitize scripts/sanitize/two-bugs.cu
"$B" --format sarif sanitize scripts/sanitize/two-bugs.cu >"$OUT/two-bugs.sarif" 2>/dev/null
"$B" sanitize scripts/sanitize/two-bugs.cu >"$OUT/two-bugs.txt" 2>&1
nvcc -lineinfo -arch=sm_90 -o /tmp/two-bugs-lineinfo scripts/sanitize/two-bugs.cu && one program-two-bugs-bin-lineinfo sanitize --bin /tmp/two-bugs-lineinfo
CUDABUGS_TIMEOUT_SECS=15 one program-hang sanitize scripts/sanitize/hang.cu
echo "leftover processes: $(pgrep -fc 'hang|two-bugs|compute-sanitizer' || true)" >>"$OUT/sanitize.txt"
cat "$OUT/sanitize.txt"
(cd "$OUT" && tar czf sanitize-runs.tgz ./*.json ./*.err ./*.sarif ./*.txt rec && rm -rf ./*.json ./*.err rec)
