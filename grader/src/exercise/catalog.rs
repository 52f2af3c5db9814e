//! The exercise catalog: discovered on disk (for `build.rs` and `verify`) and embedded in the binary
//! (so `reset` and the original/reference builds work after a learner edits or deletes files).

use std::fs;
use std::path::{Path, PathBuf};

use crate::exercise::manifest::{self, LoadedManifest, ManifestError};

pub const MANIFEST_FILE: &str = "exercise.toml";

/// One exercise as `build.rs` embeds it: the texts as they were when the binary was built.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    pub id: &'static str,
    pub manifest: &'static str,
    pub original: &'static str,
    pub solution: &'static str,
}

/// One exercise's files on disk.
#[derive(Debug, Clone)]
pub struct OnDisk {
    pub manifest: LoadedManifest,
    pub exercise_path: PathBuf,
    pub solution_path: PathBuf,
}

fn io_error(path: &Path, e: std::io::Error) -> ManifestError {
    ManifestError { path: path.to_path_buf(), line: None, message: e.to_string() }
}

/// Every `exercises/<id>/exercise.toml` under `root`, parsed and validated, sorted by id. The
/// solution's regions are checked here; the learner's file is not (their edits must never break a build).
pub fn discover(root: &Path) -> Result<Vec<OnDisk>, ManifestError> {
    let dir = root.join("exercises");
    let mut ids: Vec<String> = fs::read_dir(&dir)
        .map_err(|e| io_error(&dir, e))?
        .filter_map(Result::ok)
        .filter(|e| e.path().join(MANIFEST_FILE).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids.into_iter().map(|id| load(root, &id)).collect()
}

/// Load one exercise's manifest and check its solution.
pub fn load(root: &Path, id: &str) -> Result<OnDisk, ManifestError> {
    let rel = PathBuf::from("exercises").join(id).join(MANIFEST_FILE);
    let text = fs::read_to_string(root.join(&rel)).map_err(|e| io_error(&rel, e))?;
    let manifest = manifest::parse(id, &rel, &text)?;
    let exercise_path = root.join("exercises").join(id).join(manifest.source_name());
    let solution_rel = PathBuf::from("solutions").join(id).join(manifest.source_name());
    let solution = fs::read_to_string(root.join(&solution_rel)).map_err(|e| io_error(&solution_rel, e))?;
    manifest::validate_sources(&manifest, &solution, &solution)?;
    Ok(OnDisk { manifest, exercise_path, solution_path: root.join(solution_rel) })
}
