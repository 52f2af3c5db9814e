//! What happens to the learner's own files: `reset` (restore the original, after a backup it names)
//! and the reference solution shown as a diff once their version passes; progress (`state`) and
//! `watch`.

pub mod state;
pub mod watch;

use std::path::PathBuf;

use serde::Serialize;

use crate::exercise::workbook::{Exercise, Workbook};

pub use crate::exercise::workbook::BACKUP_DIR;

#[derive(Debug, Clone, Serialize)]
pub struct Reset {
    pub exercise: String,
    /// The restored file, relative to the workbook root.
    pub path: String,
    /// Where the learner's version was saved, when there was one that differed from the original.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// Whether the file changed: false when it already was the original.
    pub restored: bool,
}

fn backup_path(wb: &Workbook, ex: &Exercise) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace([':', '-'], "")
        .replace('T', "-")
        .replace('Z', "");
    let dir = wb.root.join(BACKUP_DIR).join(ex.id());
    let name = ex.manifest.source_name();
    let mut candidate = dir.join(format!("{name}.{stamp}"));
    let mut n = 2;
    while candidate.exists() {
        candidate = dir.join(format!("{name}.{stamp}-{n}"));
        n += 1;
    }
    candidate
}

/// Why `reset` stopped; each says what was done before it and how to go on.
#[derive(Debug, thiserror::Error)]
pub enum ResetError {
    #[error("cannot read {path} ({cause}); nothing was changed")]
    Read { path: String, cause: std::io::Error },
    #[error("cannot save your version of {path} as {backup} ({cause}); nothing was changed: make {backup_dir} writable and reset again")]
    Backup {
        path: String,
        backup: String,
        backup_dir: String,
        cause: std::io::Error,
    },
    #[error("cannot write {path} ({cause}). {saved}make its folder writable (`chmod u+w {folder}`) and run `{again}` again")]
    Write {
        path: String,
        folder: String,
        /// "Your version is safe in X; " where a backup was made.
        saved: String,
        again: String,
        cause: std::io::Error,
    },
}

impl ResetError {
    /// Every one is a file that could not be read or written: exit 7.
    pub fn exit(&self) -> crate::exit::ExitStatus {
        crate::exit::ExitStatus::CannotWrite
    }
}

/// Restore the original exercise from the copy embedded in the binary, with the mode git gives it
/// (0644 under the usual umask). A learner's version that differs from it is copied to a backup
/// first; if the backup cannot be written, nothing is touched. `again` is the command to run again
/// (`cargo xtask reset 03-race`), for the advice of an error.
pub fn reset(wb: &Workbook, ex: &Exercise, again: &str) -> Result<Reset, ResetError> {
    let path = wb.learner_path(ex);
    let shown = wb.display_path(&path);
    let read_error = |cause| ResetError::Read {
        path: shown.clone(),
        cause,
    };
    let current = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(read_error(e)),
    };
    let mut backup = None;
    if let Some(bytes) = &current {
        if bytes.as_slice() == ex.original.as_bytes() {
            return Ok(Reset {
                exercise: ex.id().to_string(),
                path: shown,
                backup: None,
                restored: false,
            });
        }
        // The bytes as they are (not UTF-8 text, even), in the backup.
        let to = backup_path(wb, ex);
        let dir = to.parent().expect("backup folder");
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&to, bytes))
            .map_err(|cause| ResetError::Backup {
                path: shown.clone(),
                backup: wb.display_path(&to),
                backup_dir: wb.display_path(dir),
                cause,
            })?;
        backup = Some(wb.display_path(&to));
    }
    crate::exercise::workbook::write_atomically_as_new(&path, ex.original).map_err(|cause| {
        ResetError::Write {
            path: shown.clone(),
            folder: wb.display_path(path.parent().unwrap_or(&wb.root)),
            saved: backup
                .as_ref()
                .map(|b| format!("Your version is safe in {b}; "))
                .unwrap_or_default(),
            again: again.to_string(),
            cause,
        }
    })?;
    Ok(Reset {
        exercise: ex.id().to_string(),
        path: shown,
        backup,
        restored: true,
    })
}

/// Where the workbook keeps recordings of tool runs (`--record-tools`), a folder each.
pub const RECORDINGS_DIR: &str = "grader/tests/recordings";

/// The recordings that hold a `check` of `ex` (its `learner` runs and the GPU they were made on),
/// which `--replay-tools` serves where there is no GPU.
pub fn recordings_of(wb: &Workbook, ex: &Exercise) -> Vec<PathBuf> {
    let prefix = format!("{}.learner.", ex.id());
    let Ok(entries) = std::fs::read_dir(wb.root.join(RECORDINGS_DIR)) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|dir| dir.join("gpu.json").is_file())
        .filter(|dir| {
            std::fs::read_dir(dir).is_ok_and(|files| {
                files
                    .flatten()
                    .any(|f| f.file_name().to_string_lossy().starts_with(&prefix))
            })
        })
        .collect();
    found.sort();
    found
}

/// Whether the learner's file differs from the original (they have started on it).
pub fn is_edited(wb: &Workbook, ex: &Exercise) -> bool {
    std::fs::read_to_string(wb.learner_path(ex))
        .map(|t| t != ex.original)
        .unwrap_or(true)
}

/// Whether an exercise has passed `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Progress {
    Done,
    Pending,
}

/// One line of `list`.
#[derive(Debug, Clone, Serialize)]
pub struct ListEntry {
    pub id: String,
    /// The chapter of the learning path it is in (`exercises/path.toml`).
    pub chapter: String,
    pub title: String,
    pub bug_class: String,
    /// "bug" or "perf".
    pub track: crate::exercise::manifest::Track,
    /// The tool that flags this exercise's bug; none where only the cases do.
    pub tool: Option<crate::exercise::manifest::Tool>,
    pub detector: crate::exercise::manifest::Detector,
    /// Done once the learner's file passed `check`.
    pub status: Progress,
    /// The first pending exercise: the one to do next.
    pub next: bool,
    /// The learner's file differs from the original.
    pub edited: bool,
    pub hints_shown: usize,
    pub hints_total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_reference: Option<f64>,
    /// The compute capability it needs ("9.0"), where it needs more than any CUDA GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requires: Option<crate::exercise::manifest::Capability>,
    /// Its level on the learning path, 1 to 3 (the manifest's), where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
}

/// Every exercise in the order of the learning path, each with its chapter.
pub fn list(wb: &Workbook, state: &crate::learner::state::State) -> Vec<ListEntry> {
    let next = state.next_pending(wb.path.order());
    wb.in_path_order()
        .into_iter()
        .map(|ex| {
            let m = &ex.manifest.manifest;
            ListEntry {
                id: ex.id().to_string(),
                chapter: wb
                    .path
                    .place(ex.id())
                    .map(|(c, _)| c.title.clone())
                    .unwrap_or_default(),
                title: m.title.clone(),
                bug_class: m.bug_class.clone(),
                track: ex.manifest.track(),
                tool: ex.manifest.expected_finding().map(|(t, _)| t),
                detector: ex.manifest.detector(),
                status: if state.is_done(ex.id()) {
                    Progress::Done
                } else {
                    Progress::Pending
                },
                next: next == Some(ex.id()),
                edited: is_edited(wb, ex),
                hints_shown: state.hints_shown(ex.id()),
                hints_total: m.hints.get_ref().len(),
                ratio_to_reference: state.done.get(ex.id()).and_then(|d| d.ratio_to_reference),
                requires: ex.manifest.requires(),
                level: ex.manifest.level(),
            }
        })
        .collect()
}

/// What `hint` shows: every hint revealed so far, the newest last.
#[derive(Debug, Clone, Serialize)]
pub struct Hints {
    pub exercise: String,
    pub shown: usize,
    pub total: usize,
    pub remaining: usize,
    /// False when every hint was already shown (the call revealed nothing new).
    pub revealed_new: bool,
    pub hints: Vec<String>,
}

/// Reveal the next hint of `ex` in `state`.
pub fn reveal_hint(ex: &Exercise, state: &mut crate::learner::state::State) -> Hints {
    let all = ex.manifest.manifest.hints.get_ref();
    let before = state.hints_shown(ex.id());
    let shown = state.reveal_hint(ex.id(), all.len());
    Hints {
        exercise: ex.id().to_string(),
        shown,
        total: all.len(),
        remaining: all.len() - shown,
        revealed_new: shown > before,
        hints: all[..shown].to_vec(),
    }
}
