//! A program's sources handed to the sandbox as copies. Its compiler runs as another user where
//! the grader is root, and cannot read a file in the user's private folder (a `mktemp -d`, a home
//! folder of mode 0700): the grader reads the sources and their local `#include "..."` files as the
//! user who ran it and copies them, laid out as they were, into the submission's work folder.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The most files one program brings (its sources and the local headers they include).
const MAX_FILES: usize = 500;

/// Why the sources could not be copied.
#[derive(Debug, thiserror::Error)]
#[error("cannot hand {path} to the sandbox: {cause}")]
pub struct StagingError {
    pub path: PathBuf,
    pub cause: std::io::Error,
}

/// What was copied: the sources' copies (in the order of `sources`), and the folder that stands
/// for `base` (the folder above every file copied) in diagnostics.
#[derive(Debug)]
pub struct Staged {
    pub sources: Vec<PathBuf>,
    pub base: PathBuf,
    pub into: PathBuf,
}

/// Copy `sources` (absolute paths) and every local header they include, transitively, into
/// `into` (emptied first), readable by every user.
pub fn stage(sources: &[PathBuf], into: &Path) -> Result<Staged, StagingError> {
    let files = with_includes(sources)?;
    let base = common_folder(&files);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| StagingError { path, cause }
    };
    let _ = std::fs::remove_dir_all(into);
    for file in &files {
        let to = into.join(file.strip_prefix(&base).unwrap_or(file));
        let text = std::fs::read(file).map_err(io(file))?;
        let dir = to.parent().unwrap_or(into);
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        std::fs::write(&to, text).map_err(io(&to))?;
        open_to_all(&to, 0o644).map_err(io(&to))?;
    }
    // Every folder made, whatever the umask: the sandbox's user must pass through them.
    for dir in files.iter().filter_map(|f| {
        into.join(f.strip_prefix(&base).unwrap_or(f))
            .parent()
            .map(Path::to_path_buf)
    }) {
        for d in dir.ancestors().take_while(|d| d.starts_with(into)) {
            open_to_all(d, 0o755).map_err(io(d))?;
        }
    }
    Ok(Staged {
        sources: sources
            .iter()
            .map(|s| into.join(s.strip_prefix(&base).unwrap_or(s)))
            .collect(),
        base,
        into: into.to_path_buf(),
    })
}

impl Staged {
    /// `text` (nvcc's output) naming the files where the user has them, not their copies.
    pub fn unstaged(&self, text: &str) -> String {
        text.replace(
            &format!("{}/", self.into.display()),
            &format!("{}/", self.base.display()),
        )
    }
}

fn open_to_all(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// `sources` and the files their `#include "..."` lines name that exist beside the including file
/// (or beside a source, each source's folder being on the include path), canonical, each once.
fn with_includes(sources: &[PathBuf]) -> Result<Vec<PathBuf>, StagingError> {
    let folders: Vec<PathBuf> = sources
        .iter()
        .filter_map(|s| s.parent().map(Path::to_path_buf))
        .collect();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut todo: Vec<PathBuf> = sources.to_vec();
    let mut files = Vec::new();
    while let Some(file) = todo.pop() {
        if !seen.insert(file.clone()) || seen.len() > MAX_FILES {
            continue;
        }
        let text = std::fs::read(&file).map_err(|cause| StagingError {
            path: file.clone(),
            cause,
        })?;
        let here = file.parent().map(Path::to_path_buf).unwrap_or_default();
        for name in local_includes(&String::from_utf8_lossy(&text)) {
            let found = std::iter::once(&here)
                .chain(&folders)
                .map(|d| d.join(&name))
                .find(|p| p.is_file())
                .and_then(|p| p.canonicalize().ok());
            todo.extend(found);
        }
        files.push(file);
    }
    Ok(files)
}

/// The names in a text's `#include "name"` lines (not `<name>`: those are the system's).
fn local_includes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let name = rest.strip_prefix('"')?;
            Some(name[..name.find('"')?].to_string())
        })
        .filter(|n| !n.is_empty() && !Path::new(n).is_absolute())
        .collect()
}

/// The deepest folder above every one of `files`.
fn common_folder(files: &[PathBuf]) -> PathBuf {
    let mut base = files
        .first()
        .and_then(|f| f.parent())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for f in files {
        while !f.starts_with(&base) {
            if !base.pop() {
                break;
            }
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_and_their_local_headers_are_copied_as_laid_out() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("mine");
        std::fs::create_dir_all(src.join("inc")).unwrap();
        std::fs::create_dir_all(dir.path().join("common")).unwrap();
        std::fs::write(
            src.join("main.cu"),
            "#include <cstdio>\n  #  include \"inc/a.cuh\"\n#include \"../common/b.h\"\n#include \"missing.h\"\n",
        )
        .unwrap();
        std::fs::write(src.join("inc/a.cuh"), "#include \"c.cuh\"\n").unwrap();
        std::fs::write(src.join("inc/c.cuh"), "// c\n").unwrap();
        std::fs::write(dir.path().join("common/b.h"), "// b\n").unwrap();
        let main = src.join("main.cu").canonicalize().unwrap();
        let into = dir.path().join("staged");
        let staged = stage(std::slice::from_ref(&main), &into).unwrap();
        assert_eq!(staged.sources, [into.join("mine/main.cu")]);
        for (copy, text) in [
            ("mine/inc/a.cuh", "#include \"c.cuh\"\n"),
            ("mine/inc/c.cuh", "// c\n"),
            ("common/b.h", "// b\n"),
        ] {
            assert_eq!(std::fs::read_to_string(into.join(copy)).unwrap(), text);
        }
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(into.join("mine/inc/c.cuh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
        let said = format!("{}/mine/main.cu(3): error", into.display());
        assert_eq!(
            staged.unstaged(&said),
            format!("{}/mine/main.cu(3): error", staged.base.display())
        );
    }
}
