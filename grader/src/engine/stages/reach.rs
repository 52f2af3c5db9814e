//! The host objects of an exercise's file, read for what they reach (`tools::reach`): the objects
//! its two builds compiled and then linked (`nvcc::Built::object`), or where a build left none
//! (a binary from the cache) the file compiled alone as that build compiles it. A submission's in
//! its own sandbox, by the last of its builds or beside the SASS check of its release build; the
//! workbook's own versions (the untouched exercise, the reference fix) once; every text kept by
//! its inputs in `Context::reach_cache` (beside the build cache).

use std::path::{Path, PathBuf};

use crate::engine::context::Context;
use crate::engine::plan::{Stage, Submission};
use crate::exercise::workbook::{Exercise, Workbook};
use crate::tools::nvcc::{self, Built, Flavor};
use crate::tools::reach::{self, Reach};
use crate::tools::runner::{Job, SpawnError};

use super::sandbox::sandboxed;

/// Why a file's compiled reach is not known.
#[derive(Debug, thiserror::Error)]
pub enum ReachError {
    /// No objdump on this machine (binutils): the text rules stand in.
    #[error("objdump (binutils) was not found")]
    NoObjdump,
    #[error("the file does not compile alone for the analysis: {0}")]
    Compile(String),
    #[error("objdump failed: {0}")]
    Objdump(String),
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// Bumped when the parse, the analysis builds or the key change, so that kept results are not
/// reused.
const ANALYSIS_VERSION: &str = "reach-6";

/// The most objdump may print: a file of templates at `-O0` prints a few MiB at the most.
const DUMP_CAP: usize = 64 << 20;

/// Reads the two objects of `text` (as the exercise's file name) in `dir`: the sanitizer build's
/// (`-G -g`: host code unoptimised, every call a call, each instruction with its line) and the
/// timing build's (`-O3`: what only the optimiser reaches). Each is the object its build in `built`
/// compiled and linked, where one left it unchanged; otherwise the file is compiled alone as that
/// build compiles it. `wrap` turns each job into the one that runs (a submission's sandbox).
fn analyse(
    ctx: &Context,
    ex: &Exercise,
    text: &str,
    dir: &Path,
    wrap: &(dyn Fn(Job) -> Job + Sync),
    built: &[&Built],
) -> Result<Reach, ReachError> {
    let objdump = ctx.tools.objdump.as_deref().ok_or(ReachError::NoObjdump)?;
    let name = ex.manifest.source_name();
    let source = dir.join(name);
    std::fs::write(&source, text).map_err(|e| ReachError::Io(source.clone(), e))?;
    let left = |flavor: Flavor| {
        built
            .iter()
            .find(|b| b.flavor == flavor)
            .and_then(|b| b.object.as_ref())
    };
    let read = |flavor| object_reach(ctx, ex, objdump, dir, flavor, wrap, left(flavor));
    // The two objects side by side: each at most one nvcc, and one objdump.
    let (plain, optimised) = std::thread::scope(|scope| {
        let optimised = scope.spawn(|| read(Flavor::Timing));
        (read(Flavor::Sanitize), optimised.join())
    });
    let optimised = optimised.unwrap_or_else(|e| std::panic::resume_unwind(e))?;
    Ok(plain?.with_optimised(optimised))
}

/// One object of the file in `dir` (written there by `analyse`): `left` copied in where its content
/// is still what its build made, else compiled; then read.
fn object_reach(
    ctx: &Context,
    ex: &Exercise,
    objdump: &Path,
    dir: &Path,
    flavor: Flavor,
    wrap: &(dyn Fn(Job) -> Job + Sync),
    left: Option<&nvcc::Object>,
) -> Result<Reach, ReachError> {
    let name = ex.manifest.source_name();
    let object = dir.join(format!("reach-{}.o", flavor.dir_name()));
    if !left.is_some_and(|o| copied_unchanged(o, &object)) {
        compile_alone(ctx, ex, dir, flavor, &object, wrap)?;
    }
    let mut dump = reach::objdump_job(objdump, &object, ctx.recipe().timeout);
    dump.output_cap = DUMP_CAP;
    dump.cwd = Some(dir.to_path_buf());
    let done = ctx.launcher.launch(&wrap(dump))?;
    if !done.success() {
        return Err(ReachError::Objdump(done.describe_exit()));
    }
    Ok(reach::parse(&done.stdout.text(), name))
}

/// Whether `left` was copied to `to` with the content its build gave it (a build of another text
/// since, a grader of another copy of the same folder, changes it).
fn copied_unchanged(left: &nvcc::Object, to: &Path) -> bool {
    std::fs::copy(&left.path, to).is_ok() && nvcc::file_hash(to) == Some(left.hash)
}

/// The file in `dir` compiled alone into `object`, as its `flavor` build compiles it (with the
/// headers `cudabugs.cuh` once included, where it needs them: `nvcc::build`).
fn compile_alone(
    ctx: &Context,
    ex: &Exercise,
    dir: &Path,
    flavor: Flavor,
    object: &Path,
    wrap: &(dyn Fn(Job) -> Job + Sync),
) -> Result<(), ReachError> {
    let recipe = ctx.recipe();
    let options = ex.manifest.manifest.build;
    let arch = options.arch(recipe.arch);
    let source = Path::new(ex.manifest.source_name());
    // Each object its own TMPDIR: nvcc's intermediate files of the two builds must not meet.
    let tmp = dir.join(format!("tmp-{}", flavor.dir_name()));
    std::fs::create_dir_all(&tmp).map_err(|e| ReachError::Io(tmp.clone(), e))?;
    let compile = |flags: &[&str]| {
        let mut job = nvcc::compile_job(&recipe, flavor, &arch, flags, source, object);
        job.cwd = Some(dir.to_path_buf());
        let mut job = wrap(job);
        job.env.retain(|(k, _)| k != "TMPDIR");
        job.env.push(("TMPDIR".into(), tmp.clone().into()));
        let done = ctx.launcher.launch(&job)?;
        nvcc::log_build(&format!("alone {}", flavor.dir_name()), object);
        Ok::<_, ReachError>(done)
    };
    let (done, _) = nvcc::as_written_or_with_old_includes(
        options.flags(),
        || std::fs::read_to_string(dir.join(source)).unwrap_or_default(),
        compile,
        |done| match done {
            Ok(d) if d.success() => Ok(()),
            Ok(d) => Err(Some(d.output())),
            Err(_) => Err(None),
        },
    );
    let done = done?;
    if done.success() {
        return Ok(());
    }
    let output = done.output();
    let tail: Vec<&str> = output.lines().rev().take(6).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(ReachError::Compile(format!(
        "{}: {}",
        done.describe_exit(),
        tail.join(" / ")
    )))
}

/// What a submission's file reaches, compiled and read in its sandbox (the stage's own folder); a
/// text read before (this learner's unchanged file, a classmate's identical one) is not compiled
/// again. The kept records live where no sandboxed run can write. The exercise's own versions,
/// which the judge compares it with, are analysed here too, beside the other stages (each once,
/// then kept), rather than later in the judging.
pub(super) fn reached(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    ex: &Exercise,
    built: &[&Built],
) -> Result<Reach, ReachError> {
    for text in [ex.original, ex.solution] {
        let _ = workbook_version(ctx, ex, text);
    }
    kept(ctx, ex, &sub.text, |_| {
        let base = sandboxed(ctx, wb, sub, stage, Job::new("true", ctx.recipe().timeout));
        let dir = base.cwd.clone().unwrap_or_default();
        let wrap = |mut job: Job| {
            job.confine = base.confine.clone();
            job.clear_env = base.clear_env;
            job.env = base.env.clone();
            job
        };
        analyse(ctx, ex, &sub.text, &dir, &wrap, built)
    })
}

/// The exercise whose reach `sub`'s text is analysed for: none for a program, nor for one of the
/// workbook's own versions, which reach nothing beyond themselves (`judge::tool_aware::flag_built`).
pub(super) fn analysed<'s>(sub: &'s Submission) -> Option<&'s Exercise> {
    sub.exercise().filter(|ex| !ex.is_own_version(&sub.text))
}

/// What one of the workbook's own texts of `ex` reaches (`text` is its untouched exercise or its
/// reference fix): compiled once per compiler, harness and flags, then read from the kept record.
pub fn workbook_version(ctx: &Context, ex: &Exercise, text: &str) -> Result<Reach, ReachError> {
    version_from(ctx, ex, text, &[])
}

/// `workbook_version`, read from the objects `built` left where they did (a plan's builds of that
/// text), compiled alone where they did not.
fn version_from(
    ctx: &Context,
    ex: &Exercise,
    text: &str,
    built: &[&Built],
) -> Result<Reach, ReachError> {
    kept(ctx, ex, text, |dir| {
        analyse(ctx, ex, text, dir, &|job| job, built)
    })
}

/// The SASS stage's compiled-reach analysis of subject `subject`, ahead of it (the scheduler runs
/// it in the CPU slot of whichever of its builds ends last, which left their objects in `built`):
/// kept by the text, so that the stage reads it. In a folder of its own (a run of the SASS stage
/// no stage has), which the stage's own fresh folder cannot empty under it. A text that is one of
/// the workbook's own versions (the reference fix a grade builds, an untouched file) is kept as
/// that version's reach, read from these builds' objects rather than compiled alone for the judge.
pub fn analyse_reach(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    subject: usize,
    built: &[&Built],
) {
    let Some(ex) = sub.exercise() else {
        return;
    };
    if ex.is_own_version(&sub.text) {
        let _ = version_from(ctx, ex, &sub.text, built);
        return;
    }
    let stage = Stage {
        subject,
        kind: crate::engine::plan::StageKind::Sass,
        run: AHEAD,
    };
    let _ = reached(ctx, wb, sub, &stage, ex, built);
}

/// The run number of the reach analysis done ahead of the SASS stage.
const AHEAD: u32 = 90;

/// The reach of `text` kept under its inputs (the text, the exercise's build, the compiler and the
/// harness) in `Context::reach_cache`, or `analyse`d now (given a scratch folder) and kept.
fn kept(
    ctx: &Context,
    ex: &Exercise,
    text: &str,
    analyse: impl FnOnce(&Path) -> Result<Reach, ReachError>,
) -> Result<Reach, ReachError> {
    let recipe = ctx.recipe();
    let mut hasher = blake3::Hasher::new();
    for part in [
        ANALYSIS_VERSION,
        text,
        &ex.manifest.manifest.build.arch(recipe.arch),
        &format!("{:?}", ex.manifest.manifest.build),
        &recipe.nvcc.path.display().to_string(),
        &headers_digest(&recipe.harness.include_dir),
    ] {
        crate::hash::feed_framed(&mut hasher, part.as_bytes());
    }
    let dir = ctx.reach_cache.clone();
    let kept = dir.join(format!("{}.json", &hasher.finalize().to_hex()[..24]));
    kept_record(&kept, || {
        std::fs::create_dir_all(&dir).map_err(|e| ReachError::Io(dir.clone(), e))?;
        let work = tempfile::tempdir_in(&dir).map_err(|e| ReachError::Io(dir.clone(), e))?;
        Ok((analyse(work.path())?, true))
    })
}

/// What the analysis compiles against besides the text: the harness's headers, by their content
/// (the object is not linked), so that two workbooks with the same harness (the tests' copies, a
/// class graded in two work folders sharing `CUDABUGS_BUILD_CACHE`) share what they analysed.
fn headers_digest(include_dir: &Path) -> String {
    let mut headers: Vec<PathBuf> = std::fs::read_dir(include_dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    headers.retain(|p| p.extension().is_some_and(|x| x == "cuh" || x == "h"));
    headers.sort();
    let mut hasher = blake3::Hasher::new();
    for h in headers {
        let name = h.file_name().unwrap_or_default().to_string_lossy();
        let text = std::fs::read(&h).unwrap_or_default();
        crate::hash::feed_framed(&mut hasher, name.as_bytes());
        crate::hash::feed_framed(&mut hasher, &text);
    }
    hasher.finalize().to_hex().to_string()
}

/// The record at `kept`, or `compute`'s, kept there where it says so (its `bool`). One computation
/// of a record at a time among the graders (and the stages of one) that share the folder: the
/// second waits for `kept`'s lock, then looks again and takes what the first kept. The lock is let
/// go whatever `compute` does.
pub(super) fn kept_record<T, E>(
    kept: &Path,
    compute: impl FnOnce() -> Result<(T, bool), E>,
) -> Result<T, E>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let looked_up = || {
        std::fs::read_to_string(kept)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
    };
    if let Some(record) = looked_up() {
        return Ok(record);
    }
    let _turn = crate::tools::lock::exclusive(&kept.with_extension("lock"));
    if let Some(record) = looked_up() {
        return Ok(record);
    }
    let (record, keep) = compute()?;
    if keep {
        if let Ok(json) = serde_json::to_string(&record) {
            let _ = crate::exercise::workbook::write_atomically(kept, &json);
        }
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::Config;
    use crate::tools::gpu::GpuStatus;

    /// Every job's program, run through the stub compiler (its nvcc, objdump).
    struct Counted {
        programs: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
        inner: crate::tools::stub_compiler::StubCompiler<crate::tools::launcher::Local>,
    }

    impl crate::tools::launcher::Launcher for Counted {
        fn launch(
            &self,
            job: &Job,
        ) -> Result<crate::tools::runner::Finished, crate::tools::runner::SpawnError> {
            let program = job.program.file_name().unwrap_or_default();
            self.programs
                .lock()
                .unwrap()
                .push(program.to_string_lossy().into_owned());
            self.inner.launch(job)
        }
        fn isolation(&self) -> crate::tools::sandbox::Level {
            crate::tools::sandbox::Level::ProcessGroup
        }
    }

    #[test]
    fn the_analysis_reads_the_objects_its_builds_left_and_compiles_only_what_they_did_not() {
        use crate::tools::stub_compiler::{self, StubCompiler};
        let (dir, wb) = crate::exercise::workbook::test_workbook(&["03-race"]);
        let (nvcc, harness) = stub_compiler::toolchain(wb.harness, &dir.path().join("h")).unwrap();
        let config = Config {
            install_toolkit: false,
            ..Config::default()
        };
        let mut ctx = Context::builder(&wb, config)
            .compiler(nvcc, harness)
            .gpu(GpuStatus::NoDriver)
            .build(|_| {})
            .unwrap();
        ctx.tools.objdump = Some(stub_compiler::OBJDUMP.into());
        let programs = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        ctx.launcher = Box::new(Counted {
            programs: programs.clone(),
            inner: StubCompiler {
                inner: crate::tools::launcher::Local,
            },
        });
        let ex = wb.resolve("03-race").unwrap();
        // Two builds' objects, as `nvcc::build` leaves them beside its binaries.
        let left = |flavor: Flavor| {
            let path = dir.path().join(format!("{}.o", flavor.dir_name()));
            std::fs::write(&path, format!("the {flavor:?} build's object")).unwrap();
            let mut built = Built::new(
                "bin".into(),
                "src".into(),
                flavor,
                String::new(),
                std::time::Duration::ZERO,
                false,
            );
            built.object = Some(nvcc::Object {
                hash: nvcc::file_hash(&path).unwrap(),
                path,
            });
            built
        };
        let (sanitize, timing) = (left(Flavor::Sanitize), left(Flavor::Timing));
        let analysed = |built: &[&Built]| {
            let work = tempfile::tempdir().unwrap();
            analyse(&ctx, ex, ex.solution, work.path(), &|job| job, built).unwrap();
            let read =
                |f: Flavor| std::fs::read(work.path().join(format!("reach-{}.o", f.dir_name())));
            let objects = [
                read(Flavor::Sanitize).unwrap(),
                read(Flavor::Timing).unwrap(),
            ];
            let mut programs = std::mem::take(&mut *programs.lock().unwrap());
            programs.sort();
            (programs, objects)
        };
        let (programs, objects) = analysed(&[&sanitize, &timing]);
        assert_eq!(
            programs,
            ["objdump", "objdump"],
            "no nvcc: both objects were left"
        );
        assert_eq!(objects[0], b"the Sanitize build's object");
        assert_eq!(objects[1], b"the Timing build's object");
        // An object changed since its build (another grader's build of another text in the same
        // folder) is compiled again, as its build compiles it.
        std::fs::write(
            &timing.object.as_ref().unwrap().path,
            "another text's object",
        )
        .unwrap();
        let (programs, objects) = analysed(&[&sanitize, &timing]);
        assert_eq!(programs, ["nvcc", "objdump", "objdump"]);
        assert!(
            objects[1].starts_with(b"#!/bin/false"),
            "the stub's placeholder"
        );
        let (programs, _) = analysed(&[]);
        assert_eq!(
            programs,
            ["nvcc", "nvcc", "objdump", "objdump"],
            "no build left one"
        );
    }

    #[test]
    fn a_failed_analysis_frees_its_text_and_a_kept_one_is_not_analysed_again() {
        let (_dir, wb) = crate::exercise::workbook::test_workbook(&["03-race"]);
        let config = Config {
            install_toolkit: false,
            ..Config::default()
        };
        let ctx = Context::builder(&wb, config)
            .no_compiler()
            .gpu(GpuStatus::NoDriver)
            .build(|_| {})
            .unwrap();
        let ex = wb.resolve("03-race").unwrap();
        let failed = kept(&ctx, ex, "text", |_| Err(ReachError::NoObjdump));
        assert!(matches!(failed, Err(ReachError::NoObjdump)));
        // Nothing was kept, and the text is not left busy: a second analysis runs, and is kept.
        let found = Reach {
            undefined: vec!["getenv".into()],
            ..Reach::default()
        };
        let second = kept(&ctx, ex, "text", |_| Ok(found.clone())).unwrap();
        assert_eq!(second, found);
        let third = kept(&ctx, ex, "text", |_| panic!("analysed again")).unwrap();
        assert_eq!(third, found);
    }

    #[test]
    fn two_workbooks_with_the_same_harness_headers_share_an_analysis_and_a_changed_header_does_not()
    {
        let (_dir, wb) = crate::exercise::workbook::test_workbook(&["03-race"]);
        let config = Config {
            install_toolkit: false,
            ..Config::default()
        };
        let context = |include_dir: &Path, cache: &Path| {
            let mut ctx = Context::builder(&wb, config.clone())
                .no_compiler()
                .gpu(GpuStatus::NoDriver)
                .build(|_| {})
                .unwrap();
            ctx.harness.include_dir = include_dir.to_path_buf();
            ctx.harness.object = include_dir.join("harness-of-this-copy.o");
            ctx.reach_cache = cache.to_path_buf();
            ctx
        };
        let (cache, one, two) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        for dir in [one.path(), two.path()] {
            std::fs::write(dir.join("cudabugs.cuh"), "// the harness\n").unwrap();
        }
        let ex = wb.resolve("03-race").unwrap();
        let found = Reach {
            undefined: vec!["getenv".into()],
            ..Reach::default()
        };
        let first = context(one.path(), cache.path());
        assert_eq!(
            kept(&first, ex, "text", |_| Ok(found.clone())).unwrap(),
            found
        );
        let second = context(two.path(), cache.path());
        let shared = kept(&second, ex, "text", |_| panic!("analysed again")).unwrap();
        assert_eq!(shared, found, "the same headers in another folder");
        std::fs::write(two.path().join("cudabugs.cuh"), "// another harness\n").unwrap();
        let again = kept(&second, ex, "text", |_| Ok(Reach::default())).unwrap();
        assert_eq!(
            again,
            Reach::default(),
            "a changed header is analysed again"
        );
    }
}
