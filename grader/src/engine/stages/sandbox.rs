//! The sandbox of the stages: the run folder, confinement and environment of every job that runs
//! a submission's code, and the grader's lock that gives ncu's jobs one GPU at a time.

use std::path::{Path, PathBuf};

use crate::engine::context::Context;
use crate::engine::plan::{Stage, StageKind, Submission, Target};
use crate::exercise::workbook::Workbook;
use crate::tools::runner::Job;
use crate::tools::sandbox::Confinement;

use super::file_tag;

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

/// The empty section folder of a sandboxed ncu job (`ncu::no_sections`): in the workbook's own
/// folder, which every run reads and none writes.
pub fn ncu_sections(wb: &Workbook) -> PathBuf {
    crate::tools::ncu::no_sections(&wb.work_dir())
}

/// The grader's own folder of ncu's turns, one per GPU (and per machine, where a cluster's nodes
/// share the workbook's folder: `grade --shard` under Slurm): mode 0700, never writable by a
/// sandboxed run nor visible to one (hidden with the work folders). It holds the file the grader
/// locks around each sandboxed ncu job (`ncu_turn`), and is the TMPDIR of the grader's own ncu runs
/// (the peak, the library baseline; not sandboxed), where ncu keeps its lock `nsight-compute-lock`.
pub fn ncu_lock_dir(ctx: &Context, wb: &Workbook) -> PathBuf {
    // One lock per GPU: kernels on different GPUs do not disturb each other's times.
    let dir = match &ctx.config.gpu {
        Some(gpu) => wb
            .ncu_lock_root()
            .join(hostname())
            .join(format!("gpu{gpu}")),
        None => wb.ncu_lock_root(),
    };
    let _ = std::fs::create_dir_all(&dir);
    // Once every sandbox user's (1777): a folder no student may write now.
    for d in dir
        .ancestors()
        .take_while(|d| d.starts_with(wb.ncu_lock_root()))
    {
        let _ = std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700));
    }
    dir
}

/// This GPU's ncu turn, held by the grader while one sandboxed ncu job runs: what keeps the kernels
/// of two ncu processes from being profiled at once (the counters serve one session at a time).
/// ncu's own lock needs a TMPDIR its instances share, which every program under ncu could write
/// (and another student's would find what it left there): each sandboxed ncu job now has a TMPDIR
/// of its own, and the turn is the grader's lock (`flock`, across the grader's processes on this
/// machine), on a file no program can reach. Waiting for it takes none of the job's time. None
/// where the file cannot be opened or locked (the job then runs without it, as before a lock).
pub fn ncu_turn(ctx: &Context, wb: &Workbook) -> Option<crate::tools::ncu::Turn> {
    crate::tools::ncu::turn(&ncu_lock_dir(ctx, wb))
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
            // Every case of every set: a run gets its own inputs as descriptors.
            wb.cases_root(),
            wb.ncu_lock_root(),
            wb.root.join("solutions"),
            wb.root.join(crate::exercise::workbook::BACKUP_DIR),
            crate::engine::plan::work_root(wb),
        ]
        .into_iter()
        .chain(
            ctx.build_cache
                .iter()
                .map(|c| c.dir.clone())
                .filter(|d| !d.starts_with(crate::engine::plan::work_root(wb))),
        )
        .chain(ctx.config.hidden.iter().cloned())
        .collect(),
        user: ctx.config.sandbox_user,
        limits: ctx.config.limits,
    }
}

/// The environment of a sandboxed job: HOME and TMPDIR inside its run folder (ncu fails when HOME
/// is not writable), the GPU selection, the few variables CUDA needs, and the harness's no-spawn
/// switch (`seccomp::NO_SPAWN_ENV`).
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
    // The harness in the program then refuses exec and fork (the tools pass it on to the program).
    let (k, v) = crate::tools::seccomp::NO_SPAWN_ENV;
    env.push((k.into(), v.into()));
    env
}

/// What the configuration says to CUDA in a sandboxed job of `kind`: the worker's GPU, and one
/// hardware queue per context for a sanitizer run (`Config::one_connection`) and, in `grade`, for
/// the runs of the public and hidden cases (`Config::cases_one_connection`). Every timed run and
/// the fresh inputs keep the queues their streams need: with one, 63-transfers' pipeline lost its
/// overlap, and a race between two streams may not show in the outputs.
fn cuda_settings(
    config: &crate::engine::config::Config,
    kind: StageKind,
) -> Vec<(&'static str, String)> {
    let mut set = Vec::new();
    if let Some(gpu) = &config.gpu {
        set.push(("CUDA_VISIBLE_DEVICES", gpu.clone()));
    }
    let one_queue = match kind {
        StageKind::Sanitize(_) => config.one_connection,
        StageKind::Correctness | StageKind::Hidden => config.cases_one_connection,
        _ => false,
    };
    if one_queue {
        set.push(("CUDA_DEVICE_MAX_CONNECTIONS", "1".to_string()));
    }
    set
}

/// A job that runs the submission's code, sandboxed: confined to a fresh run folder of its own
/// (which is also its HOME and TMPDIR: in PID namespaces every job's first process has the same
/// pid, and nvcc names its intermediate files after its pid, `tmpxft_00000002_...`, so two builds
/// sharing a TMPDIR overwrite each other's, as seen on an H100), a cleared environment. ncu too:
/// its turn is the grader's lock (`ncu_turn`), not a folder its instances share.
pub(super) fn sandboxed(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    mut job: Job,
) -> Job {
    let run = fresh_run_dir(sub, stage);
    job.confine = Some(confinement(ctx, wb, sub, &run));
    job.clear_env = true;
    job.env = sandbox_env(ctx, &run, stage.kind)
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    job.cwd = Some(match &sub.target {
        Target::Program(p) => p.cwd.clone(),
        Target::Exercise { .. } => run,
    });
    inputs_by_descriptor(&mut job, &wb.cases_root());
    job
}

/// Every argument of `job` that names a file in the cases folder (hidden from the run) becomes an
/// open descriptor of the grader's, passed to the program as `/proc/self/fd/N`: the run can read
/// the files its command line names and no other case of any set, public, hidden or fresh (the
/// folder cannot be listed or read from inside). A file that cannot be opened keeps its path (the
/// harness then says it cannot open it).
fn inputs_by_descriptor(job: &mut Job, cases_root: &Path) {
    use std::os::fd::{AsRawFd, OwnedFd};
    for arg in job.args.iter_mut() {
        let path = Path::new(arg.as_os_str());
        if !path.starts_with(cases_root) {
            continue;
        }
        // Close-on-exec until the runner clears it in the program alone (`pass_fds`). A file
        // only: a folder's descriptor would list it.
        let Ok(file) = std::fs::File::open(path) else {
            continue;
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            continue;
        }
        let fd = OwnedFd::from(file);
        *arg = format!("/proc/self/fd/{}", fd.as_raw_fd()).into();
        job.pass_fds.push(fd.as_raw_fd());
        job.held.push(std::sync::Arc::new(fd));
    }
}

/// A sandboxed job with a recording key: a run of a tool or of the program, which a recording keeps
/// and a replay serves (builds have no key, so that a replay builds for real).
pub(super) fn confined(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    job: Job,
) -> Job {
    let mut job = sandboxed(ctx, wb, sub, stage, job);
    job.key = Some(format!("{}/{}/{}", sub.name, sub.variant, stage.id()));
    job
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A context and a check of 03-race's reference on this workbook, with nothing to compile.
    fn fixture() -> (tempfile::TempDir, Workbook, Context) {
        let (dir, wb) = crate::exercise::workbook::test_workbook(&["03-race"]);
        let config = crate::engine::config::Config {
            install_toolkit: false,
            ..crate::engine::config::Config::default()
        };
        let ctx = Context::builder(&wb, config)
            .no_compiler()
            .gpu(crate::tools::gpu::GpuStatus::NoDriver)
            .build(|_| {})
            .unwrap();
        (dir, wb, ctx)
    }

    /// Whether namespaces are here; if not, SKIPPED (or a failure where they are required).
    fn namespaces(test: &str) -> bool {
        let (got, why) = crate::tools::launcher::Sandboxed::probe();
        if got < crate::tools::sandbox::Level::Namespaces {
            assert!(
                std::env::var_os("CUDABUGS_REQUIRE_NAMESPACES").is_none(),
                "{test}: CUDABUGS_REQUIRE_NAMESPACES is set but this machine permits only {got:?}"
            );
            eprintln!(
                "SKIPPED {test}: needs namespaces ({})",
                why.unwrap_or_default()
            );
            return false;
        }
        true
    }

    /// Every path below `root` but `except`, with its size.
    fn tree(root: &Path, except: &Path) -> Vec<(PathBuf, u64)> {
        let mut all = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = e.path();
                if path.starts_with(except) {
                    continue;
                }
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.is_dir() {
                    stack.push(path.clone());
                }
                all.push((path, meta.len()));
            }
        }
        all.sort();
        all
    }

    /// ncu's turn is the grader's: its folder is the grader's alone (0700), a second taker waits
    /// while the first holds it, and no ncu job's program can write there (its TMPDIR is its own).
    #[test]
    fn the_ncu_turn_is_the_grader_s_lock_and_no_program_writes_its_folder() {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::PermissionsExt;
        let (_dir, wb, ctx) = fixture();
        let lock = ncu_lock_dir(&ctx, &wb);
        let mode = std::fs::metadata(&lock).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o700);
        let held = ncu_turn(&ctx, &wb).expect("the turn");
        let other = std::fs::File::open(lock.join("turn")).unwrap();
        // SAFETY: flock on a descriptor we own.
        let try_lock = || unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(try_lock(), -1, "a second turn while the first is held");
        drop(held);
        assert_eq!(try_lock(), 0, "the turn is free once dropped");

        let ex = wb.resolve("03-race").unwrap();
        let cases = crate::exercise::cases::Cases::default();
        let sub = crate::engine::plan::Submission::new(
            &wb,
            "check",
            ex,
            "learner",
            wb.learner_path(ex),
            String::new(),
            &cases,
        );
        let stage = Stage::new(0, StageKind::Timing);
        let job = confined(
            &ctx,
            &wb,
            &sub,
            &stage,
            Job::new("/bin/true", Duration::from_secs(5)),
        );
        let run = run_dir(&sub, &stage);
        let tmpdir = job
            .env
            .iter()
            .find(|(k, _)| k == "TMPDIR")
            .map(|(_, v)| v.clone());
        assert_eq!(tmpdir, Some(run.join("tmp").into_os_string()));
        let confine = job.confine.unwrap();
        assert_eq!(confine.writable, [run]);
        assert!(confine.hidden.contains(&wb.ncu_lock_root()));
        // ncu's (empty) section folder: read by the run's ncu, written by no run (a section or
        // rule file there would change what ncu reports).
        let sections = ncu_sections(&wb);
        assert!(sections.is_dir());
        assert!(confine.readable.iter().any(|r| sections.starts_with(r)));
        assert!(!confine.hidden.iter().any(|h| sections.starts_with(h)));
        assert!(!confine.writable.iter().any(|w| sections.starts_with(w)));
    }

    /// Nothing a run writes outside its run folder is there after it: not in the workbook, the
    /// ncu lock folder, /tmp or /dev/shm (a private one), whatever it tries.
    #[test]
    fn nothing_a_run_writes_outside_its_run_folder_survives() {
        if !namespaces("nothing_a_run_writes_outside_its_run_folder_survives") {
            return;
        }
        let (_dir, wb, ctx) = fixture();
        let ex = wb.resolve("03-race").unwrap();
        let cases = crate::exercise::cases::Cases::default();
        let sub = crate::engine::plan::Submission::new(
            &wb,
            "check",
            ex,
            "learner",
            wb.learner_path(ex),
            String::new(),
            &cases,
        );
        super::super::materialise(&sub).unwrap();
        let stage = Stage::new(0, StageKind::Timing);
        let lock = ncu_lock_dir(&ctx, &wb);
        let run = run_dir(&sub, &stage);
        let token = format!("cbleft{}", std::process::id());
        // ncu's empty section folder, where a planted section or rule file would change what ncu
        // reports (tests/fixtures/adversarial/section-plant): made before the run, as a grade does.
        let sections = ncu_sections(&wb);
        let marks = [
            wb.root.join(&token),
            sections.join(format!("{token}.section")),
            lock.join(&token),
            wb.ncu_lock_root().join(&token),
            sub.work.join(&token),
            std::env::temp_dir().join(&token),
            Path::new("/dev/shm").join(&token),
            Path::new("/var/tmp").join(&token),
        ];
        let script = marks
            .iter()
            .map(|m| format!("echo x > '{}'; ", m.display()))
            .collect::<String>()
            + "echo x > \"$HOME/h\"; echo x > \"$TMPDIR/t\"; echo x > inside; echo done";
        fresh_run_dir(&sub, &stage);
        let before = tree(&wb.root, &run);
        let job = confined(
            &ctx,
            &wb,
            &sub,
            &stage,
            Job::new("/bin/sh", Duration::from_secs(30))
                .arg("-c")
                .arg(script),
        );
        let f = ctx.launcher.launch(&job).unwrap();
        assert!(f.stdout.text().contains("done"), "{}", f.output());
        assert!(run.join("inside").is_file(), "{}", f.output());
        for m in &marks {
            assert!(!m.exists(), "{} survived the run", m.display());
        }
        assert_eq!(
            tree(&wb.root, &run),
            before,
            "something outside the run folder changed"
        );
    }

    /// A run of a submission's code gets the case files of its command line as descriptors, and
    /// finds the cases folder empty: it cannot list or read another case (a hidden or fresh one).
    #[test]
    fn a_run_reads_its_own_inputs_and_no_other_case() {
        use crate::exercise::cases;
        if !namespaces("a_run_reads_its_own_inputs_and_no_other_case") {
            return;
        }
        let (_dir, wb, ctx) = fixture();
        let ex = wb.resolve("03-race").unwrap();
        let public = cases::prepare(ex, &cases::dir(&wb, ex)).unwrap();
        let hidden = cases::prepare_list(
            ex,
            &cases::dir(&wb, ex),
            "hidden",
            &ex.manifest.manifest.cases,
        )
        .unwrap();
        let sub = crate::engine::plan::Submission::new(
            &wb,
            "check",
            ex,
            "learner",
            wb.learner_path(ex),
            String::new(),
            &public,
        );
        super::super::materialise(&sub).unwrap();
        let stage = Stage::new(0, StageKind::Correctness);
        let own = &public.cases[0].input;
        let other = &hidden.cases[0].input;
        // The other case and the folder are named in the script's text, which is not a path.
        let script = format!(
            "wc -c < \"$1\"; ls -A '{}' | wc -l; cat '{}' | wc -c",
            wb.cases_root().display(),
            other.display()
        );
        let job = Job::new("/bin/sh", Duration::from_secs(30))
            .arg("-c")
            .arg(script)
            .arg("sh")
            .arg(own)
            .arg(wb.cases_root());
        let job = sandboxed(&ctx, &wb, &sub, &stage, job);
        assert!(
            job.args[3].to_string_lossy().starts_with("/proc/self/fd/"),
            "{:?}",
            job.args
        );
        let f = ctx.launcher.launch(&job).unwrap();
        let out = f.stdout.text();
        let lines: Vec<&str> = out.lines().map(str::trim).collect();
        let size = std::fs::metadata(own).unwrap().len().to_string();
        assert_eq!(lines.first(), Some(&size.as_str()), "{}", f.output());
        assert_eq!(
            lines.get(1),
            Some(&"0"),
            "the cases folder listed: {}",
            f.output()
        );
        assert_eq!(
            lines.get(2),
            Some(&"0"),
            "another case read: {}",
            f.output()
        );
        assert_eq!(
            job.args[4],
            wb.cases_root().as_os_str(),
            "a folder is never passed"
        );
    }

    #[test]
    fn sanitizer_runs_and_grade_s_cases_get_one_hardware_queue_and_a_grade_worker_its_gpu() {
        use crate::exercise::manifest::Tool;
        let mut config = crate::engine::config::Config::default();
        let one = ("CUDA_DEVICE_MAX_CONNECTIONS", "1".to_string());
        assert_eq!(
            cuda_settings(&config, StageKind::Sanitize(Tool::Racecheck)),
            std::slice::from_ref(&one)
        );
        crate::plans::grade::configure_worker(&mut config, Some("1".into()), (1, 2), &[]);
        let gpu = ("CUDA_VISIBLE_DEVICES", "1".to_string());
        assert_eq!(
            cuda_settings(&config, StageKind::Sanitize(Tool::Memcheck)),
            [gpu.clone(), one.clone()]
        );
        // In grade the cases take one queue too: their outputs are judged again under eight.
        let learner = crate::engine::config::Config::default();
        for cases in [StageKind::Correctness, StageKind::Hidden] {
            assert_eq!(cuda_settings(&config, cases), [gpu.clone(), one.clone()]);
            assert!(
                cuda_settings(&learner, cases).is_empty(),
                "check keeps eight"
            );
        }
        // A timed run and the fresh inputs keep their hardware queues: 63-transfers' streams
        // overlap, and a race between 32-event-stream's streams shows in their outputs.
        for judged in [StageKind::Fresh, StageKind::Timing, StageKind::Call] {
            assert_eq!(cuda_settings(&config, judged), std::slice::from_ref(&gpu));
        }
        // `CUDABUGS_ONE_CONNECTION=0` (read before the worker is configured) turns both off.
        let mut off = crate::engine::config::Config {
            one_connection: false,
            ..Default::default()
        };
        crate::plans::grade::configure_worker(&mut off, Some("1".into()), (1, 2), &[]);
        for kind in [StageKind::Sanitize(Tool::Synccheck), StageKind::Correctness] {
            assert_eq!(cuda_settings(&off, kind), std::slice::from_ref(&gpu));
        }
    }
}
