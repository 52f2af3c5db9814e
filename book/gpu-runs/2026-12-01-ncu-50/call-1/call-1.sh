#!/bin/bash
# Issue 50, performance class: where an ncu timing run's 2.5-3 s go. Part A: ncu itself on two
# small programs, flag by flag. Part B: the perf class (6 x 51, 52, 57) with every ncu run of the
# grader stamped (.gpu/ncu-stamp). From the workbook root; logs in $OUT.
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/out} PATH="$PATH:/usr/local/cuda/bin"
A=$OUT/a.txt; mkdir -p $OUT /tmp/ncu-stamps; chmod 1777 /tmp/ncu-stamps
nvcc -O3 -o /tmp/start .gpu/start.cu && nvcc -O3 -lineinfo -o /tmp/big .gpu/big.cu
cp .gpu/ncu-stamp /usr/local/bin/ncu-stamp; chmod 755 /usr/local/bin/ncu-stamp
t() { local s e; s=$(date +%s.%N); "$@" > /tmp/t.out 2>&1; e=$(date +%s.%N); python3 -c "print('%.3f' % ($e - $s), end=' ')" >> $A; }
row() { local name=$1; shift; printf '%-28s ' "$name" >> $A; for i in 1 2 3; do t "$@"; done; echo >> $A; }
BASE="--csv --print-units base --clock-control base --cache-control all --log-file /tmp/l.csv"
M1="--metrics gpu__time_duration.sum"
M3="--metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum"
row "ncu --version" ncu --version
row "start plain" /tmp/start
row "start ncu time" ncu $BASE $M1 /tmp/start
row "start ncu 3 metrics" ncu $BASE $M3 /tmp/start
row "start ncu clock none" ncu $BASE $M1 --clock-control none /tmp/start
row "start ncu cache none" ncu $BASE $M1 --cache-control none /tmp/start
row "start ncu -k nomatch" ncu $BASE $M1 -k regex:nomatch /tmp/start
row "big3 plain" /tmp/big 3
row "big3 ncu time" ncu $BASE $M1 /tmp/big 3
row "big3 ncu 3 metrics" ncu $BASE $M3 /tmp/big 3
row "big1 ncu 3 metrics" ncu $BASE $M3 /tmp/big 1
row "big9 ncu 3 metrics" ncu $BASE $M3 /tmp/big 9
row "big3 ncu -k nomatch" ncu $BASE $M3 -k regex:nomatch /tmp/big 3
row "big3 stamp 3 metrics" /usr/local/bin/ncu-stamp $BASE $M3 /tmp/big 3
cp /tmp/l.csv.stamps $OUT/big3.stamps 2>/dev/null
cat $A
# Part B
CUDABUGS_NCU=/usr/local/bin/ncu-stamp B=${B:-.gpu/xtask} PART=perf bash scripts/gpu-50-margin.sh | tee $OUT/table.txt
find .cudabugs -name '*.stamps' | tar czf $OUT/stamps-work.tgz -T - 2>/dev/null
tar czf $OUT/stamps-tmp.tgz -C /tmp ncu-stamps
ls /tmp/ncu-stamps | wc -l; find .cudabugs -name '*.stamps' | wc -l
cat $A; cut -c1-300 $OUT/table.txt
