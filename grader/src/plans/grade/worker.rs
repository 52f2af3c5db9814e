//! One file: one worker's chunk from its cases to its scores; 105 of its lines are tests.
//!
//! One worker (a GPU, its context and ncu lock) grading one chunk: the chunk's stages in three
//! scheduler runs (builds, tools and cases; timing alone on the GPU; fresh inputs), then the scores.
//! The first run and its scores are in `first`; the timed phase and what follows it in `timed`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::class::roster::{Shard, Student};
use crate::class::secret::Secret;
use crate::engine::context::Context;
use crate::engine::plan::{Role, SecretCases, Stage, StageKind, Submission};
use crate::engine::scheduler::Results;
use crate::engine::stages::Output;
use crate::exercise::cases::{self, Cases};
use crate::exercise::manifest::Track;
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::perf;
use crate::judge::verdict::{Status, Step, StepName};
use crate::plans::session::{Phase, Session};
use crate::tools::nvcc::{Flavor, Reuse};
use crate::tools::peak::Peak;

use super::score::tally;
use super::stages::{first_stages, timed_pairs};
use super::{PairResult, PairState};

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
    pub(super) fn new(public: Cases, secret: SecretCases) -> ExerciseCases {
        let graded = Cases::with_bench_of(
            public
                .cases
                .iter()
                .chain(&secret.hidden.cases)
                .cloned()
                .collect(),
            &public,
        );
        ExerciseCases {
            public,
            graded,
            secret,
        }
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
    /// The GPU's settings when the batch started (compute mode, application clocks), and why the
    /// batch stopped, once they changed.
    settings: Option<crate::tools::gpu::Settings>,
    stopped: Mutex<Option<String>>,
}

/// Where `grade_until_timed` left a chunk.
pub enum Graded {
    /// Graded whole (nothing to time, or the grader's own failure).
    Done(Vec<PairResult>, ChunkPhases),
    /// Timed; `finish_timed` does the rest.
    Timed(Box<TimedChunk>),
}

/// How long a chunk's phases took (seconds).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ChunkPhases {
    /// Builds, the four tools, the public and hidden cases.
    pub tools: f64,
    /// The ncu timing phase and the whole calls after it (the GPU is theirs alone).
    pub timing: f64,
    /// Of `timing`, the whole calls, one process at a time.
    pub calls: f64,
    /// Fresh inputs after the timed runs.
    pub fresh: f64,
    /// Reading the tools' records and the cases' outputs after `tools`; judging the timed runs
    /// (their outputs compared with the reference fix's) and the fresh outputs after `fresh`.
    pub scoring: f64,
    pub judging: f64,
    /// After the chunk was graded: waiting for the next chunk's builds, then removing the work
    /// folders.
    pub waited: f64,
    pub clean_up: f64,
    /// Every process the chunk ran, by kind of stage ("sanitize:initcheck"): what bounds a phase.
    pub runs: BTreeMap<String, RunStats>,
    /// The students whose first whole calls were doubted (`speed::call_doubts`), and why: what the
    /// confirming rounds in `calls` were for.
    pub doubted: BTreeMap<String, Vec<String>>,
}

/// The processes of one kind of stage in a chunk.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct RunStats {
    pub count: usize,
    pub total_s: f64,
    pub max_s: f64,
}

/// The chunk's processes so far, by kind of stage (builds kept from earlier count as none).
pub(super) fn run_stats(results: &Results) -> BTreeMap<String, RunStats> {
    let mut runs: BTreeMap<String, RunStats> = BTreeMap::new();
    for (stage, output) in &results.outputs {
        if matches!(output, Output::Built(Ok(b)) if b.reused) {
            continue;
        }
        if let Some(wall) = output.wall() {
            let r = runs.entry(stage.kind.id()).or_default();
            r.count += 1;
            r.total_s += wall.as_secs_f64();
            r.max_s = r.max_s.max(wall.as_secs_f64());
        }
    }
    runs
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
        let settings = (ctx.gpu_info().is_some() && !ctx.launcher.replays())
            .then(|| crate::tools::gpu::settings(ctx.config.gpu.as_deref()))
            .flatten();
        Worker {
            ctx,
            secret,
            plan,
            cases: Mutex::new(BTreeMap::new()),
            fair: Mutex::new(BTreeSet::new()),
            peak: Mutex::new(None),
            settings,
            stopped: Mutex::new(None),
        }
    }

    /// Why this GPU's timings can no longer be trusted, if they cannot: its compute mode, clocks or
    /// persistence changed since the batch started (the grader never changes them; nothing it runs
    /// may). Checked before every timed phase; once changed, the batch stops on this GPU.
    fn settings_changed(&self) -> Option<String> {
        let mut stopped = self.stopped.lock().unwrap();
        if stopped.is_none() {
            let now = self
                .settings
                .as_ref()
                .and_then(|_| crate::tools::gpu::settings(self.ctx.config.gpu.as_deref()));
            if let Some(what) = self
                .settings
                .as_ref()
                .zip(now.as_ref())
                .and_then(|(before, now)| now.changed_since(before))
            {
                *stopped = Some(format!("the GPU's settings changed during the batch ({what}): its timings cannot be compared any more, so grading stopped on it; set them back and run grade again (the journal keeps what was graded)"));
            }
        }
        stopped.clone()
    }

    pub(super) fn device(&self) -> Option<String> {
        self.ctx.config.gpu.clone()
    }

    /// This GPU's peak (measured once, cached on disk); None where it cannot be measured.
    pub(super) fn peak(&self, wb: &Workbook) -> Option<Peak> {
        let mut peak = self.peak.lock().unwrap();
        if peak.is_none() {
            *peak = Some(perf::peak(&self.ctx, wb, false).ok());
        }
        peak.clone().flatten()
    }

    /// The exercise's public, hidden and fresh cases, written once per worker.
    fn cases(
        &self,
        wb: &Workbook,
        ex: &Exercise,
    ) -> std::io::Result<std::sync::Arc<ExerciseCases>> {
        let mut all = self.cases.lock().unwrap();
        if let Some(c) = all.get(ex.id()) {
            return Ok(c.clone());
        }
        let dir = cases::dir(wb, ex);
        // The timed runs' inputs come from the secret: a program cannot know the bench's answer, nor
        // how the inputs change between its calls.
        let public = cases::prepare_with(
            ex,
            &dir,
            self.secret.bench_seed(ex),
            self.secret.derive_seed("vary", &[ex.id()]),
        )?;
        let (hidden, fresh) = self.secret.prepare(ex, &dir)?;
        let c = std::sync::Arc::new(ExerciseCases::new(public, SecretCases { hidden, fresh }));
        all.insert(ex.id().to_string(), c.clone());
        Ok(c)
    }

    fn plan(&self) -> &str {
        &self.plan
    }

    fn students<'s>(
        &self,
        wb: &Workbook,
        chunk: &Chunk<'s>,
        cases: &'s ExerciseCases,
    ) -> Vec<Submission<'s>> {
        let plan = self.plan();
        chunk
            .pairs
            .iter()
            .map(|p| {
                let mut s = Submission::new(
                    wb,
                    plan,
                    chunk.exercise,
                    &p.student.id,
                    p.origin.clone(),
                    p.text.clone(),
                    &cases.graded,
                )
                .reusing(Reuse::IfUnchanged);
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
        let builds: Vec<Stage> = (0..subs.len())
            .flat_map(|i| {
                [
                    Stage::new(i, StageKind::Build(Flavor::Sanitize)),
                    Stage::new(i, StageKind::Build(Flavor::Timing)),
                ]
            })
            .collect();
        Session::new(&self.ctx, (wb, &subs), Instant::now()).run_phase(&Phase::of(builds));
    }

    /// A chunk's submissions: the students', then the reference fix's (the reference index), then
    /// for a performance exercise the original's.
    pub(super) fn subjects<'s>(
        &self,
        wb: &Workbook,
        chunk: &Chunk<'s>,
        prepared: &'s ExerciseCases,
    ) -> (Vec<Submission<'s>>, usize, Option<usize>) {
        let ex = chunk.exercise;
        let plan = self.plan();
        let mut subs = self.students(wb, chunk, prepared);
        let students = subs.len();
        let mut reference = Submission::new(
            wb,
            plan,
            ex,
            "reference",
            wb.solution_path(ex),
            ex.solution.to_string(),
            &prepared.public,
        )
        .reusing(Reuse::IfUnchanged)
        .keeping(Role::Reference);
        reference.secret = Some(&prepared.secret);
        subs.push(reference);
        let original = (ex.manifest.track() == Track::Perf).then(|| {
            subs.push(
                Submission::new(
                    wb,
                    plan,
                    ex,
                    "original",
                    wb.learner_path(ex),
                    ex.original.to_string(),
                    &prepared.public,
                )
                .reusing(Reuse::IfUnchanged)
                .keeping(Role::Original),
            );
            students + 1
        });
        (subs, students, original)
    }

    /// Grade one chunk up to the end of its timing phase, which had the GPU alone. `on_exclusive`
    /// is called when the timing phase is about to start (the caller makes sure the GPU and the
    /// CPU are free then, and prebuilds the next chunk). What is left (fresh inputs, judging the
    /// timed runs) needs neither alone: `finish_timed` runs it beside the next chunk's tools.
    pub fn grade_until_timed(
        &self,
        wb: &Workbook,
        chunk: &Chunk,
        on_exclusive: &mut dyn FnMut(),
    ) -> Graded {
        let started = Instant::now();
        let mut phases = ChunkPhases::default();
        let ex = chunk.exercise;
        let gpu_stages = self.ctx.gpu_stages();
        let prepared = match self.cases_if_gpu(wb, ex) {
            Ok(c) => c,
            Err(e) => {
                return Graded::Done(
                    self.failed_chunk(chunk, format!("cannot write the inputs: {e}")),
                    phases,
                )
            }
        };
        // This GPU's peak, for the physical-floor rule and the performance track (cached on disk).
        let peak = if gpu_stages { self.peak(wb) } else { None };
        let (subs, students, original) = self.subjects(wb, chunk, &prepared);
        let reference = students;

        // 1. Builds, the four tools, the public and the hidden cases in one run (the reference's
        //    hidden run, once per exercise, proves the instructor's cases are fair).
        let reference_sass = Stage::again(reference, StageKind::Sass, chunk.index);
        let fairness = Stage::again(reference, StageKind::Hidden, chunk.index);
        let checked_fair = self.fair.lock().unwrap().contains(ex.id());
        let unproven = (gpu_stages && !checked_fair).then_some(&fairness);
        let timer = crate::engine::plan::Timer::of(&self.ctx, chunk.exercise);
        let stages = first_stages(
            ex,
            students,
            (&reference_sass, unproven),
            original.map(|o| (o, timer)),
            gpu_stages,
        );
        let mut results = self.run_first_phase(wb, &subs, &stages, students, started);
        phases.tools = started.elapsed().as_secs_f64();
        phases.runs = run_stats(&results);

        let phase = Instant::now();
        let mut out = match self.score_first_phase(
            chunk,
            &results,
            &prepared,
            &reference_sass,
            unproven,
            gpu_stages,
        ) {
            Ok(out) => out,
            Err(done) => return Graded::Done(done, phases),
        };
        phases.scoring = phase.elapsed().as_secs_f64();

        // 2. Timing: the reference (and the original) beside every submission whose outputs were
        //    right; nothing else runs on this GPU meanwhile.
        //    A bug exercise's fix is timed once its tool is clean too: a fast file with the bug still
        //    in it earns no speed points.
        let correct = timed_pairs(&mut out);
        if correct.is_empty() {
            let (out, phases) = self.finish(out, started, phases);
            return Graded::Done(out, phases);
        }
        if let Some(why) = self.settings_changed() {
            return Graded::Done(self.failed_chunk(chunk, why), phases);
        }
        on_exclusive();
        let timed = TimedWork {
            timer,
            wb,
            subs: &subs,
            correct: &correct,
            reference,
            original,
            chunk,
            started,
        };
        let baseline = self.time_chunk(&timed, &mut results, &mut phases);
        Graded::Timed(Box::new(TimedChunk {
            timer,
            prepared: prepared.clone(),
            results,
            out,
            correct,
            peak,
            baseline,
            started,
            phases,
        }))
    }

    /// The exercise's public and secret cases where the GPU stages run (none without a GPU).
    fn cases_if_gpu(
        &self,
        wb: &Workbook,
        ex: &Exercise,
    ) -> std::io::Result<std::sync::Arc<ExerciseCases>> {
        if self.ctx.gpu_stages() {
            self.cases(wb, ex)
        } else {
            Ok(std::sync::Arc::new(ExerciseCases::default()))
        }
    }

    /// The reference fix passes every hidden case (once per exercise): else the secret's cases do
    /// not fit the exercise, and Err says so.
    pub(super) fn prove_fair(
        &self,
        ex: &Exercise,
        results: &Results,
        fairness: &Stage,
        hidden: &Cases,
    ) -> Result<(), UnfairCases> {
        let hidden_fair = tally(results.get_run(fairness), hidden, ex);
        if hidden_fair.passed != hidden_fair.total {
            return Err(UnfairCases(hidden_fair.problem.unwrap_or_default()));
        }
        self.fair.lock().unwrap().insert(ex.id().to_string());
        Ok(())
    }

    /// Each pair's result before any score: graded, on this worker's GPU.
    pub(super) fn pair_results(&self, chunk: &Chunk) -> Vec<PairResult> {
        let mut out = self.pairs_as(chunk, PairState::Graded);
        for r in &mut out {
            r.gpu = self.ctx.gpu_info().map(|g| g.name.clone());
        }
        out
    }

    /// Each pair of `chunk` in `state`, on this worker's device.
    fn pairs_as(&self, chunk: &Chunk, state: PairState) -> Vec<PairResult> {
        chunk
            .pairs
            .iter()
            .map(|p| {
                let mut r = PairResult::empty(
                    &p.student.id,
                    chunk.exercise,
                    p.fingerprint.clone(),
                    state.clone(),
                );
                r.device = self.device();
                r
            })
            .collect()
    }

    /// After a chunk: each pair's disk use is recorded and its work folder removed, so that nothing
    /// a submission wrote outlives its pair (and a full disk cannot fail the pairs after it).
    pub fn clean_up(&self, wb: &Workbook, chunk: &Chunk, results: &mut [PairResult]) {
        let empty = ExerciseCases::default();
        let subs = self.students(wb, chunk, &empty);
        for (sub, r) in subs.iter().zip(results.iter_mut()) {
            r.disk_bytes = Some(crate::untrusted::folder_bytes(&sub.work));
            let _ = std::fs::remove_dir_all(&sub.work);
        }
    }

    /// Every pair totalled, and the chunk's wall time shared among them.
    pub(super) fn finish(
        &self,
        mut out: Vec<PairResult>,
        started: Instant,
        phases: ChunkPhases,
    ) -> (Vec<PairResult>, ChunkPhases) {
        for r in &mut out {
            r.total();
        }
        let each = started.elapsed().as_secs_f64() / out.len().max(1) as f64;
        for r in &mut out {
            r.wall_s = (each * 100.0).round() / 100.0;
        }
        (out, phases)
    }

    /// Every pair of a chunk ended in the grader's own failure: recorded as such, graded again on
    /// the next run.
    pub(super) fn failed_chunk(&self, chunk: &Chunk, message: String) -> Vec<PairResult> {
        let state = PairState::ToolError {
            message: message.clone(),
        };
        let mut out = self.pairs_as(chunk, state);
        for r in &mut out {
            r.steps.push(Step::new(
                StepName::Grade,
                Status::ToolError,
                message.clone(),
            ));
        }
        out
    }
}

/// The reference fix fails the secret's hidden cases (`prove_fair`): the problem it shows.
#[derive(Debug, thiserror::Error)]
#[error(
    "the reference fix fails the hidden cases ({0}): the secret's cases do not fit this exercise"
)]
pub(super) struct UnfairCases(String);

/// What a chunk's timed phase works on: what times it, the subjects, the students to time, the
/// reference fix's and the original's subject numbers.
#[derive(Clone, Copy)]
pub(super) struct TimedWork<'w> {
    pub(super) timer: crate::engine::plan::Timer,
    pub(super) wb: &'w Workbook,
    pub(super) subs: &'w [Submission<'w>],
    pub(super) correct: &'w [usize],
    pub(super) reference: usize,
    pub(super) original: Option<usize>,
    pub(super) chunk: &'w Chunk<'w>,
    pub(super) started: Instant,
}

/// A chunk after its timing phase: what `finish_timed` needs.
pub struct TimedChunk {
    pub(super) timer: crate::engine::plan::Timer,
    pub(super) prepared: std::sync::Arc<ExerciseCases>,
    pub(super) results: Results,
    pub(super) out: Vec<PairResult>,
    /// The students whose outputs were right: the ones timed.
    pub(super) correct: Vec<usize>,
    pub(super) peak: Option<Peak>,
    pub(super) baseline: Option<crate::tools::ncu::Measured>,
    pub(super) started: Instant,
    pub(super) phases: ChunkPhases,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::Config;
    use crate::exercise::workbook::test_workbook;
    use crate::tools::gpu::GpuStatus;

    const ID: &str = "01-index";

    /// A worker's context on `gpu` (a `--gpus` entry), with no GPU to run on and no compiler:
    /// nothing here builds or runs.
    fn context(wb: &Workbook, gpu: Option<&str>) -> Context {
        let config = Config {
            install_toolkit: false,
            gpu: gpu.map(String::from),
            ..Config::default()
        };
        Context::builder(wb, config)
            .no_compiler()
            .gpu(GpuStatus::NoDriver)
            .build(|_| {})
            .unwrap()
    }

    #[test]
    fn each_worker_works_in_a_folder_of_its_own_shard_and_gpu() {
        let (_dir, wb) = test_workbook(&[ID]);
        let secret = Secret::from_seed(7);
        let alone = Worker::new(context(&wb, None), &secret, None);
        let shard = Shard { index: 2, count: 3 };
        let second_gpu = Worker::new(context(&wb, Some("1")), &secret, Some(shard));
        assert_eq!(
            (alone.plan(), second_gpu.plan()),
            ("grade", "grade-shard2-gpu1")
        );
        assert_eq!(second_gpu.device().as_deref(), Some("1"));
        assert!(
            alone.settings.is_none(),
            "no GPU: no settings to watch for a change"
        );
    }

    #[test]
    fn a_worker_writes_an_exercise_s_cases_once_and_its_hidden_ones_follow_the_secret() {
        let ((_a, wb_a), (_b, wb_b)) = (test_workbook(&[ID]), test_workbook(&[ID]));
        let (seven, eight) = (Secret::from_seed(7), Secret::from_seed(8));
        let worker = Worker::new(context(&wb_a, None), &seven, None);
        let ex = wb_a.resolve(ID).unwrap();
        let first = worker.cases(&wb_a, ex).unwrap();
        let again = worker.cases(&wb_a, ex).unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &again), "written once");
        assert!(!first.secret.hidden.cases.is_empty());
        assert_eq!(
            first.graded.cases.len(),
            first.public.cases.len() + first.secret.hidden.cases.len(),
            "a student's program runs the public cases, then the hidden ones"
        );

        let other = Worker::new(context(&wb_b, None), &eight, None);
        let theirs = other.cases(&wb_b, wb_b.resolve(ID).unwrap()).unwrap();
        let input = |c: &Cases, i: usize| std::fs::read(&c.cases[i].input).unwrap();
        assert_eq!(
            input(&first.public, 0),
            input(&theirs.public, 0),
            "the public cases are the exercise's"
        );
        assert_ne!(
            input(&first.secret.hidden, 0),
            input(&theirs.secret.hidden, 0),
            "the hidden cases are the class secret's"
        );
    }
}
