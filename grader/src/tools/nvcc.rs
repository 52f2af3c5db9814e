//! Building an exercise with nvcc: `-G` for the sanitizers, `-O3 -lineinfo` for timing and
//! correctness (a `-G` build is never timed). The harness is compiled once and linked into each.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::tools::launcher::Launcher;
use crate::tools::runner::{self, Exit, Job};
use crate::tools::toolchain::Nvcc;

/// The harness object's build (the grader's own code, run once).
pub const HARNESS_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    /// `-G`: device debug info for the sanitizers.
    Sanitize,
    /// `-O3 -lineinfo`: what a learner ships; timed and checked for correctness.
    Timing,
}

impl Flavor {
    pub const BOTH: [Flavor; 2] = [Flavor::Sanitize, Flavor::Timing];
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            // -g as well: host line information, so that a host backtrace (a leak's allocation,
            // a failed API call) can name lines where the tool reads them.
            Flavor::Sanitize => &["-G", "-g"],
            Flavor::Timing => &["-O3", "-lineinfo"],
        }
    }
    pub fn dir_name(self) -> &'static str {
        match self {
            Flavor::Sanitize => "sanitize",
            Flavor::Timing => "timing",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Built {
    pub binary: PathBuf,
    pub source: PathBuf,
    pub flavor: Flavor,
    pub command: String,
    pub wall: Duration,
    /// The binary from an earlier build of the same source with the same command was kept.
    pub reused: bool,
}

/// Whether a build may keep a binary that an earlier build made from the same inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// Always run nvcc (the self-check builds everything for real).
    Never,
    /// Keep the binary when the source text and the whole nvcc command are unchanged.
    IfUnchanged,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Spawn(#[from] runner::SpawnError),
    #[error("nvcc failed ({exit}) on {file}:\n{output}")]
    Compile { file: String, exit: String, output: String },
    #[error("nvcc did not finish within {0:?}")]
    TimedOut(Duration),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// The harness sources written out (from the copies embedded in the binary) and compiled once.
#[derive(Debug, Clone)]
pub struct Harness {
    pub include_dir: PathBuf,
    pub object: PathBuf,
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), BuildError> {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).map_err(|e| BuildError::Io(path.to_path_buf(), e))?;
    }
    Ok(())
}

fn mkdir(dir: &Path) -> Result<(), BuildError> {
    std::fs::create_dir_all(dir).map_err(|e| BuildError::Io(dir.to_path_buf(), e))
}

fn check(done: runner::Finished, source: &Path, timeout: Duration) -> Result<(), BuildError> {
    match done.exit {
        Exit::Code(0) => Ok(()),
        Exit::TimedOut => Err(BuildError::TimedOut(timeout)),
        _ => Err(BuildError::Compile { file: source.display().to_string(), exit: done.describe_exit(), output: done.output() }),
    }
}

/// Write the harness into `dir` and compile its object, unless an up-to-date one exists.
pub fn prepare_harness(nvcc: &Nvcc, files: &[(&str, &str)], dir: &Path) -> Result<Harness, BuildError> {
    mkdir(dir)?;
    let mut hasher = DefaultHasher::new();
    for (name, text) in files {
        write_if_changed(&dir.join(name), text)?;
        (name, text).hash(&mut hasher);
    }
    nvcc.path.hash(&mut hasher);
    let object = dir.join(format!("harness-{:016x}.o", hasher.finish()));
    if !object.is_file() {
        let tmp = object.with_extension("o.tmp");
        let source = dir.join("harness.cu");
        let job = Job::new(&nvcc.path, HARNESS_TIMEOUT).args(["-O2", "-std=c++17", "-c", "-o"]).arg(&tmp).arg(&source);
        check(runner::run(&job)?, &source, HARNESS_TIMEOUT)?;
        std::fs::rename(&tmp, &object).map_err(|e| BuildError::Io(object.clone(), e))?;
    }
    Ok(Harness { include_dir: dir.to_path_buf(), object })
}

/// What every build of a plan shares: the compiler, the -arch, the harness, the time limit.
#[derive(Debug, Clone, Copy)]
pub struct Recipe<'a> {
    pub nvcc: &'a Nvcc,
    pub arch: &'a str,
    pub harness: &'a Harness,
    pub timeout: Duration,
}

/// Compile `source` with the harness into `binary`, through `launcher` (confined where the source is
/// a learner's: the preprocessor must not reach the reference solutions). With `Reuse::IfUnchanged`,
/// a binary whose recipe file (next to it) names the same source text and command is kept as it is.
/// What a build compiles.
#[derive(Debug, Clone, Copy)]
pub enum Inputs<'a> {
    /// An exercise's file, linked with the harness (which has `main`).
    Exercise(&'a Path),
    /// Any CUDA program: its own sources (each one's folder on the include path) and nvcc flags.
    Program { sources: &'a [PathBuf], flags: &'a [String] },
}

/// `sandbox` turns the nvcc job into the one that runs (the caller's confinement of learner code).
pub fn build(launcher: &dyn Launcher, recipe: &Recipe, flavor: Flavor, inputs: Inputs, binary: &Path, reuse: Reuse, sandbox: &dyn Fn(Job) -> Job) -> Result<Built, BuildError> {
    let Recipe { nvcc, arch, harness, timeout } = *recipe;
    if let Some(dir) = binary.parent() {
        mkdir(dir)?;
    }
    let mut job = Job::new(&nvcc.path, timeout).args(flavor.flags().iter().copied()).arg(format!("-arch={arch}")).arg("-std=c++17");
    let sources: Vec<&Path> = match inputs {
        Inputs::Exercise(source) => {
            job = job.arg("-I").arg(&harness.include_dir).arg("-o").arg(binary).arg(source).arg(&harness.object);
            vec![source]
        }
        Inputs::Program { sources, flags } => {
            let mut dirs: Vec<&Path> = sources.iter().filter_map(|s| s.parent()).filter(|d| !d.as_os_str().is_empty()).collect();
            dirs.dedup();
            for d in dirs {
                job = job.arg("-I").arg(d);
            }
            job = job.args(flags.iter().cloned()).arg("-o").arg(binary).args(sources.iter().map(|s| s.as_os_str().to_owned()));
            sources.iter().map(PathBuf::as_path).collect()
        }
    };
    let job = sandbox(job.args(nvcc.extra_flags.iter().cloned()));
    let source = sources.first().copied().unwrap_or(Path::new(""));
    let text: Vec<u8> = sources.iter().map(|s| std::fs::read(s).map_err(|e| BuildError::Io(s.to_path_buf(), e))).collect::<Result<Vec<_>, _>>()?.concat();
    // The harness object's name carries the hash of the harness sources, so the command covers them;
    // nvcc's own time stamp covers a toolkit updated in place.
    let mut hasher = DefaultHasher::new();
    (job.display(), &text, std::fs::metadata(&nvcc.path).and_then(|m| m.modified()).ok()).hash(&mut hasher);
    let recipe = format!("{:016x}\n", hasher.finish());
    let recipe_path = binary.with_extension("recipe");
    let built = |wall, reused| Built { binary: binary.to_path_buf(), source: source.to_path_buf(), flavor, command: job.display(), wall, reused };
    if reuse == Reuse::IfUnchanged && binary.is_file() && std::fs::read_to_string(&recipe_path).ok().as_deref() == Some(recipe.as_str()) {
        return Ok(built(Duration::ZERO, true));
    }
    let _ = std::fs::remove_file(&recipe_path);
    let done = launcher.launch(&job)?;
    let wall = done.wall;
    check(done, source, timeout)?;
    // A file saved again while nvcc ran may not be what it compiled: then leave no recipe.
    let now: Vec<u8> = sources.iter().filter_map(|s| std::fs::read(s).ok()).collect::<Vec<_>>().concat();
    if now == text {
        std::fs::write(&recipe_path, recipe).map_err(|e| BuildError::Io(recipe_path.clone(), e))?;
    }
    Ok(built(wall, false))
}
