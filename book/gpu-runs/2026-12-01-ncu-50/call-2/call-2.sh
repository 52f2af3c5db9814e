#!/bin/bash
# Issue 50: may ncu processes overlap their start-up? Each scenario's programs are hold.cu under
# ncu with the grader's flags. Logs in $OUT.
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/out} PATH="$PATH:/usr/local/cuda/bin"
L=$OUT/logs; mkdir -p $L
nvcc -O3 -lineinfo -o /tmp/hold-prog .gpu/hold.cu || exit 1
FLAGS="--csv --print-units base --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum --clock-control base --cache-control all"
ts() { date +%s.%N; }
# prof TAG KERNELS: one ncu process in the background, its log and stamps under $L
prof() { echo "$1 start $(ts)" >> $L/stamps; ( ncu $FLAGS --log-file $L/$1.csv /tmp/hold-prog $1 $2 > $L/$1.out 2>&1; echo "$1 exit $(ts) rc $?" >> $L/stamps ) & }
go() { echo "$1 go $(ts)" >> $L/stamps; touch /tmp/hold/go-$1; }
waitfile() { while [ ! -e "$1" ]; do sleep 0.002; done; }
fresh() { rm -rf /tmp/hold; mkdir -p /tmp/hold; chmod 1777 /tmp/hold; }
for r in 1 2 3; do
  # S0: alone
  fresh; prof s0a$r 10; go s0a$r; wait
  # S1: B starts 0.3 s after A; B's go when A's ncu has exited
  fresh; prof s1a$r 10; pa=$!; go s1a$r; sleep 0.3; prof s1b$r 10
  wait $pa; go s1b$r; wait
  # S2: B's go as soon as A's last kernel is done (A's program and ncu still tearing down)
  fresh; prof s2a$r 10; go s2a$r; sleep 0.3; prof s2b$r 10
  waitfile /tmp/hold/done-s2a$r; go s2b$r; wait
done
# S3: both at once
fresh; prof s3a 10; prof s3b 10; go s3a; go s3b; wait
cat $L/*.out > $L/programs.txt
python3 - $L <<'PY'
import csv, glob, os, re, sys, statistics
L = sys.argv[1]
st = {}
for l in open(L + '/stamps'):
    p = l.split(); st.setdefault(p[0], {})[p[1]] = float(p[2])
prog = {}
for l in open(L + '/programs.txt'):
    m = re.match(r'(\S+) main (\S+) ready (\S+) go (\S+) done (\S+) err (.*)', l)
    if m: prog[m[1]] = dict(main=float(m[2]), ready=float(m[3]), go=float(m[4]), done=float(m[5]), err=m[6])
print('%-6s %6s %6s %6s %6s %6s %6s  %s' % ('tag', 'main', 'ready', 'go', 'done', 'exit', 'k-ms', 'ncu'))
for tag in sorted(st):
    s = st[tag]; p = prog.get(tag, {}); t0 = s['start']
    text = open('%s/%s.csv' % (L, tag)).read() if os.path.exists('%s/%s.csv' % (L, tag)) else ''
    times = [float(x.replace(',', '')) for x in re.findall(r'"gpu__time_duration.sum","[^"]*","([^"]+)"', text)]
    errs = [l[:90] for l in text.splitlines() if l.startswith('==ERROR==') or l.startswith('==WARNING==')]
    rel = lambda k: '%6.2f' % (p[k] - t0) if k in p else '     -'
    med = '%6.2f' % (statistics.median(times) / 1e6) if times else '     -'
    print('%-6s %s %s %s %s %6.2f %s  n=%d %s %s' % (tag, rel('main'), rel('ready'), rel('go'), rel('done'), s.get('exit', 0) - t0, med, len(times), p.get('err', 'no program line'), ' | '.join(errs)))
PY
