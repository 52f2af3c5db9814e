//! A cgroup per confined run, where the machine lets us make one: it holds every process of the run
//! (however it daemonises), so that the grader can count what is left and kill all of it, and it
//! carries the host-memory and process limits.
//!
//! cgroup v2 gives `cgroup.kill` (Linux 5.14) and, where the controllers are delegated to us,
//! `memory.max` and `pids.max`. On a hybrid machine (cgroup v1 controllers, v2 only for grouping, as
//! on the CI machines) the limits come from the v1 `memory` and `pids` hierarchies. Nothing here is
//! required: a run without a cgroup is still timed out and killed through its process group.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Where this process sits in each hierarchy that can hold a run.
#[derive(Debug, Clone, Default)]
struct Bases {
    /// Our own cgroup v2 folder.
    v2: Option<PathBuf>,
    /// Whether our v2 children get `memory.max` / `pids.max`.
    v2_memory: bool,
    v2_pids: bool,
    /// Our own v1 `memory` and `pids` folders.
    v1_memory: Option<PathBuf>,
    v1_pids: Option<PathBuf>,
}

fn bases() -> &'static Bases {
    static BASES: OnceLock<Bases> = OnceLock::new();
    BASES.get_or_init(|| {
        let b = discover();
        for base in [&b.v2, &b.v1_memory, &b.v1_pids].into_iter().flatten() {
            sweep_stale(base);
        }
        b
    })
}

/// The run cgroups a grader that no longer lives left under `base` (`cudabugs-PID-N`), removed
/// where empty: a grader killed outright, or ended by SIGTERM, never drops its runs' `RunCgroup`s,
/// and its runs died with it (`PR_SET_PDEATHSIG`). One with processes inside is left alone: they
/// may be another grader's, one whose pid this process cannot see (a PID namespace of its own).
fn sweep_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for dir in entries.flatten().map(|e| e.path()) {
        let pid = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("cudabugs-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if pid
            .is_some_and(|p| p != std::process::id() && !Path::new(&format!("/proc/{p}")).exists())
        {
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

fn discover() -> Bases {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut b = Bases::default();
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let (point, fstype, opts) = (Path::new(f[1]), f[2], f[3]);
        // /proc/self/cgroup: "0::/path" for v2, "4:memory:/path" for v1.
        let own_path = |key: &str| {
            own.lines().find_map(|l| {
                l.split_once(':')
                    .and_then(|(_, rest)| rest.split_once(':'))
                    .filter(|(k, _)| *k == key)
                    .map(|(_, p)| p.to_string())
            })
        };
        let under = |p: String| point.join(p.trim_start_matches('/'));
        match fstype {
            "cgroup2" => {
                if let Some(p) = own_path("") {
                    b.v2 = Some(under(p));
                }
            }
            "cgroup" if opts.split(',').any(|o| o == "memory") => {
                b.v1_memory = own_path("memory").map(under)
            }
            "cgroup" if opts.split(',').any(|o| o == "pids") => {
                b.v1_pids = own_path("pids").map(under)
            }
            _ => {}
        }
    }
    if let Some(v2) = &b.v2 {
        // Children of our cgroup get a controller only if our subtree_control names it; asking for
        // it works in the root cgroup and in a delegated one that holds no process.
        let enabled = |c: &str| {
            std::fs::read_to_string(v2.join("cgroup.subtree_control"))
                .unwrap_or_default()
                .split_whitespace()
                .any(|x| x == c)
        };
        let available = std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
        for c in ["memory", "pids"] {
            if available.split_whitespace().any(|x| x == c) && !enabled(c) {
                let _ = std::fs::write(v2.join("cgroup.subtree_control"), format!("+{c}"));
            }
        }
        b.v2_memory = enabled("memory");
        b.v2_pids = enabled("pids");
        if !v2.join("cgroup.procs").is_file() {
            b.v2 = None;
        }
    }
    b
}

/// Which mechanisms a run's cgroup gave it, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Mechanisms {
    pub kill: bool,
    pub memory_limit: bool,
    pub pids_limit: bool,
}

/// One run's cgroup(s). Dropping it kills whatever is still inside and removes the folders.
#[derive(Debug)]
pub struct RunCgroup {
    v2: Option<PathBuf>,
    v1: Vec<PathBuf>,
    pub mechanisms: Mechanisms,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl RunCgroup {
    /// Make the run's cgroup(s) with these limits; None where no hierarchy lets us.
    pub fn create(memory_bytes: Option<u64>, pids: Option<u64>) -> Option<RunCgroup> {
        let b = bases();
        let name = format!(
            "cudabugs-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut cg = RunCgroup {
            v2: None,
            v1: Vec::new(),
            mechanisms: Mechanisms::default(),
        };
        if let Some(base) = &b.v2 {
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                cg.mechanisms.kill = dir.join("cgroup.kill").is_file();
                if let (Some(m), true) = (memory_bytes, b.v2_memory) {
                    // No swap either, or the limit only moves the memory to disk.
                    cg.mechanisms.memory_limit =
                        std::fs::write(dir.join("memory.max"), m.to_string()).is_ok();
                    let _ = std::fs::write(dir.join("memory.swap.max"), "0");
                }
                if let (Some(p), true) = (pids, b.v2_pids) {
                    cg.mechanisms.pids_limit =
                        std::fs::write(dir.join("pids.max"), p.to_string()).is_ok();
                }
                cg.v2 = Some(dir);
            }
        }
        if let (Some(m), Some(base), false) =
            (memory_bytes, &b.v1_memory, cg.mechanisms.memory_limit)
        {
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                cg.mechanisms.memory_limit =
                    std::fs::write(dir.join("memory.limit_in_bytes"), m.to_string()).is_ok();
                let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), m.to_string());
                cg.v1.push(dir);
            }
        }
        if let (Some(p), Some(base), false) = (pids, &b.v1_pids, cg.mechanisms.pids_limit) {
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                cg.mechanisms.pids_limit =
                    std::fs::write(dir.join("pids.max"), p.to_string()).is_ok();
                cg.v1.push(dir);
            }
        }
        (cg.v2.is_some() || !cg.v1.is_empty()).then_some(cg)
    }

    /// The `cgroup.procs` files the child writes itself into before anything else.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.v2
            .iter()
            .chain(&self.v1)
            .map(|d| d.join("cgroup.procs"))
            .collect()
    }

    /// Every process still in the run.
    pub fn pids(&self) -> Vec<i32> {
        let mut all: Vec<i32> = self
            .v2
            .iter()
            .chain(&self.v1)
            .flat_map(|d| {
                std::fs::read_to_string(d.join("cgroup.procs"))
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Kill every process of the run and wait (up to `wait`) until none is left. Returns how many
    /// were there.
    pub fn kill_all(&self, wait: Duration) -> usize {
        let found = self.pids().len();
        let deadline = Instant::now() + wait;
        loop {
            let pids = self.pids();
            if pids.is_empty() || Instant::now() > deadline {
                return found;
            }
            let killed_by_cgroup = self.v2.as_ref().is_some_and(|d| {
                self.mechanisms.kill && std::fs::write(d.join("cgroup.kill"), "1").is_ok()
            });
            if !killed_by_cgroup {
                for pid in pids {
                    // SAFETY: kill only sends a signal; a pid that is gone gives ESRCH.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The CPU time the run's processes have used so far, read from outside them: each live
    /// process's own clock (exact to the nanosecond, all its threads) and, where the run has a
    /// cgroup v2, the cgroup's count (which keeps what exited processes used, but counts a running
    /// one only up to its last scheduler tick).
    pub fn cpu(&self) -> CpuSnapshot {
        let per_process = self
            .pids()
            .into_iter()
            .filter_map(|pid| {
                let mut clock: libc::clockid_t = 0;
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: both calls write only the locals given; a process that has gone gives an error.
                let ok = unsafe {
                    libc::clock_getcpuclockid(pid, &mut clock) == 0
                        && libc::clock_gettime(clock, &mut ts) == 0
                };
                ok.then(|| (pid, ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64))
            })
            .collect();
        let usage_ns = self.v2.as_ref().and_then(|d| {
            let text = std::fs::read_to_string(d.join("cpu.stat")).ok()?;
            text.lines()
                .find_map(|l| l.strip_prefix("usage_usec "))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|us| us * 1000)
        });
        CpuSnapshot {
            per_process,
            usage_ns,
        }
    }

    /// Whether the kernel's OOM killer ended a process of the run (the memory limit was hit).
    pub fn oom_killed(&self) -> bool {
        let count = |text: String, key: &str| {
            text.lines()
                .find_map(|l| {
                    l.strip_prefix(key)
                        .and_then(|v| v.trim().parse::<u64>().ok())
                })
                .unwrap_or(0)
        };
        let v2 = self
            .v2
            .as_ref()
            .map(|d| {
                count(
                    std::fs::read_to_string(d.join("memory.events")).unwrap_or_default(),
                    "oom_kill ",
                )
            })
            .unwrap_or(0);
        let v1 = self
            .v1
            .iter()
            .map(|d| {
                count(
                    std::fs::read_to_string(d.join("memory.oom_control")).unwrap_or_default(),
                    "oom_kill ",
                )
            })
            .sum::<u64>();
        v2 + v1 > 0
    }
}

/// The run's CPU time at one moment (`RunCgroup::cpu`).
#[derive(Debug, Clone, Default)]
pub struct CpuSnapshot {
    per_process: Vec<(i32, u64)>,
    usage_ns: Option<u64>,
}

/// How far the cgroup's count may run ahead of the processes' own clocks before it, not they, is
/// believed: a process that started and ended between the two readings (seen only by the cgroup),
/// beyond the scheduler ticks by which the cgroup lags a running process.
const EXITED_WORK_NS: u64 = 10_000_000;

impl CpuSnapshot {
    /// The CPU time used since `earlier`, in nanoseconds: the processes' own clocks (a process
    /// born in between counts from zero), or the cgroup's count where that is clearly more.
    pub fn since(&self, earlier: &CpuSnapshot) -> f64 {
        let exact: u64 = self
            .per_process
            .iter()
            .map(|(pid, now)| {
                now.saturating_sub(
                    earlier
                        .per_process
                        .iter()
                        .find(|(p, _)| p == pid)
                        .map_or(0, |(_, then)| *then),
                )
            })
            .sum();
        match (self.usage_ns, earlier.usage_ns) {
            (Some(now), Some(then)) if now.saturating_sub(then) > exact + EXITED_WORK_NS => {
                now.saturating_sub(then) as f64
            }
            _ => exact as f64,
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.kill_all(Duration::from_secs(5));
        for dir in self.v2.iter().chain(&self.v1) {
            // A cgroup can be removed once its last process has been reaped; that can lag the kill.
            for _ in 0..200 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}
