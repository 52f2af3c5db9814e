//! The repository's book, untouched, built once for every test that reads it as it is (`checks`,
//! `spoilers`, `chromium`, and `cli`'s of `book --out`): a whole build with its search index takes
//! about 5 s of a 2-core machine. Built as a reader builds it, by `xtask book --out` (which compiles
//! the book tool on demand), into the target folder's scratch space, emptied first, so that nothing
//! is left in /tmp.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The repository and the built book's folder.
pub fn built() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let repo = crate::repo().canonicalize().unwrap();
        let out = out();
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let said = crate::common::xtask()
            .args(["--format", "json", "book", "--out"])
            .arg(&out)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        // `xtask` says where the book went in its JSON result.
        let said: serde_json::Value = serde_json::from_slice(&said).unwrap();
        let html = PathBuf::from(said["book"].as_str().unwrap_or_else(|| panic!("{said}")));
        (repo, html)
    })
}

/// The folder `built` asks `book --out` for.
pub fn out() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("repo-book")
}
