//! The harness: its sources written out from the copies embedded in the binary, and its object
//! compiled once (host code and its one kernel side by side), which every exercise's build links.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{check, mkdir, BuildError};
use crate::tools::runner::{self, Job};
use crate::tools::toolchain::Nvcc;

/// The harness object's build (the grader's own code, run once).
pub const HARNESS_TIMEOUT: Duration = Duration::from_secs(180);

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

/// The harness's sources written into `dir` (the headers every build includes, and the programs
/// the grader builds of its own, such as the peak's), each only where it changed.
pub fn write_harness(files: &[(&str, &str)], dir: &Path) -> Result<(), BuildError> {
    mkdir(dir)?;
    for (name, text) in files {
        write_if_changed(&dir.join(name), text)?;
    }
    Ok(())
}

/// Write the harness into `dir` and compile its object, unless an up-to-date one exists.
pub fn prepare_harness(
    nvcc: &Nvcc,
    files: &[(&str, &str)],
    dir: &Path,
) -> Result<Harness, BuildError> {
    write_harness(files, dir)?;
    // blake3, not DefaultHasher: the name must not change with the Rust release that built xtask.
    let mut hasher = blake3::Hasher::new();
    for (name, text) in files {
        for part in [name.as_bytes(), text.as_bytes()] {
            crate::hash::feed_framed(&mut hasher, part);
        }
    }
    hasher.update(nvcc.path.as_os_str().as_encoded_bytes());
    // With CUPTI's headers the harness can record what the driver ran (harness/driver.cuh).
    let cupti: Vec<std::ffi::OsString> = match &nvcc.cupti {
        Some(c) => vec![
            "-DCUDABUGS_CUPTI".into(),
            "-I".into(),
            c.include.clone().into(),
        ],
        None => Vec::new(),
    };
    for flag in &cupti {
        hasher.update(flag.as_encoded_bytes());
    }
    let object = dir.join(format!("harness-{}.o", &hasher.finalize().to_hex()[..16]));
    if !object.is_file() {
        // Its parts in a folder of this build's own: a grader in another process may build it too.
        let scratch =
            tempfile::tempdir_in(dir).map_err(|e| BuildError::Io(dir.to_path_buf(), e))?;
        let [host, kernel, tmp] =
            ["harness.o", "warm.o", "joined.o"].map(|n| scratch.path().join(n));
        // harness.cu is host code: compiled as C++ (no device pass over its headers), beside its one
        // kernel (warm.cu), then joined into one relocatable object. On the 2-core machine the
        // first check waits 3.7 s for it, where the whole harness as one CUDA file took 6.3 s.
        let compile = |cxx: bool, source: &str, out: &Path| {
            let source = dir.join(source);
            let language: &[&str] = if cxx { &["-x", "c++"] } else { &[] };
            let job = Job::new(&nvcc.path, HARNESS_TIMEOUT)
                .args(language.iter().copied())
                .args(["-O2", "-std=c++17", "-c"])
                .args(if cxx { cupti.clone() } else { Vec::new() })
                .arg("-o")
                .arg(out)
                .arg(&source);
            check(runner::run(&job)?, &source, HARNESS_TIMEOUT)
        };
        std::thread::scope(|scope| {
            let kernel_built = scope.spawn(|| compile(false, "warm.cu", &kernel));
            compile(true, "harness.cu", &host)?;
            kernel_built
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e))
        })?;
        let join = Job::new("ld", HARNESS_TIMEOUT)
            .arg("-r")
            .arg("-o")
            .arg(&tmp)
            .arg(&host)
            .arg(&kernel);
        check(
            runner::run(&join)?,
            &dir.join("harness.cu"),
            HARNESS_TIMEOUT,
        )?;
        std::fs::rename(&tmp, &object).map_err(|e| BuildError::Io(object.clone(), e))?;
    }
    Ok(Harness {
        include_dir: dir.to_path_buf(),
        object,
    })
}
