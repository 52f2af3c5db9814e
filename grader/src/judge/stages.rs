//! What each kind of stage does to a submission: build it, run it under a sanitizer tool, run it on
//! the cases, time it with ncu. Every job that runs the submission's code (nvcc on its text, the
//! program, the tool around it) goes through the launcher with the submission's confinement. A
//! stage only runs and collects; the verdicts are `verdict.rs`'s.

use std::path::{Path, PathBuf};

use crate::exercise::cases;
use crate::exercise::manifest::{Detector, Tool};
use crate::exercise::workbook::Workbook;
use crate::judge::context::Context;
use crate::judge::findings::{findings_in, Finding};
use crate::judge::plan::{Stage, StageKind, Submission, Target};
use crate::tools::ncu::{self, Measured};
use crate::tools::nvcc::{self, BuildError, Built, Flavor};
use crate::tools::runner::{Finished, Job, SpawnError};
use crate::tools::sandbox::Confinement;
use crate::tools::sanitizer::{self, ToolRun};
use crate::tools::served::{self, CallTimes, Served};

/// Why a stage did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocked {
    /// The build it needs failed (and says so).
    BuildFailed,
    /// No usable GPU: the reason.
    NoGpu(String),
    /// A tool was not found: its name.
    Missing(&'static str),
    /// The stage does not apply to this target (a plan asked for it by mistake): why.
    NotApplicable(&'static str),
    /// The grader could not prepare what the stage needs (the timed calls' shared memory): why.
    Setup(String),
}

/// What a run was held to, and what the exercise says a run that stopped means: its time limit,
/// and for an exercise whose bug hangs or crashes, the detector and the region that says where.
#[derive(Debug, Clone)]
pub struct Bounds {
    pub limit: std::time::Duration,
    pub detector: Detector,
    /// "region `wait` (sum.cu:12-30)"; none for a program.
    pub region: Option<String>,
    /// A tool run again alone because it timed out beside other runs while the program's own
    /// plain run finished (the scheduler's stall rule).
    pub after_stall: bool,
}

impl Bounds {
    /// A run with nothing expected of it but to finish within `limit`.
    pub fn plain(limit: std::time::Duration) -> Bounds {
        Bounds {
            limit,
            detector: Detector::Sanitizer,
            region: None,
            after_stall: false,
        }
    }

    /// A submission's run: the general `limit`, or the hang's own where the text is the untouched
    /// hang exercise.
    pub fn of(sub: &Submission, limit: std::time::Duration) -> Bounds {
        Bounds {
            limit: sub.hang_limit().map_or(limit, |h| h.min(limit)),
            detector: sub
                .exercise()
                .map(|e| e.manifest.detector())
                .unwrap_or_default(),
            region: sub.region_text(),
            after_stall: false,
        }
    }
}

/// What one stage produced, before any verdict.
#[derive(Debug)]
pub enum Output {
    Built(Result<Built, BuildError>),
    Sanitized {
        tool: Tool,
        run: Result<ToolRun, sanitizer::RunError>,
        findings: Vec<Finding>,
        bounds: Bounds,
    },
    Ran {
        command: String,
        run: Result<Finished, SpawnError>,
        outputs: Vec<PathBuf>,
        bounds: Bounds,
    },
    /// ncu's measurement of the served calls, what the grader saw of them (`calls`) and each
    /// call's outputs as the grader took them (compared with the reference fix's, call by call).
    Timed {
        target: ncu::Target,
        measured: Result<Measured, ncu::RunError>,
        calls: Option<CallTimes>,
        outputs: Vec<PathBuf>,
        /// Served from the measurements kept between checks (`judge::kept`), not run now.
        kept: bool,
    },
    /// The call timing: each whole call on the grader's clock (None, with `failure`, where the run
    /// failed or the grader recorded nothing) and each call's outputs.
    /// Where the clock is the call, the operations of the call recorded after them.
    Called {
        command: String,
        run: Result<Finished, SpawnError>,
        times: Option<CallTimes>,
        timeline: Option<crate::tools::timeline::Timeline>,
        outputs: Vec<PathBuf>,
        failure: Option<String>,
        /// Served from the measurements kept between checks (`judge::kept`), not run now.
        kept: bool,
    },
    /// `sanitize --profile`: every launch's metrics, or why there are none.
    Profiled {
        command: String,
        run: Result<Finished, SpawnError>,
        launches: Result<Vec<ncu::LaunchMetrics>, String>,
    },
    /// The release build's clock reads, or why they could not be read.
    Sass {
        reads: Result<Vec<crate::tools::sass::SassClockRead>, String>,
    },
    NotRun(Blocked),
}

impl Output {
    /// A copy of a timed stage's run that was made now (not served from what was kept, which keeps
    /// no call's outputs) and ran: what another subject with the very same binary would have got
    /// from the same served calls. None for anything else.
    pub fn copy_of_fresh_run(&self) -> Option<Output> {
        match self {
            Output::Timed {
                target,
                measured: Ok(m),
                calls,
                outputs,
                kept: false,
            } => Some(Output::Timed {
                target: target.clone(),
                measured: Ok(m.clone()),
                calls: calls.clone(),
                outputs: outputs.clone(),
                kept: false,
            }),
            Output::Called {
                command,
                run: Ok(f),
                times,
                timeline,
                outputs,
                failure,
                kept: false,
            } => Some(Output::Called {
                command: command.clone(),
                run: Ok(f.clone()),
                times: times.clone(),
                timeline: timeline.clone(),
                outputs: outputs.clone(),
                failure: failure.clone(),
                kept: false,
            }),
            _ => None,
        }
    }

    /// Whether a timed stage's run was served from the measurements kept between checks.
    pub fn was_kept(&self) -> bool {
        matches!(
            self,
            Output::Timed { kept: true, .. } | Output::Called { kept: true, .. }
        )
    }

    /// What ncu measured, where the timing ran (whether or not it timed anything).
    pub fn measured(&self) -> Option<&Measured> {
        match self {
            Output::Timed {
                measured: Ok(m), ..
            } => Some(m),
            _ => None,
        }
    }
}

/// A stage's name in the files it writes: "timing-1", "sanitize-racecheck".
fn file_tag(stage: &Stage) -> String {
    stage.id().replace(['#', ':'], "-")
}

impl Output {
    /// How long the stage's process ran (a build's nvcc, a tool with the program under it); None
    /// where nothing ran.
    pub fn wall(&self) -> Option<std::time::Duration> {
        match self {
            Output::Built(Ok(b)) => Some(b.wall),
            _ => self.finished().map(|f| f.wall),
        }
    }

    /// How the stage's process ended, where one ran (a build's nvcc excepted: see `built`).
    pub fn finished(&self) -> Option<&Finished> {
        match self {
            Output::Sanitized { run: Ok(r), .. } => Some(&r.finished),
            Output::Ran { run: Ok(f), .. }
            | Output::Called { run: Ok(f), .. }
            | Output::Profiled { run: Ok(f), .. } => Some(f),
            Output::Timed {
                measured: Ok(m), ..
            } => Some(&m.finished),
            _ => None,
        }
    }

    pub fn built(&self) -> Option<&Built> {
        match self {
            Output::Built(Ok(b)) => Some(b),
            _ => None,
        }
    }
}

/// Variables a sandboxed job keeps from the grader's environment; everything else is cleared.
// CUDA_LAUNCH_BLOCKING: the debugging switch 14-async-error teaches, `CUDA_LAUNCH_BLOCKING=1 cargo xtask check ...`.
const PASSED_THROUGH: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "CUDA_HOME",
    "CUDA_LAUNCH_BLOCKING",
];

/// The folder ncu's instances share as their TMPDIR for their lock (`nsight-compute-lock`), which
/// is what keeps the kernels of several ncu processes from being profiled at once (each ncu job
/// with a TMPDIR of its own, and its lock file bound in from here, found the profiler busy in 3 of
/// 8 checks on an H100). Writable by every sandboxed ncu job, and so by the program under it: a
/// program that removes the lock can make another's profiling fail as busy (tried again, then a
/// tool error, graded again), not make it measure wrong (the counters serve one session at a time).
pub fn ncu_lock_dir(ctx: &Context, wb: &Workbook) -> PathBuf {
    // One lock per GPU: kernels on different GPUs do not disturb each other's times. Per machine
    // too, where a cluster's nodes share the workbook's folder (`grade --shard` under Slurm).
    let dir = match &ctx.config.gpu {
        Some(gpu) => wb
            .work_dir()
            .join("ncu-lock")
            .join(hostname())
            .join(format!("gpu{gpu}")),
        None => wb.work_dir().join("ncu-lock"),
    };
    let _ = std::fs::create_dir_all(&dir);
    // Every sandbox user's, as /tmp is (sticky).
    let _ = std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o1777));
    dir
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// A stage's own folder: its HOME, its TMPDIR and the files it writes. Made afresh for each run,
/// it is the only folder the submission's code may write in that run, so that no run of it can
/// touch another run's outputs (stages run side by side) or its own binaries.
pub fn run_dir(sub: &Submission, stage: &Stage) -> PathBuf {
    sub.work.join("run").join(file_tag(stage))
}

/// `run_dir`, emptied and made again, with its `home` and `tmp`.
fn fresh_run_dir(sub: &Submission, stage: &Stage) -> PathBuf {
    let dir = run_dir(sub, stage);
    // What an earlier run left (links included, never followed) goes first.
    let _ = std::fs::remove_dir_all(&dir);
    for d in ["home", "tmp"] {
        let _ = std::fs::create_dir_all(dir.join(d));
    }
    dir
}

/// The installation folder of each tool a sandboxed job may run (`.../bin/ncu` -> `...`): it must
/// be reachable by the sandbox's user.
fn tool_roots(ctx: &Context) -> Vec<PathBuf> {
    [
        Some(&ctx.nvcc.path),
        ctx.tools.sanitizer.as_ref(),
        ctx.tools.ncu.as_ref(),
        ctx.tools.cuobjdump.as_ref(),
    ]
    .into_iter()
    .flatten()
    .filter_map(|p| std::fs::canonicalize(p).ok())
    .filter_map(|p| p.parent().and_then(Path::parent).map(Path::to_path_buf))
    .filter(|p| p.components().count() > 2)
    .collect()
}

/// Where a submission's code may write (`writable`: the stage's folder) and what it must see and
/// must not.
pub fn confinement(ctx: &Context, wb: &Workbook, sub: &Submission, writable: &Path) -> Confinement {
    let handed_over = vec![writable.to_path_buf()];
    let mut writable = vec![writable.to_path_buf()];
    if let Target::Program(p) = &sub.target {
        // A program of the user's own may write where it was started from.
        writable.push(p.cwd.clone());
    }
    // The submission's folder (its text and binaries), below the hidden work folders; the
    // workbook and the tools, where the sandbox's user could not otherwise reach them.
    let mut readable: Vec<PathBuf> = vec![wb.root.clone(), sub.work.clone()];
    readable.extend(tool_roots(ctx));
    readable.retain(|p| p.is_dir());
    Confinement {
        writable,
        handed_over,
        readable,
        // The build cache is inside the work root (hidden with it: hiding it too fails, as it is
        // not there once the root is) unless CUDABUGS_BUILD_CACHE puts it elsewhere.
        hidden: [
            wb.root.join("solutions"),
            wb.root.join(crate::learner::BACKUP_DIR),
            crate::judge::plan::work_root(wb),
        ]
        .into_iter()
        .chain(
            ctx.build_cache
                .iter()
                .map(|c| c.dir.clone())
                .filter(|d| !d.starts_with(crate::judge::plan::work_root(wb))),
        )
        .chain(ctx.config.hidden.iter().cloned())
        .collect(),
        user: ctx.config.sandbox_user,
        limits: ctx.config.limits,
    }
}

/// The environment of a sandboxed job: HOME and TMPDIR inside its run folder (ncu fails when HOME
/// is not writable), the GPU selection, and the few variables CUDA needs.
pub fn sandbox_env(ctx: &Context, run: &Path, kind: StageKind) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = PASSED_THROUGH
        .iter()
        .filter_map(|k| crate::environment::text(k).map(|v| (k.to_string(), v)))
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push((
            "PATH".into(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        ));
    }
    for (k, v) in cuda_settings(&ctx.config, kind) {
        env.retain(|(have, _)| *have != k);
        env.push((k.into(), v));
    }
    env.push(("HOME".into(), run.join("home").display().to_string()));
    env.push(("TMPDIR".into(), run.join("tmp").display().to_string()));
    env.push(("LANG".into(), "C.UTF-8".into()));
    env
}

/// What the configuration says to CUDA in a sandboxed job of `kind`: the worker's GPU, and one
/// hardware queue per context for a sanitizer run (`Config::one_connection`). Every other run keeps
/// the queues its streams need: with one, 63-transfers' pipeline lost its overlap in `grade` but
/// not in `check`, and a race between two streams may not show in the cases.
fn cuda_settings(
    config: &crate::judge::config::Config,
    kind: StageKind,
) -> Vec<(&'static str, String)> {
    let mut set = Vec::new();
    if let Some(gpu) = &config.gpu {
        set.push(("CUDA_VISIBLE_DEVICES", gpu.clone()));
    }
    if config.one_connection && matches!(kind, StageKind::Sanitize(_)) {
        set.push(("CUDA_DEVICE_MAX_CONNECTIONS", "1".to_string()));
    }
    set
}

/// A job that runs the submission's code, sandboxed: confined to a fresh run folder of its own
/// (which is also its HOME and TMPDIR: in PID namespaces every job's first process has the same
/// pid, and nvcc names its intermediate files after its pid, `tmpxft_00000002_...`, so two builds
/// sharing a TMPDIR overwrite each other's, as seen on an H100), a cleared environment; for ncu,
/// the TMPDIR its instances share for their lock (`ncu_lock_dir`).
fn sandboxed(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    mut job: Job,
    ncu_lock: Option<&Path>,
) -> Job {
    let run = fresh_run_dir(sub, stage);
    let mut confine = confinement(ctx, wb, sub, &run);
    confine.writable.extend(ncu_lock.map(Path::to_path_buf));
    job.confine = Some(confine);
    job.clear_env = true;
    job.env = sandbox_env(ctx, &run, stage.kind)
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    if let Some(lock) = ncu_lock {
        job.env.retain(|(k, _)| k != "TMPDIR");
        job.env.push(("TMPDIR".into(), lock.into()));
    }
    job.cwd = Some(match &sub.target {
        Target::Program(p) => p.cwd.clone(),
        Target::Exercise { .. } => run,
    });
    job
}

/// A sandboxed job with a recording key: a run of a tool or of the program, which a recording keeps
/// and a replay serves (builds have no key, so that a replay builds for real).
fn confined(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    job: Job,
    ncu_lock: Option<&Path>,
) -> Job {
    let mut job = sandboxed(ctx, wb, sub, stage, job, ncu_lock);
    job.key = Some(format!("{}/{}/{}", sub.name, sub.variant, stage.id()));
    job
}

/// Write the submission's text (an exercise's) in its folder, which no run of it can write.
pub fn materialise(sub: &Submission) -> std::io::Result<()> {
    std::fs::create_dir_all(&sub.work)?;
    if let Target::Program(_) = sub.target {
        return Ok(());
    }
    let path = sub.source();
    if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
        std::fs::remove_file(&path)?;
    }
    if std::fs::read_to_string(&path).ok().as_deref() != Some(sub.text.as_str()) {
        std::fs::write(&path, &sub.text)?;
    }
    Ok(())
}

pub fn build(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    flavor: Flavor,
) -> Output {
    let recipe = ctx.recipe();
    let source = sub.source();
    let exercise_arch;
    let inputs = match &sub.target {
        Target::Exercise { exercise, .. } => {
            let options = exercise.manifest.manifest.build;
            exercise_arch = options.arch(recipe.arch);
            nvcc::Inputs::Exercise {
                source: &source,
                flags: options.flags(),
                arch: &exercise_arch,
            }
        }
        Target::Program(p) => {
            if let Some(bin) = &p.prebuilt {
                let command = format!("(built elsewhere: {})", bin.display());
                return Output::Built(Ok(Built::new(
                    bin.clone(),
                    bin.clone(),
                    flavor,
                    command,
                    std::time::Duration::ZERO,
                    true,
                )));
            }
            nvcc::Inputs::Program {
                sources: &p.sources,
                flags: &p.nvcc_flags,
            }
        }
    };
    let sandbox = |job| sandboxed(ctx, wb, sub, stage, job, None);
    Output::Built(nvcc::build(
        ctx.launcher.as_ref(),
        &recipe,
        flavor,
        inputs,
        &sub.binary(flavor),
        sub.reuse,
        &sandbox,
    ))
}

/// `after_stall`: the limit of a stalled run again alone (none: the configured one).
pub fn sanitize(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
    tool: Tool,
    after_stall: Option<std::time::Duration>,
) -> Output {
    let Some(path) = ctx.tools.sanitizer.as_deref() else {
        return Output::NotRun(Blocked::Missing("compute-sanitizer"));
    };
    let tag = stage.id().replace(':', "-");
    let xml = run_dir(sub, stage).join(format!("{tag}.xml"));
    let args = match &sub.target {
        Target::Exercise { cases, exercise } => {
            cases::harness_args(
                cases,
                |c| c.sanitize,
                false,
                &exercise.manifest.manifest.harness_flags(),
                &run_dir(sub, stage),
                &tag,
            )
            .0
        }
        Target::Program(p) => p.args.clone(),
    };
    let bounds = Bounds {
        after_stall: after_stall.is_some(),
        ..Bounds::of(sub, after_stall.unwrap_or(ctx.config.timeouts.tool))
    };
    // The manifest's options for its tool, on every version of the exercise (the solution must be
    // clean under them too).
    let options = sub
        .exercise()
        .map(|e| e.manifest.tool_options(tool))
        .unwrap_or_default();
    let job = sanitizer::job(
        path,
        tool,
        &xml,
        &built.binary,
        &args,
        options,
        bounds.limit,
    )
    .output(&xml);
    let job = confined(ctx, wb, sub, stage, job, None);
    let run = sanitizer::run(ctx.launcher.as_ref(), tool, &job, &xml);
    let sources = sub.sources();
    let mut found = run
        .as_ref()
        .map(|r| findings_in(&r.records, &sources, &sub.regions))
        .unwrap_or_default();
    // Findings point at the files as this machine has them: an exercise's at the file it came from
    // (not the copy that was built), a program's at its sources, matched as `findings` matches (by
    // path, or by file name where the tool ran elsewhere, as in a replayed recording).
    for l in found.iter_mut().flat_map(|f| f.locations.iter_mut()) {
        let here = Path::new(&l.path);
        if let Some(s) = sources
            .iter()
            .find(|s| here == s.as_path() || here.file_name() == s.file_name())
        {
            l.path = match sub.target {
                Target::Exercise { .. } => sub.origin.display().to_string(),
                Target::Program(_) => s.display().to_string(),
            };
        }
    }
    Output::Sanitized {
        tool,
        run,
        findings: found,
        bounds,
    }
}

pub fn correctness(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
    cases: &cases::Cases,
) -> Output {
    let tag = file_tag(stage);
    let flags = sub
        .exercise()
        .map(|e| e.manifest.manifest.harness_flags())
        .unwrap_or_default();
    let (args, outputs) =
        cases::harness_args(cases, |_| true, true, &flags, &run_dir(sub, stage), &tag);
    let bounds = Bounds::of(sub, ctx.config.timeouts.run);
    let mut job = Job::new(&built.binary, bounds.limit).args(args);
    job.outputs = outputs.clone();
    let job = confined(ctx, wb, sub, stage, job, None);
    let command = job.display();
    Output::Ran {
        command,
        run: ctx.launcher.launch(&job),
        outputs,
        bounds,
    }
}

pub fn time(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
) -> Output {
    let Some(path) = ctx.tools.ncu.as_deref() else {
        return Output::NotRun(Blocked::Missing("ncu"));
    };
    let Some(exercise) = sub.exercise() else {
        return Output::NotRun(Blocked::NotApplicable(
            "a program has no bench to time: it is profiled with --profile",
        ));
    };
    if let Some(why) = ctx.counters_refused() {
        return Output::NotRun(Blocked::Setup(why));
    }
    let m = &exercise.manifest.manifest;
    let clock = fresh_clock_dir(sub, stage);
    let calls = crate::judge::plan::profiled_calls(exercise);
    // Under ncu only the kernels' times count: the grader polls instead of spinning.
    let served = match serve(sub, &clock, calls, false, true, false) {
        Ok(s) => s,
        Err(why) => return Output::NotRun(Blocked::Setup(why)),
    };
    let target = ncu::Target {
        name: sub.label(),
        program: built.binary.clone(),
        args: served_args(sub, &served, None),
        kernels: m.timing.kernels.clone(),
        // A performance exercise's metrics come from the same ncu pass as its time.
        counters: {
            let mut c = m
                .perf
                .as_ref()
                .map(|p| {
                    crate::tools::counters::needed(
                        p.metrics.get_ref(),
                        p.clock == crate::exercise::manifest::Clock::Kernel,
                    )
                })
                .unwrap_or_default();
            if ctx.config.audit {
                c.extend(
                    ncu::AUDIT_COUNTERS
                        .iter()
                        .filter(|a| !c.iter().any(|n| n == *a))
                        .map(|a| a.to_string())
                        .collect::<Vec<_>>(),
                );
            }
            c
        },
        every_kernel: ctx.config.audit,
        repeat: calls,
    };
    let csv = run_dir(sub, stage).join(format!("{}.csv", file_tag(stage)));
    let lock = ncu_lock_dir(ctx, wb);
    let mut job = ncu::job(
        path,
        &target,
        &csv,
        Bounds::of(sub, ctx.config.timeouts.ncu).limit,
    )
    .output(&csv);
    let files = drive(&mut job, served);
    let job = confined(ctx, wb, sub, stage, job, Some(&lock));
    let what = format!(
        "{:?} {:?} {:?} {} {:?}",
        target.kernels,
        target.counters,
        target.every_kernel,
        target.repeat,
        m.harness_flags()
    );
    let kept = crate::judge::kept::launcher(ctx, sub, stage, built, &what, call_outputs(&files));
    let served_kept = kept.as_ref().is_some_and(|k| k.holds());
    let launcher = crate::tools::launcher::Kept::or(&kept, ctx.launcher.as_ref());
    let measured = ncu::measure(launcher, &job, &target, &csv);
    // A kept run is only as good as what it measured: one that timed nothing is taken again.
    if let Some(k) = &kept {
        if !measured
            .as_ref()
            .is_ok_and(|m| m.nanoseconds.is_some() && !m.busy && m.tool_failure.is_none())
        {
            k.forget();
        }
    }
    let (calls, outputs) = clocked(&files);
    Output::Timed {
        target,
        measured,
        calls,
        outputs,
        kept: served_kept,
    }
}

/// The grader's own folder for a timed stage's clock and each call's outputs: no run of the
/// submission can write there (it lies in the submission's folder, read-only to every run).
fn fresh_clock_dir(sub: &Submission, stage: &Stage) -> PathBuf {
    let dir = sub.work.join("clock").join(file_tag(stage));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Remove what the timed stages kept of a submission's calls, once they are judged: each call's
/// outputs (63-transfers' are 256 MiB a call, 4.6 GB for a `check`'s three versions).
pub fn forget_calls(sub: &Submission) {
    let _ = std::fs::remove_dir_all(sub.work.join("clock"));
}

/// The served calls of a submission's bench: its layout, the bench's inputs, the session's secret.
/// `spin`: the grader spins while a call runs (the judged clock); `keep`: each call's outputs kept.
fn serve(
    sub: &Submission,
    dir: &Path,
    count: u32,
    spin: bool,
    keep: bool,
    recorded: bool,
) -> Result<Served, String> {
    let ex = sub.exercise().expect("an exercise");
    let m = &ex.manifest.manifest;
    let cases = sub.cases();
    let base = cases.bench_data().ok_or_else(|| {
        format!(
            "the bench's inputs could not be read from {}",
            cases.bench_input.display()
        )
    })?;
    let len = |spec: &crate::exercise::manifest::BufferSpec| {
        crate::exercise::manifest::eval_len(spec.len.get_ref(), &m.bench.params).unwrap_or(0)
    };
    let layout = served::Layout::new(
        &m.inputs
            .iter()
            .map(|s| (s.name.clone(), s.dtype, len(s), s.dist))
            .collect::<Vec<_>>(),
        &m.outputs
            .iter()
            .map(|s| (s.name.clone(), s.dtype, len(s)))
            .collect::<Vec<_>>(),
    );
    let calls = served::Calls {
        base,
        layout,
        count: count.max(1),
        recorded,
        secret: cases.call_secret,
    };
    Served::new(calls, spin, dir, keep)
        .map_err(|e| format!("the grader could not share memory for the timed calls: {e}"))
}

/// The harness's arguments for served calls: the shared memory's descriptor, the manifest's
/// options, the timeline where one is recorded (of the calls from the first after the judged
/// ones), the bench's input file (its layout).
fn served_args(sub: &Submission, served: &Served, timeline: Option<&Path>) -> Vec<String> {
    let m = &sub.exercise().expect("an exercise").manifest.manifest;
    let mut args = vec!["--serve".to_string(), served.fd().to_string()];
    args.extend(m.harness_flags().into_iter().map(String::from));
    if let Some(t) = timeline {
        args.extend([
            "--timeline".to_string(),
            (served.judged_calls() + 1).to_string(),
            t.display().to_string(),
        ]);
    }
    args.push(sub.cases().bench_input.display().to_string());
    args
}

/// `job` driven by `served`: the program keeps its shared memory, and what the driver writes is
/// among the job's outputs (a recording keeps it). Returns those files.
fn drive(job: &mut Job, served: Served) -> Vec<PathBuf> {
    let files = served.files();
    job.outputs.extend(files.iter().cloned());
    job.pass_fds = vec![served.fd()];
    job.driver = Some(std::sync::Arc::new(served));
    files
}

/// The calls' outputs among what the driver leaves (`Served::files`): all but the clock's record.
fn call_outputs(files: &[PathBuf]) -> Vec<PathBuf> {
    files.iter().skip(1).cloned().collect()
}

/// What the driver left in `files` (`Served::files`): the clock's record and the calls' outputs
/// it kept.
fn clocked(files: &[PathBuf]) -> (Option<CallTimes>, Vec<PathBuf>) {
    let times = files
        .first()
        .and_then(|f| crate::tools::untrusted::read_text(f).ok())
        .and_then(|t| CallTimes::parse(&t));
    let outputs = files
        .iter()
        .skip(1)
        .filter(|f| f.is_file())
        .cloned()
        .collect();
    (times, outputs)
}

/// The call timing: the bench, alone on the GPU, each whole call started, clocked and checked by
/// the grader, the GPU memory in use sampled; where the clock is the call, one call more after
/// those, whose operations the harness records (the program's own account: the lessons' pictures
/// and the launch and copy metrics). One process gives both: a process costs 0.6-0.8 s on an H100,
/// a call of 63-transfers 17 ms.
pub fn call(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
) -> Output {
    if sub.exercise().is_none() {
        return Output::NotRun(Blocked::NotApplicable("a program has no bench to time"));
    }
    let recording = sub
        .exercise()
        .is_some_and(|e| e.manifest.manifest.clock() == crate::exercise::manifest::Clock::Call);
    let clock = fresh_clock_dir(sub, stage);
    let repeat = sub
        .exercise()
        .map_or(1, |e| e.manifest.manifest.bench.repeat.max(1));
    let served = match serve(sub, &clock, repeat, true, true, recording) {
        Ok(s) => s,
        Err(why) => return Output::NotRun(Blocked::Setup(why)),
    };
    let timeline_path = run_dir(sub, stage).join(format!("{}.timeline", file_tag(stage)));
    let args = served_args(sub, &served, recording.then_some(timeline_path.as_path()));
    let mut job = Job::new(
        &built.binary,
        Bounds::of(sub, ctx.config.timeouts.run).limit,
    )
    .args(args);
    let files = drive(&mut job, served);
    if recording {
        job.outputs.push(timeline_path.clone());
    }
    let job = confined(ctx, wb, sub, stage, job, None);
    let command = job.display();
    let harness = sub
        .exercise()
        .map(|e| e.manifest.manifest.harness_flags())
        .unwrap_or_default();
    let kept = crate::judge::kept::launcher(
        ctx,
        sub,
        stage,
        built,
        &format!("{repeat} {harness:?} recorded {recording}"),
        call_outputs(&files),
    );
    let served_kept = kept.as_ref().is_some_and(|k| k.holds());
    let run = crate::tools::launcher::Kept::or(&kept, ctx.launcher.as_ref()).launch(&job);
    let (times, outputs) = clocked(&files);
    let timeline = recording.then(|| {
        crate::tools::untrusted::read_text(&timeline_path)
            .map_err(|e| e.to_string())
            .and_then(|t| crate::tools::timeline::Timeline::parse(&t).map_err(|e| e.to_string()))
    });
    let repeat = repeat as usize;
    let failure = match &run {
        Err(e) => Some(e.to_string()),
        // Where the grader's calls stopped first (and the grader ended the program for it), why
        // they stopped comes first.
        Ok(f) if !f.success() => Some(match times.as_ref().and_then(|t| t.failure.as_ref()) {
            Some(why) => format!(
                "the calls stopped: {why} (the program: {})",
                f.describe_exit()
            ),
            None => format!("the program failed: {}", f.describe_exit()),
        }),
        Ok(f) => f
            .left_running()
            .or_else(|| match &times {
                None => Some("the grader's clock recorded nothing".to_string()),
                Some(t) => t
                    .failure
                    .clone()
                    .map(|why| format!("the calls stopped: {why}"))
                    .or_else(|| {
                        (t.calls_ns.len() < repeat).then(|| {
                            format!(
                                "{} of the bench's {repeat} calls were made",
                                t.calls_ns.len()
                            )
                        })
                    }),
            })
            .or_else(|| match &timeline {
                Some(Err(why)) => Some(format!("the harness wrote no readable timeline ({why})")),
                _ => None,
            }),
    };
    // A kept run that the judge could not use is taken again next time.
    if let (Some(k), Some(_)) = (&kept, &failure) {
        k.forget();
    }
    Output::Called {
        command,
        run,
        times,
        timeline: timeline.and_then(Result::ok),
        outputs,
        failure,
        kept: served_kept,
    }
}

/// A program's release build under ncu with the performance metrics, every kernel.
pub fn profile(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
) -> Output {
    let Some(path) = ctx.tools.ncu.as_deref() else {
        return Output::NotRun(Blocked::Missing("ncu"));
    };
    let Target::Program(p) = &sub.target else {
        return Output::NotRun(Blocked::NotApplicable(
            "an exercise is timed on its bench, not profiled",
        ));
    };
    if let Some(why) = ctx.counters_refused() {
        return Output::NotRun(Blocked::Setup(why));
    }
    let csv = run_dir(sub, stage).join("profile.csv");
    let lock = ncu_lock_dir(ctx, wb);
    let job =
        ncu::profile_job(path, &built.binary, &p.args, &csv, ctx.config.timeouts.ncu).output(&csv);
    let job = confined(ctx, wb, sub, stage, job, Some(&lock));
    let run = ctx.launcher.launch(&job);
    let text = crate::tools::untrusted::read_text(&csv).unwrap_or_default();
    let launches = ncu::parse_metrics(&text).map_err(|e| e.to_string());
    Output::Profiled {
        command: job.display(),
        run,
        launches,
    }
}

/// The release build's device code, read for clock reads. cuobjdump reads a file the submission's
/// code shaped, so it runs in the submission's sandbox; with no key, a replay runs it for real.
pub fn sass(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
) -> Output {
    let Some(cuobjdump) = ctx.tools.cuobjdump.as_deref() else {
        return Output::NotRun(Blocked::Missing("cuobjdump"));
    };
    let job = sandboxed(
        ctx,
        wb,
        sub,
        stage,
        crate::tools::sass::sass_job(cuobjdump, &built.binary, ctx.config.timeouts.build),
        None,
    );
    let reads = match ctx.launcher.launch(&job) {
        Ok(f) if f.success() => Ok(crate::tools::sass::clock_reads_in_sass(&f.stdout.text())),
        Ok(f) => Err(format!("cuobjdump failed: {}", f.describe_exit())),
        Err(e) => Err(e.to_string()),
    };
    Output::Sass { reads }
}

/// Run one stage whose build (if it needs one) is `built`.
pub fn run(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: Option<&Built>,
) -> Output {
    run_within(ctx, wb, sub, stage, built, None)
}

/// `run`, with a sanitizer tool held to `tool_limit` instead of the configured one (a stalled tool
/// run again alone: see the scheduler).
pub fn run_within(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: Option<&Built>,
    tool_limit: Option<std::time::Duration>,
) -> Output {
    match (stage.kind, built) {
        (StageKind::Build(Flavor::Sanitize), _) => build(ctx, wb, sub, stage, Flavor::Sanitize),
        (StageKind::Build(Flavor::Timing), _) => build(ctx, wb, sub, stage, Flavor::Timing),
        (_, None) => Output::NotRun(Blocked::BuildFailed),
        (StageKind::Sanitize(tool), Some(b)) => sanitize(ctx, wb, sub, stage, b, tool, tool_limit),
        (StageKind::Correctness, Some(b)) => correctness(ctx, wb, sub, stage, b, sub.cases()),
        (StageKind::Hidden | StageKind::Fresh, Some(b)) => match sub.secret {
            Some(secret) => correctness(
                ctx,
                wb,
                sub,
                stage,
                b,
                if stage.kind == StageKind::Hidden {
                    &secret.hidden
                } else {
                    &secret.fresh
                },
            ),
            None => Output::NotRun(Blocked::NotApplicable(
                "hidden and fresh cases belong to `grade`, which has the instructor's secret",
            )),
        },
        (StageKind::Timing, Some(b)) => time(ctx, wb, sub, stage, b),
        (StageKind::Call, Some(b)) => call(ctx, wb, sub, stage, b),
        (StageKind::Profile, Some(b)) => profile(ctx, wb, sub, stage, b),
        (StageKind::Sass, Some(b)) => sass(ctx, wb, sub, stage, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_fresh_timed_run_that_ran_is_copied_for_an_untouched_file() {
        use crate::tools::runner::{Exit, Finished};
        let called = |kept: bool, ok: bool| Output::Called {
            command: "63-original --serve 3".into(),
            run: if ok {
                Ok(Finished::ended(
                    Exit::Code(0),
                    std::time::Duration::from_millis(700),
                ))
            } else {
                Err(SpawnError {
                    program: "63-original".into(),
                    source: std::io::Error::other("no such file"),
                })
            },
            times: None,
            timeline: None,
            outputs: vec!["clock/call/out1".into()],
            failure: None,
            kept,
        };
        match called(false, true).copy_of_fresh_run() {
            Some(Output::Called {
                command,
                outputs,
                kept: false,
                ..
            }) => assert_eq!(
                (command.as_str(), outputs),
                ("63-original --serve 3", vec!["clock/call/out1".into()])
            ),
            other => panic!("{other:?}"),
        }
        // Served from what was kept: no call's outputs to judge, so the learner runs its own.
        assert!(called(true, true).copy_of_fresh_run().is_none());
        assert!(called(false, false).copy_of_fresh_run().is_none());
        assert!(Output::NotRun(Blocked::BuildFailed)
            .copy_of_fresh_run()
            .is_none());
    }

    #[test]
    fn sanitizer_runs_get_one_hardware_queue_and_a_grade_worker_its_gpu() {
        use crate::exercise::manifest::Tool;
        let mut config = crate::judge::config::Config::default();
        let one = ("CUDA_DEVICE_MAX_CONNECTIONS", "1".to_string());
        assert_eq!(
            cuda_settings(&config, StageKind::Sanitize(Tool::Racecheck)),
            std::slice::from_ref(&one)
        );
        crate::judge::grade::configure_worker(&mut config, Some("1".into()), 2, &[]);
        let gpu = ("CUDA_VISIBLE_DEVICES", "1".to_string());
        assert_eq!(
            cuda_settings(&config, StageKind::Sanitize(Tool::Memcheck)),
            [gpu.clone(), one]
        );
        // A run whose outputs or time are judged keeps its hardware queues: 63-transfers' streams
        // overlap, and a race between 32-event-stream's streams shows in the cases.
        for judged in [
            StageKind::Correctness,
            StageKind::Hidden,
            StageKind::Fresh,
            StageKind::Timing,
            StageKind::Call,
        ] {
            assert_eq!(cuda_settings(&config, judged), std::slice::from_ref(&gpu));
        }
        config.one_connection = false;
        assert_eq!(
            cuda_settings(&config, StageKind::Sanitize(Tool::Synccheck)),
            [gpu]
        );
    }
}
