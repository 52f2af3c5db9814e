//! `check`'s timed phase: the original, the reference fix and the learner's file under ncu and as
//! whole calls, the rounds that confirm a doubted call, and the timing step they make.

use super::*;

/// The timed phase both tracks share (the session's, `plans::timed`): every version under ncu (one
/// process each), then the whole calls alone on the GPU, as `plan::timed_kinds` says; the
/// original's and the reference fix's kept from an earlier check where the GPU still times them the
/// same (`engine::kept`), with the line that says so; the learner's doubted call confirmed; then
/// the library baseline. An untouched file takes the original's runs (`borrowed_kinds`). A tool
/// error where the embedded versions do not build or the profiler failed.
pub(super) fn run_timing(ctx: &Context, session: &mut Session) -> Result<Timed, Box<Step>> {
    let (_, subs) = session.subjects();
    let ex = subs[LEARNER].exercise().expect("check grades an exercise");
    let timer = Timer::of(ctx, ex);
    let borrowed = borrowed_kinds(ex, timer, subs);
    let timing: Vec<Stage> = [
        (LEARNER, Role::Learner),
        (ORIGINAL, Role::Original),
        (REFERENCE, Role::Reference),
    ]
    .into_iter()
    .flat_map(|(i, role)| {
        plan::timed_kinds(ex, timer, role)
            .into_iter()
            .map(move |k| Stage::new(i, k))
    })
    .filter(|s| s.subject != LEARNER || !borrowed.contains(&s.kind))
    .collect();
    // Not an untouched file's call: it is the original, slow by design, and what a confirmation
    // would settle is only which rule's words come after "slow" (60-scan's cold check: 5.4 s of
    // 30.8).
    let candidates: &[usize] = if untouched(subs) { &[] } else { &[LEARNER] };
    let phase = crate::plans::timed::TimedPhase {
        anchor: Stage::new(REFERENCE, StageKind::Call),
        weighed: crate::plans::timed::Weighed {
            ex,
            timer,
            reference: REFERENCE,
            original: Some(ORIGINAL),
            batch: 0,
        },
        candidates,
    };
    let mut end = session.run_phase(&Phase::of(timing).timed(phase).with_baselines(vec![ex]));
    let results = &mut session.results;
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
        session.run_phase(&Phase::of(own));
    }
    let results = &session.results;
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
    Ok(Timed {
        baseline: end.take_baseline(),
        kept: end.kept,
    })
}

/// What the timed phase left besides its runs: the line where kept measurements served, and the
/// library baseline's measurement (None: the exercise has none).
pub(super) struct Timed {
    kept: Option<String>,
    baseline: Result<Option<crate::tools::ncu::Measured>, verdict::Untimed>,
}

/// The timed stages an untouched file takes from the original's runs. An untouched file is the
/// original, built by the same compiler with the same flags: the original's fresh runs are the
/// learner's too (the same program on the same served calls), and a cold check of 60-scan's
/// untouched file no longer profiles its 26 launches a call twice.
pub(super) fn borrowed_kinds(ex: &Exercise, timer: Timer, subs: &[Submission]) -> Vec<StageKind> {
    if !untouched(subs) {
        return Vec::new();
    }
    let original = plan::timed_kinds(ex, timer, Role::Original);
    plan::timed_kinds(ex, timer, Role::Learner)
        .into_iter()
        .filter(|k| original.contains(k))
        .collect()
}

/// Time the three versions and judge the learner's with the one speed judge: the speed step, a
/// performance exercise's goals, and a failed step for every rule that fired.
pub(super) fn time_and_judge(
    ctx: &Context,
    session: &mut Session,
    report: &mut CheckReport,
    started: Instant,
    say: &mut dyn FnMut(&str),
) -> Vec<Step> {
    let (wb, subs) = session.subjects();
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
    let Timed { kept, baseline } = match run_timing(ctx, session) {
        Ok(timed) => timed,
        Err(step) => return vec![(*step).wall(phase.elapsed())],
    };
    let results = &mut session.results;
    let judging = started.elapsed().as_secs_f64();
    let commands = ncu_commands(results, subs.len());
    if let Some(step) = unusable_profile(results, &commands) {
        return vec![step.wall(phase.elapsed())];
    }
    let summary = match perf_summary(ex, results, peak.as_ref(), baseline, say) {
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
        timer: Timer::of(ctx, ex),
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
    // The grader's own work after the timed runs (the calls' outputs compared, the rules), beside
    // the stages' times.
    results.spent.push(scheduler::Spent {
        stage: "judge".into(),
        from_s: judging,
        secs: started.elapsed().as_secs_f64() - judging,
        kind: None,
        name: ex.id().to_string(),
    });
    steps.into_iter().map(|s| s.wall(phase.elapsed())).collect()
}

/// A performance exercise's summary of the three versions (with the library baseline the timed
/// phase measured); None on the bug track. Err: the baseline could not be timed.
pub(super) fn perf_summary(
    ex: &Exercise,
    results: &Results,
    peak: Option<&crate::tools::peak::Peak>,
    baseline: Result<Option<crate::tools::ncu::Measured>, verdict::Untimed>,
    say: &mut dyn FnMut(&str),
) -> Result<Option<perf::PerfSummary>, Box<Step>> {
    let (Some(_), Some(peak)) = (ex.manifest.manifest.perf.as_ref(), peak) else {
        return Ok(None);
    };
    let baseline = baseline.map_err(|e| {
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
pub(super) fn timing_summary(
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
pub(super) fn ncu_commands(results: &Results, versions: usize) -> String {
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
pub(super) fn unusable_profile(results: &Results, commands: &str) -> Option<Step> {
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
