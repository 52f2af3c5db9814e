# Shared by the calls: run from the workbook root, bundle in .gpu/xtask, logs in $OUT.
B=.gpu/xtask
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
T=$OUT/table.txt
now() { date +%s.%N; }
d() { python3 -c "print(round($2 - $1, 1))"; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nvcc --version | tail -2; nproc; } > "$OUT/env.txt" 2>&1
# graded NAME CLASS EXERCISES [keep]: one grade (from an empty .cudabugs/work unless keep), its
# line in the table: wall, pairs a minute, and over its chunks the tools and timing phases, the
# whole calls timed alone, and the students whose first calls were doubted.
graded() {
  local name=$1 class=$2 ex=$3 keep=${4:-}
  [ -z "$keep" ] && rm -rf .cudabugs/work
  rm -rf "grades-$name"
  local s; s=$(now)
  timeout -k 10 "${LIMIT:-300}" $B grade "$class" --exercises "$ex" --secret-seed 7 --out "grades-$name" --format events > "$OUT/$name.jsonl" 2> "$OUT/$name.err"
  local code=$? t; t=$(d "$s" "$(now)")
  local pairs; pairs=$(grep -c '"event":"graded"' "$OUT/$name.jsonl")
  cp "grades-$name/grades.csv" "$OUT/$name-grades.csv" 2>/dev/null
  echo "$name: exit $code, $t s, $pairs pairs, $(python3 -c "print(round($pairs/$t*60,1))") pairs/min (lanes=${CUDABUGS_GRADE_LANES:-default})" >> "$T"
  python3 - "$OUT/$name.jsonl" >> "$T" <<'PY'
import json, sys
tools = timing = calls = 0.0
chunks = 0
doubted = []
runs = {}
for l in open(sys.argv[1]):
    try: o = json.loads(l)
    except ValueError: continue
    if o.get('event') == 'chunk':
        p = o['phases']; chunks += 1
        tools += p.get('tools', 0); timing += p.get('timing', 0); calls += p.get('calls', 0)
        for who, why in p.get('doubted', {}).items():
            doubted.append('%s/%s: %s' % (o['exercise'], who, '; '.join(why)))
        for k, v in p.get('runs', {}).items():
            r = runs.setdefault(k, [0, 0.0]); r[0] += v['count']; r[1] += v['total_s']
print('  %d chunks: tools %.1f s, timing %.1f s (calls alone %.1f s), %d doubted' % (chunks, tools, timing, calls, len(doubted)))
for k in sorted(runs): print('    %s: %d runs, %.1f s' % (k, runs[k][0], runs[k][1]))
for x in doubted[:12]: print('    doubted', x)
PY
}
