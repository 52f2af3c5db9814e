//! `check`, a plan: build the learner's file, run it under its exercise's tool, check its outputs
//! against the Rust reference, time it against the original and the reference fix, and give a
//! verdict. The plan is here; its first phase (builds, tools, cases) is `first.rs`, its timed
//! phase and confirming rounds `timed.rs`.

mod first;
mod timed;

use first::*;
use timed::*;

use std::time::Instant;

use serde::Serialize;

use crate::engine::context::Context;
use crate::engine::evidence;
use crate::engine::plan::{self, Role, Stage, StageKind, Submission, Timer};
use crate::engine::scheduler::{self, Results};
use crate::engine::stages::Output;
use crate::exercise::cases::{self, Cases};
use crate::exercise::manifest::{Tool, Track};
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::perf;
use crate::judge::speed;
use crate::judge::verdict::{self, Finding, Outcome, Status, Step, StepName};
use crate::plans::session::{Phase, Session};
use crate::tools::gpu::GpuInfo;
use crate::tools::nvcc::{Flavor, Reuse};
use crate::tools::sandbox::Level;

#[derive(Debug, Clone, Serialize)]
pub struct TimingSummary {
    pub kernels: Vec<String>,
    pub learner_ns: f64,
    pub reference_ns: f64,
    pub original_ns: Option<f64>,
    pub speedup_over_original: Option<f64>,
    pub ratio_to_reference: f64,
    pub max_ratio_to_reference: f64,
    pub command: String,
    /// The whole call of the entry point, timed alone on the GPU (the fastest after the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learner_call_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_call_ns: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub exercise: String,
    pub title: String,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuInfo>,
    pub arch: String,
    /// The sandbox the learner's code ran in.
    pub isolation: Level,
    pub steps: Vec<Step>,
    pub findings: Vec<Finding>,
    /// The anti-cheat rules that fired on the timed runs (the same as `grade`'s).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<speed::Flag>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<TimingSummary>,
    /// A performance exercise's timing: each version's time, speedup, metrics and roofline point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perf: Option<crate::judge::perf::PerfSummary>,
    /// After a pass (never before): the reference solution as a unified diff against the learner's file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solution_diff: Option<String>,
    /// Who the learner's code ran as, and whether ncu could read the counters as that user.
    #[serde(default)]
    pub trust: String,
    /// Where the time went: each stage's start and length, in the order they started.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub time_spent: Vec<scheduler::Spent>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Check the learner's version of one exercise. `say` receives progress lines.
pub fn check(
    ctx: &Context,
    wb: &Workbook,
    ex: &Exercise,
    mut say: impl FnMut(&str),
) -> CheckReport {
    let learner = wb.learner_path(ex);
    let mut report = new_report(ctx, wb, ex, &learner);
    // An exercise for a newer GPU is skipped before anything is built: its -arch is not this GPU's.
    if let Some(why) = ctx.unsupported(&ex.manifest) {
        report.steps.push(Step::gpu_skipped(why));
        return finish(report, None);
    }
    // Read once: what is graded, built and diffed is this text, whatever happens to the file.
    let text = match gradable_text(ex, &learner, &report.source) {
        Ok(t) => t,
        Err(outcome) => {
            report.outcome = outcome;
            return report;
        }
    };
    let started = Instant::now();
    let gpu_stages = ctx.gpu_stages();
    let cases = if gpu_stages {
        timed_cases(wb, ex)
    } else {
        Ok(Cases::default())
    };
    let empty = Cases::default();
    let subs = submissions(wb, ex, &learner, &text, cases.as_ref().unwrap_or(&empty));
    let tools = named_tools(ex);

    // 1. Both builds of the learner's file and, on a GPU, its named tool and the cases. A file
    //    saved unchanged is not rebuilt.
    let running = gpu_stages && cases.is_ok();
    let stages = first_stages(&tools, running, ex.is_own_version(&text));
    say(&building_line(
        &report.source,
        running.then_some(&tools[..]),
    ));
    let mut session = Session::new(ctx, (wb, &subs), started);
    session.run_phase(&Phase::of(stages));
    let results = &session.results;
    // What its compiled code reaches beyond the exercise's versions: named; the check fails as grade holds its points.
    let watched = crate::judge::tool_aware::flag_built(
        ctx,
        ex,
        &text,
        results,
        LEARNER,
        &Stage::new(REFERENCE, StageKind::Sass),
    );
    let watched = watched.as_ref();
    report.steps.extend(build_steps(ctx, results));
    if report.steps.iter().any(|s| s.status != Status::Passed) {
        return finish_spent(report, watched, results);
    }
    // 2. Everything else needs a GPU.
    if let Some(reason) = ctx.gpu_blocked() {
        report.steps.push(Step::gpu_skipped(reason));
        return finish_spent(report, watched, results);
    }
    let cases = match &cases {
        Ok(c) => c,
        Err(e) => {
            report.steps.push(Step::new(
                StepName::Inputs,
                Status::ToolError,
                format!("cannot write the inputs: {e}"),
            ));
            return finish_spent(report, watched, results);
        }
    };
    // 3. The named tool and 4. correctness, even after a tool failure: "the output was right
    //    anyway" is the lesson.
    tool_and_case_steps(&mut report, results, &tools, cases, ex);
    if report.steps.iter().any(|s| s.status != Status::Passed) {
        return finish_spent(report, watched, results);
    }

    // 5. Timing against the original and the reference fix, in one ncu phase, then each whole
    //    call alone on the GPU; the one speed judge decides, with the rules `grade` applies.
    say("timing with ncu: the original, the reference fix and yours; then each whole call");
    let steps = time_and_judge(ctx, &mut session, &mut report, started, &mut say);
    for sub in &subs {
        crate::engine::stages::forget_calls(sub);
    }
    report.steps.extend(steps);
    let mut report = finish_spent(report, watched, &session.results);
    if report.outcome == Outcome::Pass {
        // Against the text that was graded, read once at the start.
        report.solution_diff = Some(ex.solution_diff(&text));
    }
    report
}

/// A report with nothing run yet: the exercise, the machine and who the learner's code runs as.
fn new_report(
    ctx: &Context,
    wb: &Workbook,
    ex: &Exercise,
    learner: &std::path::Path,
) -> CheckReport {
    CheckReport {
        exercise: ex.id().to_string(),
        title: ex.manifest.manifest.title.clone(),
        source: wb.display_path(learner),
        gpu: ctx.gpu_info().cloned(),
        arch: ctx.arch.clone(),
        isolation: ctx.isolation(),
        steps: Vec::new(),
        findings: Vec::new(),
        flags: Vec::new(),
        timing: None,
        perf: None,
        solution_diff: None,
        trust: ctx.trust_line(),
        time_spent: Vec::new(),
        outcome: Outcome::Pass,
    }
}

/// The three versions a check runs, at `LEARNER`, `ORIGINAL` and `REFERENCE`: each rebuilt only
/// when its text changed; the original's and the reference fix's timed runs kept between checks.
fn submissions<'a>(
    wb: &Workbook,
    ex: &'a Exercise,
    learner: &std::path::Path,
    text: &str,
    cases: &'a Cases,
) -> [Submission<'a>; 3] {
    let version = |variant: &str, path: std::path::PathBuf, text: &str| {
        Submission::new(wb, "check", ex, variant, path, text.to_string(), cases)
            .reusing(Reuse::IfUnchanged)
    };
    [
        version("learner", learner.to_path_buf(), text),
        version("original", wb.learner_path(ex), ex.original).keeping(Role::Original),
        version("reference", wb.solution_path(ex), ex.solution).keeping(Role::Reference),
    ]
}

/// The tools a check runs: the one that flags this bug class (none where no tool does and the
/// cases are the check). A performance exercise's fix must leave all four clean: a faster kernel
/// with a race is no fix.
fn named_tools(ex: &Exercise) -> Vec<Tool> {
    match ex.manifest.track() {
        Track::Bug => ex
            .manifest
            .expected_finding()
            .map(|(tool, _)| tool)
            .into_iter()
            .collect(),
        Track::Perf => ex.manifest.tools(),
    }
}

/// Whether the learner's file is the original, untouched (its text, not its binary: two builds of
/// one file differ, nvcc names its module after its temporary files).
fn untouched(subs: &[Submission]) -> bool {
    subs[LEARNER].text == subs[ORIGINAL].text
}

const LEARNER: usize = 0;
const ORIGINAL: usize = 1;
const REFERENCE: usize = 2;

/// `finish`, with where the time went.
fn finish_spent(
    report: CheckReport,
    watched: Option<&speed::Flag>,
    results: &Results,
) -> CheckReport {
    finish(
        CheckReport {
            time_spent: results.spent.clone(),
            ..report
        },
        watched,
    )
}

/// The outcome from the steps, after the tool-aware rule's, where the learner's regions gave one.
fn finish(mut report: CheckReport, watched: Option<&speed::Flag>) -> CheckReport {
    if let Some(f) = watched {
        // Right after the builds: it needs no GPU, and what the text and the device code show
        // stands whatever the GPU steps find (or skip).
        let at = report.steps.iter().take_while(|s| s.is_build()).count();
        report.steps.insert(at, f.step().stage(plan::RegionsCheck));
        report.flags.push(f.clone());
    }
    report.outcome = Outcome::from_steps(&report.steps);
    report
}

/// The learner's file, read once, where `grade` would grade it: the one gradability rule
/// (`class::tamper::check`) in the sentence `grade` would give, before anything is built.
fn gradable_text(ex: &Exercise, learner: &std::path::Path, shown: &str) -> Result<String, Outcome> {
    let text = std::fs::read_to_string(learner).map_err(|e| Outcome::NotGradable {
        reason: format!(
            "cannot read {shown}: {e}; `cargo xtask reset {}` restores the original",
            ex.id()
        ),
    })?;
    match crate::class::tamper::check(ex, &text) {
        Ok(()) => Ok(text),
        Err(t) => Err(Outcome::NotGradable {
            reason: format!(
                "`grade` would refuse this file, because {}; `cargo xtask reset {}` restores the original (a backup of yours is kept)",
                t.reason,
                ex.id()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercise::manifest::Tool;
    use crate::exercise::workbook::test_workbook as workbook;

    #[test]
    fn the_first_phase_runs_the_named_tools_and_the_cases_only_on_a_gpu_with_inputs() {
        let builds_and_code = first_stages(&[Tool::Racecheck], false, false);
        assert_eq!(builds_and_code.len(), 4);
        assert!(builds_and_code
            .iter()
            .all(|s| !s.kind.needs_gpu() && (s.subject == LEARNER || s.kind == StageKind::Sass)));
        assert_eq!(
            first_stages(&[Tool::Racecheck], false, true).len(),
            2,
            "the workbook's own text: its builds, no device code read"
        );
        let all = first_stages(&[Tool::Racecheck], true, false);
        assert_eq!(
            &all[4..],
            [
                Stage::new(LEARNER, StageKind::Sanitize(Tool::Racecheck)),
                Stage::new(LEARNER, StageKind::Correctness)
            ]
        );
        assert!(building_line("a.cu", None).ends_with("(-G and -O3 -lineinfo)"));
        assert!(building_line("a.cu", Some(&[])).contains("no sanitizer sees this bug class"));
        assert!(building_line("a.cu", Some(&[Tool::Racecheck])).contains("--tool racecheck"));
    }

    #[test]
    fn check_refuses_what_grade_refuses_in_grade_s_words() {
        let (dir, wb) = workbook(&["03-race"]);
        let ex = wb.resolve("03").unwrap();
        let path = dir.path().join("reduce.cu");
        let inserted = ex.original.replacen(
            "#include <algorithm>",
            "#include <algorithm>\n#include <cstdio>",
            1,
        );
        std::fs::write(&path, &inserted).unwrap();
        let Err(Outcome::NotGradable { reason }) = gradable_text(ex, &path, "reduce.cu") else {
            panic!("an inserted include was gradable");
        };
        let graded = crate::class::tamper::check(ex, &inserted)
            .unwrap_err()
            .reason;
        assert!(
            reason.starts_with("`grade` would refuse this file, because ")
                && reason.contains(&graded),
            "{reason}"
        );
        assert!(reason.contains("inserted"), "{reason}");
        std::fs::write(&path, ex.solution).unwrap();
        assert_eq!(
            gradable_text(ex, &path, "reduce.cu").ok().as_deref(),
            Some(ex.solution)
        );
    }

    #[test]
    fn a_bug_exercise_runs_its_tool_and_a_performance_fix_must_pass_all_four() {
        let (_dir, wb) = workbook(&["03-race", "57-reduction"]);
        assert_eq!(named_tools(wb.resolve("03").unwrap()), [Tool::Racecheck]);
        assert_eq!(named_tools(wb.resolve("57").unwrap()).len(), 4);
    }

    #[test]
    fn an_untouched_file_borrows_the_original_s_runs_and_a_changed_one_nothing() {
        let (_dir, wb) = workbook(&["57-reduction", "62-launches"]);
        let cases = Cases::default();
        for (id, borrowed) in [
            // Kernel clock: the original is profiled, its whole call not timed.
            ("57", vec![StageKind::Timing]),
            // Call clock: both, the whole call with its timeline.
            ("62", vec![StageKind::Timing, StageKind::Call]),
        ] {
            let ex = wb.resolve(id).unwrap();
            let path = wb.learner_path(ex);
            let subs = submissions(&wb, ex, &path, ex.original, &cases);
            assert!(untouched(&subs));
            assert_eq!(
                borrowed_kinds(ex, Timer::profiled(ex), &subs),
                borrowed,
                "{id}"
            );
            let changed = format!("{}\n// a comment\n", ex.original);
            let subs = submissions(&wb, ex, &path, &changed, &cases);
            assert!(!untouched(&subs));
            assert!(borrowed_kinds(ex, Timer::profiled(ex), &subs).is_empty());
            assert_eq!(
                subs.iter().map(|s| s.variant.as_str()).collect::<Vec<_>>(),
                ["learner", "original", "reference"]
            );
        }
    }
}
