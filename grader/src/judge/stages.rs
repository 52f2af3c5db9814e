//! What each kind of stage does to a submission: build it, run it under a sanitizer tool, run it on
//! the cases, time it with ncu. Every job that runs the submission's code (nvcc on its text, the
//! program, the tool around it) goes through the launcher with the submission's confinement. A
//! stage only runs and collects; the verdicts are `verdict.rs`'s.

use std::path::{Path, PathBuf};

use crate::exercise::cases;
use crate::exercise::manifest::{Detector, Tool};
use crate::exercise::workbook::Workbook;
use crate::judge::context::Context;
use crate::judge::plan::{Stage, StageKind, Submission, Target};
use crate::judge::verdict::{findings_in, Finding};
use crate::tools::ncu::{self, Measured};
use crate::tools::nvcc::{self, BuildError, Built, Flavor};
use crate::tools::runner::{Finished, Job, SpawnError};
use crate::tools::sandbox::Confinement;
use crate::tools::sanitizer::{self, ToolRun};

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
        Bounds { limit, detector: Detector::Sanitizer, region: None, after_stall: false }
    }

    /// A submission's run: the general `limit`, or the hang's own where the text is the untouched
    /// hang exercise.
    pub fn of(sub: &Submission, limit: std::time::Duration) -> Bounds {
        Bounds {
            limit: sub.hang_limit().map_or(limit, |h| h.min(limit)),
            detector: sub.exercise().map(|e| e.manifest.detector()).unwrap_or_default(),
            region: sub.region_text(),
            after_stall: false,
        }
    }
}

/// What one stage produced, before any verdict.
#[derive(Debug)]
pub enum Output {
    Built(Result<Built, BuildError>),
    Sanitized { tool: Tool, run: Result<ToolRun, sanitizer::RunError>, findings: Vec<Finding>, bounds: Bounds },
    Ran { command: String, run: Result<Finished, SpawnError>, outputs: Vec<PathBuf>, bounds: Bounds },
    /// `output`: the outputs of the last timed call (compared with the reference fix's).
    Timed { target: ncu::Target, measured: Result<Measured, ncu::RunError>, output: PathBuf },
    /// The call timing: each whole call's time (None, with `failure`, where the run failed or wrote
    /// no times) and the outputs of the last call.
    /// The timeline stage's is the same, with each call's operations.
    Called {
        command: String,
        run: Result<Finished, SpawnError>,
        times: Option<crate::judge::speed::CallTimes>,
        timeline: Option<crate::tools::timeline::Timeline>,
        output: PathBuf,
        failure: Option<String>,
    },
    /// `sanitize --profile`: every launch's metrics, or why there are none.
    Profiled { command: String, run: Result<Finished, SpawnError>, launches: Result<Vec<ncu::LaunchMetrics>, String> },
    NotRun(Blocked),
}

impl Output {
    /// What ncu measured, where the timing ran (whether or not it timed anything).
    pub fn measured(&self) -> Option<&Measured> {
        match self {
            Output::Timed { measured: Ok(m), .. } => Some(m),
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
            Output::Ran { run: Ok(f), .. } | Output::Called { run: Ok(f), .. } | Output::Profiled { run: Ok(f), .. } => Some(f),
            Output::Timed { measured: Ok(m), .. } => Some(&m.finished),
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
const PASSED_THROUGH: &[&str] = &["PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_HOME", "CUDA_LAUNCH_BLOCKING"];

/// The folder ncu's instances share for their lock file (`$TMPDIR/nsight-compute-lock`), which is
/// what keeps the kernels of several ncu processes from being timed at once. Made if missing.
pub fn ncu_lock_dir(ctx: &Context, wb: &Workbook) -> PathBuf {
    // One lock per GPU: kernels on different GPUs do not disturb each other's times. Per machine
    // too, where a cluster's nodes share the workbook's folder (`grade --shard` under Slurm).
    let dir = match &ctx.config.gpu {
        Some(gpu) => wb.work_dir().join("ncu-lock").join(hostname()).join(format!("gpu{gpu}")),
        None => wb.work_dir().join("ncu-lock"),
    };
    let _ = std::fs::create_dir_all(&dir);
    dir
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "localhost".into())
}

/// Where a submission's code may write and what it must not see.
pub fn confinement(ctx: &Context, wb: &Workbook, sub: &Submission, extra_writable: &[PathBuf]) -> Confinement {
    let mut writable = vec![sub.work.clone()];
    writable.extend(extra_writable.iter().cloned());
    if let Target::Program(p) = &sub.target {
        // A program of the user's own may write where it was started from.
        writable.push(p.cwd.clone());
    }
    Confinement {
        writable,
        // The build cache is inside the work root (hidden with it: hiding it too fails, as it is
        // not there once the root is) unless CUDABUGS_BUILD_CACHE puts it elsewhere.
        hidden: [wb.root.join("solutions"), wb.root.join(crate::learner::BACKUP_DIR), crate::judge::plan::work_root(wb)]
            .into_iter()
            .chain(ctx.build_cache.iter().map(|c| c.dir.clone()).filter(|d| !d.starts_with(crate::judge::plan::work_root(wb))))
            .chain(ctx.config.hidden.iter().cloned())
            .collect(),
        limits: ctx.config.limits,
    }
}

/// The environment of a sandboxed job: HOME and TMPDIR inside its work folder (ncu fails when HOME
/// is not writable), the GPU selection, and the few variables CUDA needs.
pub fn sandbox_env(ctx: &Context, sub: &Submission, tmpdir: &Path) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = PASSED_THROUGH.iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v))).collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()));
    }
    for (k, v) in cuda_settings(&ctx.config) {
        env.retain(|(have, _)| *have != k);
        env.push((k.into(), v));
    }
    env.push(("HOME".into(), sub.work.join("home").display().to_string()));
    env.push(("TMPDIR".into(), tmpdir.display().to_string()));
    env.push(("LANG".into(), "C.UTF-8".into()));
    env
}

/// What the configuration says to CUDA in every sandboxed job: the worker's GPU, one hardware
/// queue per context.
fn cuda_settings(config: &crate::judge::config::Config) -> Vec<(&'static str, String)> {
    let mut set = Vec::new();
    if let Some(gpu) = &config.gpu {
        set.push(("CUDA_VISIBLE_DEVICES", gpu.clone()));
    }
    if config.one_connection {
        set.push(("CUDA_DEVICE_MAX_CONNECTIONS", "1".to_string()));
    }
    set
}

/// A TMPDIR of the job's own. Never one per submission: in PID namespaces every job's first
/// process has the same pid, and nvcc names its intermediate files after its pid
/// (`tmpxft_00000002_...`), so two builds sharing a TMPDIR overwrite each other's (seen on an H100).
fn private_tmp(sub: &Submission, tag: &str) -> PathBuf {
    let dir = sub.work.join("tmp").join(tag.replace([':', '#'], "-"));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// A job that runs the submission's code, sandboxed: confined, a cleared environment, its own
/// TMPDIR (`shared_tmp` instead where processes must meet: ncu's lock file).
fn sandboxed(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, mut job: Job, shared_tmp: Option<&Path>) -> Job {
    let tmp = shared_tmp.map(Path::to_path_buf).unwrap_or_else(|| private_tmp(sub, &stage.id()));
    job.confine = Some(confinement(ctx, wb, sub, &shared_tmp.map(|t| vec![t.to_path_buf()]).unwrap_or_default()));
    job.clear_env = true;
    job.env = sandbox_env(ctx, sub, &tmp).into_iter().map(|(k, v)| (k.into(), v.into())).collect();
    job.cwd = Some(match &sub.target {
        Target::Program(p) => p.cwd.clone(),
        Target::Exercise { .. } => sub.work.clone(),
    });
    job
}

/// A sandboxed job with a recording key: a run of a tool or of the program, which a recording keeps
/// and a replay serves (builds have no key, so that a replay builds for real).
fn confined(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, job: Job, shared_tmp: Option<&Path>) -> Job {
    let mut job = sandboxed(ctx, wb, sub, stage, job, shared_tmp);
    job.key = Some(format!("{}/{}/{}", sub.name, sub.variant, stage.id()));
    job
}

/// Write the submission's text (an exercise's) and make its folders (home, tmp, out).
pub fn materialise(sub: &Submission) -> std::io::Result<()> {
    for dir in ["home", "tmp", "out"] {
        std::fs::create_dir_all(sub.work.join(dir))?;
    }
    if let Target::Program(_) = sub.target {
        return Ok(());
    }
    let path = sub.source();
    if std::fs::read_to_string(&path).ok().as_deref() != Some(sub.text.as_str()) {
        std::fs::write(&path, &sub.text)?;
    }
    Ok(())
}

pub fn build(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, flavor: Flavor) -> Output {
    let recipe = ctx.recipe();
    let source = sub.source();
    let inputs = match &sub.target {
        Target::Exercise { .. } => nvcc::Inputs::Exercise(&source),
        Target::Program(p) => {
            if let Some(bin) = &p.prebuilt {
                let command = format!("(built elsewhere: {})", bin.display());
                return Output::Built(Ok(Built { binary: bin.clone(), source: bin.clone(), flavor, command, wall: std::time::Duration::ZERO, reused: true }));
            }
            nvcc::Inputs::Program { sources: &p.sources, flags: &p.nvcc_flags }
        }
    };
    let sandbox = |job| sandboxed(ctx, wb, sub, stage, job, None);
    Output::Built(nvcc::build(ctx.launcher.as_ref(), &recipe, flavor, inputs, &sub.binary(flavor), sub.reuse, &sandbox))
}

/// `after_stall`: the limit of a stalled run again alone (none: the configured one).
pub fn sanitize(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, built: &Built, tool: Tool, after_stall: Option<std::time::Duration>) -> Output {
    let Some(path) = ctx.tools.sanitizer.as_deref() else { return Output::NotRun(Blocked::Missing("compute-sanitizer")) };
    let tag = stage.id().replace(':', "-");
    let xml = sub.work.join("out").join(format!("{tag}.xml"));
    let args = match &sub.target {
        Target::Exercise { cases, exercise } => cases::harness_args(cases, |c| c.sanitize, false, &exercise.manifest.manifest.harness_flags(), &sub.work.join("out"), &tag).0,
        Target::Program(p) => p.args.clone(),
    };
    let bounds = Bounds { after_stall: after_stall.is_some(), ..Bounds::of(sub, after_stall.unwrap_or(ctx.config.timeouts.tool)) };
    // The manifest's options for its tool, on every version of the exercise (the solution must be
    // clean under them too).
    let options = sub.exercise().map(|e| e.manifest.tool_options(tool)).unwrap_or_default();
    let job = sanitizer::job(path, tool, &xml, &built.binary, &args, options, bounds.limit).output(&xml);
    let job = confined(ctx, wb, sub, stage, job, None);
    let run = sanitizer::run(ctx.launcher.as_ref(), tool, &job, &xml);
    let sources = sub.sources();
    let mut found = run.as_ref().map(|r| findings_in(&r.records, &sources, &sub.regions)).unwrap_or_default();
    // Findings point at the files as this machine has them: an exercise's at the file it came from
    // (not the copy that was built), a program's at its sources, matched as `findings` matches (by
    // path, or by file name where the tool ran elsewhere, as in a replayed recording).
    for l in found.iter_mut().flat_map(|f| f.locations.iter_mut()) {
        let here = Path::new(&l.path);
        if let Some(s) = sources.iter().find(|s| here == s.as_path() || here.file_name() == s.file_name()) {
            l.path = match sub.target {
                Target::Exercise { .. } => sub.origin.display().to_string(),
                Target::Program(_) => s.display().to_string(),
            };
        }
    }
    Output::Sanitized { tool, run, findings: found, bounds }
}

pub fn correctness(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, built: &Built, cases: &cases::Cases) -> Output {
    let tag = file_tag(stage);
    let flags = sub.exercise().map(|e| e.manifest.manifest.harness_flags()).unwrap_or_default();
    let (args, outputs) = cases::harness_args(cases, |_| true, true, &flags, &sub.work.join("out"), &tag);
    let bounds = Bounds::of(sub, ctx.config.timeouts.run);
    let mut job = Job::new(&built.binary, bounds.limit).args(args);
    job.outputs = outputs.clone();
    let job = confined(ctx, wb, sub, stage, job, None);
    let command = job.display();
    Output::Ran { command, run: ctx.launcher.launch(&job), outputs, bounds }
}

pub fn time(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, built: &Built) -> Output {
    let Some(path) = ctx.tools.ncu.as_deref() else { return Output::NotRun(Blocked::Missing("ncu")) };
    let Some(exercise) = sub.exercise() else { return Output::NotRun(Blocked::NotApplicable("a program has no bench to time: it is profiled with --profile")) };
    let m = &exercise.manifest.manifest;
    let tag = file_tag(stage);
    let out = sub.work.join("out");
    let bench_out = bench_output(sub, &tag);
    let target = ncu::Target {
        name: sub.label(),
        program: built.binary.clone(),
        args: bench_args(sub, &bench_out),
        kernels: m.timing.kernels.clone(),
        // A performance exercise's metrics come from the same ncu pass as its time.
        counters: {
            let mut c = m.perf.as_ref().map(|p| crate::tools::counters::needed(p.metrics.get_ref())).unwrap_or_default();
            if ctx.config.audit {
                c.extend(ncu::AUDIT_COUNTERS.iter().filter(|a| !c.iter().any(|n| n == *a)).map(|a| a.to_string()).collect::<Vec<_>>());
            }
            c
        },
        every_kernel: ctx.config.audit,
        repeat: m.bench.repeat,
    };
    let csv = out.join(format!("{tag}.csv"));
    let lock = ncu_lock_dir(ctx, wb);
    let _ = std::fs::remove_file(&bench_out);
    let job = ncu::job(path, &target, &csv, Bounds::of(sub, ctx.config.timeouts.ncu).limit).output(&csv).output(&bench_out);
    let job = confined(ctx, wb, sub, stage, job, Some(&lock));
    let measured = ncu::measure(ctx.launcher.as_ref(), &job, &target, &csv);
    Output::Timed { target, measured, output: bench_out }
}

/// Where a timed stage's last call writes its outputs (compared with the reference fix's).
fn bench_output(sub: &Submission, tag: &str) -> PathBuf {
    sub.work.join("out").join(format!("bench.{tag}.out"))
}

/// The harness's arguments for the timed bench: every call's outputs poisoned first, the inputs
/// varied between calls, the last call's outputs written to `out`.
fn bench_args(sub: &Submission, out: &Path) -> Vec<String> {
    let m = &sub.exercise().expect("an exercise").manifest.manifest;
    let cases = sub.cases();
    let mut args = vec!["--poison".to_string(), "--repeat".into(), m.bench.repeat.to_string()];
    args.extend(m.harness_flags().into_iter().map(String::from));
    if !cases.vary.as_os_str().is_empty() {
        args.extend(["--vary".to_string(), cases.vary.display().to_string()]);
    }
    args.extend([cases.bench_input.display().to_string(), out.display().to_string()]);
    args
}

/// The call timing: the bench, alone on the GPU, each whole call of the entry point timed by the
/// harness, the GPU memory in use sampled; for the timeline stage, each call's operations recorded.
pub fn call(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, built: &Built) -> Output {
    if sub.exercise().is_none() {
        return Output::NotRun(Blocked::NotApplicable("a program has no bench to time"));
    }
    let tag = file_tag(stage);
    let out_dir = sub.work.join("out");
    let (out, times_path, timeline_path) = (bench_output(sub, &tag), out_dir.join(format!("{tag}.times")), out_dir.join(format!("{tag}.timeline")));
    let recording = stage.kind == StageKind::Timeline;
    for stale in [&out, &times_path, &timeline_path] {
        let _ = std::fs::remove_file(stale);
    }
    let mut args = vec!["--call-times".to_string(), times_path.display().to_string()];
    if recording {
        args.extend(["--timeline".to_string(), timeline_path.display().to_string()]);
    }
    args.extend(bench_args(sub, &out));
    let mut job = Job::new(&built.binary, Bounds::of(sub, ctx.config.timeouts.run).limit).args(args);
    job.outputs = vec![out.clone(), times_path.clone()];
    if recording {
        job.outputs.push(timeline_path.clone());
    }
    let job = confined(ctx, wb, sub, stage, job, None);
    let command = job.display();
    let run = ctx.launcher.launch(&job);
    let times = std::fs::read_to_string(&times_path).ok().and_then(|t| crate::judge::speed::CallTimes::parse(&t));
    let timeline = recording.then(|| std::fs::read_to_string(&timeline_path).map_err(|e| e.to_string()).and_then(|t| crate::tools::timeline::Timeline::parse(&t)));
    let failure = match &run {
        Err(e) => Some(e.to_string()),
        Ok(f) if !f.success() => Some(format!("the program failed: {}", f.describe_exit())),
        Ok(f) => f
            .left_running()
            .or_else(|| times.is_none().then(|| "the harness wrote no call times".to_string()))
            .or_else(|| match &timeline {
                Some(Err(why)) => Some(format!("the harness wrote no readable timeline ({why})")),
                _ => None,
            }),
    };
    Output::Called { command, run, times, timeline: timeline.and_then(Result::ok), output: out, failure }
}

/// A program's release build under ncu with the performance metrics, every kernel.
pub fn profile(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, built: &Built) -> Output {
    let Some(path) = ctx.tools.ncu.as_deref() else { return Output::NotRun(Blocked::Missing("ncu")) };
    let Target::Program(p) = &sub.target else { return Output::NotRun(Blocked::NotApplicable("an exercise is timed on its bench, not profiled")) };
    let csv = sub.work.join("out").join("profile.csv");
    let lock = ncu_lock_dir(ctx, wb);
    let job = ncu::profile_job(path, &built.binary, &p.args, &csv, ctx.config.timeouts.ncu).output(&csv);
    let job = confined(ctx, wb, sub, stage, job, Some(&lock));
    let _ = std::fs::remove_file(&csv);
    let run = ctx.launcher.launch(&job);
    let text = std::fs::read_to_string(&csv).unwrap_or_default();
    let launches = ncu::parse_metrics(&text).map_err(|e| e.to_string());
    Output::Profiled { command: job.display(), run, launches }
}

/// Run one stage whose build (if it needs one) is `built`.
pub fn run(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, built: Option<&Built>) -> Output {
    run_within(ctx, wb, sub, stage, built, None)
}

/// `run`, with a sanitizer tool held to `tool_limit` instead of the configured one (a stalled tool
/// run again alone: see the scheduler).
pub fn run_within(ctx: &Context, wb: &Workbook, sub: &Submission, stage: &Stage, built: Option<&Built>, tool_limit: Option<std::time::Duration>) -> Output {
    match (stage.kind, built) {
        (StageKind::BuildDebug, _) => build(ctx, wb, sub, stage, Flavor::Sanitize),
        (StageKind::BuildRelease, _) => build(ctx, wb, sub, stage, Flavor::Timing),
        (_, None) => Output::NotRun(Blocked::BuildFailed),
        (StageKind::Sanitize(tool), Some(b)) => sanitize(ctx, wb, sub, stage, b, tool, tool_limit),
        (StageKind::Correctness, Some(b)) => correctness(ctx, wb, sub, stage, b, sub.cases()),
        (StageKind::Hidden | StageKind::Fresh, Some(b)) => match sub.secret {
            Some(secret) => correctness(ctx, wb, sub, stage, b, if stage.kind == StageKind::Hidden { &secret.hidden } else { &secret.fresh }),
            None => Output::NotRun(Blocked::NotApplicable("hidden and fresh cases belong to `grade`, which has the instructor's secret")),
        },
        (StageKind::Timing, Some(b)) => time(ctx, wb, sub, stage, b),
        (StageKind::Call | StageKind::Timeline, Some(b)) => call(ctx, wb, sub, stage, b),
        (StageKind::Profile, Some(b)) => profile(ctx, wb, sub, stage, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grade_worker_tells_cuda_its_gpu_and_one_hardware_queue() {
        let mut config = crate::judge::config::Config::default();
        assert!(cuda_settings(&config).is_empty(), "check and verify leave CUDA's defaults");
        crate::judge::grade::configure_worker(&mut config, Some("1".into()), 2, &[]);
        assert_eq!(cuda_settings(&config), [("CUDA_VISIBLE_DEVICES", "1".to_string()), ("CUDA_DEVICE_MAX_CONNECTIONS", "1".to_string())]);
    }
}
