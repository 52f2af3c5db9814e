//! A class (or a shard of it) graded: every pair tamper-checked and fingerprinted, the pairs the
//! journal lacks queued in chunks of one exercise, one worker per GPU taking the next chunk, each
//! finished pair journaled at once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::class::journal::Journal;
use crate::class::roster::{self, Shard, Student};
use crate::class::tamper::{self, Tampered};
use crate::engine::context::Context;
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::verdict::{Status, Step, StepName};

use super::worker::{Chunk, ChunkPhases, Graded, Pending, Worker};
use super::{
    fingerprint, ClassInfo, ClassJob, Event, GradeError, PairResult, PairState, CLASS_FILE,
};

/// The GPUs a class is graded on, a worker each: those named (`--gpus`), else every visible one
/// (named as `CUDA_VISIBLE_DEVICES` names them); one default worker where there is one GPU or none.
pub fn worker_gpus(requested: &[String]) -> Vec<Option<String>> {
    if !requested.is_empty() {
        return requested.iter().cloned().map(Some).collect();
    }
    let visible: Vec<String> = crate::environment::text(crate::environment::VISIBLE_DEVICES)
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    match crate::tools::gpu::count() {
        0 | 1 => vec![None],
        n => (0..n)
            .map(|i| Some(visible.get(i).cloned().unwrap_or_else(|| i.to_string())))
            .collect(),
    }
}

/// One worker's settings out of `workers`: its GPU, the anti-cheat counters, the bug track timed
/// in the plain calls, the class's folders hidden from every run, shorter limits
/// than a learner's check (a class has hostile and hung programs), and its share of the cores
/// (sanitizer runs spend their start-up on the CPU; the builds, the next chunk's included, get a
/// share each). What the environment set stays.
pub fn configure_worker(
    config: &mut crate::engine::config::Config,
    gpu: Option<String>,
    workers: usize,
    hidden: &[PathBuf],
) {
    config.gpu = gpu;
    config.audit = true;
    config.plain_kernel_timing = true;
    // No file of a student's run may exceed 1 GiB (the largest bench output is 256 MiB).
    config.limits.file_bytes = Some(1 << 30);
    config.hidden = hidden.to_vec();
    if !config.from_env.timeouts {
        config.timeouts.tool = std::time::Duration::from_secs(90);
        config.timeouts.run = std::time::Duration::from_secs(30);
    }
    let workers = workers.max(1);
    if !config.from_env.gpu_jobs {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        // 60 bug pairs on an H100 (16 cores): 114.2 s with 16 runs at once, 120.9-121.3 s with 12.
        config.gpu_jobs = (cores / workers).max(6);
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

/// Grade every pair of `job` that the journal does not hold yet, one worker per context (GPU).
/// Returns the journal's entries for this run's pairs.
pub fn grade_class(
    wb: &Workbook,
    workers: Vec<Context>,
    job: &ClassJob,
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<Vec<PairResult>, GradeError> {
    let started = Instant::now();
    write_class_file(job)?;
    let journal = open_journal(job, on_event)?;
    let mine = my_pairs(job);
    let Triaged {
        todo,
        decided,
        already,
    } = triage_all(wb, job, &journal, workers.first(), &mine);
    on_event(started_event(job, &workers, mine.len(), already));
    if let Some(first) = workers.first() {
        on_event(Event::Note {
            message: first.trust_line(),
        });
    }
    let class = Class {
        wb,
        queue: Mutex::new(chunks(todo, job.chunk)),
        failure: Mutex::new(None),
        journal: Mutex::new(journal),
        done: AtomicUsize::new(already),
        total: mine.len(),
        started,
        on_event,
    };
    for r in decided {
        class.record(r)?;
    }
    let workers: Vec<Worker> = workers
        .into_iter()
        .map(|ctx| Worker::new(ctx, &job.secret, job.shard))
        .collect();
    // The first worker measures the peak (or finds it cached) before the others start, so that
    // GPUs of one model do not build and run the peak program in one folder at once.
    if let Some(first) = workers
        .first()
        .filter(|w| w.ctx.gpu_stages() && !class.queue.lock().unwrap().is_empty())
    {
        first.peak(wb);
    }
    std::thread::scope(|scope| {
        for worker in &workers {
            let class = &class;
            scope.spawn(move || class.work(worker));
        }
    });
    if let Some(e) = class.failure.into_inner().unwrap() {
        return Err(e);
    }
    Ok(entries_of(class.journal.into_inner().unwrap(), &mine))
}

/// The class's facts for `grade merge` (`CLASS_FILE`), written into the output folder.
fn write_class_file(job: &ClassJob) -> Result<(), GradeError> {
    std::fs::create_dir_all(&job.out).map_err(|e| GradeError::Io(job.out.clone(), e))?;
    let info = ClassInfo {
        submissions: job.submissions.clone(),
        roster: job.roster.clone(),
        exercises: job.exercises.iter().map(|e| e.id().to_string()).collect(),
        secret: job.secret.fingerprint(),
    };
    let class_file = job.out.join(CLASS_FILE);
    crate::exercise::workbook::write_atomically(
        &class_file,
        &(serde_json::to_string_pretty(&info).expect("serialisable") + "\n"),
    )
    .map_err(|e| GradeError::Io(class_file.clone(), e))
}

/// The run's journal, opened (or started afresh with `--regrade`); a note where lines were dropped.
fn open_journal(
    job: &ClassJob,
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<Journal<PairResult>, GradeError> {
    let journal: Journal<PairResult> =
        Journal::open(&journal_path(&job.out, job.shard), job.regrade)?;
    if journal.dropped > 0 {
        on_event(Event::Note {
            message: format!(
                "{} journal line(s) torn by a kill or superseded were dropped",
                journal.dropped
            ),
        });
    }
    Ok(journal)
}

/// This run's pairs: the class's, or this shard's share of them.
fn my_pairs<'a>(job: &'a ClassJob) -> Vec<(&'a Student, &'a Exercise)> {
    roster::pairs(&job.roster, &job.exercises)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| job.shard.is_none_or(|s| s.takes(*i)))
        .map(|(_, p)| p)
        .collect()
}

/// This run's pairs after triage: those to grade, those decided without running anything, and
/// how many the journal held already.
struct Triaged<'a> {
    todo: Vec<(&'a Exercise, Pending<'a>)>,
    decided: Vec<PairResult>,
    already: usize,
}

/// Every pair of `mine` triaged (`triage`), on the first worker's GPU.
fn triage_all<'a>(
    wb: &Workbook,
    job: &ClassJob,
    journal: &Journal<PairResult>,
    ctx: Option<&Context>,
    mine: &[(&'a Student, &'a Exercise)],
) -> Triaged<'a> {
    let gpu_here = ctx.is_some_and(|c| c.gpu_stages());
    let mut triaged = Triaged {
        todo: Vec::new(),
        decided: Vec::new(),
        already: 0,
    };
    // A workbook copy's own harness refuses every exercise of the student: read once per student.
    let mut harness_of: BTreeMap<&str, Option<Tampered>> = BTreeMap::new();
    for &(student, ex) in mine {
        let harness = harness_of
            .entry(student.id.as_str())
            .or_insert_with(|| tamper::harness_changes(wb, &student.folder))
            .clone();
        match triage(wb, job, journal, ctx, gpu_here, student, ex, harness) {
            Triage::Already => triaged.already += 1,
            Triage::Decided(r) => triaged.decided.push(*r),
            Triage::Grade(pending) => triaged.todo.push((ex, pending)),
        }
    }
    triaged
}

/// The event that starts a run: the class, the pairs, and the workers' GPUs.
fn started_event(job: &ClassJob, workers: &[Context], pairs: usize, already: usize) -> Event {
    Event::Started {
        layout: job.roster.layout,
        students: job.roster.students.len(),
        exercises: job.exercises.len(),
        pairs,
        already_graded: already,
        workers: workers
            .iter()
            .map(|c| c.config.gpu.clone().unwrap_or_else(|| "default".into()))
            .collect(),
    }
}

/// The journal's entries for this run's pairs.
fn entries_of(journal: Journal<PairResult>, mine: &[(&Student, &Exercise)]) -> Vec<PairResult> {
    let keys: BTreeSet<(String, String)> = mine
        .iter()
        .map(|(s, e)| (s.id.clone(), e.id().to_string()))
        .collect();
    journal
        .entries
        .into_iter()
        .filter(|(k, _)| keys.contains(k))
        .map(|(_, v)| v)
        .collect()
}

/// What the workers share: the queue of chunks, the first failure (which stops them all), the
/// journal and its count of pairs done, and the events.
struct Class<'a> {
    wb: &'a Workbook,
    queue: Mutex<VecDeque<Chunk<'a>>>,
    failure: Mutex<Option<GradeError>>,
    journal: Mutex<Journal<PairResult>>,
    done: AtomicUsize,
    total: usize,
    started: Instant,
    on_event: &'a (dyn Fn(Event) + Sync),
}

impl<'a> Class<'a> {
    /// One finished pair into the journal, then its event.
    fn record(&self, r: PairResult) -> Result<(), GradeError> {
        let n = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        let (state, flags) = (r.state.kind(), r.flags.iter().map(|f| f.rule).collect());
        let event = Event::Graded {
            student: r.student.clone(),
            exercise: r.exercise.clone(),
            state,
            points: r.points,
            max: r.max,
            flags,
            device: r.device.clone(),
            done: n,
            of: self.total,
        };
        self.journal.lock().unwrap().record(r)?;
        (self.on_event)(event);
        Ok(())
    }

    fn take(&self) -> Option<Arc<Chunk<'a>>> {
        self.queue.lock().unwrap().pop_front().map(Arc::new)
    }

    /// A chunk's end: its work folders removed, its event, its journal lines.
    fn end(
        &self,
        worker: &Worker,
        chunk: &Chunk,
        (mut results, mut phases): (Vec<PairResult>, ChunkPhases),
        waited: f64,
    ) {
        phases.waited = waited;
        let cleaning = Instant::now();
        worker.clean_up(self.wb, chunk, &mut results);
        phases.clean_up = cleaning.elapsed().as_secs_f64();
        (self.on_event)(Event::Chunk {
            exercise: chunk.exercise.id().to_string(),
            pairs: chunk.pairs.len(),
            device: worker.device(),
            phases,
            at: self.started.elapsed().as_secs_f64(),
        });
        for r in results {
            if let Err(e) = self.record(r) {
                self.failure.lock().unwrap().get_or_insert(e);
            }
        }
    }

    /// One worker's loop: the next chunk taken until none is left, an interrupt or a failure.
    fn work(&self, worker: &Worker) {
        let wb = self.wb;
        std::thread::scope(|inner| {
            let mut next = self.take();
            // The last chunk's fresh inputs and judging, which run beside this chunk's
            // tools (60 bug pairs on an H100: 6.5 s of 131.6 s), and the next chunk's
            // builds, which run while this one is timed, when the CPU is idle. (Built from
            // the start of the tools phase instead, 60 bug pairs took 148.7 s against
            // 145.3 s: no gain.)
            let mut finishing: Option<std::thread::ScopedJoinHandle<()>> = None;
            let mut prebuilding: Option<std::thread::ScopedJoinHandle<()>> = None;
            while let Some(chunk) = next.take() {
                if crate::tools::runner::interrupted() || self.failure.lock().unwrap().is_some() {
                    break;
                }
                next = self.take();
                let waiting = Instant::now();
                if let Some(p) = prebuilding.take() {
                    p.join().expect("a prebuild panicked");
                }
                let waited = waiting.elapsed().as_secs_f64();
                let mut before_timing = || {
                    // The timing phase has the GPU and the CPU alone: the last chunk ends first.
                    if let Some(f) = finishing.take() {
                        f.join().expect("a chunk's end panicked");
                    }
                    if let Some(n) = next.clone() {
                        prebuilding = Some(inner.spawn(move || worker.prebuild(wb, &n)));
                    }
                };
                match worker.grade_until_timed(wb, &chunk, &mut before_timing) {
                    Graded::Done(results, phases) => {
                        self.end(worker, &chunk, (results, phases), waited)
                    }
                    Graded::Timed(timed) => {
                        finishing = Some(inner.spawn(move || {
                            self.end(
                                worker,
                                &chunk,
                                worker.finish_timed(wb, &chunk, *timed),
                                waited,
                            )
                        }))
                    }
                }
            }
        });
    }
}

/// The pairs to grade as chunks of at most `size` pairs of one exercise each, in exercise order:
/// workers take the next one free.
fn chunks<'a>(todo: Vec<(&'a Exercise, Pending<'a>)>, size: usize) -> VecDeque<Chunk<'a>> {
    let mut by_exercise: BTreeMap<String, (&Exercise, Vec<Pending>)> = BTreeMap::new();
    for (ex, p) in todo {
        by_exercise
            .entry(ex.id().to_string())
            .or_insert_with(|| (ex, Vec::new()))
            .1
            .push(p);
    }
    let mut queue: VecDeque<Chunk> = VecDeque::new();
    for (_, (ex, pairs)) in by_exercise {
        for (k, part) in pairs.chunks(size.max(1)).enumerate() {
            queue.push_back(Chunk {
                exercise: ex,
                pairs: part.to_vec(),
                index: k as u32,
            });
        }
    }
    queue
}

/// What becomes of one (student, exercise) pair before any tool runs.
enum Triage<'a> {
    /// Graded before with the same file and secret (in the journal).
    Already,
    /// Decided without running anything: no file, an unreadable one, an exercise this GPU cannot
    /// run, a tampered file or harness.
    Decided(Box<PairResult>),
    Grade(Pending<'a>),
}

/// One pair's triage: its file found and read, fingerprinted (with this machine's GPU and
/// capability), looked up in the journal and tamper-checked (`harness`: the student's workbook
/// copy's own harness changes, read once per student).
#[allow(clippy::too_many_arguments)]
fn triage<'a>(
    wb: &Workbook,
    job: &ClassJob,
    journal: &Journal<PairResult>,
    ctx: Option<&Context>,
    gpu_here: bool,
    student: &'a Student,
    ex: &Exercise,
    harness: Option<Tampered>,
) -> Triage<'a> {
    let Some(path) = roster::find_file(student, ex, wb) else {
        let fp = format!("missing-{}", job.secret.fingerprint());
        if finished(journal, &student.id, ex.id(), &fp) {
            return Triage::Already;
        }
        let why = format!("no file for {} in {}", ex.id(), student.folder.display());
        let step = Step::new(StepName::Submission, Status::Failed, why);
        return decided(student, ex, fp, PairState::NotSubmitted, step);
    };
    let text = match roster::read_submitted(&student.folder, &path) {
        Ok(text) => text,
        Err(e) => {
            let mut r = PairResult::empty(
                &student.id,
                ex,
                String::new(),
                PairState::NotGradable {
                    reason: format!("cannot read {}: {e}", path.display()),
                    diff: String::new(),
                },
            );
            r.total();
            return Triage::Decided(Box::new(r));
        }
    };
    let mut fp = fingerprint(ex, &text, &job.secret);
    if !gpu_here {
        fp.push_str("-nogpu");
    }
    // An exercise for a newer GPU is refused here, not scored zero; the fingerprint differs
    // from a real grading's, so a GPU that has the capability grades it again.
    let unsupported = ctx.and_then(|c| c.unsupported(&ex.manifest));
    if unsupported.is_some() {
        fp.push_str("-unsupported");
    }
    if finished(journal, &student.id, ex.id(), &fp) {
        return Triage::Already;
    }
    if let Some(reason) = unsupported {
        let state = PairState::Unsupported {
            reason: reason.clone(),
        };
        return decided(student, ex, fp, state, Step::gpu_skipped(reason));
    }
    if let Some(Tampered { reason, diff }) = harness.or_else(|| tamper::check(ex, &text).err()) {
        let state = PairState::NotGradable {
            reason: reason.clone(),
            diff,
        };
        let step = Step::new(StepName::TamperCheck, Status::Failed, reason);
        return decided(student, ex, fp, state, step);
    }
    Triage::Grade(Pending {
        student,
        origin: path,
        text,
        fingerprint: fp,
    })
}

/// A pair decided without running anything: its state, and the step that says why.
fn decided<'a>(
    student: &Student,
    ex: &Exercise,
    fingerprint: String,
    state: PairState,
    step: Step,
) -> Triage<'a> {
    let mut r = PairResult::empty(&student.id, ex, fingerprint, state);
    r.steps.push(step);
    Triage::Decided(Box::new(r))
}

/// Whether the journal holds the pair under this fingerprint and it needs no second try (a pair
/// the grader's own tools failed on is graded again).
fn finished(
    journal: &Journal<PairResult>,
    student: &str,
    exercise: &str,
    fingerprint: &str,
) -> bool {
    journal.has(student, exercise, fingerprint)
        && !journal
            .entries
            .get(&(student.to_string(), exercise.to_string()))
            .is_some_and(|r| matches!(r.state, PairState::ToolError { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::Config;

    #[test]
    fn workers_share_the_cores_and_keep_what_the_environment_set() {
        let mut one = Config::default();
        let cores = one.cpu_jobs;
        configure_worker(&mut one, None, 1, &[PathBuf::from("/class")]);
        assert!(one.audit && one.hidden == [PathBuf::from("/class")] && one.gpu.is_none());
        assert_eq!(
            (
                one.cpu_jobs,
                one.timeouts.tool.as_secs(),
                one.timeouts.run.as_secs()
            ),
            (cores, 90, 30)
        );
        let mut two = Config::default();
        two.from_env.timeouts = true;
        two.from_env.gpu_jobs = true;
        two.gpu_jobs = 3;
        configure_worker(&mut two, Some("1".into()), 2, &[]);
        assert_eq!(two.gpu.as_deref(), Some("1"));
        assert_eq!(two.cpu_jobs, (cores / 2).max(1));
        assert_eq!(
            (two.gpu_jobs, two.timeouts.tool),
            (3, Config::default().timeouts.tool),
            "the environment's settings stay"
        );
    }
}
