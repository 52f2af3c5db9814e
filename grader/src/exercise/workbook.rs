//! The workbook on disk: where its root is, which exercises the binary embeds, and how a learner's
//! id (`03-race`, `3`, `race`, `rac`) resolves to one of them.

use std::path::{Path, PathBuf};

use crate::exercise::catalog::{pristine, Embedded, MANIFEST_FILE};
use crate::exercise::manifest::{self, LoadedManifest, ManifestError};
use crate::exercise::path::{self as learning_path, LearningPath, PathError, Stop};

#[derive(Debug, Clone)]
pub struct Exercise {
    pub manifest: LoadedManifest,
    /// The pristine exercise source, made from the embedded solution and its original regions.
    pub original: &'static str,
    pub solution: &'static str,
}

impl Exercise {
    /// Whether `text` is one of the workbook's own versions of the exercise (the untouched file or
    /// the reference fix), which reach nothing the judge compares them with.
    pub fn is_own_version(&self, text: &str) -> bool {
        text == self.original || text == self.solution
    }

    /// The exercise an embedded one makes: the manifest parsed and validated, and the pristine
    /// exercise (the solution with the original regions put back), or the error with file and
    /// line. Its texts live as long as the program, as the embedded ones do.
    pub fn from_embedded(e: &Embedded) -> Result<Exercise, ManifestError> {
        let rel = PathBuf::from("exercises").join(e.id).join(MANIFEST_FILE);
        let manifest = manifest::parse(e.id, &rel, e.manifest)?;
        if manifest.source_name() != e.source {
            return Err(ManifestError {
                path: rel,
                line: None,
                message: format!(
                    "`source` is {:?}, but solutions/{}/ holds {:?}",
                    manifest.source_name(),
                    e.id,
                    e.source
                ),
            });
        }
        let original = pristine(&manifest, e.solution, e.regions)?;
        Ok(Exercise {
            manifest,
            original: Box::leak(original.into_boxed_str()),
            solution: e.solution,
        })
    }

    /// The reference solution as a unified diff against the learner's text (empty when identical).
    pub fn solution_diff(&self, learner: &str) -> String {
        let name = self.manifest.source_name();
        similar::TextDiff::from_lines(learner, self.solution)
            .unified_diff()
            .context_radius(3)
            .header(&format!("yours/{name}"), &format!("reference/{name}"))
            .to_string()
    }

    pub fn id(&self) -> &str {
        &self.manifest.id
    }
    /// "03" of "03-race".
    pub fn number(&self) -> &str {
        &self.manifest.id[..2]
    }
    /// "race" of "03-race".
    pub fn short_name(&self) -> &str {
        &self.manifest.id[3..]
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkbookError {
    #[error("not inside a cudabugs workbook: no folder above {0} holds both exercises/ and solutions/ (set CUDABUGS_ROOT to point at one)")]
    NoRoot(PathBuf),
    #[error("no exercise matches `{query}`; {advice}")]
    Unknown {
        query: String,
        /// "did you mean 03-race?", or where nothing is close, where to see them all.
        advice: String,
    },
    #[error("`{query}` matches several exercises: {matches}; give more of the name")]
    Ambiguous { query: String, matches: String },
    #[error("embedded manifest is invalid (rebuild the binary): {0}")]
    Embedded(#[from] manifest::ManifestError),
    #[error("exercise {id} is not gradable until its manifest is fixed: {error}")]
    Broken { id: String, error: String },
}

impl WorkbookError {
    /// Not gradable for a broken exercise, else a usage error.
    pub fn exit(&self) -> crate::exit::ExitStatus {
        match self {
            WorkbookError::Broken { .. } => crate::exit::ExitStatus::NotGradable,
            _ => crate::exit::ExitStatus::Usage,
        }
    }
}

/// An exercise whose manifest (or solution, or original regions) could not be loaded.
#[derive(Debug, Clone)]
pub struct Broken {
    pub id: String,
    pub error: String,
}

/// Backups of learners' files live here, one folder per exercise, never inside `.cudabugs/` (which a
/// learner may delete to clean the builds); every sandboxed run has it hidden.
pub const BACKUP_DIR: &str = ".cudabugs-backups";

#[derive(Debug, Clone)]
pub struct Workbook {
    pub root: PathBuf,
    pub exercises: Vec<Exercise>,
    /// Exercises that cannot be graded until their files are fixed; every other command works.
    pub broken: Vec<Broken>,
    pub harness: &'static [(&'static str, &'static str)],
    /// The chapters a learner goes through, every exercise in one (`exercises/path.toml`).
    pub path: LearningPath,
    /// Why the path file could not be used, where it could not (the path is then by id).
    pub path_problem: Option<PathError>,
}

fn is_root(dir: &Path) -> bool {
    dir.join("exercises").is_dir() && dir.join("solutions").is_dir()
}

/// `CUDABUGS_ROOT`, else the nearest folder at or above `start` that holds exercises/ and solutions/.
pub fn find_root(start: &Path) -> Result<PathBuf, WorkbookError> {
    if let Some(root) = crate::environment::path(crate::environment::ROOT) {
        return if is_root(&root) {
            Ok(root)
        } else {
            Err(WorkbookError::NoRoot(root))
        };
    }
    start
        .ancestors()
        .find(|d| is_root(d))
        .map(Path::to_path_buf)
        .ok_or_else(|| WorkbookError::NoRoot(start.to_path_buf()))
}

impl Workbook {
    pub fn new(
        root: PathBuf,
        embedded: &'static [Embedded],
        harness: &'static [(&'static str, &'static str)],
    ) -> Result<Workbook, WorkbookError> {
        let (mut exercises, mut broken) = (Vec::new(), Vec::new());
        for e in embedded {
            let parsed = match e.error {
                Some(error) => Err(error.to_string()),
                None => Exercise::from_embedded(e).map_err(|err| err.to_string()),
            };
            match parsed {
                Ok(exercise) => exercises.push(exercise),
                Err(error) => broken.push(Broken {
                    id: e.id.to_string(),
                    error,
                }),
            }
        }
        let path = LearningPath::by_id(exercises.iter().map(Exercise::id));
        Ok(Workbook {
            root,
            exercises,
            broken,
            harness,
            path,
            path_problem: None,
        })
    }

    /// The workbook with its learning path read from `text` (the embedded `exercises/path.toml`). A
    /// malformed path is kept as `path_problem` and the path stays by id: it never stops a command.
    pub fn with_path(mut self, text: &str) -> Workbook {
        let stops: Vec<Stop> = self
            .exercises
            .iter()
            .map(|e| Stop {
                id: e.id(),
                level: e.manifest.level(),
            })
            .collect();
        match learning_path::parse(Path::new(learning_path::PATH_FILE), text, &stops) {
            Ok(path) => self.path = path,
            Err(problem) => self.path_problem = Some(problem),
        }
        self
    }

    /// The exercises in the order of the learning path.
    pub fn in_path_order(&self) -> Vec<&Exercise> {
        self.path
            .order()
            .filter_map(|id| self.exercises.iter().find(|e| e.id() == id))
            .collect()
    }

    /// The broken exercises a command warns about: every one but the exercise it names (`about`),
    /// whose own error says it, so that a broken manifest is said once per command.
    pub fn broken_besides(&self, about: Option<&str>) -> Vec<&Broken> {
        let named = about.and_then(|q| match self.resolve(q) {
            Err(WorkbookError::Broken { id, .. }) => Some(id),
            _ => None,
        });
        self.broken
            .iter()
            .filter(|b| Some(&b.id) != named.as_ref())
            .collect()
    }

    /// Resolve an id given in full (`03-race`), by number (`3`, `03`) or by name or name prefix (`race`).
    pub fn resolve(&self, query: &str) -> Result<&Exercise, WorkbookError> {
        let q = query.trim().to_lowercase();
        let named = |id: &str| {
            id == q
                || id.get(3..).is_some_and(|n| n.starts_with(&q))
                || q.parse::<u32>().ok() == id.get(..2).and_then(|n| n.parse().ok())
        };
        if let Some(b) = self.broken.iter().find(|b| named(&b.id)) {
            if !self.exercises.iter().any(|e| e.id() == q) {
                return Err(WorkbookError::Broken {
                    id: b.id.clone(),
                    error: b.error.clone(),
                });
            }
        }
        // The whole id, or the whole name after the number ("sync" is 04-sync, not 12-syncwarp).
        if let Some(ex) = self
            .exercises
            .iter()
            .find(|e| e.id() == q || e.short_name() == q)
        {
            return Ok(ex);
        }
        if let Ok(n) = q.parse::<u32>() {
            if let Some(ex) = self
                .exercises
                .iter()
                .find(|e| e.number().parse::<u32>() == Ok(n))
            {
                return Ok(ex);
            }
        }
        if let Some(found) = self.by_path(&q) {
            return found;
        }
        let matches: Vec<&Exercise> = self
            .exercises
            .iter()
            .filter(|e| e.short_name().starts_with(&q) || e.id().starts_with(&q))
            .collect();
        match matches.as_slice() {
            [one] => Ok(one),
            [] => Err(WorkbookError::Unknown {
                query: query.to_string(),
                advice: self.did_you_mean(&q),
            }),
            many => Err(WorkbookError::Ambiguous {
                query: query.to_string(),
                matches: many.iter().map(|e| e.id()).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// `query` resolved as `resolve` does, and first as a path from `cwd` where one is there: a
    /// file or folder of an exercise (`reduce.cu` inside `exercises/03-race/`, `.` there).
    pub fn resolve_from(&self, query: &str, cwd: &Path) -> Result<&Exercise, WorkbookError> {
        match cwd
            .join(query)
            .canonicalize()
            .ok()
            .and_then(|p| self.exercise_at(&p))
        {
            Some(ex) => Ok(ex),
            None => self.resolve(query),
        }
    }

    /// The exercise whose folder (under `exercises/` or `solutions/`) holds `path`, or is it.
    pub fn exercise_at(&self, path: &Path) -> Option<&Exercise> {
        let root = self.root.canonicalize().ok()?;
        let path = path.canonicalize().ok()?;
        let mut parts = path.strip_prefix(&root).ok()?.components();
        let top = parts.next()?.as_os_str();
        if top != "exercises" && top != "solutions" {
            return None;
        }
        let id = parts.next()?.as_os_str();
        self.exercises.iter().find(|e| id == e.id())
    }

    /// A query that is a path (`exercises/03-race/reduce.cu`, `exercises/03-race/`) or an
    /// exercise's file name (`reduce.cu`, where one exercise alone has it); None where it is
    /// neither.
    fn by_path(&self, q: &str) -> Option<Result<&Exercise, WorkbookError>> {
        if q.contains('/') {
            let ex = Path::new(q)
                .components()
                .find_map(|c| self.exercises.iter().find(|e| c.as_os_str() == e.id()))?;
            return Some(Ok(ex));
        }
        let named: Vec<&Exercise> = self
            .exercises
            .iter()
            .filter(|e| e.manifest.source_name() == q)
            .collect();
        match named.as_slice() {
            [] => None,
            [one] => Some(Ok(one)),
            many => Some(Err(WorkbookError::Ambiguous {
                query: q.to_string(),
                matches: many.iter().map(|e| e.id()).collect::<Vec<_>>().join(", "),
            })),
        }
    }

    /// The closest id or two to a query that matched none (by edit distance to the id or to its
    /// name), or where to see them all when none is close.
    fn did_you_mean(&self, q: &str) -> String {
        let limit = if q.chars().count() >= 4 { 2 } else { 1 };
        let mut near: Vec<(usize, &str)> = self
            .exercises
            .iter()
            .map(|e| {
                let d = edit_distance(q, e.id()).min(edit_distance(q, e.short_name()));
                (d, e.id())
            })
            .filter(|(d, _)| *d <= limit)
            .collect();
        near.sort();
        let best = near.first().map(|(d, _)| *d);
        let ids: Vec<&str> = near
            .iter()
            .filter(|(d, _)| Some(*d) == best)
            .take(2)
            .map(|(_, id)| *id)
            .collect();
        match ids.as_slice() {
            [] => format!(
                "`list` shows all {} exercises (an id is `03-race`, `3` or `race`; a path to an exercise's file or folder works too)",
                self.exercises.len()
            ),
            [one] => format!("did you mean {one}?"),
            [a, b, ..] => format!("did you mean {a} or {b}?"),
        }
    }

    /// The learner's file for an exercise.
    pub fn learner_path(&self, ex: &Exercise) -> PathBuf {
        self.root
            .join("exercises")
            .join(ex.id())
            .join(ex.manifest.source_name())
    }

    pub fn solution_path(&self, ex: &Exercise) -> PathBuf {
        self.root
            .join("solutions")
            .join(ex.id())
            .join(ex.manifest.source_name())
    }

    /// Scratch space for builds and tool output (ignored by git). What lives in it is decided by
    /// the methods below, and only there.
    pub fn work_dir(&self) -> PathBuf {
        self.root.join(".cudabugs")
    }

    /// An exercise's case files: one folder per exercise, in `cases_root`.
    pub fn cases_dir(&self, ex: &Exercise) -> PathBuf {
        self.cases_root().join(ex.id())
    }

    /// Every exercise's case files (public, hidden and fresh inputs): hidden from every sandboxed
    /// run, which gets the files of its own command line as open descriptors
    /// (`engine::stages::sandbox`).
    pub fn cases_root(&self) -> PathBuf {
        self.work_dir().join("cases")
    }

    /// Where every submission's work folder lives; hidden from every sandboxed run but its own
    /// folder.
    pub fn work_root(&self) -> PathBuf {
        self.work_dir().join("work")
    }

    /// What each analysed text reaches when compiled (`judge::reach`), kept by its inputs, where no
    /// build cache is kept beside it (`Context::reach_cache`): each text is compiled once.
    pub fn reach_cache_dir(&self) -> PathBuf {
        self.work_root().join("reach")
    }

    /// Builds kept by their inputs (`nvcc::BuildCache`), in the work root that every sandboxed run
    /// has hidden.
    pub fn build_cache_dir(&self) -> PathBuf {
        self.work_root().join("build-cache")
    }

    /// The harness, written out and compiled once.
    pub fn harness_dir(&self) -> PathBuf {
        self.work_dir().join("harness")
    }

    /// This machine's peak: the peak program's build and each GPU's measurement.
    pub fn peak_dir(&self) -> PathBuf {
        self.work_dir().join("peak")
    }

    /// The library baselines (cuBLAS), built and timed by the grader.
    pub fn baseline_dir(&self) -> PathBuf {
        self.work_dir().join("baseline")
    }

    /// The lock folders that keep one ncu session a GPU.
    pub fn ncu_lock_root(&self) -> PathBuf {
        self.work_dir().join("ncu-lock")
    }

    /// This workbook's bench seed, made once (so the bench file is cached between checks).
    pub fn bench_seed_file(&self) -> PathBuf {
        self.work_dir().join("bench-seed")
    }

    /// A path relative to the root, for messages; absolute paths elsewhere stay as they are.
    pub fn display_path(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// `text` (a record, a report) with every path under the root written relative to it, so that
    /// it names no path of the machine it was made on and its commands run from the root.
    pub fn relative_text(&self, text: &str) -> String {
        relative_to(&self.root, text)
    }
}

/// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbours each count one ("rase" is 1 from "race", "raec" too).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// `text` with the paths under `root` relative to it ("root/x" -> "x", "root" -> ".").
fn relative_to(root: &Path, text: &str) -> String {
    let root = root.as_os_str().as_encoded_bytes();
    let inside = swap_root(text.as_bytes(), &[root, b"/"].concat(), b"");
    String::from_utf8_lossy(&swap_root(&inside, root, b".")).into_owned()
}

/// `bytes` with each `from` that is a whole path (not the tail of another: "/usr/w/main"), followed
/// by `/` or by nothing that continues a file name, replaced by `to`: "/w/main" is swapped in
/// "/w/main/x", "-I/w/main" and "--save=/w/main/y", not in "/w/main2".
pub fn swap_root(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let continues_name = |b: u8| b.is_ascii_alphanumeric() || b"_.-".contains(&b);
    // A backslash too: in JSON text a path follows an escaped newline (`...in\n/w/main/x`).
    let separates_words = |b: &u8| b" \t\n\"'=:,;<>()[]{}\\".contains(b);
    let mut out = Vec::with_capacity(bytes.len());
    let mut word_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let here = &bytes[i..];
        let whole = !from.is_empty()
            && here.starts_with(from)
            && (from.ends_with(b"/") || here.get(from.len()).is_none_or(|&b| !continues_name(b)))
            && !bytes[word_start..i].contains(&b'/');
        if whole {
            out.extend_from_slice(to);
            i += from.len();
            word_start = i;
        } else {
            if separates_words(&bytes[i]) {
                word_start = i + 1;
            }
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Copy a folder and everything under it (a bundle, a throwaway copy of the workbook).
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Write `text` to `path` atomically: a temporary file in the same folder, synced, renamed over
/// it, so that an interrupted write never leaves half a file. It keeps the temporary file's mode,
/// 0600.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    write_through(path, text, &tempfile::Builder::new())
}

/// `write_atomically`, the file getting the mode a new file gets (0666 less the umask: 0644 as a
/// git checkout has it), not the temporary file's 0600: for the learner's own files.
pub fn write_atomically_as_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut builder = tempfile::Builder::new();
    builder.permissions(std::fs::Permissions::from_mode(0o666));
    write_through(path, text, &builder)
}

fn write_through(path: &Path, text: &str, builder: &tempfile::Builder) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// A workbook of the real exercises `ids`, read from this repository, in a folder of its own: for
/// the engine's in-process tests.
#[cfg(test)]
pub(crate) fn test_workbook(ids: &[&'static str]) -> (tempfile::TempDir, Workbook) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let embedded: Vec<Embedded> = ids.iter().map(|&id| Embedded::read(&repo, id)).collect();
    let dir = tempfile::tempdir().unwrap();
    let wb = Workbook::new(
        dir.path().to_path_buf(),
        Box::leak(embedded.into_boxed_slice()),
        &[],
    )
    .unwrap();
    assert_eq!(wb.exercises.len(), ids.len(), "{:?}", wb.broken);
    (dir, wb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_paths_under_the_root_relative_to_it_and_no_other_path() {
        let text = "nvcc -I/w/main/.cudabugs/harness -o /w/main/x.out a.cu\ncd /w/main; ls /w/main2 /usr/w/main";
        assert_eq!(
            relative_to(Path::new("/w/main"), text),
            "nvcc -I.cudabugs/harness -o x.out a.cu\ncd .; ls /w/main2 /usr/w/main"
        );
        // In JSON text, where a command's lines are joined by an escaped newline.
        let json = r#""ncu a.in\n/w/main/x/prog b.in""#;
        assert_eq!(
            relative_to(Path::new("/w/main"), json),
            r#""ncu a.in\nx/prog b.in""#
        );
    }
}
