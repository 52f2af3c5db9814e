#!/usr/bin/env bash
# CI: a real single-node Slurm (Debian's slurm-wlm: slurmctld + slurmd + munge on localhost) runs
# scripts/slurm/grade.sbatch as a 3-task job array over the fixture class in the no-GPU tier, then
# `grade merge` must produce the gradebook, with the same grades.csv as one unsharded `grade`.
# Needs root (it starts the daemons); installs the packages where missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bin=${CUDABUGS:-$root/target/debug/xtask}
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
work=$(mktemp -d /tmp/cudabugs-slurm.XXXXXX)
chmod 755 "$work"
cleanup() {
  pkill -x slurmd 2>/dev/null || true
  pkill -x slurmctld 2>/dev/null || true
  pkill -x munged 2>/dev/null || true
}
trap cleanup EXIT
# munge: a key of its own, its folders owned by root (the daemon runs as root here).
mkdir -p "$work/munge" /run/munge /var/log/munge
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket=/run/munge/munge.socket.2 --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" --seed-file="$work/munge/munged.seed"
host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p "$work/spool/ctld" "$work/spool/d" /etc/slurm
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=cudabugs-ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$work/spool/ctld
SlurmdSpoolDir=$work/spool/d
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
slurmctld
slurmd
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)' && break
  sleep 1
done
sinfo
cp tests/fixtures/class-secret.toml "$work/secret.toml"
out="$work/grades"
# The CI node has no GPU: no --gres here (grade.sbatch asks for a GPU; the command line wins).
sbatch --wait --array=1-3 --gres=none --cpus-per-task=1 --mem=2G --chdir="$root" \
  --output="$work/task-%a.log" --export=ALL,CUDABUGS="$bin",CUDABUGS_ROOT="$root" \
  scripts/slurm/grade.sbatch tests/fixtures/class "$out" --exercises 03-race,57-reduction --secret "$work/secret.toml"
for f in "$work"/task-*.log; do echo "== $f"; cat "$f"; done
ls "$out"
[ "$(ls "$out"/journal.shard-*-of-3.jsonl | wc -l)" -eq 3 ] || { echo "expected three shard journals" >&2; exit 1; }
set +e
"$bin" grade merge "$out"
code=$?
set -e
[ "$code" -eq 6 ] || { echo "grade merge exited $code, expected 6 (every pair graded, GPU stages skipped)" >&2; exit 1; }
"$bin" grade tests/fixtures/class --exercises 03-race,57-reduction --secret "$work/secret.toml" --out "$work/whole" || [ $? -eq 6 ]
diff "$work/whole/grades.csv" "$out/grades.csv"
echo "slurm: 3 array tasks, merged gradebook identical to one unsharded run"
