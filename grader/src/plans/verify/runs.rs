//! Phase 2 of verify: the verdicts of the builds and GPU runs of each exercise and its solution.

use crate::engine::context::Context;
use crate::engine::plan::{Stage, StageKind, Submission};
use crate::engine::scheduler::Results;
use crate::engine::stages::Output;
use crate::exercise::manifest::{Detector, Tool, Track};
use crate::judge::verdict::{self, Finding, Status, Step, StepName};
use crate::plans::sanitize::ToolStatus;

use super::{keep, ExerciseRecord, PlainRuns, ToolSighting, VerifyOptions, Work};
/// Phase 2's verdicts for one exercise (`subjects`: its untouched and solution submissions) from
/// the runs in `results`: whether the untouched file is caught for its intended reason, and the
/// solution is clean and correct.
#[allow(clippy::too_many_arguments)]
pub(super) fn record_runs(
    ctx: &Context,
    opts: &VerifyOptions,
    w: &mut Work,
    subs: &[Submission],
    results: &Results,
    subjects: (usize, usize),
    gpu_stages: bool,
    plain_runs: u32,
) {
    let (ex, sol) = subjects;
    let m = &subs[ex]
        .exercise()
        .expect("verify grades exercises")
        .manifest
        .manifest;
    let cases = subs[ex].cases();
    let all_built = w.record.checks.iter().all(|s| s.status == Status::Passed);
    if !all_built {
        return;
    }
    if !gpu_stages {
        w.record.checks.push(no_gpu_runs_step(ctx));
        return;
    }
    record_exercise_under_tools(opts, w, results, ex);
    for t in Tool::ALL {
        let s = Stage::new(sol, StageKind::Sanitize(t));
        if let Some(o) = results.get_run(&s) {
            w.record
                .checks
                .extend(verdict::tool(format!("solution {t}"), &s, o));
        }
    }
    let plain_outputs: Vec<&Output> = (0..plain_runs)
        .filter_map(|r| results.get_run(&Stage::again(ex, StageKind::Correctness, r)))
        .collect();
    let plain: Vec<Step> = plain_outputs
        .iter()
        .filter_map(|o| {
            verdict::correctness(
                StepName::ExercisePlainRun,
                StageKind::Correctness,
                o,
                cases,
                m.tolerance,
            )
        })
        .collect();
    record_plain_runs(w, &plain_outputs, &plain);
    if let Some(o) = results.get(sol, StageKind::Correctness) {
        w.record.checks.extend(verdict::correctness(
            StepName::SolutionCorrectness,
            StageKind::Correctness,
            o,
            cases,
            m.tolerance,
        ));
    }
}

/// Why no GPU stage ran: the GPU is blocked (skipped), or the sanitizer is missing (a tool error).
fn no_gpu_runs_step(ctx: &Context) -> Step {
    match ctx.gpu_blocked() {
        Some(reason) => Step::gpu_skipped(reason),
        None => Step::new(
            StepName::Tools,
            Status::ToolError,
            "compute-sanitizer not found",
        ),
    }
}

/// The untouched exercise (submission `ex`) under each tool that ran: its raw XML kept, what each
/// tool saw of it (--survey), a performance exercise's clean runs, and whether its named tool
/// caught it for its intended reason.
fn record_exercise_under_tools(opts: &VerifyOptions, w: &mut Work, results: &Results, ex: usize) {
    let bug_region = w.record.region.clone();
    for t in Tool::ALL {
        let stage = Stage::new(ex, StageKind::Sanitize(t));
        let Some(o @ Output::Sanitized { run, findings, .. }) = results.get_run(&stage) else {
            continue;
        };
        // The XML the parser refused is kept too: it is what the parser must learn to read.
        let xml = match run {
            Ok(r) => Some(&r.xml_path),
            Err(crate::tools::sanitizer::SanitizerError::Parse(_, path)) => Some(path),
            Err(_) => None,
        };
        if let Some(xml) = xml {
            keep(opts, xml, &format!("{}-exercise-{t}.xml", w.ex.id()));
        }
        let tool_step = verdict::tool("exercise", &stage, o).expect("a sanitizer output");
        if opts.survey {
            w.record
                .original_under_tools
                .push(sighting(t, &tool_step, findings, &bug_region));
        }
        if w.record.track == Track::Perf {
            w.record
                .checks
                .extend(verdict::tool(format!("exercise {t}"), &stage, o));
        }
        if w.record.tool == Some(t) {
            if let Ok(r) = run {
                w.record.tool_output = Some(r.finished.stdout.text());
            }
            let (step, finding) = intended_reason(&w.record, tool_step, findings);
            w.record.checks.push(step);
            w.record.finding = finding;
        }
    }
}

/// The plain runs of the untouched exercise (`outputs`, judged on the cases as `plain`): how often
/// the bug was silent, and the check its detector asks of them.
fn record_plain_runs(w: &mut Work, outputs: &[&Output], plain: &[Step]) {
    let Some(first) = plain.first() else {
        return;
    };
    w.record.plain_run_correct = Some(first.status == Status::Passed);
    // The first wrong run tells most: its first wrong element.
    w.record.plain_run = Some(
        plain
            .iter()
            .find(|s| s.status != Status::Passed)
            .unwrap_or(first)
            .summary
            .clone(),
    );
    let runs = PlainRuns {
        runs: plain.len() as u32,
        correct: plain.iter().filter(|s| s.status == Status::Passed).count() as u32,
        failed: plain
            .iter()
            .filter(|s| s.status != Status::Passed && !verdict::is_wrong_output(s))
            .count() as u32,
    };
    w.record.plain_runs = Some(runs);
    match w.record.detector {
        Detector::WrongOutput => w.record.checks.push(wrong_output_step(
            &w.record.region,
            runs,
            plain.iter().find(|s| verdict::is_wrong_output(s)),
        )),
        // Correct but slow: every plain run of the original must be right.
        Detector::Speed => w.record.checks.extend(plain.iter().map(|s| Step {
            name: "exercise correctness".into(),
            ..s.clone()
        })),
        Detector::Hang | Detector::Crash => {
            w.record
                .checks
                .push(stop_step(w.record.detector, outputs, plain))
        }
        Detector::Sanitizer => {}
    }
}

/// One tool's verdict on the untouched exercise, for the record.
fn sighting(tool: Tool, step: &Step, found: &[Finding], bug_region: &str) -> ToolSighting {
    let mut kinds: Vec<String> = Vec::new();
    for k in found
        .iter()
        .map(|f| format!("{} in {}", f.kind, f.region.as_deref().unwrap_or("-")))
    {
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    ToolSighting {
        tool,
        status: ToolStatus::of(step, found),
        kinds,
        in_bug_region: found.iter().any(|f| verdict::in_region(f, bug_region)),
    }
}

/// For a bug no tool sees: every plain run must give wrong outputs (not crash), or a learner's
/// check could pass the untouched file.
fn wrong_output_step(region: &str, runs: PlainRuns, wrong: Option<&Step>) -> Step {
    let name = StepName::ExerciseGivesWrongOutput;
    let wrong_runs = runs.runs - runs.correct - runs.failed;
    let status = if wrong_runs == runs.runs {
        Status::Passed
    } else {
        Status::Failed
    };
    let example = wrong
        .map(|s| format!(": {}", s.summary))
        .unwrap_or_default();
    Step::new(
        name,
        status,
        format!(
            "{wrong_runs} of {} plain runs wrong (bug in region `{region}`){example}",
            runs.runs
        ),
    )
    .stage(StageKind::Correctness)
}

/// For a bug that hangs or crashes: every plain run of the untouched exercise must have hung (been
/// killed at the manifest's `timeout_s`) or died by a host memory fault (SIGSEGV, SIGBUS). A run
/// that finished, right or wrong, means a learner's check could not see the bug.
fn stop_step(detector: Detector, outputs: &[&Output], steps: &[Step]) -> Step {
    let name = match detector {
        Detector::Hang => StepName::ExerciseHangs,
        _ => StepName::ExerciseCrashes,
    };
    let finished: Vec<&crate::tools::runner::Finished> =
        outputs.iter().filter_map(|o| o.finished()).collect();
    let stopped = finished
        .iter()
        .filter(|f| match detector {
            Detector::Hang => f.exit == crate::tools::runner::Exit::TimedOut,
            _ => verdict::is_host_fault(f),
        })
        .count();
    let status = if stopped == outputs.len() && stopped > 0 {
        Status::Passed
    } else {
        Status::Failed
    };
    // The first run that did what the bug does tells where; else the first that did not.
    let example = steps
        .iter()
        .find(|s| verdict::run_shows(detector, s))
        .or(steps.first())
        .map(|s| s.summary.clone())
        .unwrap_or_default();
    let what = if detector == Detector::Hang {
        "hung"
    } else {
        "crashed"
    };
    Step::new(
        name,
        status,
        format!(
            "{stopped} of {} plain runs {what}: {example}",
            outputs.len()
        ),
    )
    .stage(StageKind::Correctness)
}

/// The exercise step passes when its tool reported the expected kind inside the expected region;
/// that finding comes back with it.
fn intended_reason(
    record: &ExerciseRecord,
    tool_step: Step,
    found: &[Finding],
) -> (Step, Option<Finding>) {
    let (Some(tool), Some(kind)) = (record.tool, record.expected_kind) else {
        unreachable!("only called for the expected tool")
    };
    let name = StepName::exercise_under(tool);
    let hit = found
        .iter()
        .find(|f| f.kind == kind && verdict::in_region(f, &record.region));
    let mut step = match (hit, tool_step.status) {
        (Some(f), _) if f.locations.is_empty() => Step::new(
            name,
            Status::Passed,
            format!(
                "{tool} {} ({}; the tool names no line for this kind; the bug is in region `{}`)",
                f.kind,
                crate::tools::sanitizer::records_text(f.records),
                record.region
            ),
        ),
        (Some(f), _) => {
            let at = f.locations.first().map(|l| l.short()).unwrap_or_default();
            Step::new(
                name,
                Status::Passed,
                format!(
                    "{tool} {} at {at}, in region `{}` ({})",
                    f.kind,
                    record.region,
                    crate::tools::sanitizer::records_text(f.records)
                ),
            )
        }
        (None, Status::TimedOut | Status::ToolError) => Step {
            name,
            ..tool_step.clone()
        },
        // The hang without the tool's record of it: the tool did not show it.
        (None, Status::Hung) => Step::new(
            name,
            Status::Failed,
            format!(
                "expected {tool} {kind} in region `{}`, the tool gave none ({})",
                record.region, tool_step.summary
            ),
        ),
        (None, _) => {
            let seen: Vec<String> = found
                .iter()
                .map(|f| format!("{} {:?}", f.kind, f.region))
                .collect();
            Step::new(
                name,
                Status::Failed,
                format!(
                    "expected {tool} {kind} in region `{}`, the tool reported: [{}]",
                    record.region,
                    seen.join(", ")
                ),
            )
        }
    };
    step.command = tool_step.command;
    step.wall_ms = tool_step.wall_ms;
    (step, hit.cloned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercise::cases::Cases;

    #[test]
    fn a_bug_no_tool_sees_must_give_wrong_output_in_every_plain_run() {
        let wrong = Step::new(
            StepName::ExercisePlainRun,
            Status::Failed,
            "case `a`: y[3] = 1 but the reference says 2; 1 of 9 elements wrong, max error 1e0",
        );
        assert!(verdict::is_wrong_output(&wrong));
        let all = wrong_output_step(
            "bug",
            PlainRuns {
                runs: 5,
                correct: 0,
                failed: 0,
            },
            Some(&wrong),
        );
        assert_eq!(all.status, Status::Passed, "{}", all.summary);
        assert!(
            all.summary.starts_with("5 of 5 plain runs wrong") && all.summary.contains("y[3] = 1"),
            "{}",
            all.summary
        );
        // Right once: a learner's check could pass the untouched file.
        assert_eq!(
            wrong_output_step(
                "bug",
                PlainRuns {
                    runs: 5,
                    correct: 1,
                    failed: 0
                },
                Some(&wrong)
            )
            .status,
            Status::Failed
        );
        // A crash is not the intended reason either.
        let crashed = Step::new(
            StepName::ExercisePlainRun,
            Status::Failed,
            "the program failed (exit status 3)",
        );
        assert!(!verdict::is_wrong_output(&crashed));
        assert_eq!(
            wrong_output_step(
                "bug",
                PlainRuns {
                    runs: 5,
                    correct: 0,
                    failed: 5
                },
                None
            )
            .status,
            Status::Failed
        );
    }

    #[test]
    fn a_hang_or_crash_exercise_must_stop_so_in_every_plain_run() {
        use crate::engine::stages::Bounds;
        use crate::tools::runner::{Exit, Finished};
        let ran = |exit: Exit, detector: Detector| {
            let finished = Finished::ended(exit, Default::default());
            let bounds = Bounds {
                limit: std::time::Duration::from_secs(3),
                detector,
                region: Some("region `wait` (b.cu:5-9)".into()),
                after_stall: false,
            };
            Output::Ran {
                command: String::new(),
                run: Ok(finished),
                outputs: Vec::new(),
                bounds,
            }
        };
        let judge = |detector: Detector, exits: &[Exit]| {
            let outputs: Vec<Output> = exits.iter().map(|e| ran(*e, detector)).collect();
            let refs: Vec<&Output> = outputs.iter().collect();
            let steps: Vec<Step> = refs
                .iter()
                .filter_map(|o| {
                    verdict::correctness(
                        StepName::ExercisePlainRun,
                        StageKind::Correctness,
                        o,
                        &Cases::default(),
                        crate::exercise::manifest::Tolerance {
                            atol: 0.0,
                            rtol: 0.0,
                        },
                    )
                })
                .collect();
            stop_step(detector, &refs, &steps)
        };
        let hung = judge(Detector::Hang, &[Exit::TimedOut, Exit::TimedOut]);
        assert_eq!(hung.status, Status::Passed, "{}", hung.summary);
        assert!(
            hung.summary.starts_with(
                "2 of 2 plain runs hung: hung: the threads wait in region `wait` (b.cu:5-9)"
            ),
            "{}",
            hung.summary
        );
        // One run that finished: a learner's check could pass the untouched file.
        assert_eq!(
            judge(Detector::Hang, &[Exit::TimedOut, Exit::Code(0)]).status,
            Status::Failed
        );
        let crashed = judge(Detector::Crash, &[Exit::Signal(libc::SIGSEGV)]);
        assert!(
            crashed.status == Status::Passed
                && crashed.summary.contains("SIGSEGV")
                && crashed.summary.contains("region `wait`"),
            "{}",
            crashed.summary
        );
        // A crash of another kind, or a hang, is not the intended crash.
        assert_eq!(
            judge(Detector::Crash, &[Exit::Signal(libc::SIGABRT)]).status,
            Status::Failed
        );
        assert_eq!(
            judge(Detector::Crash, &[Exit::TimedOut]).status,
            Status::Failed
        );
    }
}
