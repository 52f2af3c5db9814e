#!/bin/bash
# Issue 50, call 1. Part A: what a gate in .preinit_array (before any constructor: ncu's injected
# ones, the program's) saves an ncu process when the process is started a second before its turn;
# whether gated start-ups disturb another program's profile (with a positive control: plain
# processes copying beside it); CUDA_FORCE_PRELOAD_LIBRARIES=0. Part B: the grader's leftovers
# (sanitize --profile, 54-matmul's library baseline, the adversarial class's 57 students).
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/out} PATH="$PATH:/usr/local/cuda/bin" CUDABUGS_NO_INSTALL=1
A=$OUT/a.txt; mkdir -p $OUT /tmp/nosec; : > $A
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -2; ncu --version | tail -1; nproc; } > $OUT/env.txt 2>&1
nvcc -O3 -o /tmp/start .gpu/start.cu && nvcc -O3 -o /tmp/big .gpu/big.cu
nvcc -O3 -include .gpu/gate.h -o /tmp/startg .gpu/start.cu && nvcc -O3 -include .gpu/gate.h -o /tmp/bigg .gpu/big.cu
now() { date +%s.%N; }
d() { python3 -c "print('%.3f' % ($2 - $1))"; }
NCU="ncu --csv --print-units base --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum --clock-control base --cache-control all --section-folder /tmp/nosec"
t() { local s; s=$(now); "$@" > /tmp/t.out 2>&1; printf '%s ' "$(d $s $(now))" >> $A; }
row() { local name=$1; shift; printf '%-34s ' "$name" >> $A; for i in 1 2 3 4 5; do t "$@"; done; echo >> $A; }
row "start plain" /tmp/start
row "start plain preload0" env CUDA_FORCE_PRELOAD_LIBRARIES=0 /tmp/start
row "ncu /bin/true" $NCU --log-file /tmp/l.csv /bin/true
row "ncu start" $NCU --log-file /tmp/l.csv /tmp/start
row "ncu start preload0" env CUDA_FORCE_PRELOAD_LIBRARIES=0 $NCU --log-file /tmp/l.csv /tmp/start
row "ncu startg ungated" $NCU --log-file /tmp/l.csv /tmp/startg
row "ncu big 3" $NCU --log-file /tmp/l.csv /tmp/big 3
row "ncu big 3 preload0" env CUDA_FORCE_PRELOAD_LIBRARIES=0 $NCU --log-file /tmp/l.csv /tmp/big 3
# gated NAME PROG ARGS: start ncu, wait until the gate is reached, wait 1 s (another program's
# turn), open the gate: seconds from start to the gate, and from the gate to ncu's exit.
gated() {
  local name=$1; shift; printf '%-34s ' "$name" >> $A
  for i in 1 2 3 4 5; do
    rm -f /tmp/go /tmp/ready; local s; s=$(now)
    CB_GATE_GO=/tmp/go CB_GATE_READY=/tmp/ready $NCU --log-file /tmp/g.csv "$@" > /tmp/g.out 2>&1 &
    local pid=$!; while [ ! -s /tmp/ready ]; do sleep 0.005; done
    local r; r=$(cat /tmp/ready); sleep 1; local g; g=$(now); touch /tmp/go; wait $pid; local rc=$?
    printf '%s/%s/rc%s ' "$(d $s $r)" "$(d $g $(now))" $rc >> $A
  done; echo >> $A
}
gated "gated startg (to gate/after go)" /tmp/startg
gated "gated bigg 3 (to gate/after go)" /tmp/bigg 3
grep -c rowsum /tmp/g.csv >> $A
# Disturbance: big 9 profiled alone, beside three gated ncu start-ups (held until it is done), and
# beside two plain big 40 copying (the positive control). The median rowsum time of each profile.
med() { python3 - "$1" <<'PY'
import csv, sys, statistics
t = open(sys.argv[1]).read(); t = t[t.find('"ID",'):]
v = [float(r['Metric Value'].replace(',', '')) for r in csv.DictReader(t.splitlines()) if r['Metric Name'] == 'gpu__time_duration.sum' and r['Kernel Name'].startswith('rowsum')]
print('%.1fus(n%d)' % (statistics.median(v) / 1e3, len(v)) if v else 'none', end=' ')
PY
}
dis() {
  local name=$1 mode=$2; printf '%-34s ' "$name" >> $A
  for i in 1 2 3; do
    rm -f /tmp/go; local pids=""
    $NCU --log-file /tmp/a.csv /tmp/big 9 > /tmp/a.out 2>&1 & local a=$!
    sleep 0.1
    if [ "$mode" = gated ]; then for k in 1 2 3; do CB_GATE_GO=/tmp/go CB_GATE_READY=/tmp/r$k $NCU --log-file /tmp/b$k.csv /tmp/bigg 1 > /dev/null 2>&1 & pids="$pids $!"; done; fi
    if [ "$mode" = copy ]; then for k in 1 2; do /tmp/big 40 > /dev/null 2>&1 & pids="$pids $!"; done; fi
    wait $a; touch /tmp/go; for p in $pids; do wait $p; done
    med /tmp/a.csv >> $A
  done; echo >> $A
}
dis "big 9 alone (median rowsum)" alone
dis "big 9 + 3 gated ncu" gated
dis "big 9 + 2 plain copies" copy
dis "big 9 alone again" alone
cat $A
# Part B: the grader (release bundle .gpu/xtask).
B=.gpu/xtask; Bt=$OUT/b.txt; : > $Bt
s=$(now); $B --format json sanitize --profile scripts/sanitize/strided.cu > $OUT/sanitize-profile.json 2> $OUT/sanitize-profile.err
echo "sanitize --profile strided.cu: exit $? in $(d $s $(now)) s" >> $Bt
s=$(now); $B --format json verify 54-matmul > $OUT/verify-54.json 2> $OUT/verify-54.err
echo "verify 54-matmul: exit $? in $(d $s $(now)) s" >> $Bt
rm -rf .cudabugs/work grades-adv57
s=$(now); timeout -k 10 300 $B grade tests/fixtures/adversarial --exercises 57-reduction --secret-seed 7 --out grades-adv57 --format events > $OUT/adv57.jsonl 2> $OUT/adv57.err
echo "grade adversarial 57: exit $? in $(d $s $(now)) s, $(grep -c '"event":"graded"' $OUT/adv57.jsonl) pairs" >> $Bt
cp grades-adv57/grades.csv $OUT/adv57-grades.csv
find .cudabugs -name 'ncu-no-sections' -exec ls -la {} \; >> $Bt 2>&1
ls -la $HOME/Documents >> $Bt 2>&1
(cd $OUT && tar czf b-logs.tgz sanitize-profile.* verify-54.* adv57.* && rm -f sanitize-profile.* verify-54.* adv57.jsonl adv57.err)
cat $Bt; cat $OUT/adv57-grades.csv | cut -c1-200
