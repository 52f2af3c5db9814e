//! The repository's book, untouched, built once for every test that reads it as it is (`checks`,
//! `spoilers`, `chromium`, and `cli`'s of `book --out`): a whole build with its search index takes
//! about 5 s of a 2-core machine. Built as a reader builds it, by `xtask book --out` (which compiles
//! the book tool on demand), into the target folder's scratch space, emptied first, so that nothing
//! is left in /tmp.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The repository and the built book's folder.
pub fn built() -> &'static (PathBuf, PathBuf) {
    &book().0
}

/// The built book's folder and the folder `--out` named.
pub fn built_into() -> (&'static Path, &'static Path) {
    let ((_, html), out) = book();
    (html, out)
}

/// ((the repository, the built book's folder), the folder `--out` named): `xtask` says where the
/// book went in its JSON result.
fn book() -> &'static ((PathBuf, PathBuf), PathBuf) {
    static BUILT: OnceLock<((PathBuf, PathBuf), PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let repo = crate::repo().canonicalize().unwrap();
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repo-book");
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
        let said: serde_json::Value = serde_json::from_slice(&said).unwrap();
        let html = PathBuf::from(said["book"].as_str().unwrap_or_else(|| panic!("{said}")));
        ((repo, html), out)
    })
}
