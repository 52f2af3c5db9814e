//! One file: a class's layouts, students and `--shard`, read together; 233 of its lines are tests.
//!
//! A class's submissions on disk: which layout the folder has, who the students are, and where
//! each student's file for an exercise is.
//!
//! Layouts, detected in this order:
//! - a Gradescope "export submissions" folder: `submission_metadata.yml` names the submitters of
//!   each `submission_NNN/` folder;
//! - GitHub Classroom clones (`gh classroom clone student-repos`): git clones named
//!   `<assignment>-<username>`, the student being the username;
//! - a folder per student, named after the student.
//!
//! Inside a student's folder the file is a copy of the workbook's (`exercises/<id>/<file>.cu`), or
//! `<id>/<file>.cu`, or the bare `<file>.cu` or `<id>.cu`. A folder holding nothing but one folder
//! (an unpacked archive) is looked into.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::exercise::workbook::{Exercise, Workbook};

pub use super::ids::student_id;
use super::ids::{unique_ids, IdSource, SameId, SHORT_HASH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    Gradescope,
    GithubClassroom,
    FolderPerStudent,
}

impl Layout {
    pub fn describe(self) -> &'static str {
        match self {
            Layout::Gradescope => "a Gradescope export (submission_metadata.yml)",
            Layout::GithubClassroom => "GitHub Classroom clones (<assignment>-<username>)",
            Layout::FolderPerStudent => "a folder per student",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Student {
    /// Unique, stable and safe in a path, a CSV cell and a recording key (`student_id`): the folder
    /// name (less a GitHub Classroom prefix) or the Gradescope submission folder where that is
    /// plain ASCII, else a readable spelling of it and a hash of the exact name.
    pub id: String,
    /// For people: the submitters' names, or the folder name (less a GitHub Classroom prefix),
    /// exactly (any Unicode).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// The folder the files are looked for in.
    pub folder: PathBuf,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Roster {
    pub layout: Layout,
    pub students: Vec<Student>,
}

#[derive(Debug, thiserror::Error)]
pub enum RosterError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{path}: {message}")]
    Metadata { path: PathBuf, message: String },
    #[error("{0}: no student folders in it")]
    Empty(PathBuf),
    #[error("{first} and {second} have the same student id `{id}`: rename one of them")]
    SameId {
        id: String,
        first: PathBuf,
        second: PathBuf,
    },
}

pub const GRADESCOPE_METADATA: &str = "submission_metadata.yml";

/// The students' ids made unique (`ids::unique_ids`), or the two folders that are left with one.
fn settle_ids(students: &mut [Student], sources: &[IdSource]) -> Result<(), RosterError> {
    let mut ids: Vec<String> = students.iter().map(|s| s.id.clone()).collect();
    unique_ids(&mut ids, sources).map_err(|SameId(first, second)| RosterError::SameId {
        id: ids[second].clone(),
        first: students[first].folder.clone(),
        second: students[second].folder.clone(),
    })?;
    for (s, id) in students.iter_mut().zip(ids) {
        s.id = id;
    }
    Ok(())
}

fn subfolders(dir: &Path) -> Result<Vec<PathBuf>, RosterError> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| RosterError::Io(dir.to_path_buf(), e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    out.sort();
    Ok(out)
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Find the layout and the students of `dir`.
pub fn discover(dir: &Path) -> Result<Roster, RosterError> {
    let metadata = dir.join(GRADESCOPE_METADATA);
    if metadata.is_file() {
        let text =
            std::fs::read_to_string(&metadata).map_err(|e| RosterError::Io(metadata.clone(), e))?;
        let students = gradescope(dir, &metadata, &text)?;
        return Ok(Roster {
            layout: Layout::Gradescope,
            students,
        });
    }
    let folders = subfolders(dir)?;
    if folders.is_empty() {
        return Err(RosterError::Empty(dir.to_path_buf()));
    }
    let names: Vec<String> = folders.iter().map(|f| name_of(f)).collect();
    let prefix = classroom_prefix(&names);
    let clones = folders.iter().all(|f| f.join(".git").exists());
    let (layout, prefix) = match prefix {
        Some(p) if clones => (Layout::GithubClassroom, p),
        _ => (Layout::FolderPerStudent, String::new()),
    };
    let mut students = Vec::new();
    let mut sources = Vec::new();
    for (folder, name) in folders.iter().zip(&names) {
        // Every name starts with the prefix (it is their common start).
        let shown = name
            .strip_prefix(prefix.as_str())
            .unwrap_or(name)
            .to_string();
        // A folder name that is not UTF-8 is hashed as its own bytes, which its shown text (with
        // U+FFFD in it) has lost; two such folders still get two ids.
        let raw = folder
            .file_name()
            .filter(|n| n.to_str().is_none())
            .map(|n| n.as_encoded_bytes().to_vec());
        let exact = raw.unwrap_or_else(|| shown.as_bytes().to_vec());
        let source = IdSource { shown, exact };
        students.push(Student {
            id: source.id(SHORT_HASH),
            name: source.shown.clone(),
            sid: None,
            email: None,
            folder: folder.clone(),
        });
        sources.push(source);
    }
    settle_ids(&mut students, &sources)?;
    Ok(Roster { layout, students })
}

/// The assignment prefix GitHub Classroom gives every repository (`lab3-`), where all the folders
/// share one that ends in a dash and leaves a name after it.
fn classroom_prefix(names: &[String]) -> Option<String> {
    let first = names.first()?;
    let mut len = first.len();
    for n in names {
        len = len.min(
            first
                .bytes()
                .zip(n.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    // The shared bytes may end inside a character ("lab3-é" and "lab3-è" share the first byte of
    // their last one): back off to the character's start.
    while !first.is_char_boundary(len) {
        len -= 1;
    }
    let cut = first[..len].rfind('-')? + 1;
    let prefix = &first[..cut];
    names
        .iter()
        .all(|n| n.len() > prefix.len())
        .then(|| prefix.to_string())
}

/// Students from Gradescope's `submission_metadata.yml`: a map from each submission folder to its
/// `:submitters:` (`:name:`, `:sid:`, `:email:`); a group's names are joined with " & ".
fn gradescope(dir: &Path, path: &Path, text: &str) -> Result<Vec<Student>, RosterError> {
    use yaml_rust2::{Yaml, YamlLoader};
    let bad = |message: String| RosterError::Metadata {
        path: path.to_path_buf(),
        message,
    };
    let docs = YamlLoader::load_from_str(text)
        .map_err(|e| bad(format!("line {}: {}", e.marker().line(), e.info())))?;
    let Some(Yaml::Hash(map)) = docs.into_iter().next() else {
        return Err(bad("expected a map of submission folders".into()));
    };
    let field = |h: &Yaml, k: &str| -> Option<String> {
        match &h[format!(":{k}").as_str()] {
            Yaml::String(s) => Some(s.clone()),
            Yaml::Integer(i) => Some(i.to_string()),
            _ => match &h[k] {
                Yaml::String(s) => Some(s.clone()),
                Yaml::Integer(i) => Some(i.to_string()),
                _ => None,
            },
        }
    };
    let mut students = Vec::new();
    let mut sources = Vec::new();
    for (key, value) in &map {
        let Some(folder) = key.as_str() else {
            return Err(bad(format!("a key that is not a folder name: {key:?}")));
        };
        let submitters = match &value[":submitters"] {
            Yaml::Array(a) => a.clone(),
            _ => match &value["submitters"] {
                Yaml::Array(a) => a.clone(),
                _ => return Err(bad(format!("`{folder}` has no :submitters: list"))),
            },
        };
        let names: Vec<String> = submitters.iter().filter_map(|s| field(s, "name")).collect();
        let sids: Vec<String> = submitters.iter().filter_map(|s| field(s, "sid")).collect();
        let emails: Vec<String> = submitters
            .iter()
            .filter_map(|s| field(s, "email"))
            .collect();
        let joined = |v: &[String]| (!v.is_empty()).then(|| v.join(" & "));
        let source = IdSource {
            shown: folder.to_string(),
            exact: folder.as_bytes().to_vec(),
        };
        students.push(Student {
            id: source.id(SHORT_HASH),
            name: joined(&names).unwrap_or_else(|| folder.to_string()),
            sid: joined(&sids),
            email: joined(&emails),
            folder: dir.join(folder),
        });
        sources.push(source);
    }
    settle_ids(&mut students, &sources)?;
    students.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(students)
}

/// Where a student's files are: the folder, or the one folder inside it (an unpacked archive).
fn content_root(folder: &Path) -> PathBuf {
    let has_files = std::fs::read_dir(folder)
        .map(|rd| rd.filter_map(Result::ok).any(|e| e.path().is_file()))
        .unwrap_or(false);
    match subfolders(folder) {
        Ok(sub) if sub.len() == 1 && !has_files && !folder.join("exercises").is_dir() => {
            sub.into_iter().next().unwrap()
        }
        _ => folder.to_path_buf(),
    }
}

/// A file of the student's folder `folder` as text, read without following a link: neither the
/// file nor a folder between it and `folder` may be one. A submission is the student's to make, and
/// a link in it (a cloned repository can hold one) could name the instructor's secret, which the
/// grader, as root, would read and quote in the feedback's diff, or the workbook's `solutions/`
/// (`exercises -> ../../solutions`), whose reference fix would be graded as the student's.
pub fn read_submitted(folder: &Path, path: &Path) -> std::io::Result<String> {
    let inside = path.strip_prefix(folder).unwrap_or(path);
    let mut at = folder.to_path_buf();
    for part in inside.parent().into_iter().flat_map(Path::components) {
        at.push(part);
        if at.symlink_metadata()?.file_type().is_symlink() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is a link", at.display()),
            ));
        }
    }
    crate::untrusted::read_text(path)
}

/// The student's file for `ex`, if they submitted one. A bare file name two exercises share
/// (`histogram.cu`) belongs to the one whose original it matches outside the marked regions, or
/// whose first line (`// 05-memset: ...`) it keeps.
pub fn find_file(student: &Student, ex: &Exercise, wb: &Workbook) -> Option<PathBuf> {
    let root = content_root(&student.folder);
    let source = ex.manifest.source_name();
    let specific = [
        root.join("exercises").join(ex.id()).join(source),
        root.join(ex.id()).join(source),
        root.join(format!("{}.cu", ex.id())),
    ];
    if let Some(found) = specific.into_iter().find(|p| p.is_file()) {
        return Some(found);
    }
    let bare = root.join(source);
    if !bare.is_file() {
        return None;
    }
    let sharing: Vec<&Exercise> = wb
        .exercises
        .iter()
        .filter(|e| e.manifest.source_name() == source)
        .collect();
    if sharing.len() == 1 {
        return Some(bare);
    }
    let text = read_submitted(&student.folder, &bare).ok()?;
    let fits = |e: &Exercise| {
        matches!(
            crate::exercise::regions::differ_only_inside(e.original, &text),
            Ok(None)
        )
    };
    let header = |e: &Exercise| text.lines().next() == e.original.lines().next();
    let owner = sharing
        .iter()
        .find(|e| fits(e))
        .or_else(|| sharing.iter().find(|e| header(e)))?;
    (owner.id() == ex.id()).then_some(bare)
}

/// Every (student, exercise) pair of the roster in a fixed order (student, then exercise), which
/// `--shard K/N` splits: pair i goes to shard i mod N.
pub fn pairs<'a>(
    roster: &'a Roster,
    exercises: &[&'a Exercise],
) -> Vec<(&'a Student, &'a Exercise)> {
    roster
        .students
        .iter()
        .flat_map(|s| exercises.iter().map(move |e| (s, *e)))
        .collect()
}

/// `K/N`: the K-th of N shards, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// Why `--shard` could not be read as `K/N`; clap shows it after the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("`{0}`: give the shard as K/N, e.g. 2/4")]
    NoSlash(String),
    #[error("`{0}`: K is not a number")]
    BadIndex(String),
    #[error("`{0}`: N is not a number")]
    BadCount(String),
    #[error("`{0}`: K must be between 1 and N (shards are numbered from 1)")]
    OutOfRange(String),
}

impl std::str::FromStr for Shard {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| ShardError::NoSlash(s.to_string()))?;
        let (k, n): (usize, usize) = (
            k.trim()
                .parse()
                .map_err(|_| ShardError::BadIndex(s.to_string()))?,
            n.trim()
                .parse()
                .map_err(|_| ShardError::BadCount(s.to_string()))?,
        );
        if n == 0 || k == 0 || k > n {
            return Err(ShardError::OutOfRange(s.to_string()));
        }
        Ok(Shard { index: k, count: n })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    pub fn takes(&self, pair_index: usize) -> bool {
        pair_index % self.count == self.index - 1
    }
}

/// The students by id, for the gradebook.
pub fn by_id(roster: &Roster) -> BTreeMap<&str, &Student> {
    roster.students.iter().map(|s| (s.id.as_str(), s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::ids::{assert_safe, name_hash, LONG_HASH};

    #[test]
    fn a_classroom_prefix_is_the_shared_part_up_to_a_dash() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            classroom_prefix(&names(&["lab3-alice", "lab3-bob", "lab3-bo-x"])),
            Some("lab3-".into())
        );
        assert_eq!(classroom_prefix(&names(&["alice", "bob"])), None);
        assert_eq!(
            classroom_prefix(&names(&["lab-", "lab-x"])),
            None,
            "nothing left after the prefix"
        );
    }

    /// A folder per name, each a git clone where `git` is set.
    fn class_of(names: &[&str], git: bool) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for n in names {
            std::fs::create_dir_all(dir.path().join(n)).unwrap();
            if git {
                std::fs::create_dir_all(dir.path().join(n).join(".git")).unwrap();
            }
        }
        dir
    }

    fn ids(roster: &Roster) -> BTreeMap<String, String> {
        roster
            .students
            .iter()
            .map(|s| (s.name.clone(), s.id.clone()))
            .collect()
    }

    #[test]
    fn any_folder_name_gets_its_own_readable_stable_and_safe_id() {
        let names = [
            "Élise", "Ève", "José", "Josè", "alice", "a b", "a_b", "日本",
        ];
        let class = class_of(&names, false);
        let roster = discover(class.path()).unwrap();
        assert_eq!(roster.layout, Layout::FolderPerStudent);
        let got = ids(&roster);
        assert_eq!(got.len(), names.len());
        let distinct: std::collections::BTreeSet<&String> = got.values().collect();
        assert_eq!(
            distinct.len(),
            names.len(),
            "two students share an id: {got:?}"
        );
        for (name, id) in &got {
            assert_safe(id);
            assert_eq!(
                *id,
                student_id(name),
                "the id of `{name}` does not depend on its classmates"
            );
        }
        // Safe names keep their old id; lossy ones are readable, with 6 hex digits of hash.
        assert_eq!(got["alice"], "alice");
        assert_eq!(got["a_b"], "a_b");
        let lossy = |name: &str, readable: &str| {
            let id = &got[name];
            let (head, hash) = id.rsplit_once('-').unwrap();
            assert_eq!(head, readable, "{name} -> {id}");
            assert!(
                hash.len() == SHORT_HASH && hash.chars().all(|c| c.is_ascii_hexdigit()),
                "{name} -> {id}"
            );
        };
        lossy("Élise", "Elise");
        lossy("Ève", "Eve");
        lossy("José", "Jose");
        lossy("Josè", "Jose");
        lossy("a b", "a_b");
        lossy("日本", "student");
        // The display name is the folder name, exactly.
        assert!(
            roster.students.iter().any(|s| s.name == "José")
                && roster.students.iter().any(|s| s.name == "Josè")
        );
        // Stable: the same ids on a second look, and in a class of one.
        assert_eq!(ids(&discover(class.path()).unwrap()), got);
        let alone = class_of(&["José"], false);
        assert_eq!(discover(alone.path()).unwrap().students[0].id, got["José"]);
        // And on every machine: the hash is BLAKE3 of the name's bytes, pinned here.
        assert_eq!(
            (
                got["José"].as_str(),
                got["Josè"].as_str(),
                got["a b"].as_str()
            ),
            ("Jose-ac0b49", "Jose-60b061", "a_b-3d3546")
        );
    }

    #[test]
    fn a_safe_name_spelt_like_a_hashed_id_leaves_both_students_apart() {
        // The one way two names meet: a folder named exactly like another's hashed id. The safe
        // name keeps its id; the lossy one takes the long hash.
        let taken = student_id("José");
        let class = class_of(&["José", &taken], false);
        let got = ids(&discover(class.path()).unwrap());
        assert_eq!(got[&taken], taken);
        assert_eq!(
            got["José"],
            format!("Jose-{}", name_hash("José".as_bytes(), LONG_HASH))
        );
        // Two safe names cannot collide (each is its own id); two equal exact names are refused.
        let student = |name: &str| Student {
            id: student_id(name),
            name: name.into(),
            sid: None,
            email: None,
            folder: PathBuf::from(name),
        };
        let mut same = vec![student("日本"), student("日本")];
        let source = || IdSource {
            shown: "日本".into(),
            exact: b"x".to_vec(),
        };
        let err = settle_ids(&mut same, &[source(), source()]).unwrap_err();
        assert!(matches!(err, RosterError::SameId { .. }), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn folder_names_that_are_not_utf8_get_two_ids() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        for raw in [&b"x\xff"[..], &b"x\xfe"[..]] {
            std::fs::create_dir(dir.path().join(std::ffi::OsStr::from_bytes(raw))).unwrap();
        }
        let roster = discover(dir.path()).unwrap();
        assert_eq!(
            roster.students[0].name, roster.students[1].name,
            "both are shown as x\u{fffd}"
        );
        assert_ne!(roster.students[0].id, roster.students[1].id);
        roster.students.iter().for_each(|s| assert_safe(&s.id));
    }

    #[test]
    fn classroom_clones_with_multibyte_names_lose_just_their_prefix() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            classroom_prefix(&names(&["lab3-é", "lab3-è"])),
            Some("lab3-".into()),
            "the shared bytes end inside a character"
        );
        assert_eq!(classroom_prefix(&names(&["éa", "éb"])), None);
        // A multi-byte assignment and user names.
        let class = class_of(&["été-josé", "été-josè", "été-bob"], true);
        let roster = discover(class.path()).unwrap();
        assert_eq!(roster.layout, Layout::GithubClassroom);
        let got = ids(&roster);
        assert_eq!(
            got.keys().map(String::as_str).collect::<Vec<_>>(),
            ["bob", "josè", "josé"]
        );
        assert_eq!(got["bob"], "bob");
        assert_eq!(got["josé"], student_id("josé"));
        assert!(
            got["josé"].starts_with("jose-")
                && got["josè"].starts_with("jose-")
                && got["josé"] != got["josè"]
        );
        // User names that share their first byte.
        let class = class_of(&["lab3-é", "lab3-è"], true);
        let got = ids(&discover(class.path()).unwrap());
        assert_eq!(
            got.keys().map(String::as_str).collect::<Vec<_>>(),
            ["è", "é"]
        );
        assert!(got["é"].starts_with("e-") && got["è"].starts_with("e-") && got["é"] != got["è"]);
    }

    #[test]
    fn shards_split_the_pairs_without_overlap() {
        let shards: Vec<Shard> = (1..=3).map(|k| format!("{k}/3").parse().unwrap()).collect();
        for i in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.takes(i)).count(), 1);
        }
        assert!(
            "0/3".parse::<Shard>().is_err()
                && "4/3".parse::<Shard>().is_err()
                && "x".parse::<Shard>().is_err()
        );
    }

    #[test]
    fn a_gradescope_id_lengthened_apart_is_still_spelt_from_its_folder() {
        // "José" and a folder named like its short id: José's id takes the long hash, and its
        // readable part stays the folder's, never the submitter's name.
        let taken = student_id("José");
        let text = format!(
            "José:\n  :submitters:\n  - :name: Ada Lovelace\n{taken}:\n  :submitters:\n  - :name: Bo\n"
        );
        let s = gradescope(Path::new("/x"), Path::new("/x/m.yml"), &text).unwrap();
        let ada = s.iter().find(|s| s.name == "Ada Lovelace").unwrap();
        assert_eq!(
            ada.id,
            format!("Jose-{}", name_hash("José".as_bytes(), LONG_HASH))
        );
        assert!(s.iter().any(|s| s.name == "Bo" && s.id == taken));
    }

    #[test]
    fn gradescope_metadata_names_the_submitters() {
        let text = "submission_101:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '1815'\n    :email: ada@example.edu\n  :created_at: 2026-10-01\nsubmission_102:\n  :submitters:\n  - :name: A\n    :sid: 1\n  - :name: B\n    :sid: 2\n";
        let s = gradescope(Path::new("/x"), Path::new("/x/m.yml"), text).unwrap();
        assert_eq!(s[0].name, "Ada Lovelace");
        assert_eq!(s[0].sid.as_deref(), Some("1815"));
        assert_eq!(s[0].folder, Path::new("/x/submission_101"));
        assert_eq!(s[1].name, "A & B");
        let e = gradescope(
            Path::new("/x"),
            Path::new("/x/m.yml"),
            "submission_1:\n  :created_at: 1\n",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("submission_1") && e.to_string().contains(":submitters:"),
            "{e}"
        );
    }
}
