//! One file: one build, from the command to the kept binary (its cache is `nvcc/cache.rs`); 285 of its lines are tests.
//!
//! Building an exercise with nvcc: `-G` for the sanitizers, `-O3 -lineinfo` for timing and
//! correctness (a `-G` build is never timed). The harness is compiled once and linked into each;
//! binaries are kept by their inputs in a build cache (`BuildCache`) that every plan goes through.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::tools::launcher::Launcher;
use crate::tools::runner::{self, Exit, Job};
use crate::tools::toolchain::Nvcc;

mod cache;
mod harness;
use cache::{cache_key, compiler_id, make_deps};
pub use cache::{file_hash, BuildCache};
pub use harness::{prepare_harness, write_harness, Harness, HARNESS_TIMEOUT};

/// The CUDA runtime calls the harness's timeline sees (harness/timeline.cuh): a timing build of an
/// exercise links with `--wrap` for each, so its calls reach the harness's recording wrappers.
pub const TIMELINE_WRAPPED: &[&str] = &[
    "__cudaLaunchKernel",
    "__cudaGetKernel",
    "cudaLaunchKernel",
    "cudaLaunchCooperativeKernel",
    "cudaGraphLaunch",
    // Launches a fix may call by name (`cuda*`): counted, so that every call's launches are known.
    "cudaLaunchKernel_ptsz",
    "cudaLaunchCooperativeKernel_ptsz",
    "cudaLaunchKernelExC",
    "cudaLaunchKernelExC_ptsz",
    "cudaGraphLaunch_ptsz",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "cudaMemset",
    "cudaMemsetAsync",
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaMalloc",
    "cudaFree",
];

/// The C++ headers `cudabugs.cuh` included until 2026-12 (`<string>`, `<vector>`, `<utility>`), as
/// nvcc options: an exercise's file that uses their names without including them itself (it
/// compiled then) is compiled with them. Only such a file: they cost about a second of nvcc's host
/// passes in every compile (harness/cudabugs.cuh).
pub const OLD_HEADER_INCLUDES: &[&str] = &[
    "-include", "string", "-include", "vector", "-include", "utility",
];

/// Whether a file that failed to compile (`errors`, nvcc's) may have failed for want of those
/// headers: nvcc says so (`namespace "std" has no member`), the text names one of their names
/// with `std::` (nvcc's first error may then be another: `const std::vector<unsigned> v(...)`
/// reads "qualified name is not allowed"), or after `using namespace std` one is undeclared.
pub fn missed_old_includes(errors: &str, text: &str) -> bool {
    const NAMES: &[&str] = &[
        "string",
        "vector",
        "pair",
        "make_pair",
        "move",
        "forward",
        "swap",
        "min",
        "max",
        "to_string",
        "stoi",
        "stol",
        "stoll",
        "stof",
        "stod",
    ];
    let qualified = |name: &str| {
        let needle = format!("std::{name}");
        text.match_indices(&needle).any(|(at, _)| {
            let next = text[at + needle.len()..].chars().next();
            !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    errors.contains("namespace \"std\" has no member")
        || NAMES.iter().any(|n| qualified(n))
        || (text.contains("using namespace std")
            && NAMES
                .iter()
                .any(|n| errors.contains(&format!("identifier \"{n}\" is undefined"))))
}

/// `compile` run with `flags` (an exercise's file), and where it failed for want of the headers
/// `cudabugs.cuh` once included (`missed_old_includes` of its errors and of `text`) once more with
/// them added: that result where it compiled, else the first (the file's own errors). `errors` says
/// whether a result failed, with nvcc's errors where it failed to compile (none where nvcc did not
/// run or did not finish: no second run). With whether the headers were added.
pub fn as_written_or_with_old_includes<T>(
    flags: &[&'static str],
    text: impl FnOnce() -> String,
    mut compile: impl FnMut(&[&'static str]) -> T,
    errors: impl Fn(&T) -> Result<(), Option<String>>,
) -> (T, bool) {
    let first = compile(flags);
    let Err(Some(output)) = errors(&first) else {
        return (first, false);
    };
    if !missed_old_includes(&output, &text()) {
        return (first, false);
    }
    let flags: Vec<&'static str> = flags.iter().chain(OLD_HEADER_INCLUDES).copied().collect();
    let again = compile(&flags);
    match errors(&again) {
        Ok(()) => (again, true),
        Err(_) => (first, false),
    }
}

/// The linker option that wraps them.
fn timeline_wrap() -> String {
    TIMELINE_WRAPPED
        .iter()
        .map(|s| format!("--wrap={s}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
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
    /// No nvcc ran: the binary from an earlier build of the same source with the same command was
    /// kept, or copied from the build cache.
    pub reused: bool,
    /// The -arch it was built for, where nvcc built it (an exercise's `[build]` may ask for the
    /// GPU's architecture-specific target rather than the plan's).
    pub arch: Option<String>,
    /// An exercise's file compiled alone, as this build compiled it before linking it: where nvcc
    /// ran now, or kept beside the binary in the build cache.
    pub object: Option<Object>,
    /// Compiled with `OLD_HEADER_INCLUDES`: the file uses names of the headers `cudabugs.cuh` no
    /// longer includes.
    pub old_includes: bool,
    /// The binary's content hash, read once on first use and shared by every clone (a check's kept
    /// stages each key on it: five reads of the same binary before).
    content: std::sync::Arc<std::sync::OnceLock<Option<blake3::Hash>>>,
}

impl Built {
    pub fn new(
        binary: PathBuf,
        source: PathBuf,
        flavor: Flavor,
        command: String,
        wall: Duration,
        reused: bool,
    ) -> Built {
        Built {
            binary,
            source,
            flavor,
            command,
            wall,
            reused,
            arch: None,
            object: None,
            old_includes: false,
            content: Default::default(),
        }
    }

    /// The binary's blake3 hash (None where it cannot be read).
    pub fn content(&self) -> Option<blake3::Hash> {
        *self
            .content
            .get_or_init(|| std::fs::read(&self.binary).ok().map(|b| blake3::hash(&b)))
    }
}

/// The object an exercise's build compiled its file into and then linked (beside the binary, in a
/// folder no run of the submission may write), with its content's hash as nvcc left it: what the
/// compiled-reach analysis reads (`engine::stages::reach`) rather than compile the file again.
#[derive(Debug, Clone)]
pub struct Object {
    pub path: PathBuf,
    pub hash: blake3::Hash,
}

/// Where an exercise's build leaves its object: beside the binary, named after it.
fn object_beside(binary: &Path) -> PathBuf {
    with_suffix(binary, ".o")
}

/// `path` with `suffix` added to its name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether a build may keep a binary that an earlier build made from the same inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// Never keep the binary an earlier build left in place (its recipe does not look at the headers):
    /// run nvcc, or take a build from the cache, whose every input, headers included, is checked
    /// (the self-check, `sanitize` of a program).
    Never,
    /// Keep the binary when the source text and the whole nvcc command are unchanged, or take it
    /// from the build cache when it holds a build of the same inputs.
    IfUnchanged,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Spawn(#[from] runner::SpawnError),
    #[error("nvcc failed ({exit}) on {file}:\n{output}")]
    Compile {
        file: String,
        exit: String,
        output: String,
    },
    #[error("nvcc did not finish within {0:?}")]
    TimedOut(Duration),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

pub(super) fn mkdir(dir: &Path) -> Result<(), BuildError> {
    std::fs::create_dir_all(dir).map_err(|e| BuildError::Io(dir.to_path_buf(), e))
}

pub(super) fn check(
    done: runner::Finished,
    source: &Path,
    timeout: Duration,
) -> Result<(), BuildError> {
    match done.exit {
        Exit::Code(0) => Ok(()),
        Exit::TimedOut => Err(BuildError::TimedOut(timeout)),
        _ => Err(BuildError::Compile {
            file: source.display().to_string(),
            exit: done.describe_exit(),
            output: done.output(),
        }),
    }
}

/// What every build of a plan shares: the compiler, the -arch, the harness, the time limit.
#[derive(Debug, Clone, Copy)]
pub struct Recipe<'a> {
    pub nvcc: &'a Nvcc,
    pub arch: &'a str,
    pub harness: &'a Harness,
    pub timeout: Duration,
    /// Where built binaries are kept by their inputs (`None`: nowhere).
    pub cache: Option<&'a BuildCache>,
}

/// The build's folders opened to it: the stage (its working folder, with a TMPDIR of its own), or
/// without a stage the binary's folder, where nvcc writes in place (a folder only builds may write).
fn confined(mut job: Job, stage: Option<&StagingDir>, out: &Path) -> Result<Job, BuildError> {
    let Some(stage) = stage else {
        if let (Some(confine), Some(dir)) = (job.confine.as_mut(), out.parent()) {
            confine.writable.push(dir.to_path_buf());
            confine.handed_over.push(dir.to_path_buf());
        }
        return Ok(job);
    };
    job.cwd = Some(stage.dir.clone());
    if let Some(confine) = job.confine.as_mut() {
        confine.writable.push(stage.dir.clone());
        confine.handed_over.push(stage.dir.clone());
    }
    // nvcc names its intermediate files in the host debug information too
    // (`$TMPDIR/tmpxft_00000002_00000000-6_reduce.cudafe1.cpp`): a TMPDIR in the stage, not in the
    // submission's folder. One per build, as nvcc needs (see stages.rs, private_tmp).
    let tmp = stage.dir.join("tmp");
    mkdir(&tmp)?;
    job.env.retain(|(k, _)| k != "TMPDIR");
    job.env.push(("TMPDIR".into(), tmp.into()));
    Ok(job)
}

/// A build's commands as one shell line, run one after another (`&&`): runnable as printed.
fn command_line(jobs: &[Job]) -> String {
    let commands: Vec<String> = jobs.iter().map(Job::display).collect();
    commands.join(" && ")
}

/// What the binary left in place was built from: the cache key where there is one (the stage
/// folder's name changes from build to build), else the command, the text and the compiler.
fn recipe_line(key: Option<&blake3::Hash>, jobs: &[Job], text: &[u8], compiler: &str) -> String {
    match key {
        Some(k) => format!("{}\n", k.to_hex()),
        None => {
            let mut hasher = blake3::Hasher::new();
            for part in [command_line(jobs).as_bytes(), text, compiler.as_bytes()] {
                crate::hash::feed_framed(&mut hasher, part);
            }
            format!("{}\n", hasher.finalize().to_hex())
        }
    }
}

/// The sources' bytes, one after another: what is compiled, read once.
fn read_all(sources: &[&Path]) -> Result<Vec<u8>, BuildError> {
    Ok(sources
        .iter()
        .map(|s| std::fs::read(s).map_err(|e| BuildError::Io(s.to_path_buf(), e)))
        .collect::<Result<Vec<_>, _>>()?
        .concat())
}

/// `job` asked (where `listing`: a cache will keep the build) to list every file the build read,
/// headers and the toolkit's included, for the cache's manifest; and where the list goes.
fn listing_deps(job: Job, out: &Path, listing: bool) -> (Job, PathBuf) {
    let deps_file = with_suffix(out, ".d");
    if !listing {
        return (job, deps_file);
    }
    let _ = std::fs::remove_file(&deps_file);
    (job.arg("-MD").arg("-MF").arg(&deps_file), deps_file)
}

/// A binary that needs no nvcc: left in place by the same recipe (where `reuse` allows), or placed
/// now from the cache's entry for `key`; with the object its build left beside it, where the
/// recipe file names one, or the one the cache kept with the entry. A copy, not a link: the binary runs in
/// the submission's writable folder, and whatever it does to its own file must not reach the cache.
fn already_built(
    reuse: Reuse,
    binary: &Path,
    recipe_path: &Path,
    recipe: &str,
    cached: Option<(&BuildCache, &blake3::Hash)>,
    cwd: Option<&Path>,
) -> Result<Option<Option<Object>>, BuildError> {
    if reuse == Reuse::IfUnchanged && binary.is_file() {
        let written = std::fs::read_to_string(recipe_path).unwrap_or_default();
        if let Some(rest) = written.strip_prefix(recipe) {
            return Ok(Some(named_object(rest, binary)));
        }
    }
    let _ = std::fs::remove_file(recipe_path);
    let Some(entry) = cached.and_then(|(cache, key)| Some((cache.lookup(key, cwd)?, key))) else {
        return Ok(None);
    };
    place(&entry.0, binary)?;
    let object = match BuildCache::object_of(&entry.0) {
        Some(kept) => kept_object(&kept, binary)?,
        None => None,
    };
    let recipe = recipe.to_string() + &object.as_ref().map(object_line).unwrap_or_default();
    std::fs::write(recipe_path, recipe)
        .map_err(|e| BuildError::Io(recipe_path.to_path_buf(), e))?;
    log_build(&format!("hit {}", entry.1.to_hex()), binary);
    Ok(Some(object))
}

/// The recipe file's line for the object a build left beside `object`'s binary.
fn object_line(object: &Object) -> String {
    format!("object {}\n", object.hash.to_hex())
}

/// The object a recipe file's lines after the recipe name (`object_line`), beside `binary`.
fn named_object(lines: &str, binary: &Path) -> Option<Object> {
    let hex = lines.strip_prefix("object ")?.trim_end();
    let hash = blake3::Hash::from_hex(hex).ok()?;
    Some(Object {
        path: object_beside(binary),
        hash,
    })
}

/// nvcc's commands for `inputs` into `out`: an exercise's file compiled alone beside `out`
/// (`compile_job`, named by its file name where it is compiled in a stage, nvcc's working folder,
/// so that its messages say `reduce.cu(12)`), then linked with the harness (`link_job`); or a
/// program's sources in one command, with the flavour's flags, the -arch and each source's folder
/// on the include path.
fn nvcc_jobs(
    recipe: &Recipe,
    flavor: Flavor,
    arch: &str,
    inputs: Inputs,
    in_stage: bool,
    out: &Path,
) -> Vec<Job> {
    match inputs {
        Inputs::Exercise { source, flags, .. } => {
            let compiled = if in_stage {
                Path::new(source.file_name().unwrap_or_default())
            } else {
                source
            };
            let object = object_beside(out);
            vec![
                compile_job(recipe, flavor, arch, flags, compiled, &object),
                link_job(recipe, flavor, arch, flags, &object, out),
            ]
        }
        Inputs::Program { sources, flags } => {
            let mut job = Job::new(&recipe.nvcc.path, recipe.timeout)
                .args(flavor.flags().iter().copied())
                .arg(arch_flag(arch))
                .arg("-std=c++17");
            let mut dirs: Vec<&Path> = sources
                .iter()
                .filter_map(|s| s.parent())
                .filter(|d| !d.as_os_str().is_empty())
                .collect();
            dirs.dedup();
            for d in dirs {
                job = job.arg("-I").arg(d);
            }
            let job = job
                .args(flags.iter().cloned())
                .arg("-o")
                .arg(out)
                .args(sources.iter().map(|s| s.as_os_str().to_owned()));
            vec![job.args(recipe.nvcc.extra_flags.iter().cloned())]
        }
    }
}

/// The build `out` kept in `cache` under `key`, with every file nvcc read (its `-MD` list in
/// `deps_file`) but the compiled sources. The rule only chooses which files the manifest hashes
/// (the grader reads them itself), and one that names none leaves no entry. A cache that cannot
/// be written (full, read-only) costs the next build, not this one; it is written from the stage,
/// where no program of the submission can write, where there is one.
fn store(
    cache: &BuildCache,
    key: &blake3::Hash,
    out: (&Path, Option<&Path>),
    sources: &[&Path],
    stage: Option<&StagingDir>,
    deps_file: &Path,
    cwd: Option<&Path>,
) {
    let compiled: Vec<PathBuf> = match stage {
        Some(s) => vec![s.dir.join(sources[0].file_name().unwrap_or_default())],
        None => sources.iter().map(|s| s.to_path_buf()).collect(),
    };
    let deps: Vec<PathBuf> = std::fs::read_to_string(deps_file)
        .map(|r| make_deps(&r, cwd))
        .unwrap_or_default()
        .into_iter()
        .filter(|d| !compiled.iter().any(|s| same_file(s, d, cwd)))
        .collect();
    if !deps.is_empty() {
        let _ = cache.store(key, out, &deps, cwd);
    }
}

/// What a build compiles.
#[derive(Debug, Clone, Copy)]
pub enum Inputs<'a> {
    /// An exercise's file, linked with the harness (which has `main`), with the nvcc flags and the
    /// -arch its manifest's `[build]` asks for.
    Exercise {
        source: &'a Path,
        flags: &'a [&'static str],
        arch: &'a str,
    },
    /// Any CUDA program: its own sources (each one's folder on the include path) and nvcc flags.
    Program {
        sources: &'a [PathBuf],
        flags: &'a [String],
    },
}

/// nvcc's command for an exercise's file alone (`-c`): the first of its build's two steps, and
/// what the compiled-reach analysis compiles where no build left it the object (`object_beside`).
/// The flavour's flags, the exercise's flags and -arch, and the harness headers.
pub fn compile_job(
    recipe: &Recipe,
    flavor: Flavor,
    arch: &str,
    flags: &[&str],
    source: &Path,
    object: &Path,
) -> Job {
    Job::new(&recipe.nvcc.path, recipe.timeout)
        .args(flavor.flags().iter().copied())
        .arg(arch_flag(arch))
        .arg("-std=c++17")
        .args(flags.iter().copied())
        .arg("-I")
        .arg(&recipe.harness.include_dir)
        .arg("-c")
        .arg("-o")
        .arg(object)
        .arg(source)
}

/// The second step: the object linked with the harness (and, for timing, the timeline's wraps),
/// with the toolkit's extra flags (a pip-installed nvcc's runtime library folder).
fn link_job(
    recipe: &Recipe,
    flavor: Flavor,
    arch: &str,
    flags: &[&str],
    object: &Path,
    out: &Path,
) -> Job {
    let mut job = Job::new(&recipe.nvcc.path, recipe.timeout)
        .args(flavor.flags().iter().copied())
        .arg(arch_flag(arch))
        .args(flags.iter().copied())
        .arg("-o")
        .arg(out)
        .arg(object)
        .arg(&recipe.harness.object);
    if flavor == Flavor::Timing {
        job = job.arg("-Xlinker").arg(timeline_wrap());
    }
    job.args(recipe.nvcc.extra_flags.iter().cloned())
}

/// `-arch=sm_90`, or for an architecture-specific target (`sm_90a`) machine code for it alone:
/// `-arch=sm_90a` would also embed generic compute_90 PTX, which ptxas checks and rejects where it
/// holds `wgmma`.
fn arch_flag(arch: &str) -> String {
    match arch.strip_prefix("sm_") {
        Some(number) if number.ends_with('a') => {
            format!("-gencode=arch=compute_{number},code={arch}")
        }
        _ => format!("-arch={arch}"),
    }
}

/// Compile `source` with the harness into `binary`, through `launcher` (confined where the source is
/// a learner's: the preprocessor must not reach the reference solutions). With `Reuse::IfUnchanged`,
/// a binary whose recipe file (next to it) names the same source text and command is kept as it is.
/// `sandbox` turns the nvcc job into the one that runs (the caller's confinement of learner code).
/// An exercise's file that does not compile for want of a header `cudabugs.cuh` once included is
/// built again with it (`OLD_HEADER_INCLUDES`); if that fails too, its first errors stand.
pub fn build(
    launcher: &dyn Launcher,
    recipe: &Recipe,
    flavor: Flavor,
    inputs: Inputs,
    binary: &Path,
    reuse: Reuse,
    sandbox: &dyn Fn(Job) -> Job,
) -> Result<Built, BuildError> {
    let Inputs::Exercise {
        source,
        flags,
        arch,
    } = inputs
    else {
        return build_once(launcher, recipe, flavor, inputs, binary, reuse, sandbox);
    };
    let (built, old_includes) = as_written_or_with_old_includes(
        flags,
        || std::fs::read_to_string(source).unwrap_or_default(),
        |flags| {
            let inputs = Inputs::Exercise {
                source,
                flags,
                arch,
            };
            build_once(launcher, recipe, flavor, inputs, binary, reuse, sandbox)
        },
        |built| match built {
            Ok(_) => Ok(()),
            Err(BuildError::Compile { output, .. }) => Err(Some(output.clone())),
            Err(_) => Err(None),
        },
    );
    built.map(|built| Built {
        old_includes,
        ..built
    })
}

/// `build`, with the file compiled as it is written.
fn build_once(
    launcher: &dyn Launcher,
    recipe: &Recipe,
    flavor: Flavor,
    inputs: Inputs,
    binary: &Path,
    reuse: Reuse,
    sandbox: &dyn Fn(Job) -> Job,
) -> Result<Built, BuildError> {
    let (cache, timeout) = (recipe.cache, recipe.timeout);
    binary.parent().map(mkdir).transpose()?;
    let sources: Vec<&Path> = match inputs {
        Inputs::Exercise { source, .. } => vec![source],
        Inputs::Program { sources, .. } => sources.iter().map(PathBuf::as_path).collect(),
    };
    let source = sources.first().copied().unwrap_or(Path::new(""));
    let text = read_all(&sources)?;
    // With a cache, an exercise is compiled from a copy of the text read above, alone in a folder
    // of its own (see `Stage`); nvcc writes there, and only the grader copies out.
    let stage = match (inputs, cache) {
        (Inputs::Exercise { .. }, Some(c)) => Some(StagingDir::new(c, source, &text)?),
        _ => None,
    };
    let out = stage
        .as_ref()
        .map(|s| s.dir.join("a.out"))
        .unwrap_or_else(|| binary.to_path_buf());
    // An exercise's own -arch (its `[build]` may ask for sm_90a); a program keeps the plan's.
    let arch = match inputs {
        Inputs::Exercise { arch: own, .. } => own,
        Inputs::Program { .. } => recipe.arch,
    };
    // What runs (in the stage, where there is one), and what a report shows: the same commands on
    // the real source and the real binary, runnable as printed. The cache keys on what runs.
    let jobs = nvcc_jobs(recipe, flavor, arch, inputs, stage.is_some(), &out);
    let shown = command_line(&nvcc_jobs(recipe, flavor, arch, inputs, false, binary));
    let jobs = jobs
        .into_iter()
        .map(|job| confined(sandbox(job), stage.as_ref(), &out))
        .collect::<Result<Vec<Job>, BuildError>>()?;
    let cwd = jobs.first().and_then(|j| j.cwd.clone());
    let compiler = compiler_id(&recipe.nvcc.path);
    let key = cache.map(|c| cache_key(c, &compiler, &jobs, &out));
    let recipe_text = recipe_line(key.as_ref(), &jobs, &text, &compiler);
    let recipe_path = binary.with_extension("recipe");
    let built = |wall, reused, object| Built {
        arch: Some(arch.to_string()),
        object,
        ..Built::new(
            binary.to_path_buf(),
            source.to_path_buf(),
            flavor,
            shown.clone(),
            wall,
            reused,
        )
    };
    let found = || {
        already_built(
            reuse,
            binary,
            &recipe_path,
            &recipe_text,
            cache.zip(key.as_ref()),
            cwd.as_deref(),
        )
    };
    let reused = |object| built(Duration::ZERO, true, object);
    if let Some(object) = found()? {
        return Ok(reused(object));
    }
    // Not kept: this text's turn, then a second look, in case another build of it kept it meanwhile.
    let turn = cache.zip(key.as_ref()).and_then(|(c, k)| c.building(k));
    if let Some(object) = turn.as_ref().map(|_| found()).transpose()?.flatten() {
        return Ok(reused(object));
    }
    let steps = steps(jobs, inputs, &out, cache.is_some());
    let deps_file = steps.deps_file.clone();
    let (wall, object) = compile_steps(launcher, steps, source, timeout, key.as_ref(), binary)?;
    // A file saved again while nvcc ran may not be what it compiled (unless a stage held the copy
    // read before): then leave no recipe, and nothing in the cache.
    if stage.is_some() || read_all(&sources).ok().as_deref() == Some(&text[..]) {
        let recipe_text = recipe_text + &object.as_ref().map(object_line).unwrap_or_default();
        std::fs::write(&recipe_path, recipe_text)
            .map_err(|e| BuildError::Io(recipe_path.clone(), e))?;
        if let (Some(cache), Some(key)) = (cache, &key) {
            let cwd = cwd.as_deref();
            // The object as nvcc wrote it beside `out` (in the stage), as the binary is.
            let object = object.as_ref().map(|_| object_beside(&out));
            let out = (out.as_path(), object.as_deref());
            store(cache, key, out, &sources, stage.as_ref(), &deps_file, cwd);
        }
    }
    Ok(built(wall, false, object))
}

/// The nvcc processes of a build, to run one after another (`steps`).
struct Steps {
    jobs: Vec<Job>,
    deps_file: PathBuf,
    /// Where an exercise's object is written (beside `out`).
    object: Option<PathBuf>,
    /// Where the binary is written.
    out: PathBuf,
}

/// `jobs` (`nvcc_jobs`), the first listing every file it read (`listing_deps`) where the build is
/// cached.
fn steps(mut jobs: Vec<Job>, inputs: Inputs, out: &Path, listing: bool) -> Steps {
    let (first, deps_file) = listing_deps(jobs.remove(0), out, listing);
    jobs.insert(0, first);
    let object = match inputs {
        Inputs::Exercise { .. } => Some(object_beside(out)),
        Inputs::Program { .. } => None,
    };
    Steps {
        jobs,
        deps_file,
        object,
        out: out.to_path_buf(),
    }
}

/// `steps` run, the binary placed at `binary` and an exercise's object beside it: how long nvcc
/// took, and the object.
fn compile_steps(
    launcher: &dyn Launcher,
    steps: Steps,
    source: &Path,
    timeout: Duration,
    key: Option<&blake3::Hash>,
    binary: &Path,
) -> Result<(Duration, Option<Object>), BuildError> {
    let mut wall = Duration::ZERO;
    for step in &steps.jobs {
        let done = launcher.launch(step)?;
        wall += done.wall;
        check(done, source, timeout)?;
    }
    let key_hex = key.map(|k| k.to_hex().to_string()).unwrap_or_default();
    log_build(&format!("build {key_hex}"), binary);
    if steps.out != binary {
        place(&steps.out, binary)?;
    }
    let object = match steps.object {
        Some(written) => kept_object(&written, binary)?,
        None => None,
    };
    Ok((wall, object))
}

/// The build's object, from where nvcc wrote it (a stage, or already beside the binary) to beside
/// the binary, with its hash; none where it cannot be read.
fn kept_object(written: &Path, binary: &Path) -> Result<Option<Object>, BuildError> {
    let path = object_beside(binary);
    if written != path {
        if !written.is_file() {
            return Ok(None);
        }
        place(written, &path)?;
    }
    Ok(file_hash(&path).map(|hash| Object { path, hash }))
}

/// `from` copied to `to` whole (its permissions too): written under a name of its own beside `to`
/// and renamed into place, so that a reader in another process or node sees all of it or nothing;
/// removed if the copy fails.
fn place(from: &Path, to: &Path) -> Result<(), BuildError> {
    let io = |e: std::io::Error| BuildError::Io(to.to_path_buf(), e);
    let tmp = tempfile::Builder::new()
        .tempfile_in(to.parent().unwrap_or(Path::new(".")))
        .map_err(io)?
        .into_temp_path();
    std::fs::copy(from, &tmp).map_err(io)?;
    tmp.persist(to).map_err(|e| io(e.error))
}

/// The folder an exercise is compiled in when builds are cached: the cache's own (hidden from every
/// sandboxed run, writable for this nvcc only), holding the text and nvcc's output. The binary
/// names this folder in its debug information, not the submission's: the same text built for two
/// students gives binaries that say nothing of either, and a binary is served to any folder
/// (findings are matched to the file by its name). Removed when the build is done.
struct StagingDir {
    dir: PathBuf,
    _removed_on_drop: tempfile::TempDir,
}

impl StagingDir {
    fn new(cache: &BuildCache, source: &Path, text: &[u8]) -> Result<StagingDir, BuildError> {
        let parent = cache.dir.join("stage");
        mkdir(&parent)?;
        let folder = tempfile::Builder::new()
            .prefix("build.")
            .tempdir_in(&parent)
            .map_err(|e| BuildError::Io(parent, e))?;
        let stage = StagingDir {
            dir: folder.path().to_path_buf(),
            _removed_on_drop: folder,
        };
        let copy = stage.dir.join(source.file_name().unwrap_or_default());
        std::fs::write(&copy, text).map_err(|e| BuildError::Io(copy, e))?;
        Ok(stage)
    }
}

fn same_file(source: &Path, dep: &Path, cwd: Option<&Path>) -> bool {
    let abs = |p: &Path| match cwd {
        Some(c) if p.is_relative() => c.join(p),
        _ => p.to_path_buf(),
    };
    abs(source) == abs(dep)
        || std::fs::canonicalize(abs(source)).ok() == std::fs::canonicalize(abs(dep)).ok()
}

/// `CUDABUGS_BUILD_LOG=FILE`: one line per nvcc run or cache hit appended to FILE (how the test suite's
/// builds were counted). One write a line: `writeln!` writes each piece apart, and the lines of
/// builds side by side (a check's two, two graders') interleaved.
pub fn log_build(what: &str, binary: &Path) {
    if let Some(path) = crate::environment::path(crate::environment::BUILD_LOG) {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(format!("{what} {}\n", binary.display()).as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// nvcc 13.0's words (captured on this machine) for files that use what `cudabugs.cuh`
    /// included until 2026-12, and for errors of other kinds.
    #[test]
    fn only_a_file_that_may_want_the_old_headers_builds_again_with_them() {
        let qualified = "sum.cu(53): error: namespace \"std\" has no member \"vector\"\n";
        assert!(missed_old_includes(qualified, ""));
        // tests/fixtures/honest-variety/host-vector: nvcc names no header, the text does.
        let declared = "histogram.cu(41): error: qualified name is not allowed\n";
        let text = "#include <algorithm>\n  const std::vector<unsigned> zeros(BINS, 0u);\n";
        assert!(missed_old_includes(declared, text));
        let bare = "/tmp/u.cu(3): error: identifier \"vector\" is undefined\n";
        assert!(missed_old_includes(
            bare,
            "using namespace std;\nvector<int> v;\n"
        ));
        assert!(!missed_old_includes(bare, "vector<int> v;\n"), "no `using`");
        let other = "reduce.cu(9): error: identifier \"blockSum\" is undefined\n";
        let syntax = "reduce.cu(21): error: expected a \";\"\n";
        let text = "float v = std::fmaxf(a, b); std::vectors_of_mine x; return v\n";
        assert!(!missed_old_includes(other, text) && !missed_old_includes(syntax, text));
    }

    #[test]
    fn an_architecture_specific_target_is_built_for_that_target_alone() {
        assert_eq!(arch_flag("sm_90"), "-arch=sm_90");
        assert_eq!(arch_flag("sm_90a"), "-gencode=arch=compute_90a,code=sm_90a");
    }

    /// A workbook's grader folder with a harness object, and an exercise's text in a stage folder
    /// (named `stage`), as `build` compiles it.
    struct CacheFixture {
        dir: tempfile::TempDir,
        stage: String,
    }

    impl CacheFixture {
        fn new(source: &str, object: &[u8]) -> CacheFixture {
            CacheFixture::staged(source, object, "stage-1")
        }
        fn staged(source: &str, object: &[u8], stage: &str) -> CacheFixture {
            let dir = tempfile::tempdir().unwrap();
            let setup = CacheFixture {
                dir,
                stage: stage.into(),
            };
            std::fs::create_dir_all(setup.cwd()).unwrap();
            std::fs::create_dir_all(setup.root().join("harness")).unwrap();
            std::fs::write(setup.cwd().join("reduce.cu"), source).unwrap();
            std::fs::write(setup.root().join("harness/harness-0.o"), object).unwrap();
            setup
        }
        fn root(&self) -> PathBuf {
            self.dir.path().join(".cudabugs")
        }
        fn cwd(&self) -> PathBuf {
            self.root().join("work/build-cache/stage").join(&self.stage)
        }
        fn cache(&self) -> BuildCache {
            BuildCache {
                dir: self.root().join("work/build-cache"),
                root: self.root(),
            }
        }
        fn job(&self, flags: &[&str], binary: &Path) -> Job {
            let root = self.root();
            let mut job = Job::new("/usr/local/cuda/bin/nvcc", Duration::from_secs(1))
                .args(flags.iter().copied())
                .arg("-I")
                .arg(root.join("harness"))
                .arg("-o")
                .arg(binary);
            job = job.arg("reduce.cu").arg(root.join("harness/harness-0.o"));
            job.cwd = Some(self.cwd());
            job
        }
        fn key(&self, flags: &[&str], binary: &Path) -> blake3::Hash {
            cache_key(
                &self.cache(),
                "nvcc 13.0",
                &[self.job(flags, binary)],
                binary,
            )
        }
        fn binary(&self) -> PathBuf {
            self.cwd().join("a.out")
        }
    }

    #[test]
    fn the_key_follows_the_source_the_flags_and_the_harness_but_not_the_output_or_the_folders() {
        let a = CacheFixture::new("__global__ void k() {}\n", b"object");
        let key = a.key(&["-G"], &a.binary());
        assert_eq!(
            key,
            a.key(&["-G"], &a.root().join("elsewhere/bin")),
            "the output path is not an input"
        );
        // Another stage folder (another student, another plan) in another copy of the workbook.
        let b = CacheFixture::staged("__global__ void k() {}\n", b"object", "stage-2");
        assert_eq!(key, b.key(&["-G"], &b.binary()));
        assert_ne!(key, a.key(&["-O3"], &a.binary()), "flags");
        assert_ne!(
            key,
            cache_key(
                &a.cache(),
                "nvcc 12.8",
                &[a.job(&["-G"], &a.binary())],
                &a.binary()
            ),
            "compiler"
        );
        let edited = CacheFixture::new("__global__ void k() { }\n", b"object");
        assert_ne!(key, edited.key(&["-G"], &edited.binary()), "source text");
        let harness = CacheFixture::new("__global__ void k() {}\n", b"another object");
        assert_ne!(
            key,
            harness.key(&["-G"], &harness.binary()),
            "harness object"
        );
        let mut job = a.job(&["-G"], &a.binary());
        job.env.push(("NVCC_APPEND_FLAGS".into(), "-DX".into()));
        assert_ne!(
            key,
            cache_key(
                &a.cache(),
                "nvcc 13.0",
                std::slice::from_ref(&job),
                &a.binary()
            ),
            "nvcc's flag variables"
        );
        let mut job = a.job(&["-G"], &a.binary());
        job.env.push(("CUDA_VISIBLE_DEVICES".into(), "1".into()));
        job.env.push(("TMPDIR".into(), "/somewhere/else".into()));
        job.env
            .push(("LD_LIBRARY_PATH".into(), "/target/debug/deps".into()));
        assert_eq!(
            key,
            cache_key(
                &a.cache(),
                "nvcc 13.0",
                std::slice::from_ref(&job),
                &a.binary()
            ),
            "the GPU a worker runs on, its TMPDIR, the loader's path"
        );
        let mut job = a.job(&["-G"], &a.binary());
        job.env.push(("PATH".into(), "/opt/gcc-9/bin".into()));
        assert_ne!(
            key,
            cache_key(
                &a.cache(),
                "nvcc 13.0",
                std::slice::from_ref(&job),
                &a.binary()
            ),
            "the PATH the host compiler is found on"
        );
    }

    #[test]
    fn an_exercise_s_build_leaves_its_object_which_the_binary_kept_in_place_names() {
        use crate::tools::stub_compiler::{self, StubCompiler};
        let dir = tempfile::tempdir().unwrap();
        let (nvcc, harness) =
            stub_compiler::toolchain(&[("cudabugs.cuh", "// h\n")], &dir.path().join("h")).unwrap();
        let cache = BuildCache {
            dir: dir.path().join("cache"),
            root: dir.path().to_path_buf(),
        };
        let recipe = Recipe {
            nvcc: &nvcc,
            arch: "sm_90",
            harness: &harness,
            timeout: Duration::from_secs(10),
            cache: Some(&cache),
        };
        let launcher = StubCompiler {
            inner: crate::tools::launcher::Local,
        };
        let build = |text: &str| {
            let source = dir.path().join("a/reduce.cu");
            std::fs::create_dir_all(source.parent().unwrap()).unwrap();
            std::fs::write(&source, text).unwrap();
            let inputs = Inputs::Exercise {
                source: &source,
                flags: &[],
                arch: "sm_90",
            };
            let binary = source.with_file_name("bin");
            build(
                &launcher,
                &recipe,
                Flavor::Timing,
                inputs,
                &binary,
                Reuse::IfUnchanged,
                &|j| j,
            )
            .unwrap()
        };
        let first = build("__global__ void k() {}\n");
        let object = first.object.clone().expect("nvcc ran: the object is left");
        assert!(!first.reused);
        assert_eq!(object.path, dir.path().join("a/bin.o"));
        assert_eq!(file_hash(&object.path), Some(object.hash));
        // The same binary kept in place names the same object (its recipe file does).
        let kept = build("__global__ void k() {}\n");
        assert!(kept.reused);
        assert_eq!(
            kept.object.map(|o| (o.path, o.hash)),
            Some((object.path.clone(), object.hash))
        );
        // Another text: compiled and linked again, and its object named in its place.
        let edited = build("__global__ void k() { }\n");
        let again = edited.object.expect("nvcc ran");
        assert!(!edited.reused);
        assert_eq!(again.path, object.path);
        assert_ne!(again.hash, object.hash);
        assert_eq!(file_hash(&again.path), Some(again.hash));
    }

    #[test]
    fn make_rules_are_read_as_nvcc_writes_them() {
        let rule = "bin : reduce.cu \\\n    /usr/include/stdc-predef.h \\\n    ../../h/cudabugs.cuh /opt/a\\ b.h\n";
        let deps = make_deps(rule, Some(Path::new("/w/x")));
        assert_eq!(
            deps,
            [
                "/w/x/reduce.cu",
                "/usr/include/stdc-predef.h",
                "/w/x/../../h/cudabugs.cuh",
                "/opt/a b.h"
            ]
            .map(PathBuf::from)
        );
        assert!(make_deps("garbage", None).is_empty());
    }

    #[test]
    fn an_entry_serves_while_its_headers_are_unchanged_and_never_shares_its_file() {
        let a = CacheFixture::new("#include \"cudabugs.cuh\"\n", b"object");
        let cache = a.cache();
        let header = a.root().join("harness/cudabugs.cuh");
        std::fs::write(&header, "// v1\n").unwrap();
        // A header next to the text, found again next to the text of the build that looks it up.
        let local = a.cwd().join("local.h");
        std::fs::write(&local, "// here\n").unwrap();
        let binary = a.binary();
        std::fs::write(&binary, "built").unwrap();
        // The object the build compiled the file into, kept with the binary for the reach analysis.
        let object = object_beside(&binary);
        std::fs::write(&object, "compiled").unwrap();
        let key = a.key(&["-G"], &binary);
        let cwd = Some(a.cwd());
        assert_eq!(cache.lookup(&key, cwd.as_deref()), None);
        cache
            .store(
                &key,
                (&binary, Some(&object)),
                &[header.clone(), local.clone()],
                cwd.as_deref(),
            )
            .unwrap();
        let entry = cache.lookup(&key, cwd.as_deref()).expect("a hit");
        assert_eq!(std::fs::read(&entry).unwrap(), b"built");
        let kept = BuildCache::object_of(&entry).expect("the object kept with it");
        assert_eq!(std::fs::read(kept).unwrap(), b"compiled");
        // Written aside and renamed: nothing half-written is left, and the entry is a copy.
        let names: Vec<String> = std::fs::read_dir(&cache.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".tmp")), "{names:?}");
        std::fs::write(&binary, "changed by the program").unwrap();
        assert_eq!(
            std::fs::read(cache.lookup(&key, cwd.as_deref()).unwrap()).unwrap(),
            b"built"
        );
        // The manifest names the files relative to the root and to the build's folder.
        let manifest = std::fs::read_to_string(cache.manifest(&key)).unwrap();
        assert!(
            manifest.contains(" <root>/harness/cudabugs.cuh\n")
                && manifest.contains(" <here>/local.h\n"),
            "{manifest}"
        );
        let elsewhere = a.root().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        assert_eq!(
            cache.lookup(&key, Some(&elsewhere)),
            None,
            "no local.h beside this text"
        );
        std::fs::write(elsewhere.join("local.h"), "// here\n").unwrap();
        assert!(
            cache.lookup(&key, Some(&elsewhere)).is_some(),
            "the same local.h beside this text"
        );
        std::fs::write(&header, "// v2\n").unwrap();
        assert_eq!(
            cache.lookup(&key, cwd.as_deref()),
            None,
            "a header changed since"
        );
        std::fs::remove_file(&header).unwrap();
        assert_eq!(cache.lookup(&key, cwd.as_deref()), None, "a header gone");
    }
}
