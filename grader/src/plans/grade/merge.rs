//! `grade merge`: the journals of a class's shards joined into one gradebook, each pair once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::class::journal;

use super::{ClassInfo, PairResult, CLASS_FILE};

/// The class, its results from every journal, and the (student, exercise) pairs none has.
pub struct Merged {
    pub info: ClassInfo,
    pub results: Vec<PairResult>,
    pub missing: Vec<(String, String)>,
}

/// Why a grade folder's journals cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{}: {source} (run `grade` into this folder first)", .path.display())]
    NoClass {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", .path.display())]
    BadClass {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    #[error("{student} / {exercise} is in two journals with different results (graded twice from different files?): {}", .journal.display())]
    GradedTwice {
        student: String,
        exercise: String,
        journal: PathBuf,
    },
}

/// `grade merge`: every journal in `out` (the shards', or one run's), checked against the class
/// file: each pair exactly once.
pub fn merge(out: &Path) -> Result<Merged, MergeError> {
    let class_file = out.join(CLASS_FILE);
    let text = std::fs::read_to_string(&class_file).map_err(|e| MergeError::NoClass {
        path: class_file.clone(),
        source: e,
    })?;
    let info: ClassInfo = serde_json::from_str(&text).map_err(|e| MergeError::BadClass {
        path: class_file.clone(),
        source: e,
    })?;
    let mut entries: BTreeMap<(String, String), PairResult> = BTreeMap::new();
    let mut journals: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| MergeError::Unreadable {
            path: out.to_path_buf(),
            source: e,
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("journal")
                    && n.ends_with(".jsonl")
                    && (n == "journal.jsonl" || n.starts_with("journal.shard-"))
            })
        })
        .collect();
    journals.sort();
    for path in &journals {
        let (lines, _) = journal::read::<PairResult>(path)?;
        for r in lines {
            let key = (r.student.clone(), r.exercise.clone());
            if let Some(old) = entries.get(&key) {
                if old.fingerprint != r.fingerprint {
                    return Err(MergeError::GradedTwice {
                        student: key.0,
                        exercise: key.1,
                        journal: path.clone(),
                    });
                }
            }
            entries.insert(key, r);
        }
    }
    let mut missing = Vec::new();
    for s in &info.roster.students {
        for e in &info.exercises {
            if !entries.contains_key(&(s.id.clone(), e.clone())) {
                missing.push((s.id.clone(), e.clone()));
            }
        }
    }
    Ok(Merged {
        info,
        results: entries.into_values().collect(),
        missing,
    })
}
