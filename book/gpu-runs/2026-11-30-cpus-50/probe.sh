# The machine's CPUs as the kernel sees them: the cores' hardware threads, this process's
# cgroup and its CPU quota, and whether it was throttled.
echo "nproc $(nproc)"; lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node)' 
for c in /sys/devices/system/cpu/cpu[0-9]*; do echo "$(basename $c) $(cat $c/topology/thread_siblings_list)"; done | sort -V | tr '\n' ';'; echo
cg=$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup); echo "cgroup $cg"
for d in "/sys/fs/cgroup$cg" /sys/fs/cgroup; do echo "$d: cpu.max=$(cat $d/cpu.max 2>/dev/null) cpuset=$(cat $d/cpuset.cpus.effective 2>/dev/null)"; done
