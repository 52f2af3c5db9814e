//! The grading journal: one JSON line per finished (student, exercise), appended and synced to disk
//! before the next pair starts, so that a grader killed mid-batch (SIGKILL, a node lost) loses at
//! most the pairs in flight. The same command run again skips every pair the journal holds under
//! the same fingerprint (the submission's text, the exercise, the grader and the secret). A line
//! torn by a kill is dropped and the file rewritten without it; a pair graded again replaces its
//! line, so each pair is in the journal once.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{de::DeserializeOwned, Serialize};

/// An entry: whatever the plan stores, keyed by student and exercise.
pub trait Entry: Serialize + DeserializeOwned {
    fn key(&self) -> (String, String);
    fn fingerprint(&self) -> &str;
}

pub struct Journal<E: Entry> {
    path: PathBuf,
    file: std::fs::File,
    /// Held (flock) while the journal is open: one grader per journal.
    _lock: std::fs::File,
    /// Entries by (student, exercise), from the file and from this run.
    pub entries: BTreeMap<(String, String), E>,
    /// Lines dropped on opening: torn, unreadable, or superseded by a later line for the pair.
    pub dropped: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}: another grader is writing this journal (it holds the lock); wait for it or use another --out")]
    Locked(PathBuf),
}

/// Every entry of a journal file (a torn last line is skipped), in file order.
pub fn read<E: Entry>(path: &Path) -> Result<(Vec<E>, usize), JournalError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(JournalError::Io(path.to_path_buf(), e)),
    };
    let mut bad = 0;
    let entries = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<E>(l).map_err(|_| bad += 1).ok())
        .collect();
    Ok((entries, bad))
}

impl<E: Entry> Journal<E> {
    /// Open (or start) the journal at `path`, locked against a second grader; `fresh` starts it
    /// empty (`--regrade`), keeping the old one beside it.
    pub fn open(path: &Path, fresh: bool) -> Result<Journal<E>, JournalError> {
        let io = |e| JournalError::Io(path.to_path_buf(), e);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        if fresh && path.exists() {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            std::fs::rename(path, path.with_extension(format!("{stamp}.jsonl"))).map_err(io)?;
        }
        let (lines, bad) = read::<E>(path)?;
        let count = lines.len();
        let mut entries = BTreeMap::new();
        for e in lines {
            entries.insert(e.key(), e);
        }
        let dropped = bad + (count - entries.len());
        let lock_path = path.with_extension("lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io)?;
        // SAFETY: flock on a descriptor we own; the lock lives as long as the journal (it keeps it).
        if unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&lock),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        } != 0
        {
            return Err(JournalError::Locked(path.to_path_buf()));
        }
        if dropped > 0 {
            // Rewrite without the torn or superseded lines, atomically.
            let text: String = entries
                .values()
                .map(|e| serde_json::to_string(e).expect("serialisable") + "\n")
                .collect();
            crate::exercise::workbook::write_atomically(path, &text).map_err(io)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            _lock: lock,
            entries,
            dropped,
        })
    }

    /// Whether the pair is done under this fingerprint.
    pub fn has(&self, student: &str, exercise: &str, fingerprint: &str) -> bool {
        self.entries
            .get(&(student.to_string(), exercise.to_string()))
            .is_some_and(|e| e.fingerprint() == fingerprint)
    }

    /// Append one finished pair and sync it to disk. A pair already in the journal (graded again
    /// under a new fingerprint) is rewritten out of the file first.
    pub fn record(&mut self, entry: E) -> Result<(), JournalError> {
        let io = |e| JournalError::Io(self.path.clone(), e);
        let line = serde_json::to_string(&entry).expect("serialisable") + "\n";
        if self.entries.insert(entry.key(), entry).is_some() {
            let text: String = self
                .entries
                .values()
                .map(|e| serde_json::to_string(e).expect("serialisable") + "\n")
                .collect();
            crate::exercise::workbook::write_atomically(&self.path, &text).map_err(io)?;
            self.file = std::fs::OpenOptions::new()
                .append(true)
                .open(&self.path)
                .map_err(io)?;
        } else {
            self.file.write_all(line.as_bytes()).map_err(io)?;
        }
        self.file.sync_data().map_err(io)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    struct E {
        student: String,
        exercise: String,
        fp: String,
        points: f64,
    }

    impl Entry for E {
        fn key(&self) -> (String, String) {
            (self.student.clone(), self.exercise.clone())
        }
        fn fingerprint(&self) -> &str {
            &self.fp
        }
    }

    fn e(student: &str, fp: &str, points: f64) -> E {
        E {
            student: student.into(),
            exercise: "03-race".into(),
            fp: fp.into(),
            points,
        }
    }

    #[test]
    fn a_torn_line_is_dropped_and_a_regraded_pair_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        {
            let mut j = Journal::<E>::open(&path, false).unwrap();
            j.record(e("alice", "a1", 90.0)).unwrap();
            j.record(e("bob", "b1", 50.0)).unwrap();
            assert!(
                matches!(
                    Journal::<E>::open(&path, false),
                    Err(JournalError::Locked(_))
                ),
                "a second grader is refused"
            );
        }
        // A kill in the middle of a write leaves half a line.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"student\":\"carol\",\"exer");
        std::fs::write(&path, text).unwrap();
        let mut j = Journal::<E>::open(&path, false).unwrap();
        assert_eq!(j.dropped, 1);
        assert!(
            j.has("alice", "03-race", "a1")
                && !j.has("alice", "03-race", "a2")
                && !j.has("carol", "03-race", "c1")
        );
        j.record(e("alice", "a2", 95.0)).unwrap();
        j.record(e("carol", "c1", 10.0)).unwrap();
        drop(j);
        let (lines, bad) = read::<E>(&path).unwrap();
        assert_eq!(bad, 0);
        let mut keys: Vec<String> = lines.iter().map(|l| l.student.clone()).collect();
        keys.sort();
        assert_eq!(keys, ["alice", "bob", "carol"], "each pair once");
        assert_eq!(
            lines.iter().find(|l| l.student == "alice").unwrap().points,
            95.0
        );
    }
}
