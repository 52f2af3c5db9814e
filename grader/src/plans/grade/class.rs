//! A class (or a shard of it) graded: every pair tamper-checked and fingerprinted, the pairs the
//! journal lacks queued in chunks of one exercise, one worker per GPU taking the next chunk (in
//! lanes side by side where chunks are small), each finished pair journaled at once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::class::journal::Journal;
use crate::class::roster::{self, Shard, Student};
use crate::engine::context::Context;
use crate::exercise::workbook::{Exercise, Workbook};

use super::triage::{triage_all, Triaged};
use super::worker::{Chunk, ChunkPhases, Graded, Pending, Worker};
use super::{ClassInfo, ClassJob, Event, GradeError, PairResult, CLASS_FILE};

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
/// share each; its timed calls cores of their own, `tools::cpus`). What the environment set stays.
/// `worker` is this worker's place among `workers`.
pub fn configure_worker(
    config: &mut crate::engine::config::Config,
    gpu: Option<String>,
    (worker, workers): (usize, usize),
    hidden: &[PathBuf],
) {
    config.gpu = gpu;
    config.audit = true;
    config.plain_kernel_timing = true;
    // The cases' outputs are judged again under eight queues in the timed calls and fresh inputs.
    config.cases_one_connection = config.one_connection;
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
    config.cpus = crate::tools::cpus::share(config.timed_cores, (worker, workers));
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
    for (w, ctx) in workers.iter().enumerate() {
        if let Some(message) = ctx.config.cpus.line(w) {
            on_event(Event::Note { message });
        }
    }
    let queue = chunks(todo, job.chunk);
    let largest = queue.iter().map(|c| c.pairs.len()).max().unwrap_or(0);
    let class = Class {
        wb,
        queue: Mutex::new(queue),
        held: Mutex::new(BTreeMap::new()),
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
        for (w, worker) in workers.iter().enumerate() {
            for lane in 0..lanes(&worker.ctx.config, largest) {
                let class = &class;
                scope.spawn(move || {
                    // Everything but the timed calls (`scheduler`) stays off their cores.
                    let _rest = crate::tools::cpus::pin_thread(&worker.ctx.config.cpus.rest);
                    class.work(worker, Lane { worker: w, lane })
                });
            }
        }
    });
    if let Some(e) = class.failure.into_inner().unwrap() {
        return Err(e);
    }
    Ok(entries_of(class.journal.into_inner().unwrap(), &mine))
}

/// How many chunks one worker grades side by side: `CUDABUGS_GRADE_LANES`, else as many as its
/// GPU runs at once allow for chunks of `largest` pairs (each pair's four tools and cases, and the
/// reference fix's runs), at most three. A class of ten students an exercise keeps one lane; one
/// student's catalog (chunks of one pair, 16 runs at once) gets two. The lanes share the GPU's
/// runs (`engine::gpu_share`: at most `gpu_jobs` at once, whichever lane starts them), and every
/// timed stage still takes the GPU alone. (Two lanes for chunks of ten, so shared, graded the bug
/// bench in 93.5 s against one lane's 92.0 s on an H200: book/gpu-runs/2026-12-02-share-50/.)
pub fn lanes(config: &crate::engine::config::Config, largest: usize) -> usize {
    config
        .grade_lanes
        .unwrap_or_else(|| (config.gpu_jobs / (2 + 4 * largest.max(1))).clamp(1, 3))
}

/// One of a worker's lanes (`lanes`): which worker, and which lane of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lane {
    worker: usize,
    lane: usize,
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
    /// Per worker and exercise, the lane that holds its chunks and how many it holds: two lanes of
    /// one worker never grade one exercise at once (they would build and run its reference fix in
    /// one folder).
    held: Mutex<BTreeMap<(usize, String), (usize, usize)>>,
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

    /// The first chunk in the queue that no other lane of this worker holds the exercise of.
    fn take(&self, lane: Lane) -> Option<Arc<Chunk<'a>>> {
        let mut queue = self.queue.lock().unwrap();
        let mut held = self.held.lock().unwrap();
        let free = |c: &Chunk| {
            held.get(&(lane.worker, c.exercise.id().to_string()))
                .is_none_or(|(l, _)| *l == lane.lane)
        };
        let at = queue.iter().position(free)?;
        let chunk = queue.remove(at)?;
        held.entry((lane.worker, chunk.exercise.id().to_string()))
            .or_insert((lane.lane, 0))
            .1 += 1;
        Some(Arc::new(chunk))
    }

    /// A lane is done with one of its chunks: the exercise is free again once it holds none.
    fn release(&self, lane: Lane, chunk: &Chunk) {
        let mut held = self.held.lock().unwrap();
        let key = (lane.worker, chunk.exercise.id().to_string());
        if let Some(h) = held.get_mut(&key) {
            h.1 -= 1;
            if h.1 == 0 {
                held.remove(&key);
            }
        }
    }

    /// A chunk's end: its work folders removed, its event, its journal lines.
    fn end(
        &self,
        (worker, lane): (&Worker, Lane),
        chunk: &Chunk,
        (mut results, mut phases): (Vec<PairResult>, ChunkPhases),
        waited: f64,
    ) {
        phases.waited = waited;
        let cleaning = Instant::now();
        worker.clean_up(self.wb, chunk, &mut results);
        phases.clean_up = cleaning.elapsed().as_secs_f64();
        self.release(lane, chunk);
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

    /// One lane's loop: the next chunk taken until none is left, an interrupt or a failure.
    fn work(&self, worker: &Worker, lane: Lane) {
        let wb = self.wb;
        std::thread::scope(|inner| {
            let mut next = self.take(lane);
            // The last chunk's fresh inputs and judging, which run beside this chunk's
            // tools (60 bug pairs on an H100: 6.5 s of 131.6 s), and the next chunk's
            // builds, which run while this one is timed, at the lowest CPU priority. (Built from
            // the start of the tools phase instead, 60 bug pairs took 148.7 s against
            // 145.3 s: no gain.) Even at nice 19 they slow the host side of the calls timed
            // beside them, which the confirming rounds then time again; built after the timing
            // phase instead, no call was doubted and the next chunk waited as long for its
            // builds (H200, book/gpu-runs/2026-11-30-doubts-50/).
            let mut finishing: Option<std::thread::ScopedJoinHandle<()>> = None;
            let mut prebuilding: Option<std::thread::ScopedJoinHandle<()>> = None;
            while let Some(chunk) = next.take() {
                if crate::tools::runner::interrupted() || self.failure.lock().unwrap().is_some() {
                    break;
                }
                next = self.take(lane);
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
                        prebuilding = Some(inner.spawn(move || {
                            // While this chunk is timed: its programs come first on the CPU.
                            crate::tools::runner::into_background();
                            worker.prebuild(wb, &n)
                        }));
                    }
                };
                match worker.grade_until_timed(wb, &chunk, &mut before_timing) {
                    Graded::Done(results, phases) => {
                        self.end((worker, lane), &chunk, (results, phases), waited)
                    }
                    Graded::Timed(timed) => {
                        finishing = Some(inner.spawn(move || {
                            self.end(
                                (worker, lane),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::Config;

    #[test]
    fn workers_share_the_cores_and_keep_what_the_environment_set() {
        let mut one = Config::default();
        let cores = one.cpu_jobs;
        configure_worker(&mut one, None, (0, 1), &[PathBuf::from("/class")]);
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
        configure_worker(&mut two, Some("1".into()), (1, 2), &[]);
        assert_eq!(two.gpu.as_deref(), Some("1"));
        assert_eq!(two.cpu_jobs, (cores / 2).max(1));
        assert_eq!(
            (two.gpu_jobs, two.timeouts.tool),
            (3, Config::default().timeouts.tool),
            "the environment's settings stay"
        );
    }

    #[test]
    fn small_chunks_get_lanes_and_no_two_lanes_of_a_worker_hold_one_exercise() {
        let mut config = Config {
            gpu_jobs: 16,
            ..Config::default()
        };
        assert_eq!(lanes(&config, 1), 2, "one student's catalog");
        assert_eq!(lanes(&config, 10), 1, "a class of ten");
        config.gpu_jobs = 64;
        assert_eq!(lanes(&config, 1), 3, "no more than three");
        config.gpu_jobs = 16;
        config.grade_lanes = Some(3);
        assert_eq!(lanes(&config, 10), 3, "the environment's setting stays");

        let (dir, wb) = crate::exercise::workbook::test_workbook(&["01-index", "02-bounds"]);
        let student = Student {
            id: "ann".into(),
            name: "Ann".into(),
            sid: None,
            email: None,
            folder: dir.path().join("ann"),
        };
        let pending = || Pending {
            student: &student,
            origin: PathBuf::new(),
            text: String::new(),
            fingerprint: String::new(),
        };
        let (a, b) = (&wb.exercises[0], &wb.exercises[1]);
        let todo = vec![(a, pending()), (a, pending()), (b, pending())];
        let class = Class {
            wb: &wb,
            queue: Mutex::new(chunks(todo, 1)),
            held: Mutex::new(BTreeMap::new()),
            failure: Mutex::new(None),
            journal: Mutex::new(Journal::open(&dir.path().join("journal.jsonl"), true).unwrap()),
            done: AtomicUsize::new(0),
            total: 3,
            started: Instant::now(),
            on_event: &|_| {},
        };
        let (first, second) = (Lane { worker: 0, lane: 0 }, Lane { worker: 0, lane: 1 });
        let other_gpu = Lane { worker: 1, lane: 0 };
        let a0 = class.take(first).unwrap();
        assert_eq!(a0.exercise.id(), a.id());
        // The second lane passes over the first lane's exercise.
        let b0 = class.take(second).unwrap();
        assert_eq!(b0.exercise.id(), b.id());
        assert!(
            class.take(second).is_none(),
            "only the first lane's exercise is left"
        );
        class.release(first, &a0);
        // Freed, it goes to whoever asks; another worker (its own folders) never waited for it.
        let a1 = class.take(other_gpu).unwrap();
        assert_eq!(a1.exercise.id(), a.id());
        assert!(class.take(first).is_none());
    }
}
