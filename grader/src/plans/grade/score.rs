//! A pair's points from a chunk's stage outputs: builds, the tools, the public and hidden cases,
//! speed (the one judge's verdict and flags) and the fresh inputs after the timed runs.

use crate::engine::context::Context;
use crate::engine::evidence;
use crate::engine::plan::{SecretCases, Stage, StageKind};
use crate::engine::scheduler::Results;
use crate::engine::stages::Output;
use crate::exercise::cases::Cases;
use crate::exercise::manifest::Tool;
use crate::exercise::rubric::GradeStage;
use crate::exercise::workbook::Exercise;
use crate::judge::perf;
use crate::judge::speed;
use crate::judge::verdict::{self, Status, Step, StepName};
use crate::tools::peak::Peak;
use crate::tools::runner::Exit;

use super::{Flag, PairResult, PairState, Rule};

/// Cases passed of a run on a case set: each case counts on its own (a crash after two cases
/// leaves those two).
pub(super) struct Tally {
    pub(super) passed: usize,
    pub(super) total: usize,
    /// The first problem, in words (the run's failure, or the first wrong case).
    pub(super) problem: Option<String>,
    pub(super) timed_out: bool,
}

pub(super) fn tally(output: Option<&Output>, cases: &Cases, ex: &Exercise) -> Tally {
    tally_part(output, cases, 0, ex)
}

/// A run that ended in a failure of its own (not a time-out, not a process left behind).
pub(super) fn crashed(output: Option<&Output>) -> bool {
    matches!(output, Some(Output::Ran { run: Ok(f), .. }) if !f.success() && f.exit != Exit::TimedOut && f.left_running().is_none())
}

/// The tally of `cases`, which a run took from its `skip`-th output on (a run of the public cases
/// and then the hidden ones).
fn tally_part(output: Option<&Output>, cases: &Cases, skip: usize, ex: &Exercise) -> Tally {
    let total = cases.cases.len();
    let Some(Output::Ran {
        run,
        outputs,
        bounds,
        ..
    }) = output
    else {
        let why = match output {
            Some(Output::NotRun(b)) => b.to_string(),
            _ => "did not run".into(),
        };
        return Tally {
            passed: 0,
            total,
            problem: Some(why),
            timed_out: false,
        };
    };
    let finished = match run {
        Ok(f) => f,
        Err(e) => {
            return Tally {
                passed: 0,
                total,
                problem: Some(e.to_string()),
                timed_out: false,
            }
        }
    };
    // A hang or a crash in the verdict's words (a hang exercise's names where the threads wait).
    let stopped = verdict::stopped(finished, bounds, &[], "the program").map(|(_, why)| why);
    if finished.exit == Exit::TimedOut {
        return Tally {
            passed: 0,
            total,
            problem: stopped,
            timed_out: true,
        };
    }
    let mut problem = (!finished.success()).then(|| {
        stopped.unwrap_or_else(|| format!("the program failed ({})", finished.describe_exit()))
    });
    if let Some(left) = finished.left_running() {
        problem = Some(format!("the program {left}"));
    }
    let mut passed = 0;
    for (c, path) in cases.cases.iter().zip(outputs.iter().skip(skip)) {
        match verdict::case_outputs(c, path, ex.manifest.manifest.tolerance) {
            Ok(_) => passed += 1,
            Err(why) => {
                problem.get_or_insert(why.to_string());
            }
        }
    }
    // A program that leaves something running passes no case: the sandbox killed it.
    if finished.left_running().is_some() {
        passed = 0;
    }
    Tally {
        passed,
        total,
        problem,
        timed_out: false,
    }
}

pub(super) fn score_builds(ctx: &Context, results: &Results, i: usize, r: &mut PairResult) {
    let mut ok = true;
    for flavor in crate::tools::nvcc::Flavor::BOTH {
        if let Some(step) = results
            .get(i, StageKind::Build(flavor))
            .and_then(|o| verdict::build(StepName::Build(flavor), o, flavor, &ctx.arch))
        {
            ok &= step.status == Status::Passed;
            r.steps.push(step);
        }
    }
    if ok {
        r.set(
            GradeStage::Builds,
            1.0,
            Status::Passed,
            "both builds (-G and -O3 -lineinfo)",
        );
    } else {
        r.set(
            GradeStage::Builds,
            0.0,
            Status::Failed,
            "does not build (nvcc's errors are in the report)",
        );
        for s in GradeStage::ALL.iter().skip(1) {
            r.set(*s, 0.0, Status::Skipped, "not run: the file does not build");
        }
    }
}

pub(super) fn score_tools(ex: &Exercise, results: &Results, i: usize, r: &mut PairResult) {
    let named = ex.manifest.expected_finding().map(|(t, _)| t);
    let mut others = (0usize, 0usize, Vec::new());
    for tool in Tool::ALL {
        let stage = Stage::new(i, StageKind::Sanitize(tool));
        let step = match results.get_run(&stage) {
            Some(Output::NotRun(b)) => verdict::not_run(StepName::Tool(tool), &stage, b),
            Some(o @ Output::Sanitized { findings, .. }) => {
                r.findings.extend(findings.iter().cloned());
                verdict::tool(StepName::Tool(tool), &stage, o)
            }
            _ => None,
        };
        let Some(step) = step else { continue };
        let clean = step.status == Status::Passed;
        if Some(tool) == named {
            r.set(
                GradeStage::NamedTool,
                f64::from(u8::from(clean)),
                step.status,
                format!("{tool}: {}", step.summary),
            );
        } else {
            others.1 += 1;
            if clean {
                others.0 += 1;
            } else {
                others.2.push(format!("{tool}: {}", step.summary));
            }
        }
        r.steps.push(step);
    }
    let (clean, total, problems) = others;
    let status = if clean == total {
        Status::Passed
    } else {
        Status::Failed
    };
    let summary = if total == 0 {
        "no other tool runs on this exercise (the named tool judges it alone)".to_string()
    } else if problems.is_empty() {
        format!("{clean} of {total} clean")
    } else {
        format!("{clean} of {total} clean; {}", problems.join("; "))
    };
    r.set(
        GradeStage::OtherTools,
        other_tools_share(clean, total),
        status,
        summary,
    );
}

/// The share of the other tools' points: by the share of them that are clean; all of it where no
/// other tool runs on the exercise (35-dynpar-shared: the others do not follow a kernel's child
/// launches), which has nothing there to fail (its reference fix got 90 on an H200 for "0 of 0").
fn other_tools_share(clean: usize, total: usize) -> f64 {
    if total == 0 {
        1.0
    } else {
        clean as f64 / total as f64
    }
}

pub(super) fn score_cases(
    results: &Results,
    i: usize,
    r: &mut PairResult,
    ex: &Exercise,
    public: &Cases,
    secret: &SecretCases,
) {
    let run = results.get(i, StageKind::Correctness);
    let t = tally(run, public, ex);
    let status = if t.timed_out {
        Status::TimedOut
    } else if t.passed == t.total {
        Status::Passed
    } else {
        Status::Failed
    };
    let summary = match &t.problem {
        Some(p) if t.passed < t.total => format!(
            "{} of {} public cases match the reference; {p}",
            t.passed, t.total
        ),
        _ => format!(
            "{} of {} public cases match the reference",
            t.passed, t.total
        ),
    };
    r.steps.push(
        Step::new(StepName::Correctness, status, summary.clone()).stage(StageKind::Correctness),
    );
    r.set(
        GradeStage::Public,
        t.passed as f64 / t.total.max(1) as f64,
        status,
        summary,
    );
    // Hidden cases: how many passed, never which or why (the student's report shows no more).
    let h = match results.get(i, StageKind::Hidden) {
        Some(again) => tally(Some(again), &secret.hidden, ex),
        None => tally_part(run, &secret.hidden, public.cases.len(), ex),
    };
    let status = if h.timed_out {
        Status::TimedOut
    } else if h.passed == h.total {
        Status::Passed
    } else {
        Status::Failed
    };
    let summary = format!(
        "{} of {} hidden cases match the reference",
        h.passed, h.total
    );
    r.steps
        .push(Step::new(StepName::HiddenCases, status, summary.clone()).stage(StageKind::Hidden));
    r.set(
        GradeStage::Hidden,
        h.passed as f64 / h.total.max(1) as f64,
        status,
        summary,
    );
}

/// The speed stage and the rules' flags from the one judge.
pub(super) fn score_speed(v: &speed::Verdict, r: &mut PairResult) {
    if let Some(sp) = &v.speed {
        r.steps.push(
            Step::new(StepName::Timing, v.status, v.summary.clone()).stage(StageKind::Timing),
        );
        r.speed = Some(sp.clone());
    }
    r.set(GradeStage::Speed, v.fraction, v.status, v.summary.clone());
    for f in &v.flags {
        r.withhold(f.rule);
        r.steps.push(f.step());
        r.flags.push(f.clone());
    }
}

pub(super) fn score_fresh(
    output: Option<&Output>,
    fresh: &Cases,
    ex: &Exercise,
    r: &mut PairResult,
) {
    let t = tally(output, fresh, ex);
    if t.passed == t.total {
        r.steps.push(
            Step::new(
                StepName::FreshInputs,
                Status::Passed,
                format!(
                    "{} of {} fresh inputs after the timed runs match",
                    t.passed, t.total
                ),
            )
            .stage(StageKind::Fresh),
        );
        return;
    }
    let f = Flag::new(
        Rule::FreshInputs,
        format!(
            "{} of {} fresh inputs after the timed runs match the reference",
            t.passed, t.total
        ),
    );
    r.withhold(f.rule);
    r.steps.push(f.step());
    r.flags.push(f);
}

/// What judging one timed pair of a chunk reads: the chunk's results, the reference fix's and the
/// original's timed runs (the reference's outputs read once for every pair), the peak and the
/// library baseline, and the fresh inputs' cases.
pub(super) struct PairJudge<'r> {
    pub(super) ex: &'r Exercise,
    pub(super) timer: crate::engine::plan::Timer,
    pub(super) results: &'r Results,
    pub(super) batch: u32,
    pub(super) reference: usize,
    pub(super) original: Option<usize>,
    pub(super) peak: Option<&'r Peak>,
    pub(super) baseline: Option<&'r crate::tools::ncu::Measured>,
    pub(super) reference_evidence: evidence::Timed<'r>,
    pub(super) original_evidence: evidence::Timed<'r>,
    pub(super) fresh: &'r Cases,
}

impl PairJudge<'_> {
    /// Student `i`'s speed and fresh-input scores into `r`. A run ncu measured is judged even
    /// without a time (no kernel launched is a rule).
    pub(super) fn judge(&self, i: usize, r: &mut PairResult) {
        let (results, ex, batch) = (self.results, self.ex, self.batch);
        // Where the driver times the kernels no ncu run was made: the judge says what the plain
        // calls lacked.
        if self.timer != crate::engine::plan::Timer::Driver
            && results
                .get(i, StageKind::Timing)
                .and_then(Output::measured)
                .is_none()
        {
            let why = verdict::measured_time(results.get(i, StageKind::Timing))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            r.state = PairState::ToolError {
                message: format!("ncu could not time this submission ({why})"),
            };
            return;
        }
        let summary = self.perf_summary(i);
        let inputs = speed::JudgeInputs {
            ex,
            timer: self.timer,
            learner: evidence::evidence(
                results.get(i, StageKind::Timing),
                results.get(i, StageKind::Call),
            ),
            reference: self.reference_evidence,
            original: self.original_evidence,
            peak: self.peak,
            perf: summary.as_ref(),
        };
        let again = |o: usize| speed::TimedRuns {
            timing: results.get_run(&Stage::again(o, StageKind::Timing, batch)),
            calls: results.call_runs(o, batch, batch),
        };
        let verdict = speed::judge_runs(
            &inputs,
            speed::TimedRuns {
                timing: results.get(i, StageKind::Timing),
                calls: results.call_runs(i, 0, batch),
            },
            again(self.reference),
            self.original.map_or(
                speed::TimedRuns {
                    timing: None,
                    calls: Vec::new(),
                },
                again,
            ),
        );
        score_speed(&verdict, r);
        score_fresh(results.get(i, StageKind::Fresh), self.fresh, ex, r);
    }

    /// The performance track's summary of the three versions, each on its quickest whole call
    /// where the calls were timed again (as the judge's); None on the bug track.
    fn perf_summary(&self, i: usize) -> Option<perf::PerfSummary> {
        let (results, batch) = (self.results, self.batch);
        let original = self.original?;
        let timed_versions = [
            perf::Runs::of("original", |k| results.judged(original, batch, batch, k)),
            perf::Runs::of("reference", |k| {
                results.judged(self.reference, batch, batch, k)
            }),
            perf::Runs::of("learner", |k| results.judged(i, 0, batch, k)),
        ];
        perf::summarize(self.ex, self.peak?, &timed_versions, self.baseline).ok()
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::plans::grade::{ExerciseCases, PairState};

    #[test]
    fn where_no_other_tool_runs_the_other_tools_points_are_not_lost() {
        assert_eq!(
            other_tools_share(0, 0),
            1.0,
            "35-dynpar-shared: memcheck alone"
        );
        assert_eq!(other_tools_share(2, 3), 2.0 / 3.0);
        assert_eq!(other_tools_share(0, 3), 0.0);
    }

    /// A harness output file of one i32 buffer.
    fn write_output(path: &Path, values: &[i32]) {
        let out = crate::exercise::reference::Buffer {
            name: "out".into(),
            data: crate::exercise::reference::Data::I32(values.to_vec()),
        };
        crate::exercise::data::write_outputs(path, &[out]).unwrap();
    }

    fn case(name: &str, value: i32) -> crate::exercise::cases::PreparedCase {
        let expected = vec![crate::exercise::reference::Buffer {
            name: "out".into(),
            data: crate::exercise::reference::Data::I32(vec![value]),
        }];
        crate::exercise::cases::PreparedCase {
            name: name.into(),
            input: PathBuf::new(),
            expected,
            sanitize: false,
        }
    }

    fn ran(exit: Exit, outputs: Vec<PathBuf>) -> Output {
        let finished = crate::tools::runner::Finished::ended(exit, Default::default());
        Output::Ran {
            command: String::new(),
            run: Ok(finished),
            outputs,
            bounds: crate::engine::stages::Bounds::plain(Default::default()),
        }
    }

    #[test]
    fn one_run_of_the_public_and_hidden_cases_is_scored_as_two_and_a_crash_runs_the_hidden_again() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .join("exercises/03-race");
        let text: &'static str = Box::leak(
            std::fs::read_to_string(root.join("exercise.toml"))
                .unwrap()
                .into_boxed_str(),
        );
        let manifest =
            crate::exercise::manifest::parse("03-race", &root.join("exercise.toml"), text).unwrap();
        let ex = Exercise {
            manifest,
            original: "",
            solution: "",
        };
        let public = Cases::with_bench_of(vec![case("p0", 1), case("p1", 2)], &Cases::default());
        let secret = SecretCases {
            hidden: Cases::with_bench_of(vec![case("h0", 3), case("h1", 4)], &Cases::default()),
            fresh: Cases::default(),
        };
        let both = ExerciseCases::new(
            public.clone(),
            SecretCases {
                hidden: secret.hidden.clone(),
                fresh: Cases::default(),
            },
        );
        assert_eq!(
            both.graded
                .cases
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["p0", "p1", "h0", "h1"]
        );

        let dir = tempfile::tempdir().unwrap();
        let out: Vec<PathBuf> = (0..4)
            .map(|i| dir.path().join(format!("case{i}.out")))
            .collect();
        for (path, v) in out.iter().zip([1, 2, 3, 99]) {
            write_output(path, &[v]);
        }
        let fresh_result = || PairResult::empty("s", &ex, String::new(), PairState::Graded);
        let mut results = Results::default();
        results.outputs.insert(
            Stage::new(0, StageKind::Correctness),
            ran(Exit::Code(0), out.clone()),
        );
        let mut r = fresh_result();
        score_cases(&results, 0, &mut r, &ex, &public, &secret);
        assert_eq!(r.stage(GradeStage::Public).unwrap().status, Status::Passed);
        assert_eq!(
            r.stage(GradeStage::Hidden).unwrap().summary,
            "1 of 2 hidden cases match the reference"
        );
        assert!(!crashed(results.get(0, StageKind::Correctness)));

        // Crashed after the public cases: the hidden ones count from their own run.
        results.outputs.insert(
            Stage::new(0, StageKind::Correctness),
            ran(Exit::Code(3), out[..2].to_vec()),
        );
        assert!(crashed(results.get(0, StageKind::Correctness)));
        let again: Vec<PathBuf> = (0..2)
            .map(|i| dir.path().join(format!("again{i}.out")))
            .collect();
        write_output(&again[0], &[3]);
        write_output(&again[1], &[4]);
        results
            .outputs
            .insert(Stage::new(0, StageKind::Hidden), ran(Exit::Code(0), again));
        let mut r = fresh_result();
        score_cases(&results, 0, &mut r, &ex, &public, &secret);
        assert_eq!(
            r.stage(GradeStage::Public).unwrap().status,
            Status::Passed,
            "each public case counts on its own"
        );
        assert_eq!(
            r.stage(GradeStage::Hidden).unwrap().summary,
            "2 of 2 hidden cases match the reference"
        );
        // A run that hung is not run again.
        assert!(!crashed(Some(&ran(Exit::TimedOut, Vec::new()))));
    }
}
