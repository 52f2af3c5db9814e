//! The compiler seam: a plan's builds made by nvcc (every real run), or by this stub, which writes
//! a placeholder binary for each build, so that a whole plan runs on a machine without nvcc where
//! a recording serves every run of a tool or a program (`--replay-tools` with
//! `CUDABUGS_STUB_COMPILER=1`: tests, and a CPU-only machine reading a recording).
//!
//! The stub stands in for three tools, each by a path no real tool has: nvcc (a placeholder file
//! at `-o`, and the dependency list `-MF` asks for), objdump and cuobjdump (nothing printed: a
//! placeholder has no symbols and no device code, so what a submission reaches and the clocks its
//! device code reads are not judged). It never stands in for a run that a recording must serve.
//! It reads no C++: a file nvcc would refuse builds here too (`tests/grade.rs` shows the one grade
//! of the fixture class this changes), so a compile error is only ever nvcc's to report.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::tools::launcher::Launcher;
use crate::tools::nvcc::{write_harness, BuildError, Harness};
use crate::tools::runner::{Captured, Exit, Finished, Job, SpawnError};
use crate::tools::sandbox::Level;
use crate::tools::toolchain::{Cupti, Nvcc};

/// The stub's nvcc: a path no real tool has.
pub const NVCC: &str = "/cudabugs-stub-compiler/nvcc";
/// The stub's objdump (`judge::reach` reads what it prints).
pub const OBJDUMP: &str = "/cudabugs-stub-compiler/objdump";
/// The stub's cuobjdump (`tools::sass` reads what it prints).
pub const CUOBJDUMP: &str = "/cudabugs-stub-compiler/cuobjdump";
/// The CUPTI library the stub's toolkit names (a served run never opens it).
const CUPTI: &str = "/cudabugs-stub-compiler/libcupti.so";

/// Runs every job through `inner`, but the stub's tools' jobs, which it answers itself.
pub struct StubCompiler<L> {
    pub inner: L,
}

impl<L: Launcher> Launcher for StubCompiler<L> {
    fn launch(&self, job: &Job) -> Result<Finished, SpawnError> {
        let program = job.program.as_os_str();
        if program == OsStr::new(NVCC) {
            return compile(job);
        }
        if program == OsStr::new(OBJDUMP) || program == OsStr::new(CUOBJDUMP) {
            return Ok(finished(Instant::now(), Vec::new()));
        }
        self.inner.launch(job)
    }
    fn isolation(&self) -> Level {
        self.inner.isolation()
    }
    fn replays(&self) -> bool {
        self.inner.replays()
    }
    fn records(&self) -> bool {
        self.inner.records()
    }
}

/// The stub's nvcc, and the harness: its sources written out (the grader builds programs of its
/// own from them, such as the peak's), its object a name the stub never reads.
pub fn toolchain(
    harness: &[(&str, &str)],
    harness_dir: &Path,
) -> Result<(Nvcc, Harness), BuildError> {
    write_harness(harness, harness_dir)?;
    // As the pinned toolkit has, CUPTI: the bug track's runs are timed from the driver's records
    // (which a recording serves), not by a separate ncu pass.
    let nvcc = Nvcc {
        path: NVCC.into(),
        extra_flags: Vec::new(),
        cupti: Some(Cupti {
            include: harness_dir.to_path_buf(),
            library: PathBuf::from(CUPTI),
        }),
    };
    let harness = Harness {
        include_dir: harness_dir.to_path_buf(),
        object: harness_dir.join("harness-stub.o"),
    };
    Ok((nvcc, harness))
}

fn finished(start: Instant, stdout: Vec<u8>) -> Finished {
    Finished {
        exit: Exit::Code(0),
        stdout: Captured {
            bytes: stdout,
            dropped: 0,
        },
        stderr: Captured::default(),
        wall: start.elapsed(),
        leftovers: 0,
        escaped: false,
        oom_killed: false,
        gpu_memory_over: None,
        isolation: None,
    }
}

/// What nvcc would have made, as a placeholder: the file at `-o` (named by every input and flag,
/// and by the content of the sources and objects it was given, so that different builds differ;
/// executable, as a binary is), and the `-MF` list of the sources it read.
fn compile(job: &Job) -> Result<Finished, SpawnError> {
    let start = Instant::now();
    let at = |p: &OsStr| match &job.cwd {
        Some(cwd) if Path::new(p).is_relative() => cwd.join(p),
        _ => PathBuf::from(p),
    };
    let after = |flag: &str| {
        job.args
            .iter()
            .position(|a| a == flag)
            .and_then(|i| job.args.get(i + 1))
            .map(|p| at(p))
    };
    let failed = |what: &str, e: std::io::Error| SpawnError {
        program: NVCC.into(),
        source: std::io::Error::new(e.kind(), format!("the stub compiler {what}: {e}")),
    };
    let output = after("-o").ok_or_else(|| {
        failed(
            "was given no -o",
            std::io::Error::from(std::io::ErrorKind::InvalidInput),
        )
    })?;
    let sources: Vec<PathBuf> = job
        .args
        .iter()
        .filter(|a| Path::new(a).extension().is_some_and(|e| e == "cu"))
        .map(|a| at(a))
        .collect();
    let mut hasher = blake3::Hasher::new();
    for arg in &job.args {
        hasher.update(arg.as_encoded_bytes()).update(b"\0");
    }
    for source in &sources {
        let text = std::fs::read(source).map_err(|e| failed("cannot read a source", e))?;
        hasher.update(&text);
    }
    // A link's inputs by their content too (a build's second step links the object its first
    // made): another text, another placeholder.
    for input in job.args.iter().map(|a| at(a)) {
        if input != output && input.extension().is_some_and(|e| e == "o") && input.is_file() {
            let bytes = std::fs::read(&input).map_err(|e| failed("cannot read an object", e))?;
            hasher.update(&bytes);
        }
    }
    let placeholder = format!(
        "#!/bin/false\n# a placeholder of the stub compiler ({}), never run: a recording serves its runs\n",
        &hasher.finalize().to_hex()[..16]
    );
    std::fs::write(&output, placeholder).map_err(|e| failed("cannot write -o", e))?;
    std::fs::set_permissions(&output, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| failed("cannot make -o executable", e))?;
    if let Some(deps) = after("-MF") {
        let listed: Vec<String> = sources
            .iter()
            .map(|s| s.display().to_string().replace(' ', "\\ "))
            .collect();
        let rule = format!("{}: {}\n", output.display(), listed.join(" "));
        std::fs::write(&deps, rule).map_err(|e| failed("cannot write -MF", e))?;
    }
    Ok(finished(start, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::launcher::Local;
    use std::time::Duration;

    #[test]
    fn the_stub_writes_a_placeholder_and_its_sources_and_leaves_other_jobs_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.cu"), "__global__ void k() {}\n").unwrap();
        let stub = StubCompiler { inner: Local };
        let build = |flags: &[&str]| {
            let mut job = Job::new(NVCC, Duration::from_secs(5))
                .args(flags.iter().copied())
                .args(["-o", "a.out", "k.cu", "-MD", "-MF", "a.out.d"]);
            job.cwd = Some(dir.path().to_path_buf());
            assert!(stub.launch(&job).unwrap().success());
            std::fs::read_to_string(dir.path().join("a.out")).unwrap()
        };
        let (debug, release) = (build(&["-G"]), build(&["-O3"]));
        assert!(debug.starts_with("#!/bin/false\n"));
        assert_ne!(debug, release, "different flags, different placeholders");
        let mode = std::fs::metadata(dir.path().join("a.out"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111);
        let deps = std::fs::read_to_string(dir.path().join("a.out.d")).unwrap();
        assert!(deps.ends_with("k.cu\n"), "{deps}");
        let dump = stub
            .launch(&Job::new(OBJDUMP, Duration::from_secs(5)))
            .unwrap();
        assert!(dump.success() && dump.stdout.text().is_empty());
        // Anything else runs for real.
        let echo = stub
            .launch(&Job::new("echo", Duration::from_secs(5)).arg("real"))
            .unwrap();
        assert_eq!(echo.stdout.text().trim(), "real");
        let no_output = Job::new(NVCC, Duration::from_secs(5)).arg("k.cu");
        assert!(stub.launch(&no_output).is_err());
    }
}
