//! The repository's book, untouched, built once for every test that reads it as it is (`checks`,
//! `spoilers`, `chromium`): a whole build with its search index takes about 5 s of a 2-core
//! machine. Into the target folder's scratch space, emptied first, so that nothing is left in /tmp.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The repository and the built book's folder.
pub fn built() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let repo = crate::repo().canonicalize().unwrap();
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repo-book");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let html = cudabugs_book::build(&repo.join("book"), &repo, Some(&out)).unwrap();
        (repo, html)
    })
}
