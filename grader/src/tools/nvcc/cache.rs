//! The build cache: binaries kept by what they were built from (the compiler, the command, the
//! content of every file it names and the environment that matters), checked against the headers
//! each build read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{mkdir, place, BuildError};
use crate::tools::runner::Job;

/// Binaries kept by what they were built from, so that the same text built again (in another plan's
/// folder, for another student, in another copy of the workbook) costs a file copy instead of nvcc:
/// `cargo test` asks for 188 builds; with the cache 85 ran nvcc (counted with `CUDABUGS_BUILD_LOG`),
/// and tests/grade.rs took 52 s instead of 98 s on 2 shared cores.
///
/// The key is the compiler, the command, the content of every file it names and the environment
/// that matters (`cache_key`); the headers the build read are checked against the entry's manifest
/// (`nvcc -MD`). A `-G -g` binary is not relocatable: nvcc writes the absolute folder it ran in into
/// the device and host debug information (DWARF `comp_dir`; compute-sanitizer reports
/// `/that/folder/reduce.cu:22`), whatever paths it is given. So an exercise is compiled in a stage
/// folder of the cache's (`Stage`), whose path names no submission, and findings are matched to the
/// submission's file by its name, as a replayed recording's are.
///
/// Who writes it: only the grader, after nvcc, from the stage (never from a folder a submission's
/// program can write), each entry written aside and renamed into place. The cache is hidden from
/// every sandboxed run (`stages::confinement`).
#[derive(Debug, Clone)]
pub struct BuildCache {
    pub dir: PathBuf,
    /// Paths under it are keyed relative to it.
    pub root: PathBuf,
}

impl BuildCache {
    /// The cache of a workbook (`Workbook::build_cache_dir`, inside the work root that every
    /// sandboxed run has hidden), unless `CUDABUGS_BUILD_CACHE` names another folder (which the
    /// caller must hide as well); paths under the workbook's grader folder `work_dir` are keyed
    /// relative to it.
    pub fn for_workbook(default_dir: PathBuf, work_dir: &Path) -> BuildCache {
        let dir = crate::environment::path(crate::environment::BUILD_CACHE)
            .filter(|v| !v.as_os_str().is_empty())
            .unwrap_or(default_dir);
        BuildCache {
            dir,
            root: work_dir.to_path_buf(),
        }
    }

    /// A path as the key holds it: relative to nvcc's working folder or to the root (marked) where
    /// it is inside one.
    fn portable(&self, path: &Path, cwd: Option<&Path>) -> String {
        if let Some(rel) = cwd.and_then(|c| path.strip_prefix(c).ok()) {
            return format!("<here>/{}", rel.display());
        }
        match path.strip_prefix(&self.root) {
            Ok(rel) => format!("<root>/{}", rel.display()),
            Err(_) => path.display().to_string(),
        }
    }

    fn local(&self, portable: &str, cwd: Option<&Path>) -> PathBuf {
        if let (Some(rel), Some(c)) = (portable.strip_prefix("<here>/"), cwd) {
            return c.join(rel);
        }
        match portable.strip_prefix("<root>/") {
            Some(rel) => self.root.join(rel),
            None => PathBuf::from(portable),
        }
    }

    /// The turn to build `key`: one build of a key at a time among the graders (and the threads of
    /// one) that share this cache, so that the second takes the first's entry rather than running
    /// nvcc on the same text again (two workers, shards on one node, the test suite's copies).
    /// None where the lock cannot be had: that build goes on alone.
    pub(super) fn building(&self, key: &blake3::Hash) -> Option<crate::tools::lock::Held> {
        crate::tools::lock::exclusive(&self.dir.join(format!("{}.lock", key.to_hex())))
    }

    pub(super) fn manifest(&self, key: &blake3::Hash) -> PathBuf {
        self.dir.join(format!("{}.deps", key.to_hex()))
    }

    /// The binary of a key and the files it depended on (the manifest's text).
    fn entry(&self, key: &blake3::Hash, manifest: &str) -> PathBuf {
        let mut h = blake3::Hasher::new();
        h.update(key.as_bytes()).update(manifest.as_bytes());
        self.dir.join(format!("{}.bin", h.finalize().to_hex()))
    }

    /// The cached binary for `key`, if every file the build read besides its sources (headers,
    /// the toolkit's included) still has the content it had then.
    pub(super) fn lookup(&self, key: &blake3::Hash, cwd: Option<&Path>) -> Option<PathBuf> {
        let manifest = std::fs::read_to_string(self.manifest(key)).ok()?;
        for line in manifest.lines() {
            let (hash, path) = line.split_once(' ')?;
            if file_hash(&self.local(path, cwd))?.to_hex().as_str() != hash {
                return None;
            }
        }
        let entry = self.entry(key, &manifest);
        entry.is_file().then_some(entry)
    }

    /// The object an entry's build compiled the exercise's file into, kept beside its binary
    /// (`store`): what the compiled-reach analysis reads, so that a binary served from the cache
    /// needs no compile of its file alone.
    pub(super) fn object_of(entry: &Path) -> Option<PathBuf> {
        Some(object_entry(entry)).filter(|o| o.is_file())
    }

    /// Keep `binary` (and the object its file was compiled into, where it has one) under `key` with
    /// the dependencies nvcc listed: the object, the binary, then the manifest that points at them,
    /// each written aside and renamed into place, so that a reader (in another process) sees a whole
    /// entry or none.
    pub(super) fn store(
        &self,
        key: &blake3::Hash,
        (binary, object): (&Path, Option<&Path>),
        deps: &[PathBuf],
        cwd: Option<&Path>,
    ) -> Result<(), BuildError> {
        mkdir(&self.dir)?;
        let mut manifest = String::new();
        for d in deps {
            // A file that vanished is no dependency a later build could check: keep nothing.
            let Some(hash) = file_hash(d) else {
                return Ok(());
            };
            manifest.push_str(&format!("{} {}\n", hash.to_hex(), self.portable(d, cwd)));
        }
        let entry = self.entry(key, &manifest);
        if let Some(object) = object {
            place(object, &object_entry(&entry))?;
        }
        place(binary, &entry)?;
        let path = self.manifest(key);
        crate::exercise::workbook::write_atomically(&path, &manifest)
            .map_err(|e| BuildError::Io(path, e))
    }
}

/// Where an entry's object is kept: beside its binary.
fn object_entry(entry: &Path) -> PathBuf {
    entry.with_extension("o")
}

/// A file's content hash, streamed (the cache's manifests; the kept SASS reads' keys).
pub fn file_hash(path: &Path) -> Option<blake3::Hash> {
    let mut h = blake3::Hasher::new();
    h.update_reader(std::fs::File::open(path).ok()?).ok()?;
    Some(h.finalize())
}

/// What names the compiler: `nvcc --version`'s last line (asked once per path and process), its
/// path, size and time stamp (a toolkit updated in place).
pub(super) fn compiler_id(nvcc: &Path) -> String {
    static SEEN: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());
    let meta = std::fs::metadata(nvcc)
        .ok()
        .map(|m| (m.len(), m.modified().ok()));
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, v)) = seen.iter().find(|(p, _)| p == nvcc) {
        return format!("{v} {} {meta:?}", nvcc.display());
    }
    let v = crate::tools::toolchain::version(nvcc).unwrap_or_default();
    seen.push((nvcc.to_path_buf(), v.clone()));
    format!("{v} {} {meta:?}", nvcc.display())
}

/// The variables of a build's environment that can change what nvcc makes (the host compiler is
/// found on PATH; NVCC_PREPEND_FLAGS and the like add flags); the rest (HOME, TMPDIR, the GPU
/// selection, LD_LIBRARY_PATH, which `cargo test` sets per package) cannot.
fn build_env(job: &Job) -> Vec<(OsString, OsString)> {
    let affects = |k: &OsString| {
        ["PATH", "CUDA_HOME", "CUDA_PATH"].iter().any(|v| k == v)
            || k.to_string_lossy().starts_with("NVCC")
    };
    let mut env: Vec<(OsString, OsString)> = if job.clear_env {
        Vec::new()
    } else {
        crate::environment::all()
    };
    for (k, v) in &job.env {
        env.retain(|(have, _)| have != k);
        env.push((k.clone(), v.clone()));
    }
    env.retain(|(k, _)| affects(k));
    env.sort();
    env
}

/// The cache key of a build: the compiler, and for each of its commands (`jobs`, run one after
/// another) the environment that matters, the command with the output path left out and every path
/// inside the root made relative, the content of every file the command names (the sources, the
/// harness object), and where nvcc runs. Headers are not in the key: the entry's manifest lists
/// them with their content's hash.
pub(super) fn cache_key(
    cache: &BuildCache,
    compiler: &str,
    jobs: &[Job],
    binary: &Path,
) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    let mut field = |label: &str, bytes: &[u8]| {
        h.update(label.as_bytes());
        crate::hash::feed_framed(&mut h, bytes);
    };
    field("cudabugs-build-cache-v2", b"");
    field("compiler", compiler.as_bytes());
    for job in jobs {
        let cwd = job.cwd.as_deref();
        field("program", cache.portable(&job.program, cwd).as_bytes());
        for (k, v) in build_env(job) {
            field("env", k.as_encoded_bytes());
            field("=", cache.portable(Path::new(&v), cwd).as_bytes());
        }
        for a in &job.args {
            let path = Path::new(a);
            if path == binary {
                field("arg", b"<out>");
                continue;
            }
            field("arg", cache.portable(path, cwd).as_bytes());
            let named = cwd
                .map(|c| c.join(path))
                .unwrap_or_else(|| path.to_path_buf());
            if named.is_file() {
                field(
                    "content",
                    file_hash(&named)
                        .map(|h| *h.as_bytes())
                        .unwrap_or_default()
                        .as_slice(),
                );
            }
        }
    }
    h.finalize()
}

/// The files a make rule written by `nvcc -MD -MF` lists after its target, relative ones resolved
/// against `cwd`.
pub(super) fn make_deps(rule: &str, cwd: Option<&Path>) -> Vec<PathBuf> {
    let joined = rule.replace("\\\n", " ");
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = joined.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars
                .peek()
                .is_some_and(|n| *n == ' ' || *n == '\\' || *n == '#') =>
            {
                word.push(chars.next().unwrap_or(' '))
            }
            c if c.is_whitespace() => words.push(std::mem::take(&mut word)),
            c => word.push(c),
        }
    }
    words.push(word);
    let words: Vec<String> = words.into_iter().filter(|w| !w.is_empty()).collect();
    let Some(colon) = words.iter().position(|w| w.ends_with(':')) else {
        return Vec::new();
    };
    words[colon + 1..]
        .iter()
        .map(|w| match cwd {
            Some(c) if Path::new(w).is_relative() => c.join(w),
            _ => PathBuf::from(w),
        })
        .collect()
}
