//! What search indexes: the book's text outside its folds. mdBook indexes every word of a page,
//! the hints and fixes folded in `<details>` included, and previews them under each result: a
//! search for `col_major` showed 41's fix. So the book is built a second time with its folds
//! dropped, and that build's search index replaces the first's (the pages' headings, and so the
//! index's links, are the same in both).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context as _, Result};
use mdbook_driver::MDBook;

use crate::Cudabugs;

/// `text` without its `<details>` elements (a fold inside a fold goes with it).
pub(crate) fn without_folds(text: &str) -> String {
    const OPEN: &str = "<details>";
    const CLOSE: &str = "</details>";
    let mut kept = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        kept.push_str(&rest[..at]);
        let (mut depth, mut i) = (0usize, at);
        loop {
            match (rest[i..].find(OPEN), rest[i..].find(CLOSE)) {
                (Some(o), Some(c)) if o < c => {
                    depth += 1;
                    i += o + OPEN.len();
                }
                (_, Some(c)) => {
                    i += c + CLOSE.len();
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                (_, None) => {
                    i = rest.len();
                    break;
                }
            }
        }
        rest = &rest[i..];
    }
    kept.push_str(rest);
    kept
}

/// The search index files of a built book (`searchindex*.js`, and `.json` where written).
fn index_files(html: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(html)
        .with_context(|| format!("reading {}", html.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("searchindex"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Replace the search index of the book built in `html` with one of its text outside the folds.
pub(crate) fn index_without_folds(book_root: &Path, workbook: &Path, html: &Path) -> Result<()> {
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let scratch = std::env::temp_dir().join(format!(
        "cudabugs-book-search-{}-{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| -> Result<()> {
        let mut book = MDBook::load(book_root).map_err(|e| anyhow::anyhow!("{e:#}"))?;
        book.config.build.build_dir = scratch.clone();
        book.with_preprocessor(Cudabugs {
            workbook: workbook.to_path_buf(),
            search_only: true,
        });
        book.build().map_err(|e| anyhow::anyhow!("{e:#}"))?;
        let (old, new) = (
            index_files(html)?,
            index_files(&book.build_dir_for("html"))?,
        );
        anyhow::ensure!(
            old.len() == new.len() && !old.is_empty(),
            "the search index files differ between the two builds: {old:?} and {new:?}"
        );
        for (old, new) in old.iter().zip(&new) {
            std::fs::copy(new, old)
                .with_context(|| format!("replacing {} with {}", old.display(), new.display()))?;
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result.context("indexing the book for search without its folds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_and_the_folds_inside_them_are_dropped() {
        let text = "a\n<details>\n<summary>Hint</summary>\n\nfix\n<details>in</details>\nmore\n</details>\nb <details>x</details> c";
        assert_eq!(without_folds(text), "a\n\nb  c");
    }
}
