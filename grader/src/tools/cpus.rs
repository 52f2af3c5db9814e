//! CPUs of their own for the timed calls. A bug exercise's whole call is a few milliseconds of host
//! work, and `grade` builds the next chunk while one is timed: at nice 19 those builds still slowed
//! the host side of honest calls 1.3x-2.5x on an H200's 16 cores, and the confirming rounds timed
//! them again (book/gpu-runs/2026-11-30-doubts-50/). A priority does not keep a build off the
//! other hardware thread of a core, nor out of the cgroup's CPU quota; an affinity does. So a
//! worker's timed calls get whole cores (every hardware thread of them), and everything else the
//! grader starts runs on the rest. Only where the rest keeps at least three quarters of the CPUs:
//! the timed calls' cores sit idle while a chunk builds and runs its tools, so on a small machine
//! (or a small share of one) nothing is pinned.

use std::collections::BTreeSet;

/// One worker's share of the CPUs: `timed` for its timed calls, `rest` for everything else of the
/// grade (every worker's builds, tools and cases). Both empty: nothing is pinned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuShare {
    pub timed: Vec<usize>,
    pub rest: Vec<usize>,
}

impl CpuShare {
    /// What worker `worker`'s share is, for the grade's output; None where nothing is pinned.
    pub fn line(&self, worker: usize) -> Option<String> {
        let list = |cpus: &[usize]| {
            cpus.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        (!self.timed.is_empty()).then(|| {
            format!(
                "Worker {worker}'s timed calls run on CPUs {} alone; the rest of the grade on {} \
                 other CPUs (CUDABUGS_TIMED_CORES=0: anywhere).",
                list(&self.timed),
                self.rest.len()
            )
        })
    }
}

/// Physical cores a worker's timed calls get by default: the grader's thread that clocks the call
/// and the program's own (its main thread and the driver's).
pub const TIMED_CORES: usize = 2;

/// Worker `worker` of `workers`'s share of `allowed` (this process's CPUs), where each worker's
/// timed calls get `cores` whole cores: a CPU and its hardware siblings (`siblings`). None where
/// that would leave the rest fewer than three quarters of `allowed`, or `cores` is 0.
pub fn share_of(
    allowed: &[usize],
    siblings: &dyn Fn(usize) -> Vec<usize>,
    cores: usize,
    (worker, workers): (usize, usize),
) -> Option<CpuShare> {
    if cores == 0 {
        return None;
    }
    let allowed_set: BTreeSet<usize> = allowed.iter().copied().collect();
    // Whole cores, from the highest CPU down (the kernel and most programs start on the lowest).
    let mut taken = BTreeSet::new();
    let mut per_worker: Vec<Vec<usize>> = Vec::new();
    for &cpu in allowed.iter().rev() {
        if per_worker.len() == workers * cores {
            break;
        }
        if taken.contains(&cpu) {
            continue;
        }
        let mut core: Vec<usize> = siblings(cpu)
            .into_iter()
            .filter(|c| allowed_set.contains(c))
            .chain([cpu])
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        core.retain(|c| taken.insert(*c));
        per_worker.push(core);
    }
    let rest: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|c| !taken.contains(c))
        .collect();
    if per_worker.len() < workers * cores || rest.len() * 4 < allowed.len() * 3 {
        return None;
    }
    let timed = per_worker[worker * cores..(worker + 1) * cores]
        .iter()
        .flatten()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Some(CpuShare { timed, rest })
}

/// This machine's share for worker `worker` of `workers`: the CPUs this process may run on, and the
/// hardware siblings the kernel reports.
pub fn share(cores: usize, worker: (usize, usize)) -> CpuShare {
    share_of(&allowed(), &siblings, cores, worker).unwrap_or_default()
}

/// The CPUs this thread may run on.
pub fn allowed() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set the kernel fills; 0 is this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// The hardware threads of `cpu`'s core (itself included), from sysfs; just `cpu` where unknown.
fn siblings(cpu: usize) -> Vec<usize> {
    std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    ))
    .ok()
    .and_then(|list| cpu_list(list.trim()))
    .unwrap_or_else(|| vec![cpu])
}

/// A kernel CPU list ("0-3,8,10-11").
fn cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// This thread (and every thread and process it starts from now on) on `cpus`, until the guard is
/// dropped; nothing where `cpus` is empty or the kernel refuses.
pub fn pin_thread(cpus: &[usize]) -> Pinned {
    if cpus.is_empty() {
        return Pinned { before: None };
    }
    let before = allowed();
    Pinned {
        before: set_affinity(cpus).then_some(before),
    }
}

/// Puts the thread's CPUs back when dropped.
#[must_use]
pub struct Pinned {
    before: Option<Vec<usize>>,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(before) = &self.before {
            set_affinity(before);
        }
    }
}

fn set_affinity(cpus: &[usize]) -> bool {
    // SAFETY: `set` is a plain bit set built here; 0 is this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 16 CPUs as 8 cores of two hardware threads (cpu k and k + 8), as many x86 hosts number them.
    fn smt(cpu: usize) -> Vec<usize> {
        vec![cpu % 8, cpu % 8 + 8]
    }

    #[test]
    fn timed_calls_get_whole_cores_and_the_rest_keeps_every_other_cpu() {
        let all: Vec<usize> = (0..16).collect();
        let one = share_of(&all, &smt, 2, (0, 1)).unwrap();
        assert_eq!(one.timed, [6, 7, 14, 15]);
        assert_eq!(one.rest, [0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13]);
        assert!(one.line(0).unwrap().contains("CPUs 6,7,14,15 alone"));
        assert_eq!(CpuShare::default().line(0), None);
        // Two workers (32 CPUs as 16 cores of two threads): cores of their own each, the rest shared.
        let wide: Vec<usize> = (0..32).collect();
        let smt32 = |c: usize| vec![c % 16, c % 16 + 16];
        let first = share_of(&wide, &smt32, 2, (0, 2)).unwrap();
        let second = share_of(&wide, &smt32, 2, (1, 2)).unwrap();
        assert_eq!(first.timed, [14, 15, 30, 31]);
        assert_eq!(second.timed, [12, 13, 28, 29]);
        assert_eq!(first.rest, second.rest);
        assert_eq!(first.rest.len(), 24);
        // No hardware siblings (the H200 machines): a core is a CPU.
        let plain = share_of(&all, &|c| vec![c], 2, (0, 1)).unwrap();
        assert_eq!(plain.timed, [14, 15]);
        assert_eq!(plain.rest.len(), 14);
    }

    #[test]
    fn a_small_machine_pins_nothing() {
        let two: Vec<usize> = (0..2).collect();
        assert_eq!(share_of(&two, &|c| vec![c], 2, (0, 1)), None);
        // Two cores of six CPUs, or of four, would idle a third or a half of the machine while a
        // chunk builds; two of eight leave three quarters.
        let six: Vec<usize> = (0..6).collect();
        assert_eq!(share_of(&six, &|c| vec![c], 2, (0, 1)), None);
        let eight: Vec<usize> = (0..8).collect();
        assert!(share_of(&eight, &|c| vec![c], 2, (0, 1)).is_some());
        assert_eq!(
            share_of(&eight, &|c| vec![c % 4, c % 4 + 4], 2, (0, 1)),
            None
        );
        assert_eq!(
            share_of(&(0..16).collect::<Vec<_>>(), &smt, 0, (0, 1)),
            None
        );
        // Two workers of two cores each on 16 CPUs of 8 cores: half the machine.
        assert_eq!(
            share_of(&(0..16).collect::<Vec<_>>(), &smt, 2, (0, 2)),
            None
        );
    }

    #[test]
    fn kernel_cpu_lists_read_as_the_kernel_writes_them() {
        assert_eq!(cpu_list("0-3,8,10-11"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(cpu_list("5"), Some(vec![5]));
        assert_eq!(cpu_list("x"), None);
    }

    #[test]
    fn a_pinned_thread_gets_its_cpus_back() {
        let before = allowed();
        assert!(!before.is_empty());
        {
            let _pinned = pin_thread(&before[..1]);
            assert_eq!(allowed(), before[..1]);
        }
        assert_eq!(allowed(), before);
    }
}
