//! One file: the `check` plan, its first phase, its timed phase and its confirming rounds; 102 of its lines are tests.
//!
//! `check`, a plan: build the learner's file, run it under its exercise's tool, check its outputs
//! against the Rust reference, time it against the original and the reference fix, and give a
//! verdict.

use std::time::Instant;

use serde::Serialize;

use crate::engine::context::Context;
use crate::engine::evidence;
use crate::engine::plan::{self, Role, Stage, StageKind, Submission};
use crate::engine::scheduler::{self, Results};
use crate::engine::stages::Output;
use crate::exercise::cases::{self, Cases};
use crate::exercise::manifest::{Clock, Tool, Track};
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::perf;
use crate::judge::speed;
use crate::judge::verdict::{self, Finding, Outcome, Status, Step, StepName};
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
    let text = match std::fs::read_to_string(&learner) {
        Ok(t) => t,
        Err(e) => {
            report.outcome = Outcome::NotGradable {
                reason: format!(
                    "cannot read {}: {e}; `cargo xtask reset {}` restores the original",
                    report.source,
                    ex.id()
                ),
            };
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
    let stages = first_stages(&tools, running);
    say(&building_line(
        &report.source,
        running.then_some(&tools[..]),
    ));
    let mut results = Results::default();
    scheduler::execute(ctx, wb, &subs, &stages, &mut results, started);
    // Code that can tell it is watched, in its text or its compiled kernels: named, and the check
    // fails as grade holds its points.
    let watched = crate::judge::tool_aware::flag_built(
        ex,
        &text,
        &results,
        LEARNER,
        &Stage::new(REFERENCE, StageKind::Sass),
    );
    let watched = watched.as_ref();
    report.steps.extend(build_steps(ctx, &results));
    if report.steps.iter().any(|s| s.status != Status::Passed) {
        return finish_spent(report, watched, &results);
    }
    // 2. Everything else needs a GPU.
    if let Some(reason) = ctx.gpu_blocked() {
        report.steps.push(Step::gpu_skipped(reason));
        return finish_spent(report, watched, &results);
    }
    let cases = match &cases {
        Ok(c) => c,
        Err(e) => {
            report.steps.push(Step::new(
                StepName::Inputs,
                Status::ToolError,
                format!("cannot write the inputs: {e}"),
            ));
            return finish_spent(report, watched, &results);
        }
    };
    // 3. The named tool and 4. correctness, even after a tool failure: "the output was right
    //    anyway" is the lesson.
    tool_and_case_steps(&mut report, &results, &tools, cases, ex);
    if report.steps.iter().any(|s| s.status != Status::Passed) {
        return finish_spent(report, watched, &results);
    }

    // 5. Timing against the original and the reference fix, in one ncu phase, then each whole
    //    call alone on the GPU; the one speed judge decides, with the rules `grade` applies.
    say("timing with ncu: the original, the reference fix and yours; then each whole call");
    let steps = time_and_judge(ctx, wb, &subs, &mut results, &mut report, started, &mut say);
    for sub in &subs {
        crate::engine::stages::forget_calls(sub);
    }
    report.steps.extend(steps);
    let mut report = finish_spent(report, watched, &results);
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

/// The first phase's stages: both builds of the learner's file and the device code of its build
/// and the reference's (clock reads; no GPU needed); where `running` (a GPU and inputs), the named
/// tools and the cases, each starting as soon as its build is there.
fn first_stages(tools: &[Tool], running: bool) -> Vec<Stage> {
    let mut stages = vec![
        Stage::new(LEARNER, StageKind::Build(Flavor::Sanitize)),
        Stage::new(LEARNER, StageKind::Build(Flavor::Timing)),
        Stage::new(LEARNER, StageKind::Sass),
        Stage::new(REFERENCE, StageKind::Sass),
    ];
    if running {
        stages.extend(
            tools
                .iter()
                .map(|&t| Stage::new(LEARNER, StageKind::Sanitize(t))),
        );
        stages.push(Stage::new(LEARNER, StageKind::Correctness));
    }
    stages
}

/// The steps of the learner's two builds.
fn build_steps(ctx: &Context, results: &Results) -> Vec<Step> {
    Flavor::BOTH
        .into_iter()
        .flat_map(|flavor| {
            let output = results
                .get(LEARNER, StageKind::Build(flavor))
                .expect("built");
            verdict::build(StepName::Build(flavor), output, flavor, &ctx.arch)
        })
        .collect()
}

/// The progress line for the first phase: the builds, then (where `tools` is given: a GPU and
/// inputs) the tools and the cases.
fn building_line(source: &str, tools: Option<&[Tool]>) -> String {
    match tools {
        None => format!("building {source} (-G and -O3 -lineinfo)"),
        Some([]) => format!("building {source} (-G and -O3 -lineinfo), then the cases (no sanitizer sees this bug class)"),
        Some([t]) => format!("building {source} (-G and -O3 -lineinfo), then compute-sanitizer --tool {t} and the cases"),
        Some(_) => format!("building {source} (-G and -O3 -lineinfo), then the four compute-sanitizer tools and the cases"),
    }
}

/// The named tools' steps (with their findings) and the cases' step.
fn tool_and_case_steps(
    report: &mut CheckReport,
    results: &Results,
    tools: &[Tool],
    cases: &Cases,
    ex: &Exercise,
) {
    for &tool in tools {
        let sanitized = Stage::new(LEARNER, StageKind::Sanitize(tool));
        match results.get_run(&sanitized) {
            Some(Output::NotRun(b)) => {
                report
                    .steps
                    .extend(verdict::not_run(StepName::Tool(tool), &sanitized, b))
            }
            Some(o @ Output::Sanitized { findings, .. }) => {
                report.findings.extend(findings.iter().cloned());
                report
                    .steps
                    .extend(verdict::tool(StepName::Tool(tool), &sanitized, o));
            }
            _ => {}
        }
    }
    if let Some(o) = results.get(LEARNER, StageKind::Correctness) {
        report.steps.extend(verdict::correctness(
            StepName::Correctness,
            StageKind::Correctness,
            o,
            cases,
            ex.manifest.manifest.tolerance,
        ));
    }
}

/// The timed phase both tracks share: every version under ncu (one process each), then the whole
/// calls alone on the GPU, as `plan::timed_kinds` says; the original's and the
/// reference fix's kept from an earlier check where the GPU still times them the same
/// (`engine::kept`), with the line that says so. A tool error where the embedded versions do not
/// build or the profiler failed.
fn run_timing(
    ctx: &Context,
    wb: &Workbook,
    subs: &[Submission],
    results: &mut Results,
    started: Instant,
) -> Result<Option<String>, Box<Step>> {
    let ex = subs[LEARNER].exercise().expect("check grades an exercise");
    let borrowed = borrowed_kinds(ex, subs);
    let timing: Vec<Stage> = [
        (LEARNER, Role::Learner),
        (ORIGINAL, Role::Original),
        (REFERENCE, Role::Reference),
    ]
    .into_iter()
    .flat_map(|(i, role)| {
        plan::timed_kinds(ex, role)
            .into_iter()
            .map(move |k| Stage::new(i, k))
    })
    .filter(|s| s.subject != LEARNER || !borrowed.contains(&s.kind))
    .collect();
    scheduler::execute(ctx, wb, subs, &timing, results, started);
    // Where the original's run was served from what was kept (no call's outputs to judge), the
    // learner's runs after all.
    let mut own = Vec::new();
    for &kind in &borrowed {
        match results
            .get(ORIGINAL, kind)
            .and_then(Output::copy_of_fresh_run)
        {
            Some(copy) => {
                results.outputs.insert(Stage::new(LEARNER, kind), copy);
            }
            None => own.push(Stage::new(LEARNER, kind)),
        }
    }
    if !own.is_empty() {
        scheduler::execute(ctx, wb, subs, &own, results, started);
    }
    let timing: Vec<Stage> = timing
        .into_iter()
        .chain(borrowed.iter().map(|&k| Stage::new(LEARNER, k)))
        .collect();
    let kept = scheduler::keep_or_measure_again(
        ctx,
        wb,
        subs,
        &timing,
        &Stage::new(REFERENCE, StageKind::Call),
        results,
        started,
    );
    // The original and the reference come from this binary: built once, then kept until they change.
    for (i, sub) in subs.iter().enumerate().skip(1) {
        if let Some(Output::Built(Err(e))) = results.get(i, StageKind::Build(Flavor::Timing)) {
            return Err(Box::new(
                Step::new(
                    StepName::Timing,
                    Status::ToolError,
                    format!("the embedded {} does not build: {e}", sub.variant),
                )
                .stage(StageKind::Timing),
            ));
        }
    }
    if let Some(failure) =
        verdict::profiler_failure((0..subs.len()).filter_map(|i| results.get(i, StageKind::Timing)))
    {
        return Err(Box::new(
            Step::new(StepName::Timing, Status::ToolError, failure).stage(StageKind::Timing),
        ));
    }
    confirm_doubted_calls(ctx, wb, subs, results, started);
    Ok(kept)
}

/// The timed stages an untouched file takes from the original's runs. An untouched file is the
/// original, built by the same compiler with the same flags: the original's fresh runs are the
/// learner's too (the same program on the same served calls), and a cold check of 60-scan's
/// untouched file no longer profiles its 26 launches a call twice.
fn borrowed_kinds(ex: &Exercise, subs: &[Submission]) -> Vec<StageKind> {
    if !untouched(subs) {
        return Vec::new();
    }
    let original = plan::timed_kinds(ex, Role::Original);
    plan::timed_kinds(ex, Role::Learner)
        .into_iter()
        .filter(|k| original.contains(k))
        .collect()
}

/// A whole call that weighs badly against the reference fix's, each timed once at its own moment,
/// is timed again with the reference's, back to back, before a rule fails the check. Not an
/// untouched file's: it is the original, slow by design, and what a confirmation would settle is
/// only which rule's words come after "slow" (60-scan's cold check: 5.4 s of 30.8).
fn confirm_doubted_calls(
    ctx: &Context,
    wb: &Workbook,
    subs: &[Submission],
    results: &mut Results,
    started: Instant,
) {
    let ex = subs[LEARNER].exercise().expect("check grades an exercise");
    let evidence = |i: usize| {
        evidence::evidence(
            results.get(i, StageKind::Timing),
            results.get(i, StageKind::Call),
        )
    };
    if untouched(subs)
        || !speed::doubts_call(
            ex,
            &evidence(LEARNER),
            &evidence(REFERENCE),
            &evidence(ORIGINAL),
        )
    {
        return;
    }
    // Where the call is the clock, the original's whole call is the speedup's measure: timed again
    // in each round too.
    let doubted: &[usize] = if ex.manifest.manifest.clock() == Clock::Call {
        &[LEARNER, ORIGINAL]
    } else {
        &[LEARNER]
    };
    let confirming = plan::confirming_calls(REFERENCE, doubted, 0);
    scheduler::execute(ctx, wb, subs, &confirming, results, started);
}

/// Whether the learner's file is the original, untouched (its text, not its binary: two builds of
/// one file differ, nvcc names its module after its temporary files).
fn untouched(subs: &[Submission]) -> bool {
    subs[LEARNER].text == subs[ORIGINAL].text
}

const LEARNER: usize = 0;
const ORIGINAL: usize = 1;
const REFERENCE: usize = 2;

/// Time the three versions and judge the learner's with the one speed judge: the speed step, a
/// performance exercise's goals, and a failed step for every rule that fired.
fn time_and_judge(
    ctx: &Context,
    wb: &Workbook,
    subs: &[Submission],
    results: &mut Results,
    report: &mut CheckReport,
    started: Instant,
    say: &mut dyn FnMut(&str),
) -> Vec<Step> {
    let phase = Instant::now();
    let ex = subs[LEARNER].exercise().expect("check grades an exercise");
    let m = &ex.manifest.manifest;
    let perf_spec = m.perf.as_ref();
    let peak = match perf::peak(ctx, wb, false) {
        Ok(p) => Some(p),
        Err(e) if perf_spec.is_some() => {
            return vec![Step::new(
                StepName::Timing,
                Status::ToolError,
                format!("cannot measure this GPU's peak: {e}"),
            )
            .stage(StageKind::Timing)]
        }
        Err(_) => None,
    };
    let kept = match run_timing(ctx, wb, subs, results, started) {
        Ok(kept) => kept,
        Err(step) => return vec![(*step).wall(phase.elapsed())],
    };
    let judging = started.elapsed().as_secs_f64();
    let commands = ncu_commands(results, subs.len());
    if let Some(step) = unusable_profile(results, &commands) {
        return vec![step.wall(phase.elapsed())];
    }
    let summary = match perf_summary(ctx, wb, ex, results, peak.as_ref(), say) {
        Ok(summary) => summary,
        Err(step) => return vec![(*step).wall(phase.elapsed())],
    };
    let evidence = |i: usize| {
        evidence::evidence(
            results.get(i, StageKind::Timing),
            results.get(i, StageKind::Call),
        )
    };
    let inputs = speed::JudgeInputs {
        ex,
        learner: evidence(LEARNER),
        reference: evidence(REFERENCE),
        original: evidence(ORIGINAL),
        peak: peak.as_ref(),
        perf: summary.as_ref(),
    };
    let runs = |i: usize| speed::TimedRuns {
        timing: results.get(i, StageKind::Timing),
        calls: results.call_runs(i, 0, 0),
    };
    let mut judged = speed::judge_runs(&inputs, runs(LEARNER), runs(REFERENCE), runs(ORIGINAL));
    if untouched(subs) {
        // The untouched file is the original: its host work is the exercise's own, and its whole
        // call is not timed again (`run_timing`), so a noisy comparison names no rule beside "slow".
        judged
            .flags
            .retain(|f| !matches!(f.rule, speed::Rule::HostWork | speed::Rule::HostCpu));
    }
    let mut steps = vec![
        Step::new(StepName::Timing, judged.status, judged.summary.clone())
            .command(commands.clone())
            .stage(StageKind::Timing),
    ];
    if let (Some(sp), None) = (&judged.speed, perf_spec) {
        let original_ns = verdict::measured_time(results.get(ORIGINAL, StageKind::Timing)).ok();
        report.timing = Some(timing_summary(ex, sp, original_ns, &commands));
    }
    if let (Some(p), Some(s)) = (perf_spec, &summary) {
        // The goals' steps (the speed step is the judge's, above).
        steps.extend(perf::judge("timing:", p, s, "learner").into_iter().skip(1));
        report.perf = Some(s.clone());
    }
    if let Some(line) = kept {
        steps.push(Step::new(StepName::TimingKept, Status::Passed, line).stage(StageKind::Timing));
    }
    steps.extend(speed::flag_steps(&judged.flags));
    report.flags = judged.flags.clone();
    // The grader's own work after the timed runs (the calls' outputs compared, the rules, the
    // library baseline where it was not kept), beside the stages' times.
    results.spent.push(scheduler::Spent {
        stage: "judge".into(),
        from_s: judging,
        secs: started.elapsed().as_secs_f64() - judging,
        kind: None,
        name: ex.id().to_string(),
    });
    steps.into_iter().map(|s| s.wall(phase.elapsed())).collect()
}

/// A performance exercise's summary of the three versions (with the library baseline, timed
/// here where it was not kept); None on the bug track. Err: the baseline could not be timed.
fn perf_summary(
    ctx: &Context,
    wb: &Workbook,
    ex: &Exercise,
    results: &Results,
    peak: Option<&crate::tools::peak::Peak>,
    say: &mut dyn FnMut(&str),
) -> Result<Option<perf::PerfSummary>, Box<Step>> {
    let (Some(_), Some(peak)) = (ex.manifest.manifest.perf.as_ref(), peak) else {
        return Ok(None);
    };
    let baseline = perf::time_baseline(ctx, wb, ex).map_err(|e| {
        Box::new(
            Step::new(StepName::Timing, Status::ToolError, e.to_string()).stage(StageKind::Timing),
        )
    })?;
    if baseline.is_some() {
        say("timed the library baseline (cuBLAS) at the same size");
    }
    let order = [
        (ORIGINAL, "original"),
        (REFERENCE, "reference"),
        (LEARNER, "learner"),
    ];
    Ok(perf::summarize(
        ex,
        peak,
        // Each version's quickest whole call where the calls were timed again, as the judge's.
        &order.map(|(i, name)| perf::Runs::of(name, |k| results.judged(i, 0, 0, k))),
        baseline.as_ref(),
    )
    .ok())
}

/// The bug track's timing in the report: the three versions' kernel times and the target.
fn timing_summary(
    ex: &Exercise,
    sp: &speed::SpeedResult,
    original_ns: Option<f64>,
    commands: &str,
) -> TimingSummary {
    let timing = &ex.manifest.manifest.timing;
    TimingSummary {
        kernels: timing.kernels.clone(),
        learner_ns: sp.learner_ns,
        reference_ns: sp.reference_ns,
        original_ns,
        speedup_over_original: sp.speedup_over_original,
        ratio_to_reference: sp.ratio_to_reference,
        max_ratio_to_reference: timing
            .max_ratio_to_reference
            .as_ref()
            .map(|r| *r.get_ref())
            .unwrap_or(f64::NAN),
        command: commands.to_string(),
        learner_call_ns: sp.learner_call_ns,
        reference_call_ns: sp.reference_call_ns,
    }
}

/// Each version's ncu command, one a line.
fn ncu_commands(results: &Results, versions: usize) -> String {
    (0..versions)
        .filter_map(|i| {
            results
                .get(i, StageKind::Timing)
                .and_then(Output::measured)
                .map(|m| m.command.clone())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The timing step where a profile cannot be judged: the reference fix's that ncu could not time
/// (the tool's error), or the learner's program that failed under ncu (the learner's failure).
fn unusable_profile(results: &Results, commands: &str) -> Option<Step> {
    let time_of = |i: usize| verdict::measured_time(results.get(i, StageKind::Timing));
    let output_of = |i: usize| {
        results
            .get(i, StageKind::Timing)
            .and_then(Output::measured)
            .map(|m| m.finished.output())
            .unwrap_or_default()
    };
    // The step, with the profiled version's output and the commands.
    let step = |status: Status, message: String, i: usize| {
        Step::new(StepName::Timing, status, message)
            .detail(output_of(i))
            .command(commands.to_string())
            .stage(StageKind::Timing)
    };
    if let Err(why) = time_of(REFERENCE) {
        return Some(step(
            Status::ToolError,
            format!("ncu could not time the reference version ({why})"),
            REFERENCE,
        ));
    }
    let learner = results
        .get(LEARNER, StageKind::Timing)
        .and_then(Output::measured)?;
    (!learner.finished.success() || learner.finished.left_running().is_some()).then(|| {
        let why = time_of(LEARNER)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        step(
            Status::Failed,
            format!("your version failed under ncu ({why})"),
            LEARNER,
        )
    })
}

/// The exercise's cases, with timed inputs the learner's program cannot predict: a bench drawn
/// with this workbook's own seed (made once, so the bench file is cached) and a
/// new variation of the calls every check.
fn timed_cases(wb: &Workbook, ex: &Exercise) -> std::io::Result<Cases> {
    let seed_file = wb.bench_seed_file();
    let seed = match std::fs::read_to_string(&seed_file)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
    {
        Some(s) => s,
        None => {
            let s = cases::unpredictable_seed();
            crate::exercise::workbook::write_atomically(&seed_file, &format!("{s}\n"))?;
            s
        }
    };
    let bench_seed = crate::hash::stable(&[&seed.to_string(), ex.id()]);
    cases::prepare_with(
        ex,
        &cases::dir(wb, ex),
        bench_seed,
        cases::unpredictable_seed(),
    )
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercise::catalog::Embedded;
    use crate::exercise::manifest::Tool;

    /// A workbook of the real exercises `ids`, read from this repository, in a folder of its own.
    fn workbook(ids: &[&'static str]) -> (tempfile::TempDir, Workbook) {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf();
        let read = |p: String| -> &'static str {
            Box::leak(
                std::fs::read_to_string(repo.join(p))
                    .unwrap()
                    .into_boxed_str(),
            )
        };
        let embedded: Vec<Embedded> = ids
            .iter()
            .map(|&id| {
                let manifest = read(format!("exercises/{id}/exercise.toml"));
                let source = manifest
                    .lines()
                    .find_map(|l| l.strip_prefix("source = \""))
                    .and_then(|l| l.strip_suffix('"'))
                    .unwrap();
                Embedded {
                    id,
                    manifest,
                    original: read(format!("exercises/{id}/{source}")),
                    solution: read(format!("solutions/{id}/{source}")),
                    error: None,
                }
            })
            .collect();
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

    #[test]
    fn the_first_phase_runs_the_named_tools_and_the_cases_only_on_a_gpu_with_inputs() {
        let builds_and_code = first_stages(&[Tool::Racecheck], false);
        assert_eq!(builds_and_code.len(), 4);
        assert!(builds_and_code
            .iter()
            .all(|s| !s.kind.needs_gpu() && (s.subject == LEARNER || s.kind == StageKind::Sass)));
        let all = first_stages(&[Tool::Racecheck], true);
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
            assert_eq!(borrowed_kinds(ex, &subs), borrowed, "{id}");
            let changed = format!("{}\n// a comment\n", ex.original);
            let subs = submissions(&wb, ex, &path, &changed, &cases);
            assert!(!untouched(&subs));
            assert!(borrowed_kinds(ex, &subs).is_empty());
            assert_eq!(
                subs.iter().map(|s| s.variant.as_str()).collect::<Vec<_>>(),
                ["learner", "original", "reference"]
            );
        }
    }
}
