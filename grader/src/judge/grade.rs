//! `grade`, a plan: a class's submissions, each (student, exercise) pair tamper-checked, built, run
//! under all four compute-sanitizer tools, on the public cases and the instructor's hidden ones,
//! timed against the reference fix (and the original) in the same GPU session, checked again on
//! fresh inputs after the timed runs, and held to the anti-cheat rules. Points per stage come from
//! the exercise's `[rubric]`.
//!
//! Pairs are graded in chunks of one exercise: one scheduler run builds and runs a chunk's
//! submissions together, with the reference timed beside them. One worker per GPU, each with its
//! own context (`CUDA_VISIBLE_DEVICES`) and ncu lock; each finished pair goes to the journal at once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::class::journal::{self, Journal};
use crate::class::roster::{self, Roster, Shard, Student};
use crate::class::secret::Secret;
use crate::class::tamper::{self, Tampered};
use crate::exercise::cases::{self, Cases};
use crate::exercise::manifest::{Tool, Track};
use crate::exercise::rubric::{GradeStage, Rubric};
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::context::Context;
use crate::judge::perf;
use crate::judge::speed;
use crate::judge::plan::{SecretCases, Stage, StageKind, Submission};
use crate::judge::scheduler::{self, Results};
use crate::judge::stages::Output;
use crate::judge::verdict::{self, Finding, Status, Step};
use crate::tools::ncu::Measured;
use crate::tools::nvcc::Reuse;
use crate::tools::peak::Peak;
use crate::tools::runner::Exit;

pub use crate::judge::speed::{Flag, Rule, SpeedResult};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageScore {
    pub stage: GradeStage,
    pub points: f64,
    pub max: f64,
    pub status: Status,
    pub summary: String,
    /// The rule that withheld these points, where one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld_by: Option<Rule>,
}

/// Where a pair ended up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum PairState {
    /// Every stage ran (whatever the points).
    Graded,
    /// The student's folder has no file for this exercise.
    NotSubmitted,
    /// Changed outside the marked regions, or a harness of its own.
    NotGradable { reason: String, diff: String },
    /// Built, but the GPU stages could not run here: graded again on a machine with a GPU.
    Skipped { reason: String },
    /// The grader's own tools failed (not the student's fault): graded again next time.
    ToolError { message: String },
}

/// One graded (student, exercise): the journal's line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairResult {
    pub student: String,
    pub exercise: String,
    pub fingerprint: String,
    #[serde(flatten)]
    pub state: PairState,
    pub points: f64,
    pub max: f64,
    pub stages: Vec<StageScore>,
    pub flags: Vec<Flag>,
    /// What the student's report shows: the same steps as `check`, the hidden cases' details
    /// withheld.
    pub steps: Vec<Step>,
    pub findings: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<SpeedResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// `CUDA_VISIBLE_DEVICES` of the worker that graded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The bytes the pair's work folder held when it was graded (builds, outputs and whatever its
    /// program wrote), before the folder was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<u64>,
    pub wall_s: f64,
}

impl journal::Entry for PairResult {
    fn key(&self) -> (String, String) {
        (self.student.clone(), self.exercise.clone())
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}

impl PairResult {
    fn empty(student: &str, ex: &Exercise, fingerprint: String, state: PairState) -> PairResult {
        let rubric = rubric_of(ex);
        let stages: Vec<StageScore> = rubric
            .for_exercise(&ex.manifest)
            .into_iter()
            .map(|(stage, max)| StageScore { stage, points: 0.0, max, status: Status::Skipped, summary: "not run".into(), withheld_by: None })
            .collect();
        PairResult {
            student: student.to_string(),
            exercise: ex.id().to_string(),
            fingerprint,
            state,
            points: 0.0,
            max: rubric.total(),
            stages,
            flags: Vec::new(),
            steps: Vec::new(),
            findings: Vec::new(),
            speed: None,
            gpu: None,
            device: None,
            disk_bytes: None,
            wall_s: 0.0,
        }
    }

    /// The points of one stage.
    pub fn stage(&self, s: GradeStage) -> Option<&StageScore> {
        self.stages.iter().find(|x| x.stage == s)
    }

    fn set(&mut self, s: GradeStage, fraction: f64, status: Status, summary: impl Into<String>) {
        if let Some(x) = self.stages.iter_mut().find(|x| x.stage == s) {
            x.points = x.max * fraction.clamp(0.0, 1.0);
            x.status = status;
            x.summary = summary.into();
        }
    }

    fn withhold(&mut self, rule: Rule) {
        for s in rule.withholds() {
            if let Some(x) = self.stages.iter_mut().find(|x| x.stage == *s) {
                if x.points > 0.0 || x.status == Status::Passed {
                    x.points = 0.0;
                    x.status = Status::Failed;
                    x.withheld_by = Some(rule);
                }
            }
        }
    }

    fn total(&mut self) {
        self.points = (self.stages.iter().map(|s| s.points).sum::<f64>() * 100.0).round() / 100.0;
    }
}

pub fn rubric_of(ex: &Exercise) -> Rubric {
    ex.manifest.manifest.rubric.unwrap_or_default()
}

/// Names what was graded: the text, the exercise (manifest, original, solution), this grader and
/// the secret. A pair is graded again when any of them changes.
pub fn fingerprint(ex: &Exercise, text: &str, secret: &Secret) -> String {
    let h = crate::class::secret::stable_hash(&[text, &ex.manifest.text, ex.original, ex.solution, env!("CARGO_PKG_VERSION"), &secret.fingerprint()]);
    format!("{h:016x}")
}

/// Cases passed of a run on a case set: each case counts on its own (a crash after two cases
/// leaves those two).
struct Tally {
    passed: usize,
    total: usize,
    /// The first problem, in words (the run's failure, or the first wrong case).
    problem: Option<String>,
    timed_out: bool,
}

fn tally(output: Option<&Output>, cases: &Cases, ex: &Exercise) -> Tally {
    tally_part(output, cases, 0, ex)
}

/// A run that ended in a failure of its own (not a time-out, not a process left behind).
fn crashed(output: Option<&Output>) -> bool {
    matches!(output, Some(Output::Ran { run: Ok(f), .. }) if !f.success() && f.exit != Exit::TimedOut && f.left_running().is_none())
}

/// The tally of `cases`, which a run took from its `skip`-th output on (a run of the public cases
/// and then the hidden ones).
fn tally_part(output: Option<&Output>, cases: &Cases, skip: usize, ex: &Exercise) -> Tally {
    let total = cases.cases.len();
    let Some(Output::Ran { run, outputs, .. }) = output else {
        let why = match output {
            Some(Output::NotRun(b)) => verdict::why_not_run(b),
            _ => "did not run".into(),
        };
        return Tally { passed: 0, total, problem: Some(why), timed_out: false };
    };
    let finished = match run {
        Ok(f) => f,
        Err(e) => return Tally { passed: 0, total, problem: Some(e.to_string()), timed_out: false },
    };
    if finished.exit == Exit::TimedOut {
        return Tally { passed: 0, total, problem: Some("the program did not finish in time".into()), timed_out: true };
    }
    let mut problem = (!finished.success()).then(|| format!("the program failed ({})", finished.describe_exit()));
    if let Some(left) = finished.left_running() {
        problem = Some(format!("the program {left}"));
    }
    let mut passed = 0;
    for (c, path) in cases.cases.iter().zip(outputs.iter().skip(skip)) {
        match verdict::case_outputs(c, path, ex.manifest.manifest.tolerance) {
            Ok(_) => passed += 1,
            Err(why) => {
                problem.get_or_insert(why);
            }
        }
    }
    // A program that leaves something running passes no case: the sandbox killed it.
    if finished.left_running().is_some() {
        passed = 0;
    }
    Tally { passed, total, problem, timed_out: false }
}

fn timed<'r>(results: &'r Results, stage: &Stage) -> Option<&'r Measured> {
    match results.get_run(stage) {
        Some(Output::Timed { measured: Ok(m), .. }) => Some(m),
        _ => None,
    }
}

/// One chunk: several students' files for one exercise.
pub struct Chunk<'a> {
    pub exercise: &'a Exercise,
    pub pairs: Vec<Pending<'a>>,
    /// Numbers this chunk's reference timing (a recording keys each run apart).
    pub index: u32,
}

/// A pair to grade: the student, the text read once, and its fingerprint.
#[derive(Clone)]
pub struct Pending<'a> {
    pub student: &'a Student,
    pub origin: PathBuf,
    pub text: String,
    pub fingerprint: String,
}

/// An exercise's inputs as a worker grades them.
#[derive(Default)]
pub struct ExerciseCases {
    pub public: Cases,
    /// The public cases, then the hidden ones: a student's program runs them all in one process
    /// (CUDA processes start one at a time across the machine; one fewer per pair).
    pub graded: Cases,
    pub secret: SecretCases,
}

impl ExerciseCases {
    fn new(public: Cases, secret: SecretCases) -> ExerciseCases {
        let graded = Cases { cases: public.cases.iter().chain(&secret.hidden.cases).cloned().collect(), bench_input: public.bench_input.clone(), vary: public.vary.clone() };
        ExerciseCases { public, graded, secret }
    }
}

/// What a worker keeps between its chunks: each exercise's cases, whether the reference fix passed
/// its hidden cases, and this GPU's peak.
pub struct Worker<'a> {
    pub ctx: Context,
    pub secret: &'a Secret,
    /// Names the work folders: a shard's and a GPU's own, so that shards sharing the workbook's
    /// folder (a cluster) and GPUs never build into one folder at once.
    plan: String,
    cases: Mutex<BTreeMap<String, std::sync::Arc<ExerciseCases>>>,
    /// Exercises whose hidden cases the reference fix passed on this worker (checked once).
    fair: Mutex<BTreeSet<String>>,
    peak: Mutex<Option<Option<Peak>>>,
}

/// How long a chunk's phases took (seconds).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Phases {
    /// Builds, the four tools, the public and hidden cases.
    pub tools: f64,
    /// The ncu timing phase and the whole calls after it (the GPU is theirs alone).
    pub timing: f64,
    /// Of `timing`, the whole calls, one process at a time.
    pub calls: f64,
    /// Fresh inputs after the timed runs.
    pub fresh: f64,
}

impl<'a> Worker<'a> {
    pub fn new(ctx: Context, secret: &'a Secret, shard: Option<Shard>) -> Worker<'a> {
        let mut plan = "grade".to_string();
        if let Some(s) = shard {
            plan.push_str(&format!("-shard{}", s.index));
        }
        if let Some(g) = &ctx.config.gpu {
            plan.push_str(&format!("-gpu{g}"));
        }
        Worker { ctx, secret, plan, cases: Mutex::new(BTreeMap::new()), fair: Mutex::new(BTreeSet::new()), peak: Mutex::new(None) }
    }

    fn device(&self) -> Option<String> {
        self.ctx.config.gpu.clone()
    }

    fn gpu_stages(&self) -> bool {
        self.ctx.no_gpu_reason().is_none() || self.ctx.launcher.replays()
    }

    /// This GPU's peak (measured once, cached on disk); None where it cannot be measured.
    fn peak(&self, wb: &Workbook) -> Option<Peak> {
        let mut peak = self.peak.lock().unwrap();
        if peak.is_none() {
            *peak = Some(perf::peak(&self.ctx, wb, false).ok());
        }
        peak.clone().flatten()
    }

    /// The exercise's public, hidden and fresh cases, written once per worker.
    fn cases(&self, wb: &Workbook, ex: &Exercise) -> std::io::Result<std::sync::Arc<ExerciseCases>> {
        let mut all = self.cases.lock().unwrap();
        if let Some(c) = all.get(ex.id()) {
            return Ok(c.clone());
        }
        let dir = wb.work_dir().join("cases").join(ex.id());
        // The timed runs' inputs come from the secret: a program cannot know the bench's answer, nor
        // how the inputs change between its calls.
        let public = cases::prepare_with(ex, &dir, self.secret.bench_seed(ex), self.secret.derive_seed("vary", &[ex.id()]))?;
        let (hidden, fresh) = self.secret.prepare(ex, &dir)?;
        let c = std::sync::Arc::new(ExerciseCases::new(public, SecretCases { hidden, fresh }));
        all.insert(ex.id().to_string(), c.clone());
        Ok(c)
    }

    fn plan(&self) -> &str {
        &self.plan
    }

    fn students<'s>(&self, wb: &Workbook, chunk: &Chunk<'s>, cases: &'s ExerciseCases) -> Vec<Submission<'s>> {
        let plan = self.plan();
        chunk
            .pairs
            .iter()
            .map(|p| {
                let mut s = Submission::new(wb, plan, chunk.exercise, &p.student.id, p.origin.clone(), p.text.clone(), Reuse::IfUnchanged, &cases.graded);
                s.secret = Some(&cases.secret);
                s
            })
            .collect()
    }

    /// Build a chunk's submissions ahead of their turn (CPU only: while another chunk is timed).
    /// Grading it later finds the binaries up to date.
    pub fn prebuild(&self, wb: &Workbook, chunk: &Chunk) {
        let empty = ExerciseCases::default();
        let subs = self.students(wb, chunk, &empty);
        let builds: Vec<Stage> = (0..subs.len()).flat_map(|i| [Stage::new(i, StageKind::BuildDebug), Stage::new(i, StageKind::BuildRelease)]).collect();
        scheduler::execute(&self.ctx, wb, &subs, &builds, &mut Results::default(), Instant::now());
    }

    /// Grade one chunk; a result per pair, in order, and how long its phases took. `on_exclusive`
    /// is called when the timing phase starts (the CPU is free then: the caller prebuilds).
    pub fn grade(&self, wb: &Workbook, chunk: &Chunk, on_exclusive: &mut dyn FnMut()) -> (Vec<PairResult>, Phases) {
        let started = Instant::now();
        let mut phases = Phases::default();
        let ex = chunk.exercise;
        let gpu_stages = self.gpu_stages();
        let prepared = if gpu_stages {
            match self.cases(wb, ex) {
                Ok(c) => c,
                Err(e) => return (self.failed_chunk(chunk, format!("cannot write the inputs: {e}")), phases),
            }
        } else {
            std::sync::Arc::new(ExerciseCases::default())
        };
        // This GPU's peak, for the physical-floor rule and the performance track (cached on disk).
        let peak = if gpu_stages { self.peak(wb) } else { None };
        let (public, secret) = (&prepared.public, &prepared.secret);
        let plan = self.plan();
        let mut subs = self.students(wb, chunk, &prepared);
        let students = subs.len();
        let mut reference = Submission::new(wb, plan, ex, "reference", wb.solution_path(ex), ex.solution.to_string(), Reuse::IfUnchanged, public);
        reference.secret = Some(secret);
        subs.push(reference);
        let reference = students;
        let perf_track = ex.manifest.track() == Track::Perf;
        let original = perf_track.then(|| {
            subs.push(Submission::new(wb, plan, ex, "original", wb.learner_path(ex), ex.original.to_string(), Reuse::IfUnchanged, public));
            students + 1
        });

        // 1. Builds, the four tools, the public and the hidden cases in one run (the reference's
        //    hidden run, once per exercise, proves the instructor's cases are fair).
        let mut stages: Vec<Stage> = Vec::new();
        for i in 0..students {
            stages.push(Stage::new(i, StageKind::BuildDebug));
            stages.push(Stage::new(i, StageKind::BuildRelease));
            if gpu_stages {
                stages.extend(Tool::ALL.iter().map(|&t| Stage::new(i, StageKind::Sanitize(t))));
                stages.push(Stage::new(i, StageKind::Correctness));
            }
        }
        let fairness = Stage::again(reference, StageKind::Hidden, chunk.index);
        let checked_fair = self.fair.lock().unwrap().contains(ex.id());
        if gpu_stages && !checked_fair {
            stages.push(fairness.clone());
        }
        let mut results = Results::default();
        scheduler::execute(&self.ctx, wb, &subs, &stages, &mut results, started);
        // A program that failed part-way lost the hidden cases after it: they run again on their
        // own, as they would have in a process of their own (one that hung is not run again).
        let again: Vec<Stage> = (0..students).filter(|&i| gpu_stages && crashed(results.get(i, StageKind::Correctness))).map(|i| Stage::new(i, StageKind::Hidden)).collect();
        if !again.is_empty() {
            scheduler::execute(&self.ctx, wb, &subs, &again, &mut results, started);
        }
        phases.tools = started.elapsed().as_secs_f64();

        let mut out: Vec<PairResult> = chunk
            .pairs
            .iter()
            .map(|p| {
                let mut r = PairResult::empty(&p.student.id, ex, p.fingerprint.clone(), PairState::Graded);
                r.gpu = self.ctx.gpu_info().map(|g| g.name.clone());
                r.device = self.device();
                r
            })
            .collect();
        for (i, r) in out.iter_mut().enumerate() {
            score_builds(&self.ctx, &results, i, r);
        }
        if !gpu_stages {
            let reason = self.ctx.no_gpu_reason().unwrap_or_default();
            for r in &mut out {
                if r.stage(GradeStage::Builds).is_some_and(|s| s.status == Status::Passed) {
                    r.state = PairState::Skipped { reason: reason.clone() };
                    r.steps.push(Step::new("gpu", Status::Skipped, reason.clone()));
                }
                r.total();
            }
            return (out, phases);
        }
        if !checked_fair {
            let hidden_fair = tally(results.get_run(&fairness), &secret.hidden, ex);
            if hidden_fair.passed != hidden_fair.total {
                let why = format!("the reference fix fails the hidden cases ({}): the secret's cases do not fit this exercise", hidden_fair.problem.unwrap_or_default());
                return (self.failed_chunk(chunk, why), phases);
            }
            self.fair.lock().unwrap().insert(ex.id().to_string());
        }
        for (i, r) in out.iter_mut().enumerate() {
            if r.stage(GradeStage::Builds).is_some_and(|s| s.status == Status::Passed) {
                score_tools(&self.ctx, ex, &results, i, r);
                score_cases(&results, i, r, ex, public, secret);
            }
        }

        // 2. Timing: the reference (and the original) beside every submission whose outputs were
        //    right; nothing else runs on this GPU meanwhile.
        //    A bug exercise's fix is timed once its tool is clean too: a fast file with the bug still
        //    in it earns no speed points.
        let fixed = |r: &PairResult| [GradeStage::Public, GradeStage::Hidden, GradeStage::NamedTool].iter().all(|s| r.stage(*s).is_none_or(|x| x.status == Status::Passed));
        let correct: Vec<usize> = (0..students).filter(|&i| fixed(&out[i])).collect();
        for r in out.iter_mut().filter(|r| !fixed(r) && r.stage(GradeStage::Builds).is_some_and(|s| s.status == Status::Passed)) {
            r.set(GradeStage::Speed, 0.0, Status::Skipped, "not timed: the outputs must be right (and the exercise's tool clean) first");
        }
        if correct.is_empty() {
            for r in &mut out {
                r.total();
            }
            return self.finish(out, started, phases);
        }
        on_exclusive();
        let mut timing: Vec<Stage> = correct.iter().map(|&i| Stage::new(i, StageKind::Timing)).collect();
        timing.push(Stage::again(reference, StageKind::Timing, chunk.index));
        if let Some(o) = original {
            timing.push(Stage::again(o, StageKind::Timing, chunk.index));
        }
        // The whole calls, alone on the GPU after the profiler: the students' and the reference's.
        timing.extend(correct.iter().map(|&i| Stage::new(i, StageKind::Call)));
        timing.push(Stage::again(reference, StageKind::Call, chunk.index));
        let phase = Instant::now();
        let timeline = scheduler::execute(&self.ctx, wb, &subs, &timing, &mut results, started);
        phases.calls = timeline.exclusive.unwrap_or(0.0);
        let baseline = if perf_track { perf::time_baseline(&self.ctx, wb, ex).ok().flatten() } else { None };
        phases.timing = phase.elapsed().as_secs_f64();
        // 3. Fresh inputs, after the timed runs.
        let phase = Instant::now();
        let fresh: Vec<Stage> = correct.iter().map(|&i| Stage::new(i, StageKind::Fresh)).collect();
        scheduler::execute(&self.ctx, wb, &subs, &fresh, &mut results, started);
        phases.fresh = phase.elapsed().as_secs_f64();

        let reference_timing = Stage::again(reference, StageKind::Timing, chunk.index);
        if timed(&results, &reference_timing).and_then(|m| m.nanoseconds).is_none() {
            let why = match results.get_run(&reference_timing) {
                Some(Output::Timed { measured: Ok(m), .. }) => m.why_untimed(),
                Some(Output::Timed { measured: Err(e), .. }) => e.to_string(),
                Some(Output::NotRun(b)) => verdict::why_not_run(b),
                _ => "not run".into(),
            };
            return (self.failed_chunk(chunk, format!("ncu could not time the reference fix ({why})")), phases);
        }
        let original_timing = original.map(|o| Stage::again(o, StageKind::Timing, chunk.index));
        let reference_evidence = speed::evidence(results.get_run(&reference_timing), results.get_run(&Stage::again(reference, StageKind::Call, chunk.index)));
        let original_evidence = speed::evidence(original_timing.as_ref().and_then(|s| results.get_run(s)), None);
        for &i in &correct {
            let r = &mut out[i];
            if let Some(why) = match results.get(i, StageKind::Timing) {
                Some(Output::Timed { measured: Ok(_), .. }) => None,
                Some(Output::Timed { measured: Err(e), .. }) => Some(e.to_string()),
                Some(Output::NotRun(b)) => Some(verdict::why_not_run(b)),
                _ => Some("not run".into()),
            } {
                r.state = PairState::ToolError { message: format!("ncu could not time this submission ({why})") };
                continue;
            }
            let summary = if perf_track {
                let timed_versions = [("original", original_timing.as_ref().and_then(|s| results.get_run(s))), ("reference", results.get_run(&reference_timing)), ("learner", results.get(i, StageKind::Timing))];
                peak.as_ref().and_then(|p| perf::summarize(ex, p, &timed_versions, baseline.as_ref()).ok())
            } else {
                None
            };
            let inputs = speed::Inputs {
                ex,
                learner: speed::evidence(results.get(i, StageKind::Timing), results.get(i, StageKind::Call)),
                reference: reference_evidence,
                original: original_evidence,
                peak: peak.as_ref(),
                perf: summary.as_ref(),
            };
            score_speed(&speed::judge(&inputs), r);
            score_fresh(results.get(i, StageKind::Fresh), &secret.fresh, ex, r);
            r.total();
        }
        for r in &mut out {
            r.total();
        }
        self.finish(out, started, phases)
    }

    /// After a chunk: each pair's disk use is recorded and its work folder removed, so that nothing
    /// a submission wrote outlives its pair (and a full disk cannot fail the pairs after it).
    pub fn clean_up(&self, wb: &Workbook, chunk: &Chunk, results: &mut [PairResult]) {
        let empty = ExerciseCases::default();
        let subs = self.students(wb, chunk, &empty);
        for (sub, r) in subs.iter().zip(results.iter_mut()) {
            r.disk_bytes = Some(folder_bytes(&sub.work));
            let _ = std::fs::remove_dir_all(&sub.work);
        }
    }

    fn finish(&self, mut out: Vec<PairResult>, started: Instant, phases: Phases) -> (Vec<PairResult>, Phases) {
        let each = started.elapsed().as_secs_f64() / out.len().max(1) as f64;
        for r in &mut out {
            r.wall_s = (each * 100.0).round() / 100.0;
        }
        (out, phases)
    }

    /// Every pair of a chunk ended in the grader's own failure: recorded as such, graded again on
    /// the next run.
    fn failed_chunk(&self, chunk: &Chunk, message: String) -> Vec<PairResult> {
        chunk
            .pairs
            .iter()
            .map(|p| {
                let mut r = PairResult::empty(&p.student.id, chunk.exercise, p.fingerprint.clone(), PairState::ToolError { message: message.clone() });
                r.device = self.device();
                r.steps.push(Step::new("grade", Status::ToolError, message.clone()));
                r
            })
            .collect()
    }
}

/// The bytes of every file under `dir` (links not followed).
pub fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

fn score_builds(ctx: &Context, results: &Results, i: usize, r: &mut PairResult) {
    let mut ok = true;
    for flavor in crate::tools::nvcc::Flavor::BOTH {
        if let Some(step) = results.get(i, StageKind::build(flavor)).and_then(|o| verdict::build(&format!("build {}", flavor.flags()[0]), o, flavor, &ctx.arch)) {
            ok &= step.status == Status::Passed;
            r.steps.push(step);
        }
    }
    if ok {
        r.set(GradeStage::Builds, 1.0, Status::Passed, "both builds (-G and -O3 -lineinfo)");
    } else {
        r.set(GradeStage::Builds, 0.0, Status::Failed, "does not build (nvcc's errors are in the report)");
        for s in GradeStage::ALL.iter().skip(1) {
            r.set(*s, 0.0, Status::Skipped, "not run: the file does not build");
        }
    }
}

fn score_tools(ctx: &Context, ex: &Exercise, results: &Results, i: usize, r: &mut PairResult) {
    let named = ex.manifest.expected_finding().map(|(t, _)| t);
    let mut others = (0usize, 0usize, Vec::new());
    for tool in Tool::ALL {
        let stage = Stage::new(i, StageKind::Sanitize(tool));
        let step = match results.get_run(&stage) {
            Some(Output::NotRun(b)) => verdict::not_run(tool.name(), &stage.id(), b),
            Some(o @ Output::Sanitized { findings, .. }) => {
                r.findings.extend(findings.iter().cloned());
                verdict::tool(tool.name(), &stage.id(), o, ctx.config.timeouts.tool)
            }
            _ => None,
        };
        let Some(step) = step else { continue };
        let clean = step.status == Status::Passed;
        if Some(tool) == named {
            r.set(GradeStage::NamedTool, f64::from(u8::from(clean)), step.status, format!("{tool}: {}", step.summary));
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
    let status = if clean == total { Status::Passed } else { Status::Failed };
    let summary = if problems.is_empty() { format!("{clean} of {total} clean") } else { format!("{clean} of {total} clean; {}", problems.join("; ")) };
    r.set(GradeStage::OtherTools, clean as f64 / total.max(1) as f64, status, summary);
}

fn score_cases(results: &Results, i: usize, r: &mut PairResult, ex: &Exercise, public: &Cases, secret: &SecretCases) {
    let run = results.get(i, StageKind::Correctness);
    let t = tally(run, public, ex);
    let status = if t.timed_out { Status::TimedOut } else if t.passed == t.total { Status::Passed } else { Status::Failed };
    let summary = match &t.problem {
        Some(p) if t.passed < t.total => format!("{} of {} public cases match the reference; {p}", t.passed, t.total),
        _ => format!("{} of {} public cases match the reference", t.passed, t.total),
    };
    r.steps.push(Step::new("correctness", status, summary.clone()).stage("correctness"));
    r.set(GradeStage::Public, t.passed as f64 / t.total.max(1) as f64, status, summary);
    // Hidden cases: how many passed, never which or why (the student's report shows no more).
    let h = match results.get(i, StageKind::Hidden) {
        Some(again) => tally(Some(again), &secret.hidden, ex),
        None => tally_part(run, &secret.hidden, public.cases.len(), ex),
    };
    let status = if h.timed_out { Status::TimedOut } else if h.passed == h.total { Status::Passed } else { Status::Failed };
    let summary = format!("{} of {} hidden cases match the reference", h.passed, h.total);
    r.steps.push(Step::new("hidden cases", status, summary.clone()).stage("hidden"));
    r.set(GradeStage::Hidden, h.passed as f64 / h.total.max(1) as f64, status, summary);
}

/// The speed stage and the rules' flags from the one judge.
fn score_speed(v: &speed::Verdict, r: &mut PairResult) {
    if let Some(sp) = &v.speed {
        r.steps.push(Step::new("timing", v.status, v.summary.clone()).stage("timing"));
        r.speed = Some(sp.clone());
    }
    r.set(GradeStage::Speed, v.fraction, v.status, v.summary.clone());
    for f in &v.flags {
        r.withhold(f.rule);
        r.steps.push(Step::new(format!("rule {}", f.rule.key()), Status::Failed, f.message.clone()).detail(f.rule.why()));
        r.flags.push(f.clone());
    }
}

fn score_fresh(output: Option<&Output>, fresh: &Cases, ex: &Exercise, r: &mut PairResult) {
    let t = tally(output, fresh, ex);
    if t.passed == t.total {
        r.steps.push(Step::new("fresh inputs", Status::Passed, format!("{} of {} fresh inputs after the timed runs match", t.passed, t.total)).stage("fresh"));
        return;
    }
    let f = Flag::new(Rule::FreshInputs, format!("{} of {} fresh inputs after the timed runs match the reference", t.passed, t.total));
    r.withhold(f.rule);
    r.steps.push(Step::new(format!("rule {}", f.rule.key()), Status::Failed, f.message.clone()).detail(f.rule.why()));
    r.flags.push(f);
}

/// What the batch tells its caller as it goes (a progress bar, or JSON Lines).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    Started { layout: roster::Layout, students: usize, exercises: usize, pairs: usize, already_graded: usize, workers: Vec<String> },
    Graded { student: String, exercise: String, state: String, points: f64, max: f64, flags: Vec<Rule>, device: Option<String>, done: usize, of: usize },
    /// A chunk of one exercise finished: its phases' times.
    Chunk { exercise: String, pairs: usize, device: Option<String>, phases: Phases },
    Note { message: String },
}

/// A whole class, or one shard of it.
pub struct ClassJob<'a> {
    pub submissions: PathBuf,
    pub roster: Roster,
    pub exercises: Vec<&'a Exercise>,
    pub secret: Secret,
    pub out: PathBuf,
    pub shard: Option<Shard>,
    pub regrade: bool,
    /// Pairs per scheduler run.
    pub chunk: usize,
}

/// The GPUs a class is graded on, a worker each: those named (`--gpus`), else every visible one
/// (named as `CUDA_VISIBLE_DEVICES` names them); one default worker where there is one GPU or none.
pub fn worker_gpus(requested: &[String]) -> Vec<Option<String>> {
    if !requested.is_empty() {
        return requested.iter().cloned().map(Some).collect();
    }
    let visible: Vec<String> = std::env::var("CUDA_VISIBLE_DEVICES").ok().map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()).unwrap_or_default();
    match crate::tools::gpu::count() {
        0 | 1 => vec![None],
        n => (0..n).map(|i| Some(visible.get(i).cloned().unwrap_or_else(|| i.to_string()))).collect(),
    }
}

/// One worker's settings out of `workers`: its GPU, the anti-cheat counters, one hardware queue
/// per context (cheaper CUDA processes), the class's folders hidden from every run, shorter limits
/// than a learner's check (a class has hostile and hung programs), and its share of the cores
/// (sanitizer runs spend their start-up on the CPU; the builds, the next chunk's included, get a
/// share each). What the environment set stays.
pub fn configure_worker(config: &mut crate::judge::config::Config, gpu: Option<String>, workers: usize, hidden: &[PathBuf]) {
    config.gpu = gpu;
    config.audit = true;
    // No file of a student's run may exceed 1 GiB (the largest bench output is 256 MiB).
    config.limits.file_bytes = Some(1 << 30);
    config.one_connection = true;
    config.hidden = hidden.to_vec();
    if !config.from_env.timeouts {
        config.timeouts.tool = std::time::Duration::from_secs(90);
        config.timeouts.run = std::time::Duration::from_secs(30);
    }
    let workers = workers.max(1);
    if !config.from_env.gpu_jobs {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        config.gpu_jobs = (cores * 3 / 4 / workers).max(6);
    }
    config.cpu_jobs = (config.cpu_jobs / workers).max(1);
}

/// The journal of a run: `journal.jsonl`, or one per shard.
pub fn journal_path(out: &Path, shard: Option<Shard>) -> PathBuf {
    match shard {
        Some(s) => out.join(format!("journal.shard-{}-of-{}.jsonl", s.index, s.count)),
        None => out.join("journal.jsonl"),
    }
}

/// What every shard of a class agrees on, for `grade merge`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClassInfo {
    pub submissions: PathBuf,
    pub roster: Roster,
    pub exercises: Vec<String>,
    pub secret: String,
}

pub const CLASS_FILE: &str = "class.json";

#[derive(Debug, thiserror::Error)]
pub enum GradeError {
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// Grade every pair of `job` that the journal does not hold yet, one worker per context (GPU).
/// Returns the journal's entries for this run's pairs.
pub fn grade_class(wb: &Workbook, workers: Vec<Context>, job: &ClassJob, on_event: &(dyn Fn(Event) + Sync)) -> Result<Vec<PairResult>, GradeError> {
    std::fs::create_dir_all(&job.out).map_err(|e| GradeError::Io(job.out.clone(), e))?;
    let info = ClassInfo { submissions: job.submissions.clone(), roster: job.roster.clone(), exercises: job.exercises.iter().map(|e| e.id().to_string()).collect(), secret: job.secret.fingerprint() };
    let class_file = job.out.join(CLASS_FILE);
    crate::exercise::workbook::write_atomically(&class_file, &(serde_json::to_string_pretty(&info).expect("serialisable") + "\n")).map_err(|e| GradeError::Io(class_file.clone(), e))?;
    let journal: Journal<PairResult> = Journal::open(&journal_path(&job.out, job.shard), job.regrade)?;
    if journal.dropped > 0 {
        on_event(Event::Note { message: format!("{} journal line(s) torn by a kill or superseded were dropped", journal.dropped) });
    }
    let all = roster::pairs(&job.roster, &job.exercises);
    let mine: Vec<(&Student, &Exercise)> = all.into_iter().enumerate().filter(|(i, _)| job.shard.is_none_or(|s| s.takes(*i))).map(|(_, p)| p).collect();
    let gpu_here = workers.first().is_some_and(|c| c.no_gpu_reason().is_none() || c.launcher.replays());
    let mut todo: Vec<(&Exercise, Pending)> = Vec::new();
    let mut done_now: Vec<PairResult> = Vec::new();
    let mut already = 0;
    // A workbook copy's own harness refuses every exercise of the student: read once per student.
    let mut harness_of: BTreeMap<&str, Option<Tampered>> = BTreeMap::new();
    for (student, ex) in &mine {
        let harness = harness_of.entry(student.id.as_str()).or_insert_with(|| tamper::harness_changes(wb, &student.folder)).clone();
        let Some(path) = roster::find_file(student, ex, wb) else {
            let fp = format!("missing-{}", job.secret.fingerprint());
            if finished(&journal, &student.id, ex.id(), &fp) {
                already += 1;
            } else {
                let mut r = PairResult::empty(&student.id, ex, fp, PairState::NotSubmitted);
                r.steps.push(Step::new("submission", Status::Failed, format!("no file for {} in {}", ex.id(), student.folder.display())));
                done_now.push(r);
            }
            continue;
        };
        let text = match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                let mut r = PairResult::empty(&student.id, ex, String::new(), PairState::NotGradable { reason: format!("cannot read {}: {e}", path.display()), diff: String::new() });
                r.total();
                done_now.push(r);
                continue;
            }
        };
        let mut fp = fingerprint(ex, &text, &job.secret);
        if !gpu_here {
            fp.push_str("-nogpu");
        }
        if finished(&journal, &student.id, ex.id(), &fp) {
            already += 1;
            continue;
        }
        if let Some(Tampered { reason, diff }) = harness.or_else(|| tamper::check(ex, &text).err()) {
            let mut r = PairResult::empty(&student.id, ex, fp, PairState::NotGradable { reason: reason.clone(), diff });
            r.steps.push(Step::new("tamper check", Status::Failed, reason));
            done_now.push(r);
            continue;
        }
        todo.push((ex, Pending { student, origin: path, text, fingerprint: fp }));
    }
    let total = mine.len();
    on_event(Event::Started {
        layout: job.roster.layout,
        students: job.roster.students.len(),
        exercises: job.exercises.len(),
        pairs: total,
        already_graded: already,
        workers: workers.iter().map(|c| c.config.gpu.clone().unwrap_or_else(|| "default".into())).collect(),
    });
    let journal = Mutex::new(journal);
    let done = std::sync::atomic::AtomicUsize::new(already);
    let record = |r: PairResult| -> Result<(), GradeError> {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let (state, flags) = (state_label(&r.state).to_string(), r.flags.iter().map(|f| f.rule).collect());
        let event = Event::Graded { student: r.student.clone(), exercise: r.exercise.clone(), state, points: r.points, max: r.max, flags, device: r.device.clone(), done: n, of: total };
        journal.lock().unwrap().record(r)?;
        on_event(event);
        Ok(())
    };
    for r in done_now {
        record(r)?;
    }
    // Chunks of one exercise each, in exercise order; workers take the next one free.
    let mut by_exercise: BTreeMap<String, (&Exercise, Vec<Pending>)> = BTreeMap::new();
    for (ex, p) in todo {
        by_exercise.entry(ex.id().to_string()).or_insert_with(|| (ex, Vec::new())).1.push(p);
    }
    let mut queue: VecDeque<Chunk> = VecDeque::new();
    for (_, (ex, pairs)) in by_exercise {
        for (k, part) in pairs.chunks(job.chunk.max(1)).enumerate() {
            queue.push_back(Chunk { exercise: ex, pairs: part.to_vec(), index: k as u32 });
        }
    }
    let queue = Mutex::new(queue);
    let failure: Mutex<Option<GradeError>> = Mutex::new(None);
    let workers: Vec<Worker> = workers.into_iter().map(|ctx| Worker::new(ctx, &job.secret, job.shard)).collect();
    // The first worker measures the peak (or finds it cached) before the others start, so that
    // GPUs of one model do not build and run the peak program in one folder at once.
    if let Some(first) = workers.first().filter(|w| w.gpu_stages() && !queue.lock().unwrap().is_empty()) {
        first.peak(wb);
    }
    std::thread::scope(|scope| {
        for worker in &workers {
            let (queue, failure, record) = (&queue, &failure, &record);
            scope.spawn(move || {
                let take = || queue.lock().unwrap().pop_front();
                let mut next = take();
                while let Some(chunk) = next.take() {
                    if crate::tools::runner::interrupted() || failure.lock().unwrap().is_some() {
                        break;
                    }
                    next = take();
                    // The next chunk builds while this one is timed, when the CPU is idle.
                    let (mut results, phases) = std::thread::scope(|inner| {
                        let mut prebuild = || {
                            if let Some(n) = &next {
                                inner.spawn(|| worker.prebuild(wb, n));
                            }
                        };
                        worker.grade(wb, &chunk, &mut prebuild)
                    });
                    worker.clean_up(wb, &chunk, &mut results);
                    on_event(Event::Chunk { exercise: chunk.exercise.id().to_string(), pairs: chunk.pairs.len(), device: worker.device(), phases });
                    for r in results {
                        if let Err(e) = record(r) {
                            failure.lock().unwrap().get_or_insert(e);
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e);
    }
    let journal = journal.into_inner().unwrap();
    let keys: BTreeSet<(String, String)> = mine.iter().map(|(s, e)| (s.id.clone(), e.id().to_string())).collect();
    Ok(journal.entries.into_iter().filter(|(k, _)| keys.contains(k)).map(|(_, v)| v).collect())
}

/// Whether the journal holds the pair under this fingerprint and it needs no second try (a pair
/// the grader's own tools failed on is graded again).
fn finished(journal: &Journal<PairResult>, student: &str, exercise: &str, fingerprint: &str) -> bool {
    journal.has(student, exercise, fingerprint) && !journal.entries.get(&(student.to_string(), exercise.to_string())).is_some_and(|r| matches!(r.state, PairState::ToolError { .. }))
}

pub fn state_label(s: &PairState) -> &'static str {
    match s {
        PairState::Graded => "graded",
        PairState::NotSubmitted => "not submitted",
        PairState::NotGradable { .. } => "not gradable",
        PairState::Skipped { .. } => "skipped (no GPU)",
        PairState::ToolError { .. } => "tool error",
    }
}

/// The class, its results from every journal, and the (student, exercise) pairs none has.
pub struct Merged {
    pub info: ClassInfo,
    pub results: Vec<PairResult>,
    pub missing: Vec<(String, String)>,
}

/// `grade merge`: every journal in `out` (the shards', or one run's), checked against the class
/// file: each pair exactly once.
pub fn merge(out: &Path) -> Result<Merged, String> {
    let class_file = out.join(CLASS_FILE);
    let text = std::fs::read_to_string(&class_file).map_err(|e| format!("{}: {e} (run `grade` into this folder first)", class_file.display()))?;
    let info: ClassInfo = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", class_file.display()))?;
    let mut entries: BTreeMap<(String, String), PairResult> = BTreeMap::new();
    let mut journals: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("journal") && n.ends_with(".jsonl") && (n == "journal.jsonl" || n.starts_with("journal.shard-"))))
        .collect();
    journals.sort();
    for path in &journals {
        let (lines, _) = journal::read::<PairResult>(path).map_err(|e| e.to_string())?;
        for r in lines {
            let key = (r.student.clone(), r.exercise.clone());
            if let Some(old) = entries.get(&key) {
                if old.fingerprint != r.fingerprint {
                    return Err(format!("{} / {} is in two journals with different results (graded twice from different files?): {}", key.0, key.1, path.display()));
                }
            }
            entries.insert(key, r);
        }
    }
    let mut missing = Vec::new();
    for s in &info.roster.students {
        for e in &info.exercises {
            if !entries.contains_key(&(s.id.clone(), e.clone())) {
                missing.push((s.id.clone(), e.clone()));
            }
        }
    }
    Ok(Merged { info, results: entries.into_values().collect(), missing })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::config::Config;

    #[test]
    fn workers_share_the_cores_and_keep_what_the_environment_set() {
        let mut one = Config::default();
        let cores = one.cpu_jobs;
        configure_worker(&mut one, None, 1, &[PathBuf::from("/class")]);
        assert!(one.audit && one.one_connection && one.hidden == [PathBuf::from("/class")] && one.gpu.is_none());
        assert_eq!((one.cpu_jobs, one.timeouts.tool.as_secs(), one.timeouts.run.as_secs()), (cores, 90, 30));
        let mut two = Config::default();
        two.from_env.timeouts = true;
        two.from_env.gpu_jobs = true;
        two.gpu_jobs = 3;
        configure_worker(&mut two, Some("1".into()), 2, &[]);
        assert_eq!(two.gpu.as_deref(), Some("1"));
        assert_eq!(two.cpu_jobs, (cores / 2).max(1));
        assert_eq!((two.gpu_jobs, two.timeouts.tool), (3, Config::default().timeouts.tool), "the environment's settings stay");
    }

    /// A harness output file of one i32 buffer.
    fn write_output(path: &Path, values: &[i32]) {
        let out = crate::exercise::reference::Buffer { name: "out".into(), data: crate::exercise::reference::Data::I32(values.to_vec()) };
        crate::exercise::data::write_outputs(path, &[out]).unwrap();
    }

    fn case(name: &str, value: i32) -> crate::exercise::cases::PreparedCase {
        let expected = vec![crate::exercise::reference::Buffer { name: "out".into(), data: crate::exercise::reference::Data::I32(vec![value]) }];
        crate::exercise::cases::PreparedCase { name: name.into(), input: PathBuf::new(), expected, sanitize: false }
    }

    fn ran(exit: Exit, outputs: Vec<PathBuf>) -> Output {
        let finished = crate::tools::runner::Finished { exit, stdout: Default::default(), stderr: Default::default(), wall: Default::default(), leftovers: 0, escaped: false, oom_killed: false, isolation: None };
        Output::Ran { command: String::new(), run: Ok(finished), outputs }
    }

    #[test]
    fn one_run_of_the_public_and_hidden_cases_is_scored_as_two_and_a_crash_runs_the_hidden_again() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("exercises/03-race");
        let text: &'static str = Box::leak(std::fs::read_to_string(root.join("exercise.toml")).unwrap().into_boxed_str());
        let manifest = crate::exercise::manifest::parse("03-race", &root.join("exercise.toml"), text).unwrap();
        let ex = Exercise { manifest, original: "", solution: "" };
        let public = Cases { cases: vec![case("p0", 1), case("p1", 2)], bench_input: PathBuf::new(), vary: PathBuf::new() };
        let secret = SecretCases { hidden: Cases { cases: vec![case("h0", 3), case("h1", 4)], bench_input: PathBuf::new(), vary: PathBuf::new() }, fresh: Cases::default() };
        let both = ExerciseCases::new(public.clone(), SecretCases { hidden: secret.hidden.clone(), fresh: Cases::default() });
        assert_eq!(both.graded.cases.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["p0", "p1", "h0", "h1"]);

        let dir = tempfile::tempdir().unwrap();
        let out: Vec<PathBuf> = (0..4).map(|i| dir.path().join(format!("case{i}.out"))).collect();
        for (path, v) in out.iter().zip([1, 2, 3, 99]) {
            write_output(path, &[v]);
        }
        let fresh_result = || PairResult::empty("s", &ex, String::new(), PairState::Graded);
        let mut results = Results::default();
        results.outputs.insert(Stage::new(0, StageKind::Correctness), ran(Exit::Code(0), out.clone()));
        let mut r = fresh_result();
        score_cases(&results, 0, &mut r, &ex, &public, &secret);
        assert_eq!(r.stage(GradeStage::Public).unwrap().status, Status::Passed);
        assert_eq!(r.stage(GradeStage::Hidden).unwrap().summary, "1 of 2 hidden cases match the reference");
        assert!(!crashed(results.get(0, StageKind::Correctness)));

        // Crashed after the public cases: the hidden ones count from their own run.
        results.outputs.insert(Stage::new(0, StageKind::Correctness), ran(Exit::Code(3), out[..2].to_vec()));
        assert!(crashed(results.get(0, StageKind::Correctness)));
        let again: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("again{i}.out"))).collect();
        write_output(&again[0], &[3]);
        write_output(&again[1], &[4]);
        results.outputs.insert(Stage::new(0, StageKind::Hidden), ran(Exit::Code(0), again));
        let mut r = fresh_result();
        score_cases(&results, 0, &mut r, &ex, &public, &secret);
        assert_eq!(r.stage(GradeStage::Public).unwrap().status, Status::Passed, "each public case counts on its own");
        assert_eq!(r.stage(GradeStage::Hidden).unwrap().summary, "2 of 2 hidden cases match the reference");
        // A run that hung is not run again.
        assert!(!crashed(Some(&ran(Exit::TimedOut, Vec::new()))));
    }
}
