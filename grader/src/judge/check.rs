//! `check`, a plan: build the learner's file, run it under its exercise's tool, check its outputs
//! against the Rust reference, time it against the original and the reference fix, and give a
//! verdict.

use std::time::Instant;

use serde::Serialize;

use crate::exercise::cases::{self, Cases};
use crate::exercise::workbook::{Exercise, Workbook};
use crate::exercise::manifest::{Tool, Track};
use crate::judge::context::Context;
use crate::judge::perf;
use crate::judge::plan::{Stage, StageKind, Submission};
use crate::judge::scheduler::{self, Results};
use crate::judge::stages::Output;
use crate::judge::verdict::{self, Finding, Outcome, Status, Step};
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<TimingSummary>,
    /// A performance exercise's timing: each version's time, speedup, metrics and roofline point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perf: Option<crate::judge::perf::PerfSummary>,
    /// After a pass (never before): the reference solution as a unified diff against the learner's file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solution_diff: Option<String>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Check the learner's version of one exercise. `say` receives progress lines.
pub fn check(ctx: &Context, wb: &Workbook, ex: &Exercise, mut say: impl FnMut(&str)) -> CheckReport {
    let m = &ex.manifest.manifest;
    let learner = wb.learner_path(ex);
    let mut report = CheckReport {
        exercise: ex.id().to_string(),
        title: m.title.clone(),
        source: wb.display_path(&learner),
        gpu: ctx.gpu_info().cloned(),
        arch: ctx.arch.clone(),
        isolation: ctx.isolation(),
        steps: Vec::new(),
        findings: Vec::new(),
        timing: None,
        perf: None,
        solution_diff: None,
        outcome: Outcome::Pass,
    };
    // Read once: what is graded, built and diffed is this text, whatever happens to the file.
    let text = match std::fs::read_to_string(&learner) {
        Ok(t) => t,
        Err(e) => {
            report.outcome = Outcome::NotGradable {
                reason: format!("cannot read {}: {e}; `cargo xtask reset {}` restores the original", report.source, ex.id()),
            };
            return report;
        }
    };
    let started = Instant::now();
    let gpu_stages = ctx.no_gpu_reason().is_none() || ctx.launcher.replays();
    let cases = if gpu_stages { cases::prepare(ex, &wb.work_dir().join("cases").join(ex.id())) } else { Ok(Cases::default()) };
    let empty = Cases::default();
    let subs = [
        Submission::new(wb, "check", ex, "learner", learner.clone(), text.clone(), Reuse::IfUnchanged, cases.as_ref().unwrap_or(&empty)),
        Submission::new(wb, "check", ex, "original", wb.learner_path(ex), ex.original.to_string(), Reuse::IfUnchanged, cases.as_ref().unwrap_or(&empty)),
        Submission::new(wb, "check", ex, "reference", wb.solution_path(ex), ex.solution.to_string(), Reuse::IfUnchanged, cases.as_ref().unwrap_or(&empty)),
    ];
    const LEARNER: usize = 0;
    // The tool that flags this bug class; none where no tool does and the cases are the check. A
    // performance exercise's fix must leave all four clean: a faster kernel with a race is no fix.
    let tools: Vec<Tool> = match ex.manifest.track() {
        Track::Bug => ex.manifest.expected_finding().map(|(tool, _)| tool).into_iter().collect(),
        Track::Perf => Tool::ALL.to_vec(),
    };

    // 1. Both builds of the learner's file and, on a GPU, its named tool and the cases, each run
    //    starting as soon as its build is there. A file saved unchanged is not rebuilt.
    let mut stages = vec![Stage::new(LEARNER, StageKind::BuildDebug), Stage::new(LEARNER, StageKind::BuildRelease)];
    if gpu_stages && cases.is_ok() {
        stages.extend(tools.iter().map(|&t| Stage::new(LEARNER, StageKind::Sanitize(t))));
        stages.push(Stage::new(LEARNER, StageKind::Correctness));
        match tools.as_slice() {
            [] => say(&format!("building {} (-G and -O3 -lineinfo), then the cases (no sanitizer sees this bug class)", report.source)),
            [t] => say(&format!("building {} (-G and -O3 -lineinfo), then compute-sanitizer --tool {t} and the cases", report.source)),
            _ => say(&format!("building {} (-G and -O3 -lineinfo), then the four compute-sanitizer tools and the cases", report.source)),
        }
    } else {
        say(&format!("building {} (-G and -O3 -lineinfo)", report.source));
    }
    let mut results = Results::default();
    scheduler::execute(ctx, wb, &subs, &stages, &mut results, started);
    for flavor in Flavor::BOTH {
        let output = results.get(LEARNER, StageKind::build(flavor)).expect("built");
        report.steps.extend(verdict::build(&format!("build {}", flavor.flags()[0]), output, flavor, &ctx.arch));
    }
    if report.steps.iter().any(|s| s.status != Status::Passed) {
        return finish(report);
    }
    // 2. Everything else needs a GPU.
    if let Some(reason) = (!gpu_stages).then(|| ctx.no_gpu_reason()).flatten() {
        report.steps.push(Step::new("gpu", Status::Skipped, reason));
        return finish(report);
    }
    let cases = match &cases {
        Ok(c) => c,
        Err(e) => {
            report.steps.push(Step::new("inputs", Status::ToolError, format!("cannot write the inputs: {e}")));
            return finish(report);
        }
    };
    // 3. The named tool and 4. correctness, even after a tool failure: "the output was right
    //    anyway" is the lesson.
    for &tool in &tools {
        let sanitized = Stage::new(LEARNER, StageKind::Sanitize(tool));
        match results.get_run(&sanitized) {
            Some(Output::NotRun(b)) => report.steps.extend(verdict::not_run(tool.name(), &sanitized.id(), b)),
            Some(o @ Output::Sanitized { findings, .. }) => {
                report.findings.extend(findings.iter().cloned());
                report.steps.extend(verdict::tool(tool.name(), &sanitized.id(), o, ctx.config.timeouts.tool));
            }
            _ => {}
        }
    }
    if let Some(o) = results.get(LEARNER, StageKind::Correctness) {
        report.steps.extend(verdict::correctness("correctness", "correctness", o, cases, m.tolerance, ctx.config.timeouts.run));
    }
    if report.steps.iter().any(|s| s.status != Status::Passed) {
        return finish(report);
    }

    // 5. Timing against the original and the reference fix, in one ncu phase.
    say("timing with ncu: the original, the reference fix and yours");
    match ex.manifest.track() {
        Track::Bug => {
            let step = time_against_references(ctx, wb, &subs, &mut results, &mut report, started);
            report.steps.push(step);
        }
        Track::Perf => {
            let steps = time_performance(ctx, wb, &subs, &mut results, &mut report, started, &mut say);
            report.steps.extend(steps);
        }
    }
    let mut report = finish(report);
    if report.outcome == Outcome::Pass {
        // Against the text that was graded, read once at the start.
        report.solution_diff = Some(crate::learner::solution_diff(ex, &text));
    }
    report
}

/// The ncu phase both tracks share: every version timed, one ncu process each. A tool error where
/// the embedded versions do not build or the profiler failed.
fn run_timing(ctx: &Context, wb: &Workbook, subs: &[Submission], results: &mut Results, started: Instant) -> Result<Vec<Stage>, Box<Step>> {
    let timing: Vec<Stage> = (0..subs.len()).map(|i| Stage::new(i, StageKind::Timing)).collect();
    scheduler::execute(ctx, wb, subs, &timing, results, started);
    // The original and the reference come from this binary: built once, then kept until they change.
    for (i, sub) in subs.iter().enumerate().skip(1) {
        if let Some(Output::Built(Err(e))) = results.get(i, StageKind::BuildRelease) {
            return Err(Box::new(Step::new("timing", Status::ToolError, format!("the embedded {} does not build: {e}", sub.variant)).stage("timing")));
        }
    }
    match verdict::profiler_failure(timing.iter().filter_map(|s| results.get_run(s))) {
        Some(failure) => Err(Box::new(Step::new("timing", Status::ToolError, failure).stage("timing"))),
        None => Ok(timing),
    }
}

fn time_against_references(ctx: &Context, wb: &Workbook, subs: &[Submission], results: &mut Results, report: &mut CheckReport, started: Instant) -> Step {
    let phase = Instant::now();
    let m = &subs[0].exercise().expect("check grades an exercise").manifest.manifest;
    let timing = match run_timing(ctx, wb, subs, results, started) {
        Ok(t) => t,
        Err(step) => return (*step).wall(phase.elapsed()),
    };
    let outputs: Vec<&Output> = timing.iter().filter_map(|s| results.get_run(s)).collect();
    let commands = outputs
        .iter()
        .filter_map(|o| match o {
            Output::Timed { measured: Ok(m), .. } => Some(m.command.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let time_of = |i: usize| verdict::measured_time(results.get(i, StageKind::Timing));
    let (learner_ns, reference_ns) = match (time_of(0), time_of(2)) {
        (Ok(l), Ok(r)) => (l, r),
        (l, r) => {
            let (who, why, i) = match (l, r) {
                (_, Err(why)) => ("reference", why, 2),
                (Err(why), _) => ("learner", why, 0),
                _ => unreachable!(),
            };
            let output = match results.get(i, StageKind::Timing) {
                Some(Output::Timed { measured: Ok(m), .. }) => m.finished.output(),
                _ => String::new(),
            };
            return Step::new("timing", Status::ToolError, format!("ncu could not time the {who} version ({why})"))
                .detail(output)
                .command(commands)
                .stage("timing")
                .wall(phase.elapsed());
        }
    };
    let original_ns = time_of(1).ok();
    let max_ratio = m.timing.max_ratio_to_reference.as_ref().map(|r| *r.get_ref()).expect("a bug exercise has a ratio target");
    let summary = TimingSummary {
        kernels: m.timing.kernels.clone(),
        learner_ns,
        reference_ns,
        original_ns,
        speedup_over_original: original_ns.map(|o| o / learner_ns),
        ratio_to_reference: learner_ns / reference_ns,
        max_ratio_to_reference: max_ratio,
        command: commands.clone(),
    };
    let ratio = summary.ratio_to_reference;
    report.timing = Some(summary);
    let status = verdict::within_target(ratio, max_ratio);
    let word = if status == Status::Passed { "within" } else { "over" };
    Step::new("timing", status, format!("{:.1} us, {ratio:.2}x the reference fix ({word} the {max_ratio:.2}x target)", learner_ns / 1e3))
        .command(commands)
        .stage("timing")
        .wall(phase.elapsed())
}

/// A performance exercise: the three versions under ncu with the exercise's counters (and the
/// library baseline after them), the peak of this GPU, and the learner's speed and goals.
fn time_performance(ctx: &Context, wb: &Workbook, subs: &[Submission], results: &mut Results, report: &mut CheckReport, started: Instant, say: &mut dyn FnMut(&str)) -> Vec<Step> {
    let phase = Instant::now();
    let ex = subs[0].exercise().expect("check grades an exercise");
    let perf = ex.manifest.manifest.perf.as_ref().expect("a performance exercise");
    let peak = match perf::peak(ctx, wb, false) {
        Ok(p) => p,
        Err(e) => return vec![Step::new("timing", Status::ToolError, format!("cannot measure this GPU's peak: {e}")).stage("timing")],
    };
    if let Err(step) = run_timing(ctx, wb, subs, results, started) {
        return vec![(*step).wall(phase.elapsed())];
    }
    if perf.baseline.is_some() {
        say("timing the library baseline (cuBLAS) at the same size");
    }
    let baseline = match perf::time_baseline(ctx, wb, ex) {
        Ok(m) => m,
        Err(e) => return vec![Step::new("timing", Status::ToolError, e).stage("timing").wall(phase.elapsed())],
    };
    // The original first: speedups are over it.
    let order = [(1, "original"), (2, "reference"), (0, "learner")];
    let timed = order.map(|(i, name)| (name, results.get(i, StageKind::Timing)));
    let summary = match perf::summarize(ex, &peak, &timed, baseline.as_ref()) {
        Ok(s) => s,
        Err((who, why)) => {
            // The learner's own program failing under ncu is the learner's failure, not the tool's.
            let (status, what) = if who == "learner" { (Status::Failed, "your version") } else { (Status::ToolError, who.as_str()) };
            let detail = match order.iter().find(|(_, name)| *name == who).and_then(|(i, _)| results.get(*i, StageKind::Timing)) {
                Some(Output::Timed { measured: Ok(m), .. }) => m.finished.output(),
                _ => String::new(),
            };
            return vec![Step::new("timing", status, format!("ncu could not time {what} ({why})")).detail(detail).stage("timing").wall(phase.elapsed())];
        }
    };
    let steps = perf::judge("timing:", perf, &summary, "learner");
    report.perf = Some(summary);
    steps.into_iter().map(|s| s.wall(phase.elapsed())).collect()
}

fn finish(mut report: CheckReport) -> CheckReport {
    report.outcome = Outcome::from_steps(&report.steps);
    report
}
