#!/bin/bash
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
bash .gpu/ncu-home.sh 2>&1 | tee $OUT/ncu-home.txt
RUNS=$RUNS bash .gpu/call-3.sh > /dev/null 2>&1
cat $OUT/ncu-home.txt; cut -c1-330 $OUT/table.txt
