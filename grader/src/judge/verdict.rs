//! One file: every verdict and step name reads together, so that a step, an outcome and an exit code never disagree; 188 of its lines are tests.
//!
//! Every verdict: what each stage's output means (a `Step` with its status), the findings, how steps
//! make an outcome, how outcomes rank, and the exit code of each. Stages only run and collect; the
//! plans (`check`, `verify`) assemble their reports from these functions.

use crate::exit::ExitStatus;
use serde::{Deserialize, Serialize};

pub use crate::engine::findings::{findings, findings_in, in_region, Finding};
use crate::engine::plan::{StageId, StageKind};
use crate::engine::stages::{Blocked, Bounds, Output};
use crate::exercise::cases::Cases;
use crate::exercise::compare::{self, Comparison};
use crate::exercise::data;
use crate::exercise::manifest::Detector;
use crate::exercise::manifest::FindingKind;
use crate::exercise::manifest::Tolerance;
use crate::exercise::manifest::Tool;
use crate::tools::nvcc::{self, Flavor};
use crate::tools::runner::{Exit, Finished};
use crate::tools::sanitizer;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Passed,
    Failed,
    TimedOut,
    /// A hang exercise's run outlived its limit: the hang, told with where the threads wait.
    Hung,
    ToolError,
    Skipped,
}

/// One step of a check or a verification.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub name: String,
    /// The stage's stable id ("build-debug", "sanitize:racecheck", "timing"), where one stage made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    pub status: Status,
    /// One line for the table.
    pub summary: String,
    /// More, where there is more to say (compiler errors, the program's output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub wall_ms: u64,
}

/// The names of the steps the plans make under a name of their own, in one place: code that looks
/// for a step (`Step::is`) names it here rather than by its text. A step's `name` stays text in the
/// JSON, since some are made up as they go ("solution racecheck", "exercise fails under memcheck").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepName {
    /// The GPU stages did not run here, and why.
    GpuSkipped,
    /// A build of one flavor: "build -G", "build -O3".
    Build(Flavor),
    /// A compute-sanitizer tool's run, named after the tool.
    Tool(Tool),
    /// The plain run on every case, compared with the reference.
    Correctness,
    /// `grade`'s run on the instructor's hidden cases.
    HiddenCases,
    /// `grade`'s check on fresh inputs after the timed runs.
    FreshInputs,
    /// The judged time.
    Timing,
    /// The line that says a timing was kept from an earlier plan.
    TimingKept,
    /// Writing the cases' inputs.
    Inputs,
    /// A submission that could not be read.
    Submission,
    TamperCheck,
    /// A grade worker that broke.
    Grade,
    Manifest,
    Regions,
    ToolAwareCode,
    /// `verify`'s sanitizers are missing.
    Tools,
    SolutionCorrectness,
    SolutionTiming,
    SolutionSpeed,
    BaselineTiming,
    ExercisePlainRun,
    ExerciseGivesWrongOutput,
    ExerciseHangs,
    ExerciseCrashes,
    ExerciseIsSlow,
}

impl StepName {
    /// The name as reports and recordings show it.
    pub fn as_str(self) -> &'static str {
        match self {
            StepName::GpuSkipped => "gpu",
            StepName::Build(Flavor::Sanitize) => "build -G",
            StepName::Build(Flavor::Timing) => "build -O3",
            StepName::Tool(t) => t.name(),
            StepName::Correctness => "correctness",
            StepName::HiddenCases => "hidden cases",
            StepName::FreshInputs => "fresh inputs",
            StepName::Timing => "timing",
            StepName::TimingKept => "timing: kept",
            StepName::Inputs => "inputs",
            StepName::Submission => "submission",
            StepName::TamperCheck => "tamper check",
            StepName::Grade => "grade",
            StepName::Manifest => "manifest",
            StepName::Regions => "regions",
            StepName::ToolAwareCode => "tool-aware code",
            StepName::Tools => "tools",
            StepName::SolutionCorrectness => "solution correctness",
            StepName::SolutionTiming => "solution timing",
            StepName::SolutionSpeed => "solution speed",
            StepName::BaselineTiming => "baseline timing",
            StepName::ExercisePlainRun => "exercise plain run",
            StepName::ExerciseGivesWrongOutput => "exercise gives wrong output",
            StepName::ExerciseHangs => "exercise hangs",
            StepName::ExerciseCrashes => "exercise crashes",
            StepName::ExerciseIsSlow => "exercise is slow",
        }
    }

    /// The name of the step a speed rule fails: "rule <key>" (`Step::is_rule`).
    pub fn rule(key: &str) -> String {
        format!("{RULE_PREFIX}{key}")
    }

    /// The name of `verify`'s step that the untouched exercise fails under its tool: "exercise
    /// fails under racecheck" (`Step::is_exercise_under_tool`).
    pub fn exercise_under(tool: impl std::fmt::Display) -> String {
        format!("{UNDER_TOOL_PREFIX}{tool}")
    }
}

/// What every speed rule's step name begins with.
const RULE_PREFIX: &str = "rule ";
/// What the name of `verify`'s step of the exercise under its tool begins with.
const UNDER_TOOL_PREFIX: &str = "exercise fails under ";

impl std::fmt::Display for StepName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<StepName> for String {
    fn from(name: StepName) -> String {
        name.as_str().to_string()
    }
}

impl Step {
    /// The GPU stages did not run here: `why` (no GPU, or one too old for the exercise).
    pub fn gpu_skipped(why: impl Into<String>) -> Step {
        Step::new(StepName::GpuSkipped, Status::Skipped, why)
    }
    /// Whether this is the step named `name`.
    pub fn is(&self, name: StepName) -> bool {
        self.name == name.as_str()
    }
    /// Whether this is a speed rule's step (`StepName::rule`).
    pub fn is_rule(&self) -> bool {
        self.name.starts_with(RULE_PREFIX)
    }
    /// Whether this is `verify`'s step of the exercise under its tool (`StepName::exercise_under`).
    pub fn is_exercise_under_tool(&self) -> bool {
        self.name.starts_with(UNDER_TOOL_PREFIX)
    }
    /// Whether a build made this step (its stage is a build's).
    pub fn is_build(&self) -> bool {
        Flavor::BOTH
            .iter()
            .any(|&f| self.stage.as_deref() == Some(StageKind::Build(f).id().as_str()))
    }
    pub fn new(name: impl Into<String>, status: Status, summary: impl Into<String>) -> Step {
        Step {
            name: name.into(),
            stage: None,
            status,
            summary: summary.into(),
            detail: None,
            command: None,
            wall_ms: 0,
        }
    }
    pub fn detail(mut self, d: impl Into<String>) -> Step {
        let d = d.into();
        self.detail = (!d.trim().is_empty()).then_some(d);
        self
    }
    pub fn command(mut self, c: impl Into<String>) -> Step {
        self.command = Some(c.into());
        self
    }
    /// The stage that made the step: a kind ("timing") or one run of it ("timing#1").
    pub fn stage(mut self, stage: impl StageId) -> Step {
        self.stage = Some(stage.stage_id());
        self
    }
    pub fn wall(mut self, d: std::time::Duration) -> Step {
        self.wall_ms = d.as_millis() as u64;
        self
    }
}

/// The verdict. Exit codes: pass 0, fail 1, (2 is a usage error), tool error 3, timeout 4,
/// not gradable 5, skipped for want of a GPU 6.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail {
        step: String,
    },
    ToolError {
        step: String,
        message: String,
    },
    Timeout {
        step: String,
    },
    /// The threads of a hang exercise never got past their wait: `message` says where.
    Hung {
        step: String,
        message: String,
    },
    NotGradable {
        reason: String,
    },
    Skipped {
        reason: String,
    },
}

impl Outcome {
    pub fn exit(&self) -> ExitStatus {
        match self {
            Outcome::Pass => ExitStatus::Pass,
            Outcome::Fail { .. } => ExitStatus::Fail,
            Outcome::ToolError { .. } => ExitStatus::ToolError,
            Outcome::Timeout { .. } | Outcome::Hung { .. } => ExitStatus::Timeout,
            Outcome::NotGradable { .. } => ExitStatus::NotGradable,
            Outcome::Skipped { .. } => ExitStatus::Skipped,
        }
    }

    /// The first step that did not pass decides.
    pub fn from_steps(steps: &[Step]) -> Outcome {
        match steps.iter().find(|s| s.status != Status::Passed) {
            None => Outcome::Pass,
            Some(s) => match s.status {
                Status::Failed => Outcome::Fail {
                    step: s.name.clone(),
                },
                Status::TimedOut => Outcome::Timeout {
                    step: s.name.clone(),
                },
                Status::Hung => Outcome::Hung {
                    step: s.name.clone(),
                    message: s.summary.clone(),
                },
                Status::ToolError => Outcome::ToolError {
                    step: s.name.clone(),
                    message: s.summary.clone(),
                },
                Status::Skipped => Outcome::Skipped {
                    reason: s.summary.clone(),
                },
                Status::Passed => unreachable!(),
            },
        }
    }

    /// Worst first: a failure beats a timeout, which beats a tool error, and so on; a pass is best.
    /// A CPU-only run that built everything is "skipped", one that found a broken manifest "fail".
    pub fn rank(&self) -> u8 {
        match self {
            Outcome::Fail { .. } => 0,
            Outcome::Timeout { .. } | Outcome::Hung { .. } => 1,
            Outcome::ToolError { .. } => 2,
            Outcome::NotGradable { .. } => 3,
            Outcome::Skipped { .. } => 4,
            Outcome::Pass => 5,
        }
    }

    /// The worst of several outcomes (a pass where there are none).
    pub fn worst<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Outcome {
        outcomes
            .into_iter()
            .min_by_key(|o| o.rank())
            .cloned()
            .unwrap_or(Outcome::Pass)
    }

    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail { .. } => "fail",
            Outcome::ToolError { .. } => "tool error",
            Outcome::Timeout { .. } => "timeout",
            Outcome::Hung { .. } => "hung",
            Outcome::NotGradable { .. } => "not gradable",
            Outcome::Skipped { .. } => "skipped",
        }
    }
}

// ---- What each stage's output means.

/// The step a stage that did not run leaves, if any: a failed build already said why.
pub fn not_run(name: impl Into<String>, stage: impl StageId, blocked: &Blocked) -> Option<Step> {
    match blocked {
        Blocked::BuildFailed => None,
        Blocked::NoGpu(reason) => Some(Step::gpu_skipped(reason.clone())),
        Blocked::Missing(tool) => Some(
            Step::new(
                name,
                Status::ToolError,
                format!(
                    "{tool} not found (set CUDABUGS_{} or CUDA_HOME)",
                    tool.to_uppercase().replace('-', "_")
                ),
            )
            .stage(stage),
        ),
        Blocked::NotApplicable(why) => {
            Some(Step::new(name, Status::ToolError, format!("not run: {why}")).stage(stage))
        }
        Blocked::Setup(why) => {
            Some(Step::new(name, Status::ToolError, format!("not run: {why}")).stage(stage))
        }
    }
}

/// A build: passed (perhaps kept from an earlier one), failed to compile, timed out, or nvcc broke.
pub fn build(name: impl Into<String>, output: &Output, flavor: Flavor, arch: &str) -> Option<Step> {
    let Output::Built(result) = output else {
        return None;
    };
    let name = name.into();
    Some(
        match result {
            Ok(b) => {
                let kept = if b.reused {
                    "; unchanged since the last build, binary kept"
                } else {
                    ""
                };
                let old_includes = if b.old_includes {
                    "; with <string>, <vector> and <utility> included for the file, which uses \
                     them without including them (cudabugs.cuh no longer does)"
                } else {
                    ""
                };
                Step::new(
                    name,
                    Status::Passed,
                    format!(
                        "nvcc {} ({}){kept}{old_includes}",
                        flavor.flags().join(" "),
                        b.arch.as_deref().unwrap_or(arch)
                    ),
                )
                .command(b.command.clone())
                .wall(b.wall)
            }
            Err(nvcc::BuildError::Compile { output, exit, .. }) => Step::new(
                name,
                Status::Failed,
                format!(
                    "nvcc {}: the file does not compile ({exit})",
                    flavor.flags().join(" ")
                ),
            )
            .detail(output.clone()),
            Err(nvcc::BuildError::TimedOut(d)) => Step::new(
                name,
                Status::TimedOut,
                format!("nvcc took longer than {d:?}"),
            ),
            Err(e) => Step::new(name, Status::ToolError, e.to_string()),
        }
        .stage(StageKind::Build(flavor)),
    )
}

/// What a run left behind counts against the submission: a program must not leave processes
/// running, whatever else it got right.
fn left_running(f: &Finished) -> Option<String> {
    f.left_running().map(|l| format!("the program {l}"))
}

/// What a run that the grader stopped, or that a signal killed, means: a hang exercise's hang
/// (status Hung, naming where the threads wait and the tool's deadlock record where it gave one),
/// a crash exercise's crash (naming the signal and the region), or a plain timeout, which names the
/// deadlock record where a tool gave one. None where the run ended by itself without a signal.
pub fn stopped(
    f: &Finished,
    bounds: &Bounds,
    found: &[Finding],
    what: &str,
) -> Option<(Status, String)> {
    let deadlock = found
        .iter()
        .find(|x| x.kind == FindingKind::Deadlock)
        .map(|x| {
            let at = x
                .locations
                .first()
                .map(|l| l.short())
                .unwrap_or_else(|| "an unknown line".into());
            format!("; {} reports a deadlock at {at}", x.tool)
        });
    let limit = bounds.limit.as_secs_f64();
    match f.exit {
        Exit::TimedOut if bounds.detector == Detector::Hang => {
            let region = bounds.region.as_deref().unwrap_or("the marked region");
            Some((Status::Hung, format!("hung: the threads wait in {region}; {what} was killed after {limit:.1} s{}", deadlock.unwrap_or_default())))
        }
        Exit::TimedOut => Some((
            Status::TimedOut,
            match deadlock {
                Some(d) => format!("{what} did not finish within {limit:.0} s: it hangs{d}"),
                // Ended before its own limit: cut at the pace of the runs beside it (`engine::pace`).
                None if f.wall < bounds.limit && !bounds.after_stall => format!("{what} was still running {:.0} s after it started, when every other run of the same tool beside it had ended, over {} times their median: it was ended there (it hangs, or stalls on the host or only under the tool)", f.wall.as_secs_f64(), crate::engine::pace::FACTOR),
                None if bounds.after_stall => format!("{what} did not finish beside the other runs, nor alone within {limit:.0} s, though the program's plain runs finish: it hangs only under the tool (a -G build can hang where -O3 does not, and a program can tell that a tool is watching it)"),
                None => format!("{what} did not finish within {limit:.0} s: it hangs, on the GPU (a barrier that never releases hangs the kernel) or on the host (a loop that never ends)"),
            },
        )),
        // A kill for memory (the host's limit, a shared GPU's share) is said by `describe_exit`.
        Exit::Signal(sig) if f.killed_for_memory().is_none() => {
            let name = signal_name(sig);
            let region = match (bounds.detector, &bounds.region) {
                (Detector::Crash, Some(r)) => format!("; the bug is in {r}"),
                _ => String::new(),
            };
            Some((Status::Failed, format!("crashed: {what} was killed by {name}{region}")))
        }
        _ => None,
    }
}

/// "SIGSEGV (segmentation fault)".
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => {
            "SIGSEGV (segmentation fault: a bad address dereferenced on the host)".into()
        }
        libc::SIGBUS => "SIGBUS (bus error: an address the host cannot access)".into(),
        libc::SIGABRT => "SIGABRT (abort)".into(),
        libc::SIGFPE => "SIGFPE (arithmetic error)".into(),
        libc::SIGILL => "SIGILL (illegal instruction)".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGXFSZ => "SIGXFSZ (a file over the size limit)".into(),
        s => format!("signal {s}"),
    }
}

/// Whether a plain run died the way a crash exercise's does: a host memory fault.
pub fn is_host_fault(f: &Finished) -> bool {
    matches!(f.exit, Exit::Signal(s) if s == libc::SIGSEGV || s == libc::SIGBUS)
}

/// A sanitizer run passes when the tool reports nothing and the program exits cleanly.
pub fn tool(name: impl Into<String>, stage: impl StageId, output: &Output) -> Option<Step> {
    let Output::Sanitized {
        tool,
        run,
        findings: found,
        bounds,
    } = output
    else {
        return None;
    };
    let name = name.into();
    let run = match run {
        Ok(r) => r,
        Err(e) => return Some(Step::new(name, Status::ToolError, e.to_string()).stage(stage)),
    };
    let f = &run.finished;
    let step = match (f.exit, found.is_empty()) {
        (Exit::TimedOut, _) => {
            let (status, why) = stopped(f, bounds, found, &format!("the program under {tool}"))
                .expect("a timed-out run is stopped");
            Step::new(name, status, why)
        }
        (_, false) => Step::new(
            name,
            Status::Failed,
            format!(
                "{tool} reported {} of {} kind(s)",
                sanitizer::records_text(run.records.len()),
                found.len()
            ),
        ),
        _ if left_running(f).is_some() => {
            Step::new(name, Status::Failed, left_running(f).unwrap_or_default()).detail(f.output())
        }
        // The program's doing, not the tool's: killed over its share of a shared GPU's memory.
        _ if f.gpu_memory_over.is_some() => Step::new(
            name,
            Status::Failed,
            format!("the program under {tool} was {}", f.describe_exit()),
        ),
        _ if run.tool_failed() => Step::new(
            name,
            Status::ToolError,
            format!("{tool} failed ({})", f.describe_exit()),
        )
        .detail(f.output()),
        (Exit::Code(0), true) => Step::new(name, Status::Passed, format!("{tool}: no errors")),
        (_, true) => Step::new(
            name,
            Status::Failed,
            format!(
                "the program failed under {tool} ({}) with no {tool} record",
                f.describe_exit()
            ),
        )
        .detail(f.stderr.text()),
    };
    Some(step.command(run.command.clone()).wall(f.wall).stage(stage))
}

/// A plain run on every case: it must exit cleanly, leave nothing running, and every output must
/// match the Rust reference within the tolerance (an element still holding the poison was never
/// written).
pub fn correctness(
    name: impl Into<String>,
    stage: impl StageId + Copy,
    output: &Output,
    cases: &Cases,
    tol: Tolerance,
) -> Option<Step> {
    let Output::Ran {
        command,
        run,
        outputs,
        bounds,
    } = output
    else {
        return None;
    };
    let name = name.into();
    let finished = match run {
        Ok(f) => f,
        Err(e) => return Some(Step::new(name, Status::ToolError, e.to_string()).stage(stage)),
    };
    let step = |status, summary: String| {
        Step::new(&name, status, summary)
            .command(command.clone())
            .wall(finished.wall)
            .stage(stage)
    };
    if let Some((status, why)) = stopped(finished, bounds, &[], "the program") {
        return Some(step(status, why).detail(finished.output()));
    }
    if finished.exit != Exit::Code(0) {
        return Some(
            step(
                Status::Failed,
                format!("the program failed ({})", finished.describe_exit()),
            )
            .detail(finished.output()),
        );
    }
    if let Some(left) = left_running(finished) {
        return Some(step(Status::Failed, left));
    }
    let mut worst = 0f64;
    for (c, path) in cases.cases.iter().zip(outputs) {
        match case_outputs(c, path, tol) {
            Ok(err) => worst = worst.max(err),
            Err(why) => return Some(step(Status::Failed, why.to_string())),
        }
    }
    Some(step(
        Status::Passed,
        format!(
            "{} cases match the reference (max abs error {worst:.2e})",
            cases.cases.len()
        ),
    ))
}

/// What is wrong with one case's outputs, as the correctness step says it ("case `...`: ...").
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("case `{case}`: cannot read the outputs: {source}")]
    Unreadable {
        case: String,
        source: std::io::Error,
    },
    /// A buffer is missing or has another type or length.
    #[error("case `{case}`: {why}")]
    Shape { case: String, why: String },
    /// An element differs from the reference; `poisoned`: it still holds the poison, never written.
    #[error(
        "case `{case}`: {}[{}] = {} but the reference says {}{}; {} of {} elements wrong, max error {:.3e}",
        .mismatch.buffer, .mismatch.index, .mismatch.got, .mismatch.expected,
        if *.poisoned { " (never written: still the poison pattern)" } else { "" },
        .mismatch.bad_count, .mismatch.len, .mismatch.max_abs_error
    )]
    Mismatch {
        case: String,
        mismatch: compare::Mismatch,
        poisoned: bool,
    },
}

/// One case's outputs against the reference: the largest error, or what is wrong (an element still
/// holding the poison was never written).
pub fn case_outputs(
    c: &crate::exercise::cases::PreparedCase,
    path: &std::path::Path,
    tol: Tolerance,
) -> Result<f64, CaseError> {
    let case = c.name.clone();
    let got = data::read_outputs(path).map_err(|source| CaseError::Unreadable {
        case: case.clone(),
        source,
    })?;
    match compare::compare(&c.expected, &got, tol) {
        Comparison::Equal { max_abs_error } => Ok(max_abs_error),
        Comparison::Shape(why) => Err(CaseError::Shape { case, why }),
        Comparison::Mismatch(m) => {
            let poisoned = got
                .iter()
                .find(|b| b.name == m.buffer)
                .is_some_and(|b| compare::is_poison(&b.data, m.index));
            Err(CaseError::Mismatch {
                case,
                mismatch: m,
                poisoned,
            })
        }
    }
}

/// Whether a plain run's step is the evidence its exercise's detector asks for: wrong outputs, the
/// hang (killed at the hang's limit), the host crash. For the learner's report and verify's example.
pub fn run_shows(detector: Detector, step: &Step) -> bool {
    match detector {
        Detector::WrongOutput => is_wrong_output(step),
        Detector::Hang => step.status == Status::Hung,
        Detector::Crash => step.status == Status::Failed && step.summary.starts_with("crashed: "),
        Detector::Sanitizer | Detector::Speed => false,
    }
}

/// Whether a correctness step failed on wrong outputs (a "case `...`: ..." mismatch), rather than a
/// crash, a timeout or unreadable outputs.
pub fn is_wrong_output(step: &Step) -> bool {
    step.status == Status::Failed
        && step.summary.starts_with("case `")
        && !step.summary.contains(": cannot read the outputs")
}

/// A time and the ratio target it is held to.
pub fn within_target(ratio: f64, max: f64) -> Status {
    if ratio <= max {
        Status::Passed
    } else {
        Status::Failed
    }
}

/// Why a version has no time, in the words every report gives (perf's summary, the verdicts,
/// verify's, the speed judge's): one type, so that each reason reads the same wherever it shows.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Untimed {
    /// No timing stage ran for it.
    #[error("not timed")]
    NotTimed,
    /// Its timing stage did not run (why, `Blocked`'s words).
    #[error("{0}")]
    NotRun(String),
    /// The program left processes running (`Finished::left_running`), whatever ncu measured.
    #[error("{0}")]
    LeftRunning(String),
    /// ncu ran and gave no time: the tool's own failure, or `Measured::why_untimed`.
    #[error("{0}")]
    Unmeasured(String),
    /// ncu could not profile it at all.
    #[error("{0}")]
    Profile(String),
    /// The call timing timed no judged call.
    #[error("the harness timed no call")]
    NoCall,
    /// The call timing failed (`Output::Called`'s failure), or left no call times.
    #[error("{}", .0.as_deref().unwrap_or("the harness wrote no call times"))]
    CallFailed(Option<String>),
    /// No call timing ran for it.
    #[error("the whole call was not timed")]
    CallNotTimed,
    /// Where the clock is the call, the whole call has no time: why.
    #[error("no whole-call time: {0}")]
    NoWholeCall(Box<Untimed>),
    /// The library baseline needs ncu, and there is none.
    #[error("ncu not found")]
    NoNcu,
    /// The library baseline did not build.
    #[error("cannot build the cuBLAS baseline: {0}")]
    BaselineBuild(String),
    /// ncu profiled the library baseline and gave no time.
    #[error("ncu could not time cuBLAS: {0}")]
    Baseline(Box<Untimed>),
}

impl Untimed {
    /// Why ncu's measurement `m` has no time: the tool's failure, else what the run shows.
    pub fn unmeasured(m: &crate::tools::ncu::Measured) -> Untimed {
        Untimed::Unmeasured(m.tool_failure.clone().unwrap_or_else(|| m.why_untimed()))
    }
}

/// The time of a timing stage's output, or why there is none.
pub fn measured_time(output: Option<&Output>) -> Result<f64, Untimed> {
    match output {
        Some(Output::Timed {
            measured: Ok(m), ..
        }) => match (m.nanoseconds, left_running(&m.finished)) {
            (_, Some(left)) => Err(Untimed::LeftRunning(left)),
            (Some(ns), None) => Ok(ns),
            (None, None) => Err(Untimed::Unmeasured(m.why_untimed())),
        },
        Some(Output::Timed {
            measured: Err(e), ..
        }) => Err(Untimed::Profile(e.to_string())),
        Some(Output::NotRun(b)) => Err(Untimed::NotRun(b.to_string())),
        _ => Err(Untimed::NotTimed),
    }
}

/// ncu's own failure (no permission to the counters, say), where every timing stage shows one: the
/// caller reports it once, as a tool error.
pub fn profiler_failure<'a>(outputs: impl IntoIterator<Item = &'a Output>) -> Option<String> {
    let mut first = None;
    for o in outputs {
        match o {
            Output::Timed {
                measured: Ok(m), ..
            } => match &m.tool_failure {
                Some(log) => {
                    first = first.or(Some(format!(
                        "ncu {}: {log}\n{}",
                        m.finished.describe_exit(),
                        m.finished.output()
                    )))
                }
                None => return None,
            },
            _ => return None,
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::sanitizer::SourceLocation;

    fn finished(exit: Exit) -> Finished {
        Finished::ended(exit, Default::default())
    }

    fn ran(exit: Exit, detector: Detector) -> Output {
        let bounds = Bounds {
            limit: std::time::Duration::from_secs(3),
            detector,
            region: Some("region `wait` (barrier.cu:20-31)".into()),
            after_stall: false,
        };
        Output::Ran {
            command: "prog".into(),
            run: Ok(finished(exit)),
            outputs: Vec::new(),
            bounds,
        }
    }

    fn deadlock() -> Finding {
        let at = SourceLocation {
            path: "/w/barrier.cu".into(),
            line: 27,
            function: None,
            role: "access".into(),
        };
        Finding {
            tool: Tool::Racecheck,
            kind: FindingKind::Deadlock,
            text: "Deadlock detected".into(),
            level: None,
            records: 1,
            hazards: None,
            thread: None,
            block: None,
            locations: vec![at],
            region: Some("wait".into()),
            threads: 1,
            blocks: 1,
        }
    }

    #[test]
    fn a_hang_exercise_that_times_out_is_hung_and_says_where_the_threads_wait() {
        let step = correctness(
            StepName::Correctness,
            StageKind::Correctness,
            &ran(Exit::TimedOut, Detector::Hang),
            &Cases::default(),
            Tolerance {
                atol: 0.0,
                rtol: 0.0,
            },
        )
        .unwrap();
        assert_eq!(step.status, Status::Hung);
        assert_eq!(step.summary, "hung: the threads wait in region `wait` (barrier.cu:20-31); the program was killed after 3.0 s");
        assert_eq!(
            Outcome::from_steps(std::slice::from_ref(&step)),
            Outcome::Hung {
                step: "correctness".into(),
                message: step.summary.clone()
            }
        );
        assert_eq!(
            Outcome::from_steps(&[step]).exit(),
            ExitStatus::Timeout,
            "a hang is still the documented timeout exit"
        );
        // The tool's deadlock record is named with it.
        let f = finished(Exit::TimedOut);
        let bounds = Bounds {
            limit: std::time::Duration::from_secs(3),
            detector: Detector::Hang,
            region: Some("region `wait`".into()),
            after_stall: false,
        };
        let (_, why) = stopped(&f, &bounds, &[deadlock()], "the program under racecheck").unwrap();
        assert!(
            why.ends_with("; racecheck reports a deadlock at barrier.cu:27"),
            "{why}"
        );
        // Elsewhere a timeout stays a timeout, naming the deadlock record where there is one.
        let (status, why) = stopped(
            &f,
            &Bounds {
                detector: Detector::Sanitizer,
                ..bounds
            },
            &[deadlock()],
            "the program",
        )
        .unwrap();
        assert_eq!(status, Status::TimedOut);
        assert!(
            why.contains("it hangs; racecheck reports a deadlock at barrier.cu:27"),
            "{why}"
        );
        // A tool that stalled beside others and again alone, where the plain run finished.
        let stalled = Bounds {
            detector: Detector::Sanitizer,
            region: None,
            after_stall: true,
            ..bounds
        };
        let (status, why) = stopped(&f, &stalled, &[], "the program under initcheck").unwrap();
        assert_eq!(status, Status::TimedOut);
        assert!(
            why.contains("nor alone within 3 s") && why.contains("hangs only under the tool"),
            "{why}"
        );
        // Cut beside the others at their pace (`engine::pace`), long before its own 90 s.
        let cut = Finished::ended(Exit::TimedOut, std::time::Duration::from_secs(31));
        let beside = Bounds {
            limit: std::time::Duration::from_secs(90),
            after_stall: false,
            ..stalled
        };
        let (status, why) = stopped(&cut, &beside, &[], "the program under racecheck").unwrap();
        assert_eq!(status, Status::TimedOut);
        assert!(
            why.starts_with("the program under racecheck was still running 31 s after it started, when every other run of the same tool beside it had ended"),
            "{why}"
        );
    }

    #[test]
    fn a_build_step_is_named_after_its_first_flag() {
        for flavor in Flavor::BOTH {
            assert_eq!(
                StepName::Build(flavor).to_string(),
                format!("build {}", flavor.flags()[0])
            );
        }
    }

    #[test]
    fn a_finding_is_in_its_region_by_its_line_or_for_a_device_heap_leak_by_having_none() {
        let mut f = deadlock();
        assert!(in_region(&f, "wait") && !in_region(&f, "bug"));
        f.kind = FindingKind::HeapLeak;
        f.region = None;
        assert!(
            !in_region(&f, "bug"),
            "a leak record with a line outside the region is not in it"
        );
        f.locations.clear();
        assert!(
            in_region(&f, "bug"),
            "the tool names no line for a device-heap leak"
        );
        f.kind = FindingKind::Leak;
        assert!(
            !in_region(&f, "bug"),
            "a cudaMalloc leak names its allocation's line"
        );
    }

    #[test]
    fn a_crash_names_the_signal_and_for_a_crash_exercise_the_region() {
        let step = correctness(
            StepName::Correctness,
            StageKind::Correctness,
            &ran(Exit::Signal(libc::SIGSEGV), Detector::Crash),
            &Cases::default(),
            Tolerance {
                atol: 0.0,
                rtol: 0.0,
            },
        )
        .unwrap();
        assert_eq!(step.status, Status::Failed);
        assert!(
            step.summary
                .starts_with("crashed: the program was killed by SIGSEGV")
                && step
                    .summary
                    .ends_with("; the bug is in region `wait` (barrier.cu:20-31)"),
            "{}",
            step.summary
        );
        assert!(
            is_host_fault(&finished(Exit::Signal(libc::SIGBUS)))
                && !is_host_fault(&finished(Exit::Signal(libc::SIGABRT)))
                && !is_host_fault(&finished(Exit::Code(1)))
        );
        // A program that ran to its end is not stopped, whatever its exit status.
        assert!(stopped(
            &finished(Exit::Code(3)),
            &Bounds::plain(std::time::Duration::from_secs(1)),
            &[],
            "it"
        )
        .is_none());
    }

    #[test]
    fn a_run_killed_for_the_gpu_memory_it_held_says_so_and_did_not_crash() {
        let mut f = finished(Exit::Signal(libc::SIGKILL));
        f.gpu_memory_over = Some(crate::tools::gpu_memory::GpuMemoryOver {
            held: 120 << 30,
            share: 8 << 30,
            total: 140 << 30,
        });
        let bounds = Bounds::plain(std::time::Duration::from_secs(1));
        assert!(
            stopped(&f, &bounds, &[], "the program").is_none(),
            "not a crash"
        );
        assert_eq!(
            f.describe_exit(),
            "killed: it held 120.0 GiB of the GPU's 140.0 GiB while other runs shared it, over a shared run's 8.0 GiB (the GPU's memory shared evenly by the runs at once; CUDABUGS_SANITIZER_JOBS sets how many)"
        );
        let under_the_tool = Output::Sanitized {
            tool: Tool::Memcheck,
            run: Ok(crate::tools::sanitizer::ToolRun {
                tool: Tool::Memcheck,
                command: String::new(),
                records: Vec::new(),
                xml_path: Default::default(),
                finished: f.clone(),
            }),
            findings: Vec::new(),
            bounds,
        };
        let stage = crate::engine::plan::StageKind::Sanitize(Tool::Memcheck);
        let step = tool("memcheck", stage, &under_the_tool).unwrap();
        assert_eq!(
            step.status,
            Status::Failed,
            "the program's doing, not a tool error"
        );
        assert!(
            step.summary
                .starts_with("the program under memcheck was killed: it held 120.0 GiB"),
            "{}",
            step.summary
        );
    }
}
