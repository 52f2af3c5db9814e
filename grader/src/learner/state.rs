//! The learner's progress: which exercises passed `check` and how many hints each has shown. One
//! small JSON file at the workbook root, written atomically (a temporary file renamed over it), so an
//! interrupted write never leaves half a file. A damaged file is never overwritten: it is moved aside
//! under a name the message gives, and progress can be rebuilt by checking the exercises again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const STATE_FILE: &str = ".cudabugs-state.json";
const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Done {
    /// When the learner's file first passed `check` (RFC 3339).
    pub at: String,
    /// Its time against the reference fix, when it was timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_to_reference: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub format: u32,
    #[serde(default)]
    pub done: BTreeMap<String, Done>,
    /// How many hints of each exercise have been shown.
    #[serde(default)]
    pub hints: BTreeMap<String, usize>,
}

impl Default for State {
    fn default() -> Self {
        State {
            format: FORMAT,
            done: BTreeMap::new(),
            hints: BTreeMap::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{path}:{line}:{column}: the progress file is damaged ({message}). It was left as it is; `cargo xtask check <id>` records each passed exercise again, and the next save moves the damaged file to {path}.damaged")]
    Damaged {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: written by a newer cudabugs (format {found}, this one reads {FORMAT}); it was left as it is")]
    NewerFormat { path: String, found: u32 },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// What loading found: the state to use, and a warning to show when the file could not be used.
#[derive(Debug)]
pub struct Loaded {
    pub state: State,
    pub problem: Option<StateError>,
    path: PathBuf,
}

pub fn path(root: &Path) -> PathBuf {
    root.join(STATE_FILE)
}

/// Load the progress file. A missing file is a fresh start; a damaged one gives an empty state and
/// the reason, and is kept on disk until the next save moves it aside.
pub fn load(root: &Path) -> Loaded {
    let p = path(root);
    let shown = STATE_FILE.to_string();
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Loaded {
                state: State::default(),
                problem: None,
                path: p,
            }
        }
        Err(source) => {
            return Loaded {
                state: State::default(),
                problem: Some(StateError::Io {
                    path: shown,
                    source,
                }),
                path: p,
            }
        }
    };
    let problem = match serde_json::from_str::<State>(&text) {
        Ok(state) if state.format <= FORMAT => {
            return Loaded {
                state,
                problem: None,
                path: p,
            }
        }
        Ok(state) => StateError::NewerFormat {
            path: shown,
            found: state.format,
        },
        Err(e) => StateError::Damaged {
            path: shown,
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        },
    };
    Loaded {
        state: State::default(),
        problem: Some(problem),
        path: p,
    }
}

impl Loaded {
    /// Write the state atomically. A damaged file is first moved to `<file>.damaged` (never
    /// deleted); a file of a newer format is never replaced.
    pub fn save(&self) -> Result<Option<PathBuf>, StateError> {
        let io = |source| StateError::Io {
            path: self.path.display().to_string(),
            source,
        };
        let mut moved = None;
        match &self.problem {
            Some(StateError::NewerFormat { path, found }) => {
                return Err(StateError::NewerFormat {
                    path: path.clone(),
                    found: *found,
                })
            }
            Some(StateError::Damaged { .. }) if self.path.exists() => {
                let aside = self.path.with_extension("json.damaged");
                std::fs::rename(&self.path, &aside).map_err(io)?;
                moved = Some(aside);
            }
            _ => {}
        }
        let json = serde_json::to_string_pretty(&self.state).expect("state serialises");
        crate::exercise::workbook::write_atomically(&self.path, &(json + "\n")).map_err(io)?;
        Ok(moved)
    }
}

impl State {
    pub fn is_done(&self, id: &str) -> bool {
        self.done.contains_key(id)
    }

    /// Record a pass; the first pass's date is kept, the latest ratio replaces an older one.
    pub fn mark_done(&mut self, id: &str, ratio_to_reference: Option<f64>) {
        let at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let entry = self.done.entry(id.to_string()).or_insert(Done {
            at,
            ratio_to_reference: None,
        });
        entry.ratio_to_reference = ratio_to_reference.or(entry.ratio_to_reference);
    }

    pub fn mark_pending(&mut self, id: &str) -> bool {
        self.done.remove(id).is_some()
    }

    pub fn hints_shown(&self, id: &str) -> usize {
        self.hints.get(id).copied().unwrap_or(0)
    }

    /// Reveal one more hint of `total`; returns how many are shown now.
    pub fn reveal_hint(&mut self, id: &str, total: usize) -> usize {
        let shown = (self.hints_shown(id) + 1).min(total);
        self.hints.insert(id.to_string(), shown);
        shown
    }

    /// The first exercise, in order, that is not done.
    pub fn next_pending<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
        ids.into_iter().find(|id| !self.is_done(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_a_fresh_start_and_saving_creates_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut loaded = load(dir.path());
        assert!(loaded.problem.is_none() && loaded.state.done.is_empty());
        loaded.state.mark_done("03-race", Some(1.01));
        assert_eq!(loaded.state.reveal_hint("03-race", 3), 1);
        loaded.save().unwrap();
        let again = load(dir.path());
        assert!(again.state.is_done("03-race"));
        assert_eq!(again.state.hints_shown("03-race"), 1);
        assert_eq!(again.state.done["03-race"].ratio_to_reference, Some(1.01));
    }

    #[test]
    fn a_damaged_file_is_reported_with_its_line_and_moved_aside_on_save() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            path(dir.path()),
            "{\n  \"format\": 1,\n  \"done\": {\n    \"01-index\" oops\n",
        )
        .unwrap();
        let loaded = load(dir.path());
        let message = loaded.problem.as_ref().expect("damaged").to_string();
        assert!(message.starts_with(".cudabugs-state.json:4:"), "{message}");
        let moved = loaded.save().unwrap().expect("moved aside");
        assert!(
            std::fs::read_to_string(moved).unwrap().contains("oops"),
            "the damaged text is kept"
        );
        assert!(load(dir.path()).problem.is_none());
    }

    #[test]
    fn a_newer_format_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(path(dir.path()), r#"{"format": 99}"#).unwrap();
        let loaded = load(dir.path());
        assert!(matches!(
            loaded.problem,
            Some(StateError::NewerFormat { found: 99, .. })
        ));
        assert!(loaded.save().is_err());
        assert_eq!(
            std::fs::read_to_string(path(dir.path())).unwrap(),
            r#"{"format": 99}"#
        );
    }

    #[test]
    fn hints_stop_at_the_last_one_and_the_next_pending_skips_done_ones() {
        let mut s = State::default();
        for _ in 0..5 {
            s.reveal_hint("01-index", 3);
        }
        assert_eq!(s.hints_shown("01-index"), 3);
        s.mark_done("01-index", None);
        assert_eq!(s.next_pending(["01-index", "02-bounds"]), Some("02-bounds"));
        assert!(s.mark_pending("01-index"));
        assert_eq!(s.next_pending(["01-index", "02-bounds"]), Some("01-index"));
    }
}
