//! The exercise catalog: discovered on disk (for `build.rs` and `verify`) and embedded in the binary
//! (so `reset` and the original/reference builds work after a learner edits or deletes files).

use std::fs;
use std::path::{Path, PathBuf};

use crate::exercise::manifest::{self, LoadedManifest, ManifestError};

pub const MANIFEST_FILE: &str = "exercise.toml";
/// Beside each solution: the untouched exercise's marked regions. The pristine exercise is the
/// solution with these put back (an exercise and its solution differ only inside regions), so it
/// never depends on the copy in `exercises/` that a learner edits.
pub const ORIGINAL_REGIONS: &str = "exercise-regions.cu";

/// One exercise as `build.rs` embeds it: the texts as they were when the binary was built.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    pub id: &'static str,
    pub manifest: &'static str,
    pub original: &'static str,
    pub solution: &'static str,
    /// Where the exercise could not be loaded when the binary was built: the error, with file and
    /// line. The other exercises are embedded and work; this one is "not gradable" until fixed.
    pub error: Option<&'static str>,
}

/// One exercise's files on disk.
#[derive(Debug, Clone)]
pub struct OnDisk {
    pub manifest: LoadedManifest,
    /// The learner's working copy (which may be edited, or gone).
    pub exercise_path: PathBuf,
    pub solution_path: PathBuf,
    /// The pristine exercise: the solution with the original regions put back.
    pub original: String,
    pub solution: String,
}

fn io_error(path: &Path, e: std::io::Error) -> ManifestError {
    ManifestError {
        path: path.to_path_buf(),
        line: None,
        message: e.to_string(),
    }
}

/// One exercise's folder name, and its manifest or why it could not be read.
pub type Discovered = (String, Result<OnDisk, ManifestError>);

/// Every `exercises/<id>/exercise.toml` under `root`, each parsed and validated on its own, sorted
/// by id: one broken exercise does not stop the others. The learner's file is never read.
pub fn discover_each(root: &Path) -> Result<Vec<Discovered>, ManifestError> {
    let dir = root.join("exercises");
    let mut ids: Vec<String> = fs::read_dir(&dir)
        .map_err(|e| io_error(&dir, e))?
        .filter_map(Result::ok)
        .filter(|e| e.path().join(MANIFEST_FILE).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    Ok(ids
        .into_iter()
        .map(|id| (id.clone(), load(root, &id)))
        .collect())
}

/// Every exercise, or the first error (for the book and `verify`, which need all of them sound).
pub fn discover(root: &Path) -> Result<Vec<OnDisk>, ManifestError> {
    discover_each(root)?.into_iter().map(|(_, r)| r).collect()
}

/// Load one exercise's manifest, its solution and its original regions, and make the pristine
/// exercise from them. The learner's working copy is not read.
pub fn load(root: &Path, id: &str) -> Result<OnDisk, ManifestError> {
    let rel = PathBuf::from("exercises").join(id).join(MANIFEST_FILE);
    let text = fs::read_to_string(root.join(&rel)).map_err(|e| io_error(&rel, e))?;
    let manifest = manifest::parse(id, &rel, &text)?;
    let exercise_path = root.join("exercises").join(id).join(manifest.source_name());
    let solution_rel = PathBuf::from("solutions")
        .join(id)
        .join(manifest.source_name());
    let solution =
        fs::read_to_string(root.join(&solution_rel)).map_err(|e| io_error(&solution_rel, e))?;
    let regions_rel = PathBuf::from("solutions").join(id).join(ORIGINAL_REGIONS);
    let regions =
        fs::read_to_string(root.join(&regions_rel)).map_err(|e| io_error(&regions_rel, e))?;
    let original =
        crate::exercise::regions::splice(&solution, &regions).map_err(|e| ManifestError {
            path: regions_rel.clone(),
            line: Some(e.line),
            message: e.message,
        })?;
    manifest::validate_sources(&manifest, &original, &solution)?;
    Ok(OnDisk {
        manifest,
        exercise_path,
        solution_path: root.join(solution_rel),
        original,
        solution,
    })
}
