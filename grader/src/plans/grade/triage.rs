//! A class's pairs triaged before any tool runs: each file found, read and fingerprinted, looked
//! up in the journal and tamper-checked; decided at once where nothing needs to run.

use std::collections::BTreeMap;

use crate::class::journal::Journal;
use crate::class::roster::{self, Student};
use crate::class::tamper::{self, Tampered};
use crate::engine::context::Context;
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::verdict::{Status, Step, StepName};

use super::worker::Pending;
use super::{fingerprint, ClassJob, PairResult, PairState};

/// This run's pairs after triage: those to grade, those decided without running anything, and
/// how many the journal held already.
pub(super) struct Triaged<'a> {
    pub(super) todo: Vec<(&'a Exercise, Pending<'a>)>,
    pub(super) decided: Vec<PairResult>,
    pub(super) already: usize,
}

/// Every pair of `mine` triaged (`triage`), on the first worker's GPU.
pub(super) fn triage_all<'a>(
    wb: &Workbook,
    job: &ClassJob,
    journal: &Journal<PairResult>,
    ctx: Option<&Context>,
    mine: &[(&'a Student, &'a Exercise)],
) -> Triaged<'a> {
    let gpu_here = ctx.is_some_and(|c| c.gpu_stages());
    let mut triaged = Triaged {
        todo: Vec::new(),
        decided: Vec::new(),
        already: 0,
    };
    // A workbook copy's own harness refuses every exercise of the student: read once per student.
    let mut harness_of: BTreeMap<&str, Option<Tampered>> = BTreeMap::new();
    for &(student, ex) in mine {
        let harness = harness_of
            .entry(student.id.as_str())
            .or_insert_with(|| tamper::harness_changes(wb, &student.folder))
            .clone();
        match triage(wb, job, journal, ctx, gpu_here, student, ex, harness) {
            Triage::Already => triaged.already += 1,
            Triage::Decided(r) => triaged.decided.push(*r),
            Triage::Grade(pending) => triaged.todo.push((ex, pending)),
        }
    }
    triaged
}

/// What becomes of one (student, exercise) pair before any tool runs.
enum Triage<'a> {
    /// Graded before with the same file and secret (in the journal).
    Already,
    /// Decided without running anything: no file, an unreadable one, an exercise this GPU cannot
    /// run, a tampered file or harness.
    Decided(Box<PairResult>),
    Grade(Pending<'a>),
}

/// One pair's triage: its file found and read, fingerprinted (with this machine's GPU and
/// capability), looked up in the journal and tamper-checked (`harness`: the student's workbook
/// copy's own harness changes, read once per student).
#[allow(clippy::too_many_arguments)]
fn triage<'a>(
    wb: &Workbook,
    job: &ClassJob,
    journal: &Journal<PairResult>,
    ctx: Option<&Context>,
    gpu_here: bool,
    student: &'a Student,
    ex: &Exercise,
    harness: Option<Tampered>,
) -> Triage<'a> {
    let Some(path) = roster::find_file(student, ex, wb) else {
        let fp = format!("missing-{}", job.secret.fingerprint());
        if finished(journal, &student.id, ex.id(), &fp) {
            return Triage::Already;
        }
        let why = format!("no file for {} in {}", ex.id(), student.folder.display());
        let step = Step::new(StepName::Submission, Status::Failed, why);
        return decided(student, ex, fp, PairState::NotSubmitted, step);
    };
    let text = match roster::read_submitted(&student.folder, &path) {
        Ok(text) => text,
        Err(e) => {
            let mut r = PairResult::empty(
                &student.id,
                ex,
                String::new(),
                PairState::NotGradable {
                    reason: format!("cannot read {}: {e}", path.display()),
                    diff: String::new(),
                },
            );
            r.total();
            return Triage::Decided(Box::new(r));
        }
    };
    let mut fp = fingerprint(ex, &text, &job.secret);
    if !gpu_here {
        fp.push_str("-nogpu");
    }
    // An exercise for a newer GPU is refused here, not scored zero; the fingerprint differs
    // from a real grading's, so a GPU that has the capability grades it again.
    let unsupported = ctx.and_then(|c| c.unsupported(&ex.manifest));
    if unsupported.is_some() {
        fp.push_str("-unsupported");
    }
    if finished(journal, &student.id, ex.id(), &fp) {
        return Triage::Already;
    }
    if let Some(reason) = unsupported {
        let state = PairState::Unsupported {
            reason: reason.clone(),
        };
        return decided(student, ex, fp, state, Step::gpu_skipped(reason));
    }
    if let Some(Tampered { reason, diff }) = harness.or_else(|| tamper::check(ex, &text).err()) {
        let state = PairState::NotGradable {
            reason: reason.clone(),
            diff,
        };
        let step = Step::new(StepName::TamperCheck, Status::Failed, reason);
        return decided(student, ex, fp, state, step);
    }
    Triage::Grade(Pending {
        student,
        origin: path,
        text,
        fingerprint: fp,
    })
}

/// A pair decided without running anything: its state, and the step that says why.
fn decided<'a>(
    student: &Student,
    ex: &Exercise,
    fingerprint: String,
    state: PairState,
    step: Step,
) -> Triage<'a> {
    let mut r = PairResult::empty(&student.id, ex, fingerprint, state);
    r.steps.push(step);
    Triage::Decided(Box::new(r))
}

/// Whether the journal holds the pair under this fingerprint and it needs no second try (a pair
/// the grader's own tools failed on is graded again).
fn finished(
    journal: &Journal<PairResult>,
    student: &str,
    exercise: &str,
    fingerprint: &str,
) -> bool {
    journal.has(student, exercise, fingerprint)
        && !journal
            .entries
            .get(&(student.to_string(), exercise.to_string()))
            .is_some_and(|r| matches!(r.state, PairState::ToolError { .. }))
}
