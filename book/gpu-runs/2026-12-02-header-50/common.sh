# Shared by call-1.sh and call-2.sh: run from the workbook root, bundle in .gpu/xtask, logs in $OUT.
B=.gpu/xtask
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
T=$OUT/table.txt
now() { date +%s.%N; }
d() { python3 -c "print(round($2 - $1, 1))"; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -2; nproc; } > "$OUT/env.txt" 2>&1
# graded NAME CLASS EXERCISES [keep]: one grade (from an empty .cudabugs/work unless keep), its line in the table
graded() {
  local name=$1 class=$2 ex=$3 keep=${4:-}
  [ -z "$keep" ] && rm -rf .cudabugs/work
  rm -rf "grades-$name"
  local s; s=$(now)
  timeout -k 10 "${LIMIT:-300}" $B grade "$class" --exercises "$ex" --secret-seed 7 --out "grades-$name" --format events > "$OUT/$name.jsonl" 2> "$OUT/$name.err"
  local code=$? t; t=$(d "$s" "$(now)")
  local pairs; pairs=$(grep -c '"event":"graded"' "$OUT/$name.jsonl")
  cp "grades-$name/grades.csv" "$OUT/$name-grades.csv" 2>/dev/null
  echo "$name: exit $code, $t s, $pairs pairs, $(python3 -c "print(round($pairs/$t*60,1))") pairs/min" >> "$T"
  python3 - "$OUT/$name.jsonl" >> "$T" <<'PY'
import json, sys
out = []
for l in open(sys.argv[1]):
    try: o = json.loads(l)
    except ValueError: continue
    if o.get('event') == 'chunk':
        p = o['phases']
        out.append('  %s %d: tools %.1f timing %.1f fresh %.1f' % (o['exercise'], o['pairs'], p.get('tools', 0), p.get('timing', 0), p.get('fresh', 0)))
print('\n'.join(out))
PY
}
