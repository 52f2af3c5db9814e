#!/usr/bin/env bash
# What a performance check's ncu run costs, and which part of it: for each exercise of $IDS, a cold
# `check` of the untouched file (its JSON has every stage's time and the exact ncu command), then
# that command's program (the untouched file's release build) on the bench's inputs, without the
# grader's served calls (IN OUT pairs, one per profiled call), under ncu with: the check's metrics,
# the time alone, the time and DRAM bytes (one pass), the check's metrics on one call only, the
# check's metrics without cache control; and alone. ncu's "N passes" lines are kept.
# Usage (GPU machine, workbook root): B=.gpu/xtask OUT=dir IDS="52-bank-conflicts ..." bash scripts/gpu-ncu-passes.sh
set -u
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/ncu-passes}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }
for id in $IDS; do
  d="$OUT/$id"; mkdir -p "$d"
  s=$(date +%s.%N)
  "$B" --format json check "$id" >"$d/check-cold.json" 2>"$d/check-cold.err"
  echo "$id check-cold $(secs "$s" "$(date +%s.%N)") s" >>"$OUT/table.txt"
  python3 - "$d/check-cold.json" "$d" <<'EOF' || continue
import json, shlex, sys
j = json.load(open(sys.argv[1]))
cmd = next(s["command"] for s in j["steps"] if s.get("stage") == "timing" and "ncu" in s.get("command", ""))
a = shlex.split(cmd.splitlines()[0])
i = a.index("--log-file")
ncu, prog = a[:i], a[i + 2:]
serve = prog.index("--serve")
program, flags, bench = prog[0], [f for f in prog[serve + 2:-1] if f != "--spin"], prog[-1]
import re
calls = 1 if j.get("perf", {}).get("clock") == "call" else max(1, int(re.search(r"repeat = (\d+)", open(f"exercises/{j['exercise']}/exercise.toml").read()).group(1)))
pairs = []
for k in range(calls):
    pairs += [bench, f"{sys.argv[2]}/out{k}"]
metrics = ncu[ncu.index("--metrics") + 1]
def without(xs, flag):
    if flag not in xs: return xs
    k = xs.index(flag); return xs[:k] + xs[k + 2:]
base = without(ncu, "--metrics")
with open(f"{sys.argv[2]}/variants.sh", "w") as f:
    run = [program] + flags + pairs
    one = [program] + flags + pairs[:2]
    f.write(f"v full {shlex.join(base + ['--metrics', metrics] + run)}\n")
    f.write(f"v time-only {shlex.join(base + ['--metrics', 'gpu__time_duration.sum'] + run)}\n")
    f.write(f"v time-dram {shlex.join(base + ['--metrics', 'gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum'] + run)}\n")
    f.write(f"v full-one-call {shlex.join(base + ['--metrics', metrics] + one)}\n")
    nocache = [x if x != 'all' else 'none' for x in base]
    f.write(f"v full-no-cache-control {shlex.join(nocache + ['--metrics', metrics] + run)}\n")
    f.write(f"v alone {shlex.join(run)}\n")
EOF
  v() {
    local name=$1; shift
    local s; s=$(date +%s.%N)
    "$@" >"$d/$name.log" 2>&1
    local rc=$?
    echo "$id $name $(secs "$s" "$(date +%s.%N)") s rc=$rc passes=$(grep -o '[0-9]* pass' "$d/$name.log" | sort | uniq -c | tr '\n' ' ')" >>"$OUT/table.txt"
  }
  # shellcheck disable=SC1091
  . "$d/variants.sh"
done
cat "$OUT/table.txt"
