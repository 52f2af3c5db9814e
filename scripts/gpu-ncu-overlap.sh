#!/usr/bin/env bash
# NOTE (2026-11-25): it times the harness with --repeat/--vary, which the harness no longer has (the grader
# serves the timed calls: grader/src/tools/served.rs); it ran against the bundles of its date.
# What a set of ncu timing runs costs side by side (verify's timing phase is ncu processes, 4 at a
# time, and did not get faster with 8): for each exercise, `check` with its solution gives the
# exact ncu command of its timed run; that command then runs alone, 4 copies at once, two programs
# under one ncu (`bash -c 'A; B'`: ncu follows child processes), the program without ncu, and
# alone with one call instead of the bench's repeats. ONLY=alone skips the side-by-side variants.
# Usage: scripts/gpu-ncu-overlap.sh OUTDIR EXERCISE...
set -uo pipefail
B=${B:-.gpu/xtask}
out=$1; shift
mkdir -p "$out"
report="$out/ncu-overlap.txt"
: > "$report"
now() { date +%s.%N; }
took() { python3 -c "print(round($(now) - $1, 2))"; }
for ex in "$@"; do
  dir=$(ls -d exercises/"$ex"*/ | head -1); id=$(basename "$dir")
  file=$(ls solutions/"$id"/*.cu | grep -v exercise-regions | head -1)
  dest="$dir$(basename "$file")"
  cp "$dest" /tmp/overlap-backup; cp "$file" "$dest"
  rm -rf "rec-overlap-$id"
  CUDABUGS_NO_INSTALL=1 $B --format json --record-tools "rec-overlap-$id" check "$id" > "$out/check-$id.json" 2>&1
  cp /tmp/overlap-backup "$dest"
  rec=$(grep -l '"command": ".*ncu ' "rec-overlap-$id"/*learner*timing*.json | grep -v '\.1\.json' | head -1)
  [ -n "$rec" ] || { echo "$id: no ncu command recorded" >> "$report"; continue; }
  # The command with its log file and output renamed by a suffix, so that copies can run at once.
  variant() {
    python3 - "$rec" "$1" <<'EOF'
import json, shlex, sys
a = shlex.split(json.load(open(sys.argv[1]))["command"]); tag = sys.argv[2]
i = a.index("--log-file"); a[i + 1] += tag; a[-1] += tag
print(shlex.join(a))
EOF
  }
  program() {
    python3 - "$rec" "$1" <<'EOF'
import json, shlex, sys
a = shlex.split(json.load(open(sys.argv[1]))["command"]); tag = sys.argv[2]
i = a.index("--log-file"); p = a[i + 2:]; p[-1] += tag
print(shlex.join(p))
EOF
  }
  ncu_opts() {
    python3 - "$rec" "$1" <<'EOF'
import json, shlex, sys
a = shlex.split(json.load(open(sys.argv[1]))["command"]); tag = sys.argv[2]
i = a.index("--log-file"); a[i + 1] += tag
print(shlex.join(a[:i + 2]))
EOF
  }
  echo "== $id" >> "$report"
  for k in 1 2; do s=$(now); eval "$(variant .alone$k)" > "$out/$id.alone$k.log" 2>&1; code=$?; echo "alone $k: $(took "$s") s, exit $code" >> "$report"; done
  s=$(now); eval "$(program .plain)" > "$out/$id.plain.log" 2>&1; echo "program without ncu: $(took "$s") s" >> "$report"
  # One call instead of the bench's repeats (and so no --vary): what each profiled call costs.
  for k in 1 2; do s=$(now); eval "$(variant .once$k | sed -E 's/--repeat [0-9]+/--repeat 1/; s/--vary [^ ]+ //')" > "$out/$id.once$k.log" 2>&1; echo "alone, one call: $(took "$s") s" >> "$report"; done
  [ "${ONLY:-}" = alone ] && continue
  s=$(now)
  for k in 1 2 3 4; do ( s1=$(now); eval "$(variant .four$k)" > "$out/$id.four$k.log" 2>&1; echo "  one of four: $(took "$s1") s" >> "$report" ) & done
  wait; echo "four at once: $(took "$s") s for all" >> "$report"
  s=$(now)
  eval "$(ncu_opts .two) bash -c $(printf '%q' "$(program .twoA); $(program .twoB)")" > "$out/$id.two.log" 2>&1
  echo "two programs under one ncu: $(took "$s") s, kernels profiled: $(grep -c '"gpu__time_duration.sum"' "$(python3 -c "import json,shlex; a=shlex.split(json.load(open('$rec'))['command']); print(a[a.index('--log-file') + 1])").two" 2>/dev/null)" >> "$report"
done
cat "$report"
