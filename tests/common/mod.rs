//! Helpers shared by the CLI tests: the binary, a throwaway copy of the workbook, and the skip rule
//! for tests that need nvcc.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The xtask binary run from the repository, never installing a toolkit.
pub fn xtask() -> Command {
    let mut cmd = Command::cargo_bin("xtask").unwrap();
    cmd.current_dir(repo()).env("CUDABUGS_NO_INSTALL", "1").env_remove("CUDABUGS_ROOT").env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
    cmd
}

/// Whether nvcc can be found as the grader would find it; if not, the test says it was skipped.
pub fn nvcc_or_skip(test: &str) -> bool {
    let found = grader::tools::toolchain::find(grader::tools::toolchain::ToolName::Nvcc, repo()).is_some();
    if !found {
        eprintln!("SKIPPED {test}: no nvcc (run `cargo xtask toolkit install`)");
    }
    found
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
            grader::exercise::workbook::copy_tree(&repo().join(sub), &dir.path().join(sub)).unwrap();
        }
        let toolkit = repo().join(".cudabugs/toolkit");
        if toolkit.exists() {
            std::fs::create_dir_all(dir.path().join(".cudabugs")).unwrap();
            std::os::unix::fs::symlink(&toolkit, dir.path().join(".cudabugs/toolkit")).unwrap();
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
}
