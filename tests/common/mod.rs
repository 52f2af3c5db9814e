//! Helpers shared by the CLI tests: the binary, a throwaway copy of the workbook (with the harness
//! object built once for all of them), and the skip rule for tests that need nvcc.
#![allow(dead_code)]

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use assert_cmd::Command;
use grader::environment::{TestDepth, TESTS};

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The xtask binary run from the repository, never installing a toolkit.
pub fn xtask() -> Command {
    let mut cmd = Command::cargo_bin("xtask").unwrap();
    cmd.current_dir(repo())
        .envs(env())
        .env_remove("CUDABUGS_ROOT")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    cmd
}

/// What every xtask a test starts runs with: no toolkit install, nvcc named by one path, the
/// repository's, so that every copy names its harness object alike and takes it built (`Copy::new`),
/// and one build cache for all copies (see `build_cache`).
pub fn env() -> Vec<(&'static str, std::ffi::OsString)> {
    let mut env = vec![
        ("CUDABUGS_NO_INSTALL", "1".into()),
        (grader::environment::BUILD_CACHE, build_cache().into()),
    ];
    if let Some(nvcc) = nvcc() {
        env.push(("CUDABUGS_NVCC", nvcc.path.clone().into()));
    }
    env
}

/// The build cache the tests' copies share: the tests build the same files in copy after copy (138
/// nvcc runs for 55 distinct builds in tests/grade.rs alone). Under the target folder, so that it
/// outlives one test binary and `cargo clean` clears it. A test that must see nvcc run removes
/// the variable (the copy then has its own, empty, cache).
pub fn build_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("build-cache")
}

fn nvcc() -> Option<&'static grader::tools::toolchain::Nvcc> {
    static NVCC: OnceLock<Option<grader::tools::toolchain::Nvcc>> = OnceLock::new();
    NVCC.get_or_init(|| grader::tools::toolchain::Toolchain::discover(repo()).nvcc)
        .as_ref()
}

/// The harness object, compiled once (not once per copy: ~2 s of nvcc each) into a folder under
/// the target directory named by what it is made of. xtask names the object by the harness sources
/// and nvcc's path and keeps one it finds, so a copy given this one builds none. The folder appears
/// whole (renamed into place), as concurrent test runs need.
fn built_harness() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let nvcc = nvcc()?;
        // build.rs's HARNESS_FILES in its order, as the binary embeds them (else xtask builds its own).
        let files: Vec<(&str, String)> = [
            "cudabugs.cuh",
            "timeline.cuh",
            "driver.cuh",
            "harness.cu",
            "warm.cu",
            "peak.cu",
            "baseline-sgemm.cu",
        ]
        .into_iter()
        .map(|name| {
            (
                name,
                std::fs::read_to_string(repo().join("harness").join(name)).unwrap(),
            )
        })
        .collect();
        // The tag names how xtask names the object: a folder made under an older naming holds an
        // object xtask would not take (each copy would build its own, and share no cached build).
        let mut hasher = std::hash::DefaultHasher::new();
        ("object named by blake3", &files, &nvcc.path).hash(&mut hasher);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("harness-{:016x}", hasher.finish()));
        if !dir.is_dir() {
            // Cargo makes the folder when it builds the tests, not when it runs them: one removed
            // since (to empty the tests' build cache) would leave every copy building its own.
            std::fs::create_dir_all(env!("CARGO_TARGET_TMPDIR")).ok()?;
            let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).ok()?;
            let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
            // A failure here is xtask's to report, when it builds the harness itself.
            grader::tools::nvcc::prepare_harness(nvcc, &files, scratch.path()).ok()?;
            let scratch = scratch.keep();
            // Another test run may have put it in place first: then that one is kept.
            if std::fs::rename(&scratch, &dir).is_err() {
                let _ = std::fs::remove_dir_all(&scratch);
            }
        }
        dir.is_dir().then_some(dir)
    })
    .as_deref()
}

/// Whether nvcc can be found as the grader would find it; if not, the test says it was skipped, or
/// fails where CUDABUGS_REQUIRE_NVCC is set (CI), so that a missing toolkit cannot pass as green.
pub fn nvcc_or_skip(test: &str) -> bool {
    let found =
        grader::tools::toolchain::find(grader::tools::toolchain::ToolName::Nvcc, repo()).is_some();
    if !found {
        assert!(std::env::var_os("CUDABUGS_REQUIRE_NVCC").is_none(), "{test}: CUDABUGS_REQUIRE_NVCC is set but no nvcc was found (run `cargo xtask toolkit install`)");
        eprintln!("SKIPPED {test}: no nvcc (run `cargo xtask toolkit install`)");
    }
    found
}

/// What builds a replayed plan's programs: nvcc, or the stub compiler that writes placeholders
/// (`grader::tools::stub_compiler`), which lets a whole plan run where no nvcc is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiler {
    Nvcc,
    Stub,
}

/// `cmd`'s builds made by `compiler`: with the stub, nvcc's path leads nowhere, so that a build
/// that still reached nvcc would fail.
pub fn built_by(cmd: &mut Command, compiler: Compiler) {
    if compiler == Compiler::Stub {
        cmd.env("CUDABUGS_STUB_COMPILER", "1")
            .env("CUDABUGS_NVCC", "/nonexistent/nvcc");
    }
}

/// The compilers a replay test runs its plan with: the stub always, and at full depth
/// (`CUDABUGS_TESTS=full`, CI's second pass) nvcc too, where one is found (the nvcc half says
/// SKIPPED where none is, or fails where CUDABUGS_REQUIRE_NVCC is set). A quick `cargo test` says
/// that it left the nvcc half out.
pub fn compilers(test: &str) -> Vec<Compiler> {
    let mut all = vec![Compiler::Stub];
    if TestDepth::from_env() == TestDepth::Quick {
        eprintln!("SAMPLED {test}: the stub compiler only ({TESTS}=full runs nvcc too)");
    } else if nvcc_or_skip(test) {
        all.push(Compiler::Nvcc);
    }
    all
}

/// A copy of the workbook (exercises and solutions) in a temporary folder, sharing the repository's
/// pip toolkit if it has one, so that tests may edit files and progress freely.
pub struct Copy {
    pub dir: tempfile::TempDir,
}

impl Copy {
    pub fn new() -> Copy {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["exercises", "solutions"] {
            grader::exercise::workbook::copy_tree(&repo().join(sub), &dir.path().join(sub))
                .unwrap();
        }
        let toolkit = repo().join(".cudabugs/toolkit");
        if toolkit.exists() {
            std::fs::create_dir_all(dir.path().join(".cudabugs")).unwrap();
            std::os::unix::fs::symlink(&toolkit, dir.path().join(".cudabugs/toolkit")).unwrap();
        }
        if let Some(built) = built_harness() {
            let harness = dir.path().join(".cudabugs/harness");
            std::fs::create_dir_all(&harness).unwrap();
            for object in std::fs::read_dir(built)
                .unwrap()
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "o"))
            {
                std::fs::copy(object.path(), harness.join(object.file_name())).unwrap();
            }
        }
        Copy { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// xtask run against this copy.
    pub fn xtask(&self) -> Command {
        let mut cmd = xtask();
        cmd.env("CUDABUGS_ROOT", self.root());
        cmd
    }

    /// `xtask` against this copy as a plain process, for a test that starts several at once or
    /// reads one while it runs.
    pub fn spawnable(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("xtask"));
        cmd.current_dir(repo())
            .envs(env())
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env("CUDABUGS_ROOT", self.root());
        cmd
    }

    /// `xtask` in this copy, its builds made by `compiler` (`built_by`).
    pub fn xtask_built_by(&self, compiler: Compiler) -> Command {
        let mut cmd = self.xtask();
        built_by(&mut cmd, compiler);
        cmd
    }
}
