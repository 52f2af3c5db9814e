#!/bin/bash
# ncu and compute-sanitizer anatomy: fixed costs and per-launch costs.
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -arch=sm_90 -o probe probe.cu
nvcc -G -arch=sm_90 -o probe-g probe.cu
t() { local label=$1; shift; local s=$(date +%s.%N); "$@" > /dev/null 2>&1; local rc=$?; local e=$(date +%s.%N); printf "%-58s rc=%d %6.3f s\n" "$label" $rc $(awk "BEGIN{print $e - $s}"); }
M=gpu__time_duration.sum
A=gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum
P=gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
for rep in 1 2; do
t "plain 0 launches" ./probe 0
t "plain 100 launches" ./probe 100
t "ncu none-app (/bin/true)" ncu --csv --metrics $M /bin/true
t "ncu 0 launches time" ncu --csv --metrics $M --clock-control base --cache-control all ./probe 0
t "ncu 1 launch time" ncu --csv --metrics $M --clock-control base --cache-control all ./probe 1
t "ncu 10 launches time" ncu --csv --metrics $M --clock-control base --cache-control all ./probe 10
t "ncu 100 launches time" ncu --csv --metrics $M --clock-control base --cache-control all ./probe 100
t "ncu 100 launches audit" ncu --csv --metrics $A --clock-control base --cache-control all ./probe 100
t "ncu 100 launches perf5" ncu --csv --metrics $P --clock-control base --cache-control all ./probe 100
t "ncu 100 launches time cache none" ncu --csv --metrics $M --clock-control base --cache-control none ./probe 100
t "ncu 100 launches time clock none" ncu --csv --metrics $M --clock-control none --cache-control all ./probe 100
t "ncu 3 procs x 10 launches one ncu" ncu --csv --metrics $A --clock-control base --cache-control all sh -c './probe 10; ./probe 10; ./probe 10'
t "ncu 1 proc x 10 launches audit" ncu --csv --metrics $A --clock-control base --cache-control all ./probe 10
for tool in memcheck racecheck initcheck synccheck; do
t "sanitizer $tool -G 1 launch" compute-sanitizer --tool $tool ./probe-g 1 65536
done
t "sanitizer memcheck -G 0 launches" compute-sanitizer --tool memcheck ./probe-g 0
t "plain -G 1 launch" ./probe-g 1 65536
done
ncu --csv --metrics $A sh -c './probe 2; ./probe 2' 2>&1 | grep -v '^==' | head -12
nvidia-smi --query-gpu=name,persistence_mode,driver_version --format=csv
