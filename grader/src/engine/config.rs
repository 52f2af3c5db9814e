//! One configuration for every plan: timeouts, how much runs at once, the sandbox and its limits.
//! The command line fills it; environment variables only feed it (`Config::from_env`), and nothing
//! below reads the environment for these settings again.

use std::path::PathBuf;
use std::time::Duration;

use crate::tools::sandbox::{Isolation, Limits, SandboxUser};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// One nvcc build.
    pub build: Duration,
    /// One compute-sanitizer run (a hung kernel waits this long).
    pub tool: Duration,
    /// One plain run of a program (correctness).
    pub run: Duration,
    /// One ncu process.
    pub ncu: Duration,
    /// A timed program's start until it is ready for its first call, and (a whole call's run) its
    /// end after its last call (`tools::served::Margins`): it has the GPU alone then. An honest
    /// one takes 0.2-0.3 s to start, 1 s under ncu (H100).
    pub margin: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            build: Duration::from_secs(180),
            tool: Duration::from_secs(180),
            run: Duration::from_secs(60),
            ncu: Duration::from_secs(400),
            margin: Duration::from_secs(20),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub timeouts: Timeouts,
    /// Builds at once (the CPU cores).
    pub cpu_jobs: usize,
    /// Sanitizer and program runs at once on the GPU: they share it and the cores, which their
    /// start-up mostly uses. On an H200 with five exercises 8 beat 16 (9.4 s against 10.0-12.3 s);
    /// on an H100 with seventeen, verify took 56.6-61.0 s with 6, 60.4-62.6 with 4, 59.8-67.6 with
    /// 8 and 61.6-69.3 with 12 (scripts/gpu-verify-jobs.sh). Still so with one hardware queue per
    /// sanitizer run: verify of 66 took 193.0 s with 6, and 198.8 s with 6 that grew to 16 once
    /// the builds were done (the program runs' own time tripled: the driver, not the cores, is
    /// what they wait for; book/gpu-runs/2026-11-26-perf-seconds-2/).
    pub gpu_jobs: usize,
    /// ncu processes at once. ncu serialises the profiled kernels of all its instances through one
    /// lock file, so the kernels are still timed one at a time; what overlaps is each process's
    /// start-up (4 at a time took verify's ncu phase from 29.6 s to 15.2 s on an H200, with the
    /// same times within 2%; 3, 6 and 10 all took 14.5-16.5 s).
    pub ncu_jobs: usize,
    /// Chunks one `grade` worker grades side by side (`CUDABUGS_GRADE_LANES`; None: as many as its
    /// chunks' size allows, `plans::grade::class::lanes`).
    pub grade_lanes: Option<usize>,
    /// `CUDA_VISIBLE_DEVICES` for every GPU stage (None: whatever the environment says).
    pub gpu: Option<String>,
    pub isolation: Isolation,
    pub limits: Limits,
    /// Who learner code runs as when the grader is root (`CUDABUGS_SANDBOX_UID`, `..._GID`).
    pub sandbox_user: SandboxUser,
    /// nvcc -arch (default: the GPU's, else sm_90).
    pub arch: Option<String>,
    /// Install the pinned nvcc wheels when no nvcc is found.
    pub install_toolkit: bool,
    /// Keep every tool run's output here (a recording, for fixtures and replay).
    pub record_tools: Option<PathBuf>,
    /// Serve tool runs from this recording instead of running them (CPU-only machines, tests).
    pub replay_tools: Option<PathBuf>,
    /// Builds made by the stub compiler (`tools::stub_compiler`), not nvcc: only with
    /// `replay_tools`, where a recording serves every run (`CUDABUGS_STUB_COMPILER=1`).
    pub stub_compiler: bool,
    /// Folders and files no sandboxed run may see besides the workbook's own (`grade`: the class's
    /// submissions, the gradebook, the instructor's secret file).
    pub hidden: Vec<PathBuf>,
    /// Settings the environment gave, which a plan's own defaults must not override.
    pub from_env: FromEnv,
    /// Timing also collects what the anti-cheat rules read (DRAM bytes read, instructions) and
    /// profiles every kernel, named or not. On for every plan, so that `check` fails a cheat for
    /// the reason `grade` does.
    pub audit: bool,
    /// The bug track's kernels timed from the driver's records of the plain calls instead of under
    /// ncu (`plan::Timer::Driver`): `grade`, which times a class and needs only "within the
    /// target of the reference fix". Off for `check` and `verify`, whose reports and records give
    /// ncu's times, as the lessons do.
    pub plain_kernel_timing: bool,
    /// Every sanitizer run gets `CUDA_DEVICE_MAX_CONNECTIONS=1`: one hardware queue per context
    /// instead of eight. The driver makes and tears down contexts one at a time across the whole
    /// machine, and the queues are most of that work: on an H100 sanitizer runs finished 9.6-10.2
    /// a second with one connection against 4.4-4.7 without (bare processes 12.4 against 5.1;
    /// `scripts/gpu-startup-bench.py --set variants`). The sanitizer runs in every plan: the tools
    /// serialise a program's kernels anyway, whereas a run whose outputs are judged keeps the
    /// queues its streams need, so that a race between streams (32-event-stream) shows as it
    /// would outside the grader (but see `cases_one_connection`). On in every plan;
    /// `CUDABUGS_ONE_CONNECTION=0` turns it off (to measure what it saves), and
    /// `cases_one_connection` with it.
    pub one_connection: bool,
    /// The runs of the public and hidden cases get one hardware queue too: `grade`, where every
    /// timed pair has its outputs judged again under CUDA's eight queues (each timed call's,
    /// `Rule::TimedOutputs`, and the fresh inputs' after them, `Rule::FreshInputs`, both of which
    /// withhold the cases' points); a pair that is not timed has its tool's finding or wrong
    /// outputs against it already. On an H200, 16 programs started at once took 1.2 s with one
    /// queue against 3.3 s with eight, and the bug bench of 10 x 6 pairs 81.9-90.0 s against
    /// 103.1-107.7 s, with the same grades (`book/gpu-runs/2026-12-01-start-50/`). Off for
    /// `check` and `verify`, whose cases' verdict is what a learner reads: a race between streams
    /// shows there first.
    pub cases_one_connection: bool,
    /// Whole cores a `grade` worker's timed calls get to themselves (`tools::cpus`;
    /// `CUDABUGS_TIMED_CORES`, 0: none).
    pub timed_cores: usize,
    /// This worker's CPUs for its timed calls and for the rest (`plans::grade::configure_worker`);
    /// empty elsewhere: nothing is pinned.
    pub cpus: crate::tools::cpus::CpuShare,
}

impl Default for Config {
    fn default() -> Config {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        Config {
            timeouts: Timeouts::default(),
            cpu_jobs: cores,
            gpu_jobs: cores.min(6),
            ncu_jobs: 4,
            grade_lanes: None,
            gpu: None,
            isolation: Isolation::Auto,
            limits: Limits {
                memory_bytes: Some(default_memory_limit()),
                ..Limits::default()
            },
            sandbox_user: SandboxUser::default(),
            arch: None,
            install_toolkit: true,
            record_tools: None,
            replay_tools: None,
            stub_compiler: false,
            hidden: Vec::new(),
            from_env: FromEnv::default(),
            audit: true,
            plain_kernel_timing: false,
            one_connection: true,
            cases_one_connection: false,
            timed_cores: crate::tools::cpus::TIMED_CORES,
            cpus: Default::default(),
        }
    }
}

/// A quarter of the machine's memory, between 2 and 32 GiB: room for eight sanitizer runs at once.
fn default_memory_limit() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines().find_map(|l| {
                l.strip_prefix("MemTotal:")
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
        })
        .map(|kb| kb * 1024)
        .unwrap_or(16 << 30);
    (total / 4).clamp(2 << 30, 32 << 30)
}

/// Which settings `Config::from_env` took from the environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct FromEnv {
    pub timeouts: bool,
    pub gpu_jobs: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("{var}={value}: {why}")]
pub struct EnvError {
    pub var: &'static str,
    pub value: String,
    pub why: String,
}

impl Config {
    /// The defaults, with the environment's overrides: `CUDABUGS_TIMEOUT_SECS` (every per-run
    /// limit), `CUDABUGS_SANITIZER_JOBS`, `CUDABUGS_NCU_JOBS`, `CUDABUGS_ISOLATION`,
    /// `CUDABUGS_MEMORY_MAX_MB`, `CUDABUGS_SANDBOX_UID`, `CUDABUGS_SANDBOX_GID`, `CUDABUGS_NO_INSTALL`,
    /// `CUDABUGS_ONE_CONNECTION`, `CUDABUGS_GRADE_LANES`, `CUDABUGS_STUB_COMPILER`,
    /// `CUDABUGS_TIMED_CORES`.
    pub fn from_env() -> Result<Config, EnvError> {
        let mut c = Config::default();
        fn get<T: std::str::FromStr>(var: &'static str) -> Result<Option<T>, EnvError> {
            match crate::environment::text(var) {
                None => Ok(None),
                Some(v) => v.trim().parse().map(Some).map_err(|_| EnvError {
                    var,
                    value: v.clone(),
                    why: "not a valid value".into(),
                }),
            }
        }
        if let Some(secs) = get::<u64>("CUDABUGS_TIMEOUT_SECS")? {
            let d = Duration::from_secs(secs);
            c.timeouts.tool = d;
            c.timeouts.run = d;
            c.from_env.timeouts = true;
        }
        if let Some(n) = get::<usize>("CUDABUGS_SANITIZER_JOBS")? {
            c.gpu_jobs = n.clamp(1, 64);
            c.from_env.gpu_jobs = true;
        }
        if let Some(n) = get::<usize>("CUDABUGS_NCU_JOBS")? {
            c.ncu_jobs = n.clamp(1, 16);
        }
        if let Some(n) = get::<usize>("CUDABUGS_GRADE_LANES")? {
            c.grade_lanes = Some(n.clamp(1, 8));
        }
        if let Some(v) = crate::environment::text("CUDABUGS_ISOLATION") {
            c.isolation = v.parse::<Isolation>().map_err(|why| EnvError {
                var: "CUDABUGS_ISOLATION",
                value: v.clone(),
                why: why.to_string(),
            })?;
        }
        if let Some(uid) = get::<u32>("CUDABUGS_SANDBOX_UID")? {
            if uid == 0 {
                return Err(EnvError {
                    var: "CUDABUGS_SANDBOX_UID",
                    value: "0".into(),
                    why: "learner code never runs as root".into(),
                });
            }
            c.sandbox_user = SandboxUser { uid, gid: uid };
        }
        if let Some(gid) = get::<u32>("CUDABUGS_SANDBOX_GID")? {
            c.sandbox_user.gid = gid;
        }
        // Group root reads what root's group may: as much a way out as the user.
        if c.sandbox_user.gid == 0 {
            return Err(EnvError {
                var: "CUDABUGS_SANDBOX_GID",
                value: "0".into(),
                why: "learner code never runs in group root".into(),
            });
        }
        if let Some(mb) = get::<u64>("CUDABUGS_MEMORY_MAX_MB")? {
            c.limits.memory_bytes = Some(mb << 20);
        }
        if let Some(on) = get::<u8>("CUDABUGS_ONE_CONNECTION")? {
            c.one_connection = on != 0;
        }
        if let Some(n) = get::<usize>("CUDABUGS_TIMED_CORES")? {
            c.timed_cores = n.min(64);
        }
        c.install_toolkit = !crate::environment::is_set("CUDABUGS_NO_INSTALL");
        c.stub_compiler = crate::environment::is_set("CUDABUGS_STUB_COMPILER");
        Ok(c)
    }
}
