//! Phase 3 of verify: ncu times each exercise whose other checks passed, and the timing verdicts.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::engine::context::Context;
use crate::engine::evidence;
use crate::engine::plan::{self, Role, Stage, StageKind};
use crate::engine::scheduler::{self, Results};
use crate::engine::stages::Output;
use crate::exercise::manifest::Track;
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::perf;
use crate::judge::speed;
use crate::judge::verdict::{self, Status, Step, StepName};
use crate::plans::session::{Phase, Session};

use super::{keep, pair, VerifyOptions, VerifyTiming, Work};
/// Phase 3 of `verify`: ncu times what `timing_stages` names of each exercise in `with_cases`
/// whose other checks all passed, and the timing verdicts join their records. How long the
/// profiler ran, where it ran.
#[allow(clippy::too_many_arguments)]
pub(super) fn time_exercises(
    ctx: &Context,
    wb: &Workbook,
    opts: &VerifyOptions,
    work: &mut [Work],
    with_cases: &[usize],
    session: &mut Session,
    say: &mut dyn FnMut(&str),
) -> TimedPhases {
    let (_, subs) = session.subjects();
    let timed = to_time(work, with_cases, opts);
    let stages: Vec<Stage> = timed
        .iter()
        .flat_map(|&k| timing_stages(&work[k], pair(k), opts))
        .collect();
    if stages.is_empty() {
        return TimedPhases::default();
    }
    let which = if opts.survey {
        "original, solution, solution again"
    } else {
        "performance exercises: original and solution"
    };
    say(&format!(
        "timing {} exercise(s) with ncu ({which}; {} ncu processes at a time)",
        timed.len(),
        ctx.config.ncu_jobs
    ));
    // The library baselines under ncu after the versions' runs, while the GPU is still the
    // plan's: beside them, a baseline's ncu ran while the whole calls were timed alone.
    let with_baseline = with_baseline(work, &timed);
    for ex in &with_baseline {
        say(&format!("{}: timing the library baseline", ex.id()));
    }
    let end = session.run_phase(&Phase::of(stages.clone()).with_baselines(with_baseline));
    let (timeline, baselines) = (end.times, end.baselines);
    let results = &session.results;
    let outputs: Vec<&Output> = stages.iter().filter_map(|s| results.get_run(s)).collect();
    let timing = TimingPhase {
        results,
        opts,
        tool_failure: verdict::profiler_failure(outputs.iter().copied()),
        peak: timed
            .iter()
            .any(|&k| work[k].record.track == Track::Perf)
            .then(|| perf::peak(ctx, wb, false)),
        baselines,
        wall: std::time::Duration::from_secs_f64(timeline.profiler.unwrap_or(0.0)),
    };
    let judging = Instant::now();
    timing.judge(work, &timed);
    for sub in subs {
        crate::engine::stages::forget_calls(sub);
    }
    TimedPhases {
        profiler: timeline.profiler,
        exclusive: timeline.exclusive,
        judging: Some(judging.elapsed().as_secs_f64()),
    }
}

/// The exercises of `with_cases` that ncu times: those with timing stages whose other checks all
/// passed.
fn to_time(work: &[Work], with_cases: &[usize], opts: &VerifyOptions) -> Vec<usize> {
    with_cases
        .iter()
        .copied()
        .filter(|&k| {
            !timing_stages(&work[k], pair(k), opts).is_empty()
                && work[k]
                    .record
                    .checks
                    .iter()
                    .all(|s| s.status == Status::Passed)
        })
        .collect()
}

/// The exercises of `timed` whose manifest names a library baseline.
fn with_baseline<'a>(work: &[Work<'a>], timed: &[usize]) -> Vec<&'a Exercise> {
    timed
        .iter()
        .map(|&k| work[k].ex)
        .filter(|ex| {
            ex.manifest
                .manifest
                .perf
                .as_ref()
                .is_some_and(|p| p.baseline.is_some())
        })
        .collect()
}

/// What the timing phase measured, that each timed exercise's verdict reads.
struct TimingPhase<'a> {
    results: &'a Results,
    opts: &'a VerifyOptions,
    /// The profiler's failure, where it failed: every exercise's verdict then.
    tool_failure: Option<String>,
    /// This GPU's peak, where a performance exercise is timed.
    peak: Option<Result<crate::tools::peak::Peak, crate::tools::peak::PeakError>>,
    /// Each library baseline, by exercise.
    baselines: BTreeMap<String, Result<Option<crate::tools::ncu::Measured>, verdict::Untimed>>,
    /// How long the profiler ran: each timing step's wall time.
    wall: std::time::Duration,
}

impl TimingPhase<'_> {
    /// Each exercise's timed runs judged beside the others', a few at a time: the speed judge reads
    /// and compares every call's outputs twice (as the original and as the solution), up to 256 MiB
    /// a call.
    fn judge(&self, work: &mut [Work], timed: &[usize]) {
        let mine: Vec<std::sync::Mutex<(usize, &mut Work)>> = work
            .iter_mut()
            .enumerate()
            .filter(|(k, _)| timed.contains(k))
            .map(std::sync::Mutex::new)
            .collect();
        scheduler::parallel(&mine, JUDGED_AT_ONCE, |cell| {
            let mut guard = cell
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (k, w) = &mut *guard;
            let steps = self.steps(w, *k);
            w.record
                .checks
                .extend(steps.into_iter().map(|s| s.wall(self.wall)));
        });
    }

    /// The timing steps of exercise `k`, by its track.
    fn steps(&self, w: &mut Work, k: usize) -> Vec<Step> {
        let (results, opts) = (self.results, self.opts);
        match (&self.tool_failure, w.record.track, &self.peak) {
            (Some(f), _, _) => {
                vec![
                    Step::new(StepName::SolutionTiming, Status::ToolError, f.clone())
                        .stage(StageKind::Timing),
                ]
            }
            (None, Track::Bug, _) => timing_steps(w, results, pair(k), opts),
            (None, Track::Perf, Some(Err(e))) => vec![Step::new(
                StepName::SolutionTiming,
                Status::ToolError,
                format!("cannot measure this GPU's peak: {e}"),
            )
            .stage(StageKind::Timing)],
            (None, Track::Perf, Some(Ok(peak))) => {
                let baseline = self.baselines.get(w.ex.id()).cloned().unwrap_or(Ok(None));
                perf_steps(baseline, w, results, pair(k), peak, opts)
            }
            (None, Track::Perf, None) => {
                unreachable!("the peak is measured where a performance exercise is timed")
            }
        }
    }
}

/// How many exercises' timed runs are judged at once (`time_exercises`): each holds the reference
/// fix's outputs of every call and four of the other's at a time, up to 2.3 GB for 52-bank-conflicts.
const JUDGED_AT_ONCE: usize = 4;

/// Where the time of `time_exercises` went, in seconds.
#[derive(Debug, Default)]
pub(super) struct TimedPhases {
    pub(super) profiler: Option<f64>,
    pub(super) exclusive: Option<f64>,
    pub(super) judging: Option<f64>,
}

/// What ncu times of an exercise: a performance exercise's original and solution (its verdict is
/// the speedup, over the original timed in the same run). With --survey a bug exercise's too: its
/// original (unless it hangs: it would hold ncu's lock for its limit), its solution, and its
/// solution again in a second process (the noise floor of a ratio between two processes, which is
/// what check compares). Plain verify leaves the bug track's timings to the survey: the solution
/// is the reference there, so its ratio is 1 by definition, and its repeats run on varied inputs,
/// which say nothing of noise (15-global-race's atomics took 1.63x longer on some than on others).
/// Those 30 ncu processes were 50 of the 167 s that verify of 37 took on an H100.
fn timing_stages(w: &Work, (ex, sol): (usize, usize), opts: &VerifyOptions) -> Vec<Stage> {
    let perf = w.record.track == Track::Perf;
    if !perf && !opts.survey {
        return Vec::new();
    }
    // verify's record holds ncu's times: every kernel-clocked version is profiled.
    let timer = plan::Timer::profiled(w.ex);
    let mut stages: Vec<Stage> = plan::timed_kinds(w.ex, timer, Role::Solution)
        .into_iter()
        .map(|k| Stage::new(sol, k))
        .collect();
    stages.extend(
        plan::timed_kinds(w.ex, timer, Role::Original)
            .into_iter()
            .map(|k| Stage::new(ex, k)),
    );
    if !perf {
        stages.push(Stage::again(sol, StageKind::Timing, 1));
    }
    stages
}

/// A bug exercise's timings (`--survey` only): the solution's time, a second run of it, and the
/// original's, against the manifest's target: the speed judge of check and grade holds the second
/// run (a learner who submitted the reference fix) to the first, every anti-cheat rule included,
/// and the noise between them must fit the target.
fn timing_steps(
    w: &mut Work,
    results: &Results,
    (ex, sol): (usize, usize),
    opts: &VerifyOptions,
) -> Vec<Step> {
    let reference = Stage::new(sol, StageKind::Timing);
    let rerun = Stage::again(sol, StageKind::Timing, 1);
    let original = Stage::new(ex, StageKind::Timing);
    let timed = [
        (&original, "original"),
        (&reference, "reference"),
        (&rerun, "rerun"),
    ];
    keep_ncu_csvs(
        opts,
        w.ex,
        timed.map(|(s, name)| (results.get_run(s), name)),
    );
    let time = |s: &Stage| verdict::measured_time(results.get_run(s));
    let (reference_ns, rerun_ns) = match (time(&reference), time(&rerun)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => {
            return vec![untimed_solution_step(results, &reference, &why)]
        }
    };
    let timing = bug_timing(
        w.ex,
        results,
        &reference,
        time(&original).ok(),
        (reference_ns, rerun_ns),
    );
    let (rerun_ratio, max) = (rerun_ns / reference_ns, timing.max_ratio_to_reference);
    w.record.timing = Some(timing);
    // The noise a learner's ratio will carry: between two processes (the repeats inside one run on
    // varied inputs, so their spread is kept for the record but measures no noise).
    let noise = format!("a second run {rerun_ratio:.3}x");
    let retried = retried_text(results, &timed.map(|(s, _)| s));
    let original_text = match time(&original) {
        _ if w.ex.manifest.hang_timeout().is_some() => "; original not timed: it hangs".into(),
        Ok(o) => format!("; original {:.1} us", o / 1e3),
        Err(why) => format!("; original not timed ({why})"),
    };
    let command = results
        .get_run(&reference)
        .and_then(Output::measured)
        .map(|m| m.command.clone())
        .unwrap_or_default();
    let evidence = |s: &Stage| evidence::evidence(results.get_run(s), None);
    let judged = speed::judge(&speed::JudgeInputs {
        ex: w.ex,
        timer: plan::Timer::profiled(w.ex),
        learner: evidence(&rerun),
        reference: evidence(&reference),
        original: evidence(&original),
        peak: None,
        perf: None,
    });
    let status = match verdict::within_target(rerun_ratio, max) {
        Status::Passed => judged.status,
        other => other,
    };
    let mut steps = vec![Step::new(
        StepName::SolutionTiming,
        status,
        format!(
            "{:.1} us; {noise} (target {max:.2}x){original_text}{retried}",
            reference_ns / 1e3
        ),
    )
    .command(command)
    .stage(StageKind::Timing)];
    steps.extend(speed::flag_steps(&judged.flags));
    steps
}

/// Each version's ncu CSV kept (`--keep`) as `ncu-<number>-<version>.csv`.
fn keep_ncu_csvs<const N: usize>(
    opts: &VerifyOptions,
    ex: &Exercise,
    runs: [(Option<&Output>, &str); N],
) {
    for (o, name) in runs {
        if let Some(m) = o.and_then(Output::measured) {
            if let Some(csv) = m.csv() {
                keep(opts, csv, &format!("ncu-{}-{name}.csv", ex.number()));
            }
        }
    }
}

/// The step of a solution ncu could not time (`why`), with what its run printed.
fn untimed_solution_step(results: &Results, reference: &Stage, why: &verdict::Untimed) -> Step {
    let detail = results
        .get_run(reference)
        .and_then(Output::measured)
        .map(|m| m.finished.output())
        .unwrap_or_default();
    Step::new(
        StepName::SolutionTiming,
        Status::ToolError,
        format!("ncu timed no launch of the solution's timed kernels ({why})"),
    )
    .detail(detail)
    .stage(StageKind::Timing)
}

/// A bug exercise's timing for the record: the solution's two runs and the original's, against
/// the manifest's ratio target.
fn bug_timing(
    ex: &Exercise,
    results: &Results,
    reference: &Stage,
    original_ns: Option<f64>,
    (reference_ns, rerun_ns): (f64, f64),
) -> VerifyTiming {
    let m = &ex.manifest.manifest;
    let max = m
        .timing
        .max_ratio_to_reference
        .as_ref()
        .map(|r| *r.get_ref())
        .expect("a bug exercise has a ratio target");
    let repeat_spread = results
        .get_run(reference)
        .and_then(Output::measured)
        .and_then(|measured| {
            crate::tools::ncu::repeat_spread(
                &measured.launches,
                &m.timing.kernels,
                crate::engine::plan::profiled_calls(ex),
            )
        });
    VerifyTiming {
        kernels: m.timing.kernels.clone(),
        original_ns,
        reference_ns,
        rerun_ns: Some(rerun_ns),
        rerun_ratio: Some(rerun_ns / reference_ns),
        repeat_spread,
        speedup_over_original: original_ns.map(|o| o / reference_ns),
        max_ratio_to_reference: max,
    }
}

/// "; 2 ncu run(s) repeated: the profiler was busy" where any of `stages` ran more than once.
fn retried_text(results: &Results, stages: &[&Stage]) -> String {
    let retried = stages
        .iter()
        .filter(|s| {
            results
                .get_run(s)
                .and_then(Output::measured)
                .is_some_and(|m| m.attempts > 1)
        })
        .count();
    if retried > 0 {
        format!("; {retried} ncu run(s) repeated: the profiler was busy")
    } else {
        String::new()
    }
}

/// A performance exercise: the original and the solution (and the library baseline, timed now, after
/// them) summarised; the original must miss its target, the solution reach it and its goals.
fn perf_steps(
    baseline: Result<Option<crate::tools::ncu::Measured>, verdict::Untimed>,
    w: &mut Work,
    results: &Results,
    (ex, sol): (usize, usize),
    peak: &crate::tools::peak::Peak,
    opts: &VerifyOptions,
) -> Vec<Step> {
    let perf_spec =
        w.ex.manifest
            .manifest
            .perf
            .as_ref()
            .expect("a performance exercise");
    let baseline = match baseline {
        Ok(m) => m,
        Err(e) => {
            return vec![
                Step::new(StepName::BaselineTiming, Status::ToolError, e.to_string())
                    .stage(StageKind::Timing),
            ]
        }
    };
    let (original_runs, reference_runs) = (
        perf::Runs::of("original", |k| results.get(ex, k)),
        perf::Runs::of("reference", |k| results.get(sol, k)),
    );
    keep_ncu_csvs(
        opts,
        w.ex,
        [
            (original_runs.ncu, "original"),
            (reference_runs.ncu, "reference"),
        ],
    );
    let summary = match perf::summarize(
        w.ex,
        peak,
        &[original_runs, reference_runs],
        baseline.as_ref(),
    ) {
        Ok(s) => s,
        Err((who, why)) => {
            return vec![Step::new(
                StepName::SolutionTiming,
                Status::ToolError,
                format!("ncu could not time the {who} ({why})"),
            )
            .stage(StageKind::Timing)]
        }
    };
    // The speed judge of check and grade, once with the original and once with the solution in the
    // learner's place: the first must earn nothing, the second everything, with no rule raised.
    let versions = AsLearner {
        ex: w.ex,
        peak,
        baseline: baseline.as_ref(),
        original: original_runs,
        reference: reference_runs,
    };
    let (as_original, as_solution) = (
        versions.judge(original_runs),
        versions.judge(reference_runs),
    );
    let mut steps = vec![slow_exercise_step(perf_spec, &summary, &as_original)];
    steps.push(
        Step::new(
            StepName::SolutionSpeed,
            as_solution.status,
            as_solution.summary.clone(),
        )
        .command(summary.commands.join("\n"))
        .stage(StageKind::Timing),
    );
    // The goals' steps (the speed step is the judge's, above).
    steps.extend(
        perf::judge("solution", perf_spec, &summary, "reference")
            .into_iter()
            .skip(1),
    );
    steps.extend(speed::flag_steps(&as_solution.flags));
    w.record.perf = Some(summary);
    steps
}

/// A performance exercise's original and solution runs, ready for the speed judge to see either
/// in the learner's place.
struct AsLearner<'a> {
    ex: &'a Exercise,
    peak: &'a crate::tools::peak::Peak,
    baseline: Option<&'a crate::tools::ncu::Measured>,
    original: perf::Runs<'a>,
    reference: perf::Runs<'a>,
}

impl AsLearner<'_> {
    /// The speed judge's verdict on `learner`, beside the original and the reference fix.
    fn judge(&self, learner: perf::Runs) -> speed::Verdict {
        let versions = [
            self.original,
            self.reference,
            perf::Runs {
                name: "learner",
                ..learner
            },
        ];
        let judged_summary = perf::summarize(self.ex, self.peak, &versions, self.baseline).ok();
        speed::judge(&speed::JudgeInputs {
            ex: self.ex,
            timer: plan::Timer::profiled(self.ex),
            learner: evidence::evidence(learner.ncu, learner.call),
            reference: evidence::evidence(self.reference.ncu, self.reference.call),
            original: evidence::evidence(self.original.ncu, self.original.call),
            peak: Some(self.peak),
            perf: judged_summary.as_ref(),
        })
    }
}

/// The untouched performance exercise must be slow: below its target, and given less than all
/// of the speed points by the judge (`as_original`); the goals it misses are named.
fn slow_exercise_step(
    perf_spec: &crate::exercise::manifest::Perf,
    summary: &perf::PerfSummary,
    as_original: &speed::Verdict,
) -> Step {
    let (orig, target) = (&summary.versions[0], summary.target_speedup);
    let unmet: Vec<String> = perf::goals(perf_spec, orig, orig)
        .iter()
        .filter(|g| !g.met)
        .map(|g| format!("{} {}", g.goal.metric.key(), g.goal.metric.show(g.value)))
        .collect();
    let why = if unmet.is_empty() {
        String::new()
    } else {
        format!("; goals it misses: {}", unmet.join(", "))
    };
    Step::new(
        StepName::ExerciseIsSlow,
        if as_original.fraction < 1.0 { Status::Passed } else { Status::Failed },
        format!("{:.1} us: 1.00x, below the {target:.2}x target{why}; the judge gives it {:.0}% of the speed points", orig.nanoseconds / 1e3, 100.0 * as_original.fraction),
    )
    .stage(StageKind::Timing)
}
