//! Which files make an exercise of the catalog, in one place for the grader and for the build
//! script that embeds them: `build.rs` includes this file (`#[path]`) rather than depending on the
//! grader, so it uses the standard library alone.

use std::fs;
use std::path::{Path, PathBuf};

pub const MANIFEST_FILE: &str = "exercise.toml";
/// Beside each solution: the untouched exercise's marked regions. The pristine exercise is the
/// solution with these put back (an exercise and its solution differ only inside regions), so it
/// never depends on the copy in `exercises/` that a learner edits.
pub const ORIGINAL_REGIONS: &str = "exercise-regions.cu";
/// The learning path, under the workbook's root.
pub const PATH_FILE: &str = "exercises/path.toml";

/// Every `exercises/<id>/` under `root` that holds a manifest, sorted.
pub fn exercise_ids(root: &Path) -> std::io::Result<Vec<String>> {
    let mut ids: Vec<String> = fs::read_dir(root.join("exercises"))?
        .filter_map(Result::ok)
        .filter(|e| e.path().join(MANIFEST_FILE).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    Ok(ids)
}

/// One exercise's files: its manifest, and `solutions/<id>/`'s two, the solution and the original
/// regions.
pub struct ExerciseFiles {
    pub manifest: PathBuf,
    /// The solution's file name, which the manifest's `source` must name.
    pub source: String,
    pub solution: PathBuf,
    pub regions: PathBuf,
}

/// Exercise `id`'s files under `root`, or what is wrong with its solution folder.
pub fn exercise_files(root: &Path, id: &str) -> Result<ExerciseFiles, String> {
    let dir = root.join("solutions").join(id);
    let mut names: Vec<String> = fs::read_dir(&dir)
        .map_err(|e| format!("solutions/{id}/: {e}"))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !names.iter().any(|n| n == ORIGINAL_REGIONS) {
        return Err(format!("solutions/{id}/ has no {ORIGINAL_REGIONS}"));
    }
    names.retain(|n| n != ORIGINAL_REGIONS);
    names.sort();
    match names.as_slice() {
        [source] => Ok(ExerciseFiles {
            manifest: root.join("exercises").join(id).join(MANIFEST_FILE),
            source: source.clone(),
            solution: dir.join(source),
            regions: dir.join(ORIGINAL_REGIONS),
        }),
        _ => Err(format!(
            "solutions/{id}/ must hold one source file beside {ORIGINAL_REGIONS}, not {names:?}"
        )),
    }
}
