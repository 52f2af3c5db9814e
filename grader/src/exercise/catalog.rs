//! The exercise catalog: discovered on disk (for `verify` and the book) and embedded in the binary
//! (so `reset` and the original/reference builds work after a learner edits or deletes files).

use std::fs;
use std::path::{Path, PathBuf};

use crate::exercise::manifest::{self, LoadedManifest, ManifestError};

pub use crate::exercise::files::{MANIFEST_FILE, ORIGINAL_REGIONS};

/// One exercise as `build.rs` embeds it: its files' texts as they were when the binary was built.
/// The build script only copies (it compiles no part of the grader, which would otherwise be built
/// twice on a learner's first `check`); the manifest is parsed and the pristine exercise made when
/// the workbook is opened (`Exercise::from_embedded`).
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    pub id: &'static str,
    pub manifest: &'static str,
    /// The solution's file name: the manifest's `source` must name it.
    pub source: &'static str,
    pub solution: &'static str,
    /// `solutions/<id>/exercise-regions.cu`: the untouched exercise's regions.
    pub regions: &'static str,
    /// Where the build script could not read the exercise's files: why. The other exercises are
    /// embedded and work; this one is "not gradable" until fixed.
    pub error: Option<&'static str>,
}

impl Embedded {
    /// Exercise `id` under `root` embedded as `build.rs` embeds it (the texts leaked: they live as
    /// long as the program, as embedded ones do), or embedded as the error that makes it "not
    /// gradable". For workbooks made from disk: tests, and tools beside the binary.
    pub fn read(root: &Path, id: &str) -> Embedded {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let id = leak(id.to_string());
        let read = |p: &Path| {
            fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
        };
        let texts = crate::exercise::files::exercise_files(root, id).and_then(|f| {
            Ok((
                read(&f.manifest)?,
                f.source,
                read(&f.solution)?,
                read(&f.regions)?,
            ))
        });
        match texts {
            Ok((manifest, source, solution, regions)) => Embedded {
                id,
                manifest: leak(manifest),
                source: leak(source),
                solution: leak(solution),
                regions: leak(regions),
                error: None,
            },
            Err(error) => Embedded {
                id,
                manifest: "",
                source: "",
                solution: "",
                regions: "",
                error: Some(leak(error)),
            },
        }
    }
}

/// The untouched exercise: `solution` with the regions of `solutions/<id>/exercise-regions.cu`
/// put back, checked with its solution against what `manifest` says of them. The one place it is
/// made, from disk and from the embedded texts alike.
pub(crate) fn pristine(
    manifest: &LoadedManifest,
    solution: &str,
    regions: &str,
) -> Result<String, ManifestError> {
    let original =
        crate::exercise::regions::splice(solution, regions).map_err(|e| ManifestError {
            path: PathBuf::from("solutions")
                .join(&manifest.id)
                .join(ORIGINAL_REGIONS),
            line: Some(e.line),
            message: e.message,
        })?;
    manifest::validate_sources(manifest, &original, solution)?;
    Ok(original)
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
    let ids = crate::exercise::files::exercise_ids(root)
        .map_err(|e| io_error(&root.join("exercises"), e))?;
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
    let original = pristine(&manifest, &solution, &regions)?;
    Ok(OnDisk {
        manifest,
        exercise_path,
        solution_path: root.join(solution_rel),
        original,
        solution,
    })
}
