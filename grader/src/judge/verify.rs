//! `verify`: the workbook's self-check. Every exercise must fail for its intended reason (its named
//! tool reports the expected kind of record inside the marked region, or, where no tool sees the
//! bug class, its plain run gives wrong outputs; a performance exercise is clean, correct and misses
//! its speedup target) and every solution must pass all four tools, the correctness check and its
//! speed target (and, for the performance track, its metric goals). Produces a verification record; `--survey` adds what
//! every tool and plain runs said of each untouched exercise, and its time, for the book.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::exercise::cases::{self, Cases};
use crate::exercise::catalog;
use crate::exercise::manifest::{Detector, FindingKind, Tool, Track};
use crate::exercise::regions;
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::context::{self, Context};
use crate::judge::perf::{self, PerfSummary};
use crate::judge::plan::{self, Role, Stage, StageKind, Submission};
use crate::judge::sanitize::ToolStatus;
use crate::judge::scheduler::{self, Results};
use crate::judge::speed;
use crate::judge::stages::Output;
use crate::judge::verdict::{self, Finding, Outcome, Status, Step};
use crate::tools::gpu::GpuInfo;
use crate::tools::nvcc::Flavor;
use crate::tools::sandbox::Level;
use crate::tools::toolchain;

pub const RECORD_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolVersions {
    pub nvcc: Option<String>,
    pub compute_sanitizer: Option<String>,
    pub ncu: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyTiming {
    pub kernels: Vec<String>,
    /// The untouched exercise (None where it crashed or ncu saw no launch).
    pub original_ns: Option<f64>,
    /// The solution.
    pub reference_ns: f64,
    /// The solution again, in a second process: the noise floor of the ratio (--survey only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_ratio: Option<f64>,
    /// The slowest over the fastest of the bench's repeats inside the solution's one ncu process
    /// (none where the bench runs once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_spread: Option<f64>,
    pub speedup_over_original: Option<f64>,
    pub max_ratio_to_reference: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExerciseRecord {
    pub id: String,
    pub title: String,
    pub bug_class: String,
    /// The tool that must flag the untouched exercise (none where the cases are the detector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Tool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_kind: Option<FindingKind>,
    #[serde(default)]
    pub detector: Detector,
    pub region: String,
    pub checks: Vec<Step>,
    /// The finding that shows the exercise fails for its intended reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<Finding>,
    /// What the named tool printed on the untouched exercise (the text a learner sees).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_output: Option<String>,
    /// Whether a plain run of the untouched exercise (-O3) gave right answers: the bug is silent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plain_run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plain_run_correct: Option<bool>,
    /// Plain runs of the untouched exercise, each a fresh process: how often the bug was silent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plain_runs: Option<PlainRuns>,
    /// What each of the four tools said of the untouched exercise: the "which tool catches what"
    /// table of the book is drawn from these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub original_under_tools: Vec<ToolSighting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<VerifyTiming>,
    /// The track (records before the performance track are all bugs).
    #[serde(default)]
    pub track: Track,
    /// A performance exercise: the original, the solution (and a library baseline) under ncu in one
    /// run, with this GPU's measured peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf: Option<PerfSummary>,
    /// Not applicable on this GPU, and why ("needs compute capability 9.0 (Hopper); this GPU, ...
    /// is 8.0"): nothing of it ran but the manifest's checks, and it counts neither as a pass nor
    /// as a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl ExerciseRecord {
    /// "n/a" for an exercise this GPU cannot run, else the outcome's label.
    pub fn label(&self) -> &'static str {
        if self.not_applicable.is_some() {
            "n/a"
        } else {
            self.outcome.label()
        }
    }

    /// The untouched exercise's ncu time, from either track's timing.
    pub fn original_ns(&self) -> Option<f64> {
        self.timing
            .as_ref()
            .and_then(|t| t.original_ns)
            .or_else(|| self.perf_version("original").map(|v| v.nanoseconds))
    }

    /// The solution's ncu time, from either track's timing.
    pub fn reference_ns(&self) -> Option<f64> {
        self.timing
            .as_ref()
            .map(|t| t.reference_ns)
            .or_else(|| self.perf_version("reference").map(|v| v.nanoseconds))
    }

    /// What showed the exercise's problem, in a few words for tables: the tool's record at its
    /// line, the hang or the crash with its region, wrong outputs, or the performance gap.
    pub fn evidence(&self) -> String {
        if let Some(f) = &self.finding {
            return match f.locations.first() {
                Some(l) => format!("{} at {}", f.kind, l.short()),
                None => format!("{} (no line)", f.kind),
            };
        }
        if let Some(r) = self.perf_version("reference") {
            let target = self
                .perf
                .as_ref()
                .map(|p| format!(" (>= {:.2}x)", p.target_speedup))
                .unwrap_or_default();
            return format!("slow: the fix is {:.2}x{target}", r.speedup);
        }
        // The plain runs' own check says it: "5 of 5 plain runs hung: ...".
        let stopped = |name: &str| {
            self.checks
                .iter()
                .find(|c| c.name == name && c.status == Status::Passed)
                .is_some()
        };
        match self.detector {
            Detector::WrongOutput => "wrong output (no tool sees it)".into(),
            Detector::Hang if stopped("exercise hangs") => format!("hangs in `{}`", self.region),
            Detector::Crash if stopped("exercise crashes") => {
                format!("crashes in `{}`", self.region)
            }
            _ => "-".into(),
        }
    }

    /// One version of a performance exercise's record.
    pub fn perf_version(&self, name: &str) -> Option<&crate::judge::perf::VersionPerf> {
        self.perf.as_ref().and_then(|p| p.version(name))
    }
}

/// How many plain runs of the untouched exercise gave right outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlainRuns {
    pub runs: u32,
    pub correct: u32,
    /// Runs that crashed or timed out (neither right nor merely wrong).
    pub failed: u32,
}

/// One tool's verdict on the untouched exercise.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolSighting {
    pub tool: Tool,
    pub status: ToolStatus,
    /// The kinds it reported, each with the region it pointed into ("-" for none).
    pub kinds: Vec<String>,
    /// Whether it reported something inside the exercise's expected region (where the bug is, or
    /// where its tool must point).
    pub in_bug_region: bool,
}

/// How many times `verify --survey` runs each untouched exercise plainly.
pub const PLAIN_RUNS: u32 = 5;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerificationRecord {
    pub schema: u32,
    pub created: String,
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuInfo>,
    pub arch: String,
    /// The sandbox every program ran in (absent in records made before the sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Level>,
    pub driver_version: Option<String>,
    pub tools: ToolVersions,
    pub wall_seconds: f64,
    /// Where the wall time went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<Phases>,
    pub exercises: Vec<ExerciseRecord>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Where the wall time of `verify` went, in seconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Phases {
    /// From the start until every build had finished.
    pub builds_done_at: f64,
    /// From the start until every sanitizer and program run had finished (each starts as soon as
    /// its binary is built, so they overlap the builds); none without a GPU.
    pub runs_done_at: Option<f64>,
    /// From the start until the runs' outputs and findings were judged (the cases compared with
    /// the references, the tools' reports read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_at: Option<f64>,
    /// The ncu phase after them.
    pub timing: Option<f64>,
    /// The whole calls after it (with their timelines, where the clock is the call), one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<f64>,
    /// The judgement of the timed runs after them (each call's outputs compared with the reference
    /// fix's, the rules, the library baselines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judging_timed: Option<f64>,
    /// Where the time went, by kind of stage: each run's own seconds (they overlap).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_kind: Vec<KindTime>,
}

/// The runs of one kind of stage in a plan: how many, their seconds added up, the longest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KindTime {
    /// The stage's id without its run number: "build-debug", "sanitize:racecheck", "timing".
    pub kind: String,
    pub runs: usize,
    pub secs: f64,
    pub longest_secs: f64,
    /// Whose run was the longest: "63-transfers reference".
    pub longest: String,
}

/// `spent` summed by kind of stage, the kind with the most seconds first.
pub fn time_by_kind(spent: &[scheduler::Spent]) -> Vec<KindTime> {
    let mut by: BTreeMap<String, KindTime> = BTreeMap::new();
    for s in spent {
        let Some(kind) = s.kind else { continue };
        let k = by.entry(kind.id()).or_insert_with(|| KindTime {
            kind: kind.id(),
            ..KindTime::default()
        });
        k.runs += 1;
        k.secs += s.secs;
        if s.secs > k.longest_secs {
            k.longest_secs = s.secs;
            let variant = s.stage.split(' ').next().unwrap_or_default();
            k.longest = format!("{} {variant}", s.name);
        }
    }
    let mut all: Vec<KindTime> = by.into_values().collect();
    all.sort_by(|a, b| b.secs.total_cmp(&a.secs));
    all
}

#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Copy the raw tool outputs (XML, CSV) here: the material for test fixtures.
    pub keep: Option<PathBuf>,
    /// Survey the untouched exercises too: all four tools, PLAIN_RUNS plain runs and ncu, and the
    /// solution under ncu in a second process, for the book. Without it, verify runs what proving
    /// the workbook needs: the exercise under its own tool (or, where the cases are the detector,
    /// once plainly), the solution under all four tools, on the cases and once under ncu.
    pub survey: bool,
}

/// One exercise on its way through the plan: its record, and where its two submissions are.
struct Work<'a> {
    ex: &'a Exercise,
    record: ExerciseRecord,
    texts: Option<(String, String)>,
}

/// Phase 1 of `verify` for one exercise: its manifest, regions and texts checked, its cases
/// written where it will run, and its record begun.
fn prepare<'a>(
    ctx: &Context,
    wb: &Workbook,
    ex: &'a Exercise,
    gpu_stages: bool,
) -> (Work<'a>, Option<Cases>) {
    let m = &ex.manifest.manifest;
    let (checks, texts) = disk_checks(wb, ex);
    // A sound exercise this GPU is too old for is not applicable: no builds, no runs.
    let not_applicable = texts.as_ref().and_then(|_| ctx.unsupported(&ex.manifest));
    let cases = match (&texts, gpu_stages) {
        _ if not_applicable.is_some() => None,
        (None, _) => None,
        (Some(_), true) => cases::prepare(ex, &cases::dir(wb, ex)).ok(),
        (Some(_), false) => Some(Cases::default()),
    };
    let w = Work {
        ex,
        record: ExerciseRecord {
            id: ex.id().to_string(),
            title: m.title.clone(),
            bug_class: m.bug_class.clone(),
            tool: ex.manifest.expected_finding().map(|(t, _)| t),
            expected_kind: ex.manifest.expected_finding().map(|(_, k)| k),
            detector: ex.manifest.detector(),
            region: ex.manifest.region().get_ref().clone(),
            checks,
            finding: None,
            tool_output: None,
            plain_run: None,
            plain_run_correct: None,
            plain_runs: None,
            original_under_tools: Vec::new(),
            timing: None,
            track: ex.manifest.track(),
            perf: None,
            not_applicable,
            outcome: Outcome::Pass,
        },
        texts,
    };
    (w, cases)
}

/// Phase 2's verdicts for one exercise (`subjects`: its untouched and solution submissions) from
/// the runs in `results`: whether the untouched file is caught for its intended reason, and the
/// solution is clean and correct.
#[allow(clippy::too_many_arguments)]
fn record_runs(
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
        let reason = ctx
            .gpu_blocked()
            .map(|r| (Status::Skipped, crate::judge::verdict::GPU_SKIPPED, r))
            .unwrap_or((
                Status::ToolError,
                "tools",
                "compute-sanitizer not found".into(),
            ));
        w.record
            .checks
            .push(Step::new(reason.1, reason.0, reason.2));
        return;
    }
    let bug_region = w.record.region.clone();
    for t in Tool::ALL {
        let stage = Stage::new(ex, StageKind::Sanitize(t));
        let Some(o @ Output::Sanitized { run, findings, .. }) = results.get_run(&stage) else {
            continue;
        };
        // The XML the parser refused is kept too: it is what the parser must learn to read.
        let xml = match run {
            Ok(r) => Some(&r.xml_path),
            Err(crate::tools::sanitizer::RunError::Parse(_, path)) => Some(path),
            Err(_) => None,
        };
        if let Some(xml) = xml {
            keep(opts, xml, &format!("{}-exercise-{t}.xml", w.ex.id()));
        }
        let tool_step = verdict::tool("exercise", &stage.id(), o).expect("a sanitizer output");
        if opts.survey {
            w.record
                .original_under_tools
                .push(sighting(t, &tool_step, findings, &bug_region));
        }
        if w.record.track == Track::Perf {
            w.record
                .checks
                .extend(verdict::tool(&format!("exercise {t}"), &stage.id(), o));
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
    for t in Tool::ALL {
        let s = Stage::new(sol, StageKind::Sanitize(t));
        if let Some(o) = results.get_run(&s) {
            w.record
                .checks
                .extend(verdict::tool(&format!("solution {t}"), &s.id(), o));
        }
    }
    let plain_outputs: Vec<&Output> = (0..plain_runs)
        .filter_map(|r| results.get_run(&Stage::again(ex, StageKind::Correctness, r)))
        .collect();
    let plain: Vec<Step> = plain_outputs
        .iter()
        .filter_map(|o| {
            verdict::correctness("exercise plain run", "correctness", o, cases, m.tolerance)
        })
        .collect();
    if let Some(first) = plain.first() {
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
                    .push(stop_step(w.record.detector, &plain_outputs, &plain))
            }
            Detector::Sanitizer => {}
        }
    }
    if let Some(o) = results.get(sol, StageKind::Correctness) {
        w.record.checks.extend(verdict::correctness(
            "solution correctness",
            "correctness",
            o,
            cases,
            m.tolerance,
        ));
    }
}

/// Phase 3 of `verify`: ncu times what `timing_stages` names of each exercise in `with_cases`
/// whose other checks all passed, and the timing verdicts join their records. How long the
/// profiler ran, where it ran.
#[allow(clippy::too_many_arguments)]
fn time_exercises(
    ctx: &Context,
    wb: &Workbook,
    opts: &VerifyOptions,
    work: &mut [Work],
    with_cases: &[usize],
    subs: &[Submission],
    results: &mut Results,
    started: Instant,
    say: &mut dyn FnMut(&str),
) -> TimedPhases {
    let timed: Vec<usize> = with_cases
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
        .collect();
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
    // The library baselines under ncu beside the versions' runs (ncu's lock times their kernels one
    // at a time, as theirs), measured once each for `perf_steps`.
    let with_baseline: Vec<&Exercise> = timed
        .iter()
        .map(|&k| work[k].ex)
        .filter(|ex| {
            ex.manifest
                .manifest
                .perf
                .as_ref()
                .is_some_and(|p| p.baseline.is_some())
        })
        .collect();
    for ex in &with_baseline {
        say(&format!("{}: timing the library baseline", ex.id()));
    }
    let (timeline, baselines) = std::thread::scope(|scope| {
        let measuring = scope.spawn(|| {
            with_baseline
                .iter()
                .map(|ex| (ex.id(), perf::time_baseline(ctx, wb, ex)))
                .collect::<BTreeMap<&str, _>>()
        });
        let timeline = scheduler::execute(ctx, wb, subs, &stages, results, started);
        let baselines = measuring
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (timeline, baselines)
    });
    let outputs: Vec<&Output> = stages.iter().filter_map(|s| results.get_run(s)).collect();
    let tool_failure = verdict::profiler_failure(outputs.iter().copied());
    let wall = std::time::Duration::from_secs_f64(timeline.profiler.unwrap_or(0.0));
    let peak = timed
        .iter()
        .any(|&k| work[k].record.track == Track::Perf)
        .then(|| perf::peak(ctx, wb, false));
    // Each exercise's timed runs judged beside the others', a few at a time: the speed judge reads
    // and compares every call's outputs twice (as the original and as the solution), up to 256 MiB
    // a call.
    let judging = Instant::now();
    let results: &Results = results;
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
        let k = *k;
        let steps = match (&tool_failure, w.record.track, &peak) {
            (Some(f), _, _) => {
                vec![Step::new("solution timing", Status::ToolError, f.clone()).stage("timing")]
            }
            (None, Track::Bug, _) => timing_steps(w, results, pair(k), opts),
            (None, Track::Perf, Some(Err(e))) => vec![Step::new(
                "solution timing",
                Status::ToolError,
                format!("cannot measure this GPU's peak: {e}"),
            )
            .stage("timing")],
            (None, Track::Perf, Some(Ok(peak))) => {
                let baseline = baselines.get(w.ex.id()).cloned().unwrap_or(Ok(None));
                perf_steps(baseline, w, results, pair(k), peak, opts)
            }
            (None, Track::Perf, None) => {
                unreachable!("the peak is measured where a performance exercise is timed")
            }
        };
        w.record
            .checks
            .extend(steps.into_iter().map(|s| s.wall(wall)));
    });
    for sub in subs {
        crate::judge::stages::forget_calls(sub);
    }
    TimedPhases {
        profiler: timeline.profiler,
        exclusive: timeline.exclusive,
        judging: Some(judging.elapsed().as_secs_f64()),
    }
}

/// How many plain runs of an untouched exercise: `PLAIN_RUNS` for the survey, else one.
fn plain_runs(opts: &VerifyOptions) -> u32 {
    if opts.survey {
        PLAIN_RUNS
    } else {
        1
    }
}

/// Each exercise's two subjects, the untouched exercise then its solution (`pair`), on its cases.
fn subjects<'a>(
    wb: &Workbook,
    work: &[Work<'a>],
    case_sets: &'a [Option<Cases>],
    empty: &'a Cases,
) -> Vec<Submission<'a>> {
    work.iter()
        .zip(case_sets)
        .flat_map(|(w, cases)| {
            let (exercise, solution) = w.texts.clone().unwrap_or_default();
            let cases = cases.as_ref().unwrap_or(empty);
            [
                Submission::new(
                    wb,
                    "verify",
                    w.ex,
                    "original",
                    wb.learner_path(w.ex),
                    exercise,
                    cases,
                ),
                Submission::new(
                    wb,
                    "verify",
                    w.ex,
                    "reference",
                    wb.solution_path(w.ex),
                    solution,
                    cases,
                ),
            ]
        })
        .collect()
}

/// Phase 2's stages, as data: the builds on the CPU cores and, as each binary is ready, its GPU
/// runs: the exercise under the tool that must flag it (with --survey under all four, for the
/// record of which tool sees what) or plainly where the cases are its detector; the solution
/// under all four tools and on the cases. The exercises under their tools go first: the longest
/// runs (every bad access costs the tool time).
fn first_stages(
    work: &[Work],
    with_cases: &[usize],
    gpu_stages: bool,
    opts: &VerifyOptions,
) -> Vec<Stage> {
    let plain_runs = plain_runs(opts);
    let mut stages = Vec::new();
    for &k in with_cases {
        let (ex, sol) = pair(k);
        stages.extend(
            [
                StageKind::Build(Flavor::Sanitize),
                StageKind::Build(Flavor::Timing),
            ]
            .into_iter()
            .flat_map(|b| [Stage::new(ex, b), Stage::new(sol, b)]),
        );
    }
    if gpu_stages {
        for &k in with_cases {
            // A performance exercise's original must be clean under every tool: it is correct, only slow.
            let all = opts.survey || work[k].record.track == Track::Perf;
            let tools: Vec<Tool> = if all {
                work[k].ex.manifest.tools()
            } else {
                work[k].record.tool.into_iter().collect()
            };
            stages.extend(
                tools
                    .into_iter()
                    .map(|t| Stage::new(pair(k).0, StageKind::Sanitize(t))),
            );
        }
        for &k in with_cases {
            let (ex, sol) = pair(k);
            stages.extend(
                work[k]
                    .ex
                    .manifest
                    .tools()
                    .into_iter()
                    .map(|t| Stage::new(sol, StageKind::Sanitize(t))),
            );
            // A plain run of the untouched exercise proves something only where the cases are the
            // detector; elsewhere it tells the book whether the bug is silent (--survey).
            if opts.survey || work[k].record.detector != Detector::Sanitizer {
                stages.extend((0..plain_runs).map(|r| Stage::again(ex, StageKind::Correctness, r)));
            }
            stages.push(Stage::new(sol, StageKind::Correctness));
        }
    }
    stages
}

/// The exercise's and the solution's build steps.
fn build_steps(ctx: &Context, results: &Results, (ex, sol): (usize, usize)) -> Vec<Step> {
    let mut steps = Vec::new();
    for (i, who) in [(ex, "exercise"), (sol, "solution")] {
        for flavor in Flavor::BOTH {
            let output = results
                .get(i, StageKind::Build(flavor))
                .expect("every build ran");
            steps.extend(verdict::build(
                &format!("{who} build {}", flavor.flags()[0]),
                output,
                flavor,
                &ctx.arch,
            ));
        }
    }
    steps
}

/// How many exercises' timed runs are judged at once (`time_exercises`): each holds the reference
/// fix's outputs of every call and four of the other's at a time, up to 2.3 GB for 52-bank-conflicts.
const JUDGED_AT_ONCE: usize = 4;

/// Where the time of `time_exercises` went, in seconds.
#[derive(Debug, Default)]
struct TimedPhases {
    profiler: Option<f64>,
    exclusive: Option<f64>,
    judging: Option<f64>,
}

/// Its two submissions' indices: the untouched exercise and the solution.
fn pair(k: usize) -> (usize, usize) {
    (2 * k, 2 * k + 1)
}

/// The manifest, the pristine exercise (the solution with `exercise-regions.cu` put back) and the
/// solution, read from disk; the texts come back where all are sound. The learner's working copy
/// must be the pristine exercise too: that is the file a new learner starts from.
fn disk_checks(wb: &Workbook, ex: &Exercise) -> (Vec<Step>, Option<(String, String)>) {
    let mut checks = Vec::new();
    let t = Instant::now();
    let loaded = match catalog::load(&wb.root, ex.id()) {
        Ok(d) => d,
        Err(e) => {
            return (
                vec![Step::new("manifest", Status::Failed, e.to_string())],
                None,
            )
        }
    };
    checks.push(
        Step::new(
            "manifest",
            Status::Passed,
            format!("{} is valid", loaded.manifest.path.display()),
        )
        .wall(t.elapsed()),
    );
    let (exercise, solution) = (loaded.original, loaded.solution);
    let expected = ex.manifest.region().get_ref();
    let regions_file = format!("solutions/{}/{}", ex.id(), catalog::ORIGINAL_REGIONS);
    let working_copy = std::fs::read_to_string(&loaded.exercise_path).ok();
    let step = match regions::parse(&exercise) {
        Err(e) => Step::new("regions", Status::Failed, format!("{regions_file}:{}: {}", e.line, e.message)),
        Ok(er) if !er.iter().any(|r| &r.name == expected) => Step::new("regions", Status::Failed, format!("the exercise has no region `{expected}`")),
        Ok(_) if exercise != ex.original || solution != ex.solution => Step::new(
            "regions",
            Status::Failed,
            "the exercise or solution on disk differs from the copy embedded in this binary: rebuild it (cargo build)",
        ),
        Ok(_) if working_copy.as_deref() != Some(exercise.as_str()) => Step::new(
            "regions",
            Status::Failed,
            format!(
                "{} is not the pristine exercise ({regions_file} put into the solution): keep the two in step, or `cargo xtask reset {}`",
                wb.display_path(&loaded.exercise_path),
                ex.id()
            ),
        ),
        Ok(er) => Step::new("regions", Status::Passed, format!("{} region(s); the exercise is the solution with {regions_file} put back", er.len())),
    };
    let sound = step.status == Status::Passed;
    checks.push(step);
    // The workbook's own fix must never look like a program that watches for the tools.
    checks.push(match crate::judge::tool_aware::workbook_clean(ex) {
        Ok(()) => Step::new(
            "tool-aware code",
            Status::Passed,
            "the solution's regions read no clock, environment or file and hook nothing",
        ),
        Err(why) => Step::new("tool-aware code", Status::Failed, why),
    });
    (checks, sound.then_some((exercise, solution)))
}

/// Verify `exercises`. `say` gets progress lines.
pub fn verify(
    ctx: &Context,
    wb: &Workbook,
    exercises: &[&Exercise],
    opts: &VerifyOptions,
    mut say: impl FnMut(&str) + Send,
) -> VerificationRecord {
    let started = Instant::now();
    let cores = ctx.config.cpu_jobs;
    let gpu_stages = ctx.gpu_stages() && ctx.tools.sanitizer.is_some();
    let plain_runs = plain_runs(opts);

    // Phase 1 (CPU): manifests, regions and inputs of every exercise, in parallel.
    say(&format!(
        "checking {} manifest(s) and writing the inputs",
        exercises.len()
    ));
    let (mut work, case_sets): (Vec<Work>, Vec<Option<Cases>>) =
        scheduler::parallel(exercises, cores, |ex| prepare(ctx, wb, ex, gpu_stages))
            .into_iter()
            .unzip();
    let with_cases: Vec<usize> = (0..work.len())
        .filter(|&k| case_sets[k].is_some())
        .collect();
    let empty = Cases::default();
    let subs = subjects(wb, &work, &case_sets, &empty);

    // Phase 2: the builds and, as each binary is ready, its GPU runs (`first_stages`).
    let stages = first_stages(&work, &with_cases, gpu_stages, opts);
    if gpu_stages {
        say(&format!(
            "building {} exercise(s) x 4 on {cores} cores; each binary goes under compute-sanitizer as soon as it is built ({} runs at a time; {})",
            with_cases.len(),
            ctx.config.gpu_jobs,
            ctx.isolation().describe()
        ));
    } else {
        say(&format!(
            "building {} exercise(s) x 4 on {cores} cores",
            with_cases.len()
        ));
    }
    let mut results = Results::default();
    let timeline = scheduler::execute(ctx, wb, &subs, &stages, &mut results, started);
    let mut phases = Phases {
        builds_done_at: timeline.builds_done_at,
        runs_done_at: timeline.runs_done_at,
        ..Phases::default()
    };

    for &k in &with_cases {
        let steps = build_steps(ctx, &results, pair(k));
        work[k].record.checks.extend(steps);
    }
    for &k in &with_cases {
        record_runs(
            ctx,
            opts,
            &mut work[k],
            &subs,
            &results,
            pair(k),
            gpu_stages,
            plain_runs,
        );
    }
    phases.judged_at = Some(started.elapsed().as_secs_f64());

    // Phase 3 (GPU): ncu times what `timing_stages` names of each exercise whose other checks all
    // passed, kernels one at a time, with nothing else on the GPU.
    if gpu_stages {
        let timed = time_exercises(
            ctx,
            wb,
            opts,
            &mut work,
            &with_cases,
            &subs,
            &mut results,
            started,
            &mut say,
        );
        phases.timing = timed.profiler;
        phases.calls = timed.exclusive;
        phases.judging_timed = timed.judging;
    }

    finished_record(ctx, work, &results, phases, started)
}

/// The record of a verify: each exercise's outcome from its checks, the machine, the tools and
/// where the time went.
fn finished_record(
    ctx: &Context,
    work: Vec<Work>,
    results: &Results,
    phases: Phases,
    started: Instant,
) -> VerificationRecord {
    let exercises: Vec<ExerciseRecord> = work
        .into_iter()
        .map(|mut w| {
            w.record.outcome = match &w.record.not_applicable {
                Some(why) => Outcome::Skipped {
                    reason: why.clone(),
                },
                None => Outcome::from_steps(&w.record.checks),
            };
            w.record
        })
        .collect();
    let outcome = overall(&exercises);
    VerificationRecord {
        schema: RECORD_SCHEMA,
        created: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        command: std::env::args().skip(1).collect::<Vec<_>>().join(" "),
        gpu: ctx.gpu_info().cloned(),
        arch: ctx.arch.clone(),
        isolation: Some(ctx.isolation()),
        driver_version: context::driver_version(),
        tools: ToolVersions {
            nvcc: toolchain::version(&ctx.nvcc.path),
            compute_sanitizer: ctx.tools.sanitizer.as_deref().and_then(toolchain::version),
            ncu: ctx.tools.ncu.as_deref().and_then(toolchain::version),
        },
        wall_seconds: started.elapsed().as_secs_f64(),
        phases: Some(Phases {
            by_kind: time_by_kind(&results.spent),
            ..phases
        }),
        exercises,
        outcome,
    }
}

/// The outcome of a verification: the worst of the exercises this GPU can run (one it cannot is
/// n/a, never a failure); skipped where it can run none of them.
pub fn overall(exercises: &[ExerciseRecord]) -> Outcome {
    let applicable: Vec<&ExerciseRecord> = exercises
        .iter()
        .filter(|e| e.not_applicable.is_none())
        .collect();
    match (applicable.is_empty(), exercises.first()) {
        (true, Some(first)) => Outcome::Skipped {
            reason: format!(
                "no exercise applies to this GPU: {}",
                first.not_applicable.clone().unwrap_or_default()
            ),
        },
        _ => Outcome::worst(applicable.iter().map(|e| &e.outcome)),
    }
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
    let mut stages: Vec<Stage> = plan::timed_kinds(w.ex, Role::Solution)
        .into_iter()
        .map(|k| Stage::new(sol, k))
        .collect();
    stages.extend(
        plan::timed_kinds(w.ex, Role::Original)
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
    let m = &w.ex.manifest.manifest;
    let n = w.ex.number();
    let reference = Stage::new(sol, StageKind::Timing);
    let rerun = Stage::again(sol, StageKind::Timing, 1);
    let original = Stage::new(ex, StageKind::Timing);
    for (s, name) in [
        (&original, "original"),
        (&reference, "reference"),
        (&rerun, "rerun"),
    ] {
        if let Some(m) = results.get_run(s).and_then(Output::measured) {
            if let Some(csv) = m.csv() {
                keep(opts, csv, &format!("ncu-{n}-{name}.csv"));
            }
        }
    }
    let time = |s: &Stage| verdict::measured_time(results.get_run(s));
    let (reference_ns, rerun_ns) = match (time(&reference), time(&rerun)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => {
            let detail = results
                .get_run(&reference)
                .and_then(Output::measured)
                .map(|m| m.finished.output())
                .unwrap_or_default();
            return vec![Step::new(
                "solution timing",
                Status::ToolError,
                format!("ncu timed no launch of the solution's timed kernels ({why})"),
            )
            .detail(detail)
            .stage("timing")];
        }
    };
    let original_ns = time(&original).ok();
    let max = m
        .timing
        .max_ratio_to_reference
        .as_ref()
        .map(|r| *r.get_ref())
        .expect("a bug exercise has a ratio target");
    let rerun_ratio = rerun_ns / reference_ns;
    let repeat_spread = results
        .get_run(&reference)
        .and_then(Output::measured)
        .and_then(|measured| {
            crate::tools::ncu::repeat_spread(
                &measured.launches,
                &m.timing.kernels,
                crate::judge::plan::profiled_calls(w.ex),
            )
        });
    w.record.timing = Some(VerifyTiming {
        kernels: m.timing.kernels.clone(),
        original_ns,
        reference_ns,
        rerun_ns: Some(rerun_ns),
        rerun_ratio: Some(rerun_ratio),
        repeat_spread,
        speedup_over_original: original_ns.map(|o| o / reference_ns),
        max_ratio_to_reference: max,
    });
    // The noise a learner's ratio will carry: between two processes (the repeats inside one run on
    // varied inputs, so their spread is kept for the record but measures no noise).
    let noise = format!("a second run {rerun_ratio:.3}x");
    let retried = [&original, &reference, &rerun]
        .iter()
        .filter(|s| {
            results
                .get_run(s)
                .and_then(Output::measured)
                .is_some_and(|m| m.attempts > 1)
        })
        .count();
    let retried = if retried > 0 {
        format!("; {retried} ncu run(s) repeated: the profiler was busy")
    } else {
        String::new()
    };
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
    let evidence = |s: &Stage| speed::evidence(results.get_run(s), None);
    let judged = speed::judge(&speed::Inputs {
        ex: w.ex,
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
        "solution timing",
        status,
        format!(
            "{:.1} us; {noise} (target {max:.2}x){original_text}{retried}",
            reference_ns / 1e3
        ),
    )
    .command(command)
    .stage("timing")];
    steps.extend(speed::flag_steps(&judged.flags));
    steps
}

/// A performance exercise: the original and the solution (and the library baseline, timed now, after
/// them) summarised; the original must miss its target, the solution reach it and its goals.
fn perf_steps(
    baseline: Result<Option<crate::tools::ncu::Measured>, String>,
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
        Err(e) => return vec![Step::new("baseline timing", Status::ToolError, e).stage("timing")],
    };
    let (original_runs, reference_runs) = (
        perf::Runs::of("original", |k| results.get(ex, k)),
        perf::Runs::of("reference", |k| results.get(sol, k)),
    );
    for (o, name) in [
        (original_runs.ncu, "original"),
        (reference_runs.ncu, "reference"),
    ] {
        if let Some(m) = o.and_then(Output::measured) {
            if let Some(csv) = m.csv() {
                keep(opts, csv, &format!("ncu-{}-{name}.csv", w.ex.number()));
            }
        }
    }
    let summary = match perf::summarize(
        w.ex,
        peak,
        &[original_runs, reference_runs],
        baseline.as_ref(),
    ) {
        Ok(s) => s,
        Err((who, why)) => {
            return vec![Step::new(
                "solution timing",
                Status::ToolError,
                format!("ncu could not time the {who} ({why})"),
            )
            .stage("timing")]
        }
    };
    let (orig, target) = (&summary.versions[0], summary.target_speedup);
    // The speed judge of check and grade, once with the original and once with the solution in the
    // learner's place: the first must earn nothing, the second everything, with no rule raised.
    let judge_as_learner = |learner: perf::Runs| {
        let versions = [
            original_runs,
            reference_runs,
            perf::Runs {
                name: "learner",
                ..learner
            },
        ];
        let judged_summary = perf::summarize(w.ex, peak, &versions, baseline.as_ref()).ok();
        speed::judge(&speed::Inputs {
            ex: w.ex,
            learner: speed::evidence(learner.ncu, learner.call),
            reference: speed::evidence(reference_runs.ncu, reference_runs.call),
            original: speed::evidence(original_runs.ncu, original_runs.call),
            peak: Some(peak),
            perf: judged_summary.as_ref(),
        })
    };
    let (as_original, as_solution) = (
        judge_as_learner(original_runs),
        judge_as_learner(reference_runs),
    );
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
    let mut steps = vec![Step::new(
        "exercise is slow",
        if as_original.fraction < 1.0 { Status::Passed } else { Status::Failed },
        format!("{:.1} us: 1.00x, below the {target:.2}x target{why}; the judge gives it {:.0}% of the speed points", orig.nanoseconds / 1e3, 100.0 * as_original.fraction),
    )
    .stage("timing")];
    steps.push(
        Step::new(
            "solution speed",
            as_solution.status,
            as_solution.summary.clone(),
        )
        .command(summary.commands.join("\n"))
        .stage("timing"),
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
    let name = "exercise gives wrong output";
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
    .stage("correctness")
}

/// For a bug that hangs or crashes: every plain run of the untouched exercise must have hung (been
/// killed at the manifest's `timeout_s`) or died by a host memory fault (SIGSEGV, SIGBUS). A run
/// that finished, right or wrong, means a learner's check could not see the bug.
fn stop_step(detector: Detector, outputs: &[&Output], steps: &[Step]) -> Step {
    let (name, stage) = match detector {
        Detector::Hang => ("exercise hangs", "correctness"),
        _ => ("exercise crashes", "correctness"),
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
    .stage(stage)
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
    let name = format!("exercise fails under {tool}");
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

fn keep(opts: &VerifyOptions, from: &Path, name: &str) {
    if let Some(dir) = &opts.keep {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::copy(from, dir.join(name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_is_summed_by_kind_of_stage_the_largest_first() {
        let spent = |stage: &str, kind, name: &str, secs| scheduler::Spent {
            stage: stage.into(),
            from_s: 0.0,
            secs,
            kind: Some(kind),
            name: name.into(),
        };
        let racecheck = StageKind::Sanitize(Tool::Racecheck);
        let by = time_by_kind(&[
            spent(
                "original sanitize:racecheck",
                racecheck,
                "30-mbarrier-count",
                6.0,
            ),
            spent("reference sanitize:racecheck", racecheck, "03-race", 1.5),
            spent("reference timing", StageKind::Timing, "63-transfers", 9.5),
            spent("reference call#3", StageKind::Call, "62-launches", 0.5),
            spent("original call", StageKind::Call, "62-launches", 0.25),
        ]);
        let kinds: Vec<(&str, usize, f64)> = by
            .iter()
            .map(|k| (k.kind.as_str(), k.runs, k.secs))
            .collect();
        assert_eq!(
            kinds,
            [
                ("timing", 1, 9.5),
                ("sanitize:racecheck", 2, 7.5),
                ("call", 2, 0.75)
            ]
        );
        assert_eq!(
            (by[1].longest_secs, by[1].longest.as_str()),
            (6.0, "30-mbarrier-count original")
        );
        let text = crate::report::time_by_kind_text(&by);
        assert!(text.contains("  sanitize:racecheck     2 runs      7.5 s  (longest 6.0 s: 30-mbarrier-count original)"), "{text}");
    }

    #[test]
    fn a_bug_no_tool_sees_must_give_wrong_output_in_every_plain_run() {
        let wrong = Step::new(
            "exercise plain run",
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
            "exercise plain run",
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
        use crate::judge::stages::Bounds;
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
                        "exercise plain run",
                        "correctness",
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
