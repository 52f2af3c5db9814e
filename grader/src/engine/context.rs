//! What a plan needs before it starts: the configuration, the tools, the GPU, the -arch, the
//! harness, and the launcher every job goes through.

use std::path::PathBuf;

use crate::engine::config::Config;
use crate::exercise::manifest::{Capability, LoadedManifest};
use crate::exercise::workbook::Workbook;
use crate::tools::gpu::{self, GpuInfo, GpuStatus};
use crate::tools::launcher::{Launcher, Recorder, Replay, Sandboxed, StrictUnavailable};
use crate::tools::nvcc::{self, Harness};
use crate::tools::runner::{self, Job};
use crate::tools::sandbox::Level;
use crate::tools::stub_compiler::{self, StubCompiler};
use crate::tools::toolchain::{self, Toolchain};

/// The -arch used when no GPU tells us better (H100/H200).
pub const DEFAULT_ARCH: &str = "sm_90";

/// The file in a recording that names the GPU it was made on.
pub const RECORDED_GPU: &str = "gpu.json";

/// The file in a recording that names how its timed runs were made: a recording of another kind
/// cannot be replayed (its timed jobs wrote other files).
pub const RECORDED_PROTOCOL: &str = "protocol";
/// The timed runs served, clocked and checked by the grader (`tools::served`).
pub const PROTOCOL: &str = "served-calls 1";

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("no nvcc found (looked at $CUDABUGS_NVCC, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin and {local}).\n\
             Get one with: cargo xtask toolkit install   (pinned nvcc 13.0 wheels from PyPI into {local})")]
    NoNvcc { local: String },
    #[error("installing nvcc failed: {0}")]
    Install(#[from] toolchain::InstallError),
    #[error("preparing the harness failed: {0}")]
    Harness(#[from] nvcc::BuildError),
    #[error(transparent)]
    Strict(#[from] StrictUnavailable),
    #[error("the tool recording in {0}: {1}")]
    Recording(PathBuf, String),
    #[error("CUDABUGS_STUB_COMPILER makes placeholders, not programs: it needs --replay-tools DIR, a recording that serves every run")]
    StubWithoutReplay,
}

pub struct Context {
    pub config: Config,
    pub tools: Toolchain,
    pub nvcc: toolchain::Nvcc,
    pub gpu: GpuStatus,
    pub arch: String,
    pub harness: Harness,
    /// Where builds are kept by their inputs (hidden from every sandboxed run).
    pub build_cache: Option<nvcc::BuildCache>,
    /// How every job runs: sandboxed, recorded or replayed.
    pub launcher: Box<dyn Launcher>,
    /// Whether the driver lets the sandbox's unprivileged ncu read the GPU's counters.
    pub counters: gpu::CounterAccess,
    /// Where every analysed text's compiled reach is kept: beside the build cache, else
    /// `Workbook::reach_cache_dir`.
    pub reach_cache: std::path::PathBuf,
    /// Where the engine tells each phase's start and each stage's end (none: nowhere).
    pub events: Option<crate::engine::events::EventSink>,
    /// The harness object's own cubins, by content (`tools::sass::harness_cubins`): read once, on
    /// the first SASS stage, and not disassembled in any binary that links them.
    pub harness_cubins: std::sync::OnceLock<std::collections::HashSet<blake3::Hash>>,
}

/// How a `Context` is made: each part found on this machine unless given (a test gives a faked
/// GPU and tools that do not exist; a plan never builds a context by hand).
pub struct ContextBuilder<'a> {
    wb: &'a Workbook,
    config: Config,
    compiler: Option<(toolchain::Nvcc, Harness)>,
    gpu: Option<GpuStatus>,
}

/// Where the jobs go and what GPU they see: live, recorded as they run, or served from a recording
/// (whose `gpu.json` names the GPU it was made on).
enum RunMode {
    Live,
    Recorded(PathBuf),
    Replayed(PathBuf),
}

impl Context {
    /// Everything found on this machine: the toolchain (installed where `config` allows), the GPU,
    /// the harness, the launcher.
    pub fn new(
        wb: &Workbook,
        config: Config,
        say: impl FnMut(&str),
    ) -> Result<Context, ContextError> {
        Context::builder(wb, config).build(say)
    }

    pub fn builder(wb: &Workbook, config: Config) -> ContextBuilder<'_> {
        ContextBuilder {
            wb,
            config,
            compiler: None,
            gpu: None,
        }
    }

    /// Why ncu cannot time learner code here, where it cannot: the driver keeps the counters for
    /// administrators, and learner code (ncu around it included) never runs as one.
    pub fn counters_refused(&self) -> Option<String> {
        // SAFETY: geteuid cannot fail.
        let unprivileged =
            self.isolation() > Level::ProcessGroup || unsafe { libc::geteuid() } != 0;
        (self.counters == gpu::CounterAccess::AdminOnly && unprivileged).then(|| {
            "this machine's NVIDIA driver lets only administrators read the GPU's performance counters (RmProfilingAdminOnly: 1 in /proc/driver/nvidia/params), and learner code never runs as one: the timing cannot be graded here. An administrator can open the counters to every user with `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in a file under /etc/modprobe.d/, then reloading the driver (NVIDIA's ERR_NVGPUCTRPERM page)".to_string()
        })
    }

    /// Who learner code runs as here, and whether ncu can read the counters as that user: said at
    /// the start of `check` and `grade`.
    pub fn trust_line(&self) -> String {
        // SAFETY: geteuid cannot fail.
        let who = match (self.isolation(), unsafe { libc::geteuid() } == 0) {
            (Level::ProcessGroup, _) => "as the grader's own user (--isolation none)".to_string(),
            (_, true) => format!("as uid {} with no capability, no_new_privs and a system-call filter", self.config.sandbox_user.uid),
            (_, false) => "as the grader's user mapped to a root with no capability, no_new_privs and a system-call filter".to_string(),
        };
        let counters = match (self.counters, self.counters_refused()) {
            (_, Some(_)) => "the driver keeps the GPU's counters for administrators: timing cannot be graded here (NVreg_RestrictProfilingToAdminUsers=0 opens them)",
            (gpu::CounterAccess::Open, None) => "the driver lets every user read the GPU's counters",
            _ => "the driver's counter setting is unknown",
        };
        format!("learner code runs {who}; {counters}")
    }

    /// How every nvcc build of this context is made: the compiler, -arch, harness and time limit.
    pub fn recipe(&self) -> crate::tools::nvcc::Recipe<'_> {
        crate::tools::nvcc::Recipe {
            nvcc: &self.nvcc,
            arch: &self.arch,
            harness: &self.harness,
            timeout: self.config.timeouts.build,
            cache: self.build_cache.as_ref(),
        }
    }

    /// What the sandbox gives learner code here, in words.
    pub fn isolation(&self) -> Level {
        self.launcher.isolation()
    }

    pub fn gpu_info(&self) -> Option<&GpuInfo> {
        match &self.gpu {
            GpuStatus::Present(info) => Some(info),
            _ => None,
        }
    }

    /// What a run that shares the GPU with the others of a plan may hold of its memory: an even
    /// share among `gpu_jobs` runs at once (a grade's lanes are as many as keep their chunks' runs
    /// within `gpu_jobs`: `plans::grade::class::lanes`). None where nothing runs on a GPU here or
    /// the driver's count (NVML) cannot be read.
    pub fn gpu_memory_share(&self) -> Option<crate::tools::gpu_memory::GpuMemoryWatch> {
        if self.launcher.replays() {
            return None;
        }
        let total = self.gpu_info()?.memory_bytes as u64;
        let share = total / self.config.gpu_jobs.max(1) as u64;
        crate::tools::gpu_memory::GpuMemoryWatch::from_driver(share, total)
    }

    /// Why `m` cannot run on this GPU, where it needs a newer one (`requires`).
    pub fn unsupported(&self, m: &LoadedManifest) -> Option<String> {
        below_requirement(&self.gpu, m)
    }

    /// Why the GPU stages cannot run here, if they cannot: decided here for every plan. A recording
    /// stands in for a GPU; otherwise this process must see a usable one.
    pub fn gpu_blocked(&self) -> Option<String> {
        if self.launcher.replays() {
            None
        } else {
            self.no_gpu_reason()
        }
    }

    /// Whether the GPU stages can run here (`gpu_blocked`).
    pub fn gpu_stages(&self) -> bool {
        self.gpu_blocked().is_none()
    }

    /// Why this process sees no usable GPU, if it does not (a replay may still stand in for one:
    /// see `gpu_blocked`).
    pub fn no_gpu_reason(&self) -> Option<String> {
        match &self.gpu {
            GpuStatus::Present(_) => None,
            GpuStatus::NoDriver => Some("no NVIDIA driver on this machine: the sanitizer, correctness and timing steps need a GPU".into()),
            GpuStatus::Unusable(e) => Some(format!("the GPU cannot be used ({e}): the remaining steps need one")),
        }
    }
}

impl ContextBuilder<'_> {
    /// This nvcc and harness, not the ones found or installed (nothing is built with them here).
    pub fn compiler(mut self, nvcc: toolchain::Nvcc, harness: Harness) -> Self {
        self.compiler = Some((nvcc, harness));
        self
    }

    /// A compiler and harness that do not exist: for tests of what a plan decides before anything
    /// is built (a build would fail, so a pass shows none ran).
    pub fn no_compiler(self) -> Self {
        let missing = PathBuf::from("/nonexistent/nvcc");
        let nvcc = toolchain::Nvcc {
            path: missing.clone(),
            extra_flags: Vec::new(),
            cupti: None,
        };
        let harness = Harness {
            include_dir: missing.clone(),
            object: missing,
        };
        self.compiler(nvcc, harness)
    }

    /// This GPU, not the one probed (a replay's GPU is still the recording's).
    pub fn gpu(mut self, gpu: GpuStatus) -> Self {
        self.gpu = Some(gpu);
        self
    }

    pub fn build(self, mut say: impl FnMut(&str)) -> Result<Context, ContextError> {
        let ContextBuilder {
            wb,
            config,
            compiler,
            gpu,
        } = self;
        // The stub compiler stands in for nvcc only where a recording serves every run.
        let stub = config.stub_compiler;
        let compiler = match (stub, &config.replay_tools) {
            (true, None) => return Err(ContextError::StubWithoutReplay),
            (true, Some(_)) => Some(stub_compiler::toolchain(wb.harness, &wb.harness_dir())?),
            (false, _) => compiler,
        };
        let mut tools = toolchain_for(wb, &config, compiler.is_some(), &mut say)?;
        if stub {
            tools.objdump = Some(stub_compiler::OBJDUMP.into());
            tools.cuobjdump = Some(stub_compiler::CUOBJDUMP.into());
        }
        let nvcc = match &compiler {
            Some((given, _)) => given.clone(),
            None => tools.nvcc.clone().ok_or_else(|| ContextError::NoNvcc {
                local: wb.root.join(toolchain::LOCAL_TOOLKIT).display().to_string(),
            })?,
        };
        let runs = match (&config.replay_tools, &config.record_tools) {
            (Some(dir), _) => RunMode::Replayed(dir.clone()),
            (None, Some(dir)) => RunMode::Recorded(dir.clone()),
            (None, None) => RunMode::Live,
        };
        let sandboxed = Sandboxed::for_isolation(config.isolation)?;
        let gpu = match (&runs, gpu) {
            (RunMode::Replayed(dir), _) => GpuStatus::Present(recorded_gpu(dir)?),
            (_, Some(gpu)) => gpu,
            (_, None) => gpu::probe(),
        };
        let launcher: Box<dyn Launcher> = match &runs {
            RunMode::Replayed(dir) => {
                // The tools ran where the recording was made; here they are only names.
                tools
                    .sanitizer
                    .get_or_insert_with(|| "compute-sanitizer".into());
                tools.ncu.get_or_insert_with(|| "ncu".into());
                let recording =
                    |e: std::io::Error| ContextError::Recording(dir.clone(), e.to_string());
                if stub {
                    let builds = StubCompiler { inner: sandboxed };
                    Box::new(Replay::open(dir, &wb.root, builds).map_err(recording)?)
                } else {
                    Box::new(Replay::open(dir, &wb.root, sandboxed).map_err(recording)?)
                }
            }
            RunMode::Recorded(dir) => {
                start_recording(dir, &gpu);
                Box::new(Recorder {
                    inner: sandboxed,
                    dir: dir.clone(),
                    root: wb.root.clone(),
                })
            }
            RunMode::Live => Box::new(sandboxed),
        };
        let arch = config.arch.clone().unwrap_or_else(|| match &gpu {
            GpuStatus::Present(info) => info.arch(),
            _ => DEFAULT_ARCH.to_string(),
        });
        let (harness, build_cache) = match compiler {
            Some((_, harness)) => (harness, None),
            None => {
                let harness = nvcc::prepare_harness(&nvcc, wb.harness, &wb.harness_dir())?;
                let build_cache =
                    nvcc::BuildCache::for_workbook(wb.build_cache_dir(), &wb.work_dir());
                // Made now, so that every sandboxed run finds it there to hide.
                let _ = std::fs::create_dir_all(&build_cache.dir);
                (harness, Some(build_cache))
            }
        };
        let counters = if launcher.replays() {
            gpu::CounterAccess::Open
        } else {
            gpu::counters()
        };
        Ok(Context {
            config,
            tools,
            nvcc,
            gpu,
            arch,
            harness,
            // Beside the builds it describes, where they are kept (and hidden from every run).
            reach_cache: build_cache
                .as_ref()
                .map_or_else(|| wb.reach_cache_dir(), |c| c.dir.join("reach")),
            build_cache,
            launcher,
            counters,
            events: None,
            harness_cubins: std::sync::OnceLock::new(),
        })
    }
}

/// The tools found here; nvcc installed first where none is found, none is given and `config`
/// allows it.
fn toolchain_for(
    wb: &Workbook,
    config: &Config,
    given_nvcc: bool,
    say: &mut impl FnMut(&str),
) -> Result<Toolchain, ContextError> {
    let tools = Toolchain::discover(&wb.root);
    if tools.nvcc.is_some() || given_nvcc || !config.install_toolkit {
        return Ok(tools);
    }
    say(&format!(
        "no nvcc found: installing the pinned nvcc 13.0 wheels from PyPI into {} (once; set CUDABUGS_NO_INSTALL=1 to stop this)",
        toolchain::LOCAL_TOOLKIT
    ));
    let started = std::time::Instant::now();
    toolchain::install(&wb.root, |mb| {
        say(&format!(
            "nvcc wheels: {mb} MB of about {} MB unpacked",
            toolchain::INSTALLED_MB
        ))
    })?;
    say(&format!(
        "nvcc installed into {} in {:.0} s",
        toolchain::LOCAL_TOOLKIT,
        started.elapsed().as_secs_f64()
    ));
    Ok(Toolchain::discover(&wb.root))
}

/// The GPU a recording was made on, where it is one this grader can replay.
fn recorded_gpu(dir: &std::path::Path) -> Result<GpuInfo, ContextError> {
    let bad = |e: String| ContextError::Recording(dir.to_path_buf(), e);
    let protocol = std::fs::read_to_string(dir.join(RECORDED_PROTOCOL)).unwrap_or_default();
    if protocol.trim() != PROTOCOL {
        return Err(bad(format!("made before the grader served the timed calls itself ({RECORDED_PROTOCOL}: {:?}, this grader: {PROTOCOL:?}): record it again on a GPU", protocol.trim())));
    }
    let text = std::fs::read_to_string(dir.join(RECORDED_GPU))
        .map_err(|e| bad(format!("{RECORDED_GPU}: {e}")))?;
    serde_json::from_str(&text).map_err(|e| bad(format!("{RECORDED_GPU}: {e}")))
}

/// A new recording names its GPU and protocol first (where there is a GPU to record on).
fn start_recording(dir: &std::path::Path, gpu: &GpuStatus) {
    if let GpuStatus::Present(info) = gpu {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(
            dir.join(RECORDED_GPU),
            serde_json::to_string_pretty(info).unwrap_or_default(),
        );
        let _ = std::fs::write(dir.join(RECORDED_PROTOCOL), format!("{PROTOCOL}\n"));
    }
}

/// The capability gate, decided here for every plan: why an exercise cannot run on this GPU,
/// "needs compute capability 9.0 (Hopper); this GPU, NVIDIA A100, is 8.0". None where it can, and
/// where there is no GPU at all: then it builds like any other (the default -arch is sm_90) and
/// its GPU steps are skipped for want of a GPU.
pub fn below_requirement(gpu: &GpuStatus, m: &LoadedManifest) -> Option<String> {
    let (needed, GpuStatus::Present(info)) = (m.requires()?, gpu) else {
        return None;
    };
    let (major, minor) = info.compute_capability;
    let here = Capability {
        major: major.max(0) as u32,
        minor: minor.max(0) as u32,
    };
    (here < needed).then(|| {
        format!(
            "needs compute capability {needed} ({}); this GPU, {}, is {here}",
            needed.family(),
            info.name
        )
    })
}

/// The NVIDIA driver's version string (e.g. "580.159.04"), from nvidia-smi where it exists.
pub fn driver_version() -> Option<String> {
    // Asked once a process: the driver does not change under a running grader.
    static DRIVER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    DRIVER
        .get_or_init(|| {
            let smi = which::which("nvidia-smi").ok()?;
            let job = Job::new(smi, std::time::Duration::from_secs(30))
                .args(["--query-gpu=driver_version", "--format=csv,noheader"]);
            let done = runner::run(&job).ok().filter(|d| d.success())?;
            done.stdout
                .text()
                .lines()
                .next()
                .map(|l| l.trim().to_string())
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A workbook with no exercise: nothing here builds or runs.
    fn workbook(root: &Path) -> Workbook {
        Workbook::new(root.to_path_buf(), &[], &[]).unwrap()
    }

    fn h100() -> GpuInfo {
        GpuInfo {
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            memory_bytes: 80 << 30,
            driver_cuda_version: "13.0".into(),
        }
    }

    fn quiet() -> Config {
        Config {
            install_toolkit: false,
            ..Config::default()
        }
    }

    #[test]
    fn a_replay_stands_in_for_the_gpu_it_was_recorded_on() {
        let (dir, recording) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let wb = workbook(dir.path());
        start_recording(recording.path(), &GpuStatus::Present(h100()));
        let config = Config {
            replay_tools: Some(recording.path().to_path_buf()),
            ..quiet()
        };
        // The GPU given (none here) does not count: the recording's does.
        let ctx = Context::builder(&wb, config)
            .no_compiler()
            .gpu(GpuStatus::NoDriver)
            .build(|_| {})
            .unwrap();
        assert!(ctx.launcher.replays());
        assert_eq!(
            ctx.gpu_info().map(|g| g.name.as_str()),
            Some("NVIDIA H100 80GB HBM3")
        );
        assert_eq!((ctx.arch.as_str(), ctx.gpu_blocked()), ("sm_90", None));
        assert_eq!(
            ctx.counters,
            gpu::CounterAccess::Open,
            "the recording read them"
        );
        assert_eq!(
            ctx.tools.sanitizer.as_deref(),
            Some(Path::new("compute-sanitizer")),
            "the tools are names where they ran elsewhere"
        );
    }

    #[test]
    fn a_recording_of_another_protocol_or_with_no_gpu_is_refused_and_says_why() {
        let (dir, recording) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let wb = workbook(dir.path());
        let replay = || Config {
            replay_tools: Some(recording.path().to_path_buf()),
            ..quiet()
        };
        let why = |config| {
            let built = Context::builder(&wb, config).no_compiler().build(|_| {});
            built.err().map(|e| e.to_string()).unwrap_or_default()
        };
        std::fs::write(recording.path().join(RECORDED_PROTOCOL), "timeline 0\n").unwrap();
        assert!(
            why(replay()).contains("record it again on a GPU"),
            "{}",
            why(replay())
        );
        std::fs::write(
            recording.path().join(RECORDED_PROTOCOL),
            format!("{PROTOCOL}\n"),
        )
        .unwrap();
        assert!(why(replay()).contains(RECORDED_GPU), "{}", why(replay()));
    }

    #[test]
    fn without_a_gpu_the_gpu_stages_are_blocked_and_say_why_once_for_every_plan() {
        let dir = tempfile::tempdir().unwrap();
        let wb = workbook(dir.path());
        let ctx = Context::builder(&wb, quiet())
            .no_compiler()
            .gpu(GpuStatus::NoDriver)
            .build(|_| {})
            .unwrap();
        assert!(!ctx.launcher.replays() && !ctx.gpu_stages());
        assert!(ctx.gpu_blocked().unwrap().contains("no NVIDIA driver"));
        assert_eq!(ctx.arch, DEFAULT_ARCH, "built for the default arch");

        let on_h100 = Context::builder(&wb, quiet())
            .no_compiler()
            .gpu(GpuStatus::Present(h100()))
            .build(|_| {})
            .unwrap();
        assert_eq!(
            (on_h100.arch.as_str(), on_h100.gpu_stages()),
            ("sm_90", true)
        );
    }
}
