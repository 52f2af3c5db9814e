//! `grade`, a plan: a class's submissions, each (student, exercise) pair tamper-checked, built, run
//! under all four compute-sanitizer tools, on the public cases and the instructor's hidden ones,
//! timed against the reference fix (and the original) in the same GPU session, checked again on
//! fresh inputs after the timed runs, and held to the anti-cheat rules. Points per stage come from
//! the exercise's `[rubric]`.
//!
//! Pairs are graded in chunks of one exercise: one scheduler run builds and runs a chunk's
//! submissions together, with the reference timed beside them. One worker per GPU, each with its
//! own context (`CUDA_VISIBLE_DEVICES`) and ncu lock; each finished pair goes to the journal at once.
//!
//! The jobs, a module each: `score` turns a chunk's stage outputs into a pair's points; `worker`
//! grades one chunk on one GPU (the stages, then the scores; its first phase in `first`, its timed
//! phase in `timed`); `class` queues a class's pairs into chunks for the workers and keeps the
//! journal; `merge` joins the journals of shards.

mod class;
mod first;
mod merge;
mod score;
mod stages;
mod timed;
mod triage;
mod worker;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::class::journal;
use crate::class::roster::{self, Roster, Shard};
use crate::class::secret::Secret;
use crate::exercise::rubric::{GradeStage, Rubric};
use crate::exercise::workbook::Exercise;
use crate::judge::verdict::{Finding, Status, Step};

pub use crate::judge::speed::{Flag, Rule, SpeedResult};
pub use class::{configure_worker, grade_class, journal_path, worker_gpus};
pub use merge::{merge, Merged};
pub use worker::{Chunk, ChunkPhases, ExerciseCases, Pending, Worker};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageScore {
    pub stage: GradeStage,
    pub points: f64,
    pub max: f64,
    pub status: Status,
    pub summary: String,
    /// The rule that withheld these points, where one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld_by: Option<Rule>,
}

/// Where a pair ended up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum PairState {
    /// Every stage ran (whatever the points).
    Graded,
    /// The student's folder has no file for this exercise.
    NotSubmitted,
    /// Changed outside the marked regions, or a harness of its own.
    NotGradable { reason: String, diff: String },
    /// Built, but the GPU stages could not run here: graded again on a machine with a GPU.
    Skipped { reason: String },
    /// The grader's own tools failed (not the student's fault): graded again next time.
    ToolError { message: String },
    /// The exercise needs a newer GPU than this one (`requires`): nothing ran, no points are given
    /// or taken; graded on a GPU that has the capability.
    Unsupported { reason: String },
}

/// One graded (student, exercise): the journal's line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairResult {
    pub student: String,
    pub exercise: String,
    pub fingerprint: String,
    #[serde(flatten)]
    pub state: PairState,
    pub points: f64,
    pub max: f64,
    pub stages: Vec<StageScore>,
    pub flags: Vec<Flag>,
    /// What the student's report shows: the same steps as `check`, the hidden cases' details
    /// withheld.
    pub steps: Vec<Step>,
    pub findings: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<SpeedResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// `CUDA_VISIBLE_DEVICES` of the worker that graded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The bytes the pair's work folder held when it was graded (builds, outputs and whatever its
    /// program wrote), before the folder was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<u64>,
    pub wall_s: f64,
}

impl journal::Entry for PairResult {
    fn key(&self) -> (String, String) {
        (self.student.clone(), self.exercise.clone())
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}

impl PairResult {
    fn empty(student: &str, ex: &Exercise, fingerprint: String, state: PairState) -> PairResult {
        let rubric = rubric_of(ex);
        // A pair this GPU cannot grade is worth nothing either way here: 0 of 0, no stages.
        let unsupported = matches!(state, PairState::Unsupported { .. });
        let stages: Vec<StageScore> = ex
            .manifest
            .grade_points()
            .into_iter()
            .filter(|_| !unsupported)
            .map(|(stage, max)| StageScore {
                stage,
                points: 0.0,
                max,
                status: Status::Skipped,
                summary: "not run".into(),
                withheld_by: None,
            })
            .collect();
        PairResult {
            student: student.to_string(),
            exercise: ex.id().to_string(),
            fingerprint,
            state,
            points: 0.0,
            max: if unsupported { 0.0 } else { rubric.total() },
            stages,
            flags: Vec::new(),
            steps: Vec::new(),
            findings: Vec::new(),
            speed: None,
            gpu: None,
            device: None,
            disk_bytes: None,
            wall_s: 0.0,
        }
    }

    /// The points of one stage.
    pub fn stage(&self, s: GradeStage) -> Option<&StageScore> {
        self.stages.iter().find(|x| x.stage == s)
    }

    fn set(&mut self, s: GradeStage, fraction: f64, status: Status, summary: impl Into<String>) {
        if let Some(x) = self.stages.iter_mut().find(|x| x.stage == s) {
            x.points = x.max * fraction.clamp(0.0, 1.0);
            x.status = status;
            x.summary = summary.into();
        }
    }

    fn withhold(&mut self, rule: Rule) {
        for s in rule.withholds() {
            if let Some(x) = self.stages.iter_mut().find(|x| x.stage == *s) {
                if x.points > 0.0 || x.status == Status::Passed {
                    x.points = 0.0;
                    x.status = Status::Failed;
                    x.withheld_by = Some(rule);
                }
            }
        }
    }

    /// The points, with every flag's stages withheld (a stage scored after its flag was raised too).
    fn total(&mut self) {
        let rules: Vec<Rule> = self.flags.iter().map(|f| f.rule).collect();
        for rule in rules {
            self.withhold(rule);
        }
        self.points = (self.stages.iter().map(|s| s.points).sum::<f64>() * 100.0).round() / 100.0;
    }
}

pub fn rubric_of(ex: &Exercise) -> Rubric {
    ex.manifest.manifest.rubric.unwrap_or_default()
}

/// Names what was graded: the text, the exercise (manifest, original, solution), this grader and
/// the secret. A pair is graded again when any of them changes.
pub fn fingerprint(ex: &Exercise, text: &str, secret: &Secret) -> String {
    let h = crate::hash::stable(&[
        text,
        &ex.manifest.text,
        ex.original,
        ex.solution,
        env!("CARGO_PKG_VERSION"),
        &secret.fingerprint(),
    ]);
    format!("{h:016x}")
}

/// What the batch tells its caller as it goes (a progress bar, or JSON Lines).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    Started {
        layout: roster::Layout,
        students: usize,
        exercises: usize,
        pairs: usize,
        already_graded: usize,
        workers: Vec<String>,
    },
    Graded {
        student: String,
        exercise: String,
        state: StateKind,
        points: f64,
        max: f64,
        flags: Vec<Rule>,
        device: Option<String>,
        done: usize,
        of: usize,
    },
    /// A chunk of one exercise finished: its phases' times, and when it ended (seconds since the
    /// class started), which shows the time spent between chunks.
    Chunk {
        exercise: String,
        pairs: usize,
        device: Option<String>,
        phases: ChunkPhases,
        at: f64,
    },
    Note {
        message: String,
    },
}

/// A whole class, or one shard of it.
pub struct ClassJob<'a> {
    pub submissions: PathBuf,
    pub roster: Roster,
    pub exercises: Vec<&'a Exercise>,
    pub secret: Secret,
    pub out: PathBuf,
    pub shard: Option<Shard>,
    pub regrade: bool,
    /// Pairs per scheduler run.
    pub chunk: usize,
}

/// What every shard of a class agrees on, for `grade merge`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClassInfo {
    pub submissions: PathBuf,
    pub roster: Roster,
    pub exercises: Vec<String>,
    pub secret: String,
}

pub const CLASS_FILE: &str = "class.json";

#[derive(Debug, thiserror::Error)]
pub enum GradeError {
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// Which state a pair is in, without its reasons: what a grade event carries, as its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateKind {
    Graded,
    NotSubmitted,
    NotGradable,
    Skipped,
    ToolError,
    Unsupported,
}

impl StateKind {
    /// The words reports, events and the progress line use.
    pub fn label(self) -> &'static str {
        match self {
            StateKind::Graded => "graded",
            StateKind::NotSubmitted => "not submitted",
            StateKind::NotGradable => "not gradable",
            StateKind::Skipped => "skipped (no GPU)",
            StateKind::ToolError => "tool error",
            StateKind::Unsupported => "not gradable on this GPU",
        }
    }
}

impl std::fmt::Display for StateKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// An event's `state` is the label ("skipped (no GPU)"), as readers of the JSON Lines expect.
impl Serialize for StateKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.label())
    }
}

impl PairState {
    pub fn kind(&self) -> StateKind {
        match self {
            PairState::Graded => StateKind::Graded,
            PairState::NotSubmitted => StateKind::NotSubmitted,
            PairState::NotGradable { .. } => StateKind::NotGradable,
            PairState::Skipped { .. } => StateKind::Skipped,
            PairState::ToolError { .. } => StateKind::ToolError,
            PairState::Unsupported { .. } => StateKind::Unsupported,
        }
    }
}

/// A graded pair of 03-race with no steps yet, for the reports' tests.
#[cfg(test)]
pub(crate) fn graded_pair_for_tests() -> PairResult {
    let (_dir, wb) = crate::exercise::workbook::test_workbook(&["03-race"]);
    let ex = wb.resolve("03-race").unwrap();
    PairResult::empty("alice", ex, "fingerprint".into(), PairState::Graded)
}
