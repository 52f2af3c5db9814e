#!/usr/bin/env bash
# The GPU machine's facts the trust boundary rests on (scripts/trust/probe.cu), and the grader's
# sandbox (no user of the grader's, no capability, the seccomp filter) around every tool:
#   the machine: user, folders, the driver's profiling setting, clocks and compute mode, kernel;
#   a memfd passed to a program started by ncu and by compute-sanitizer; cudaHostRegister of a
#   shared mapping; whether a persisting-L2 limit outlives its process; the shared-memory
#   handshake's round trip; host memcpy bandwidth; ncu's lock file;
#   then check (03 untouched and fixed, 57 untouched, 63 fixed) and grade (63's reference fix alone).
# Logs to $OUT (tarred); a table last.
set -uo pipefail
B=${B:-.gpu/xtask}
OUT=${OUT:-/tmp/trust-probe}
L="$OUT/logs"; mkdir -p "$L"
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
table=()
now() { date +%s.%N; }
run() { # run NAME CMD...: output to logs/NAME.txt, exit and seconds to the table
  local name=$1; shift
  local s; s=$(now)
  "$@" > "$L/$name.txt" 2>&1
  local code=$?
  table+=("$name: exit $code, $(python3 -c "print(round($(now) - $s, 1))") s")
  return $code
}
with() { # with FILE DEST CMD...: DEST replaced by FILE for one command
  local file=$1 dest=$2; shift 2
  cp "$dest" /tmp/with-backup; cp "$file" "$dest"
  "$@"; local code=$?
  cp /tmp/with-backup "$dest"
  return $code
}

{
  echo "== id"; id
  echo "== pwd"; pwd; namei -l "$(pwd)"
  echo "== driver params"; grep -i -E "profil|admin" /proc/driver/nvidia/params
  echo "== nvidia-smi"; nvidia-smi --query-gpu=name,driver_version,compute_mode,persistence_mode,clocks.applications.graphics,clocks.applications.memory,clocks.sm,clocks.max.sm --format=csv
  echo "== kernel"; uname -a; cat /proc/sys/kernel/yama/ptrace_scope 2>&1; ls /sys/kernel/security 2>&1
  grep -h X32 /boot/config-"$(uname -r)" 2>&1 | head -3; zcat /proc/config.gz 2>/dev/null | grep X32
  echo "== /dev/shm"; df -h /dev/shm
  echo "== tools"; which nvcc ncu compute-sanitizer nvidia-smi cuobjdump
} > "$L/machine.txt" 2>&1
table+=("$(grep -E "RmProfilingAdminOnly" "$L/machine.txt")")

nvcc -std=c++17 -arch=sm_90 -O2 -o /tmp/probe scripts/trust/probe.cu > "$L/probe-build.txt" 2>&1 || table+=("probe build FAILED")
P=/tmp/probe
run fd-plain $P fd-parent 64 $P fd-child '{fd}' 64
run fd-ncu $P fd-parent 64 ncu --metrics gpu__time_duration.sum $P fd-child '{fd}' 64
run fd-memcheck $P fd-parent 64 compute-sanitizer --tool memcheck $P fd-child '{fd}' 64
table+=("fd through: plain $(grep -c 'fd ok' "$L/fd-plain.txt"), ncu $(grep -c 'fd ok' "$L/fd-ncu.txt"), memcheck $(grep -c 'fd ok' "$L/fd-memcheck.txt")")
run register $P register 256
table+=("$(cat "$L/register.txt" | tr '\n' ';')")
{ $P l2-get; $P l2-set; $P l2-get; ncu --metrics gpu__time_duration.sum $P l2-get; $P l2-reset; $P l2-get; } > "$L/l2.txt" 2>&1
table+=("$(grep -E '^l2' "$L/l2.txt" | tr '\n' ';')")
run handshake $P handshake 100000
table+=("$(cat "$L/handshake.txt")")
for t in 1 4 8; do $P memcpy 256 $t; done > "$L/memcpy.txt" 2>&1
table+=("$(cat "$L/memcpy.txt" | tr '\n' ';')")
lockdir=$(mktemp -d); TMPDIR=$lockdir ncu --metrics gpu__time_duration.sum $P l2-get > /dev/null 2>&1
table+=("ncu's TMPDIR after a run: $(ls -la "$lockdir" | tail -n +2 | awk '{print $1, $3, $9}' | tr '\n' ';')")

run toolkit-show $B toolkit show
table+=("$(grep -i -E 'isolation|sandbox|user' "$L/toolkit-show.txt" | head -3 | tr '\n' ';')")
run check-03-untouched $B check 03-race
run check-03-fixed with solutions/03-race/reduce.cu exercises/03-race/reduce.cu $B check 03-race
run check-57-untouched $B check 57-reduction
run check-63-fixed with solutions/63-transfers/cool.cu exercises/63-transfers/cool.cu $B check 63-transfers
for c in check-03-untouched check-03-fixed check-57-untouched check-63-fixed; do
  table+=("  $c: $(grep -E '^(PASS|FAIL|SKIPPED|ERROR)|^[a-z].*(passed|failed)' "$L/$c.txt" | head -4 | tr '\n' ';' | cut -c1-400)")
done
# What a sandboxed run left in its folders: who owns them, and ncu's lock.
{ find .cudabugs/work/check -maxdepth 6 -printf '%u %m %p\n' | head -80; ls -la .cudabugs/ncu-lock 2>&1; } > "$L/ownership.txt"
rm -rf cls grades-63; mkdir -p cls/alice; cp solutions/63-transfers/cool.cu cls/alice/
run grade-63-reference $B grade cls --exercises 63-transfers --secret-seed 7 --out grades-63
table+=("grade 63 reference: $(cat grades-63/grades.csv 2>/dev/null | tr '\n' ';')")
cp -r grades-63 "$L/" 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$L"
printf '%s\n' "${table[@]}" | tee "$OUT/table.txt"
