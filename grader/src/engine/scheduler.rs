//! The one executor: runs any list of stages over submissions. Builds run on the CPU cores; each
//! GPU stage starts as soon as the binary it needs is built (at most `gpu_jobs` at once); profiler
//! stages run last, when no other stage of the run uses the GPU, `ncu_jobs` processes at once. A
//! stage whose build is missing from the list is added; builds already in `Results` are reused.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::engine::context::Context;
use crate::engine::events::{EngineEvent, Phase, StageOutcome};
use crate::engine::gpu_share::GpuShare;
use crate::engine::kept;
use crate::engine::pace::Pace;
use crate::engine::plan::{Resource, Stage, StageKind, Submission};
pub use crate::engine::rerun::failed_on_resource;
use crate::engine::rerun::{rerun_alone, run_again, Again};
use crate::engine::stages::{self, Blocked, Output, RunTerms};
use crate::exercise::workbook::Workbook;
use crate::tools::nvcc::{BuildError, Built, Flavor};

/// Every stage's output, by stage, and where the time went.
#[derive(Debug, Default)]
pub struct Results {
    pub outputs: BTreeMap<Stage, Output>,
    pub spent: Vec<Spent>,
}

/// One stage's run: when it started (seconds from the plan's start) and how long it took. Stages
/// run side by side, so these do not add up to the plan's time; the report shows where it went.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Spent {
    /// "original timing", "learner sanitize:racecheck".
    pub stage: String,
    pub from_s: f64,
    pub secs: f64,
    /// The stage's kind and its submission's name (the exercise), for a plan's own summary.
    #[serde(skip)]
    pub kind: Option<StageKind>,
    #[serde(skip)]
    pub name: String,
}

impl Results {
    pub fn get(&self, subject: usize, kind: StageKind) -> Option<&Output> {
        self.outputs.get(&Stage::new(subject, kind))
    }
    pub fn get_run(&self, stage: &Stage) -> Option<&Output> {
        self.outputs.get(stage)
    }
    /// A subject's call timings: its own (run `first`), then batch `batch`'s confirming runs
    /// (`plan::confirming_calls`), None where one did not run.
    pub fn call_runs(&self, subject: usize, first: u32, batch: u32) -> Vec<Option<&Output>> {
        std::iter::once(first)
            .chain(crate::engine::plan::confirming_runs(batch))
            .map(|run| self.get_run(&Stage::again(subject, StageKind::Call, run)))
            .collect()
    }
    /// A subject's timed stage of `kind` as the judge reads it: run `run`'s, but for the whole call
    /// the quickest of that run and batch `batch`'s confirming runs (`evidence::quickest_call`).
    pub fn judged(&self, subject: usize, run: u32, batch: u32, kind: StageKind) -> Option<&Output> {
        match kind {
            StageKind::Call => {
                crate::engine::evidence::quickest_call(self.call_runs(subject, run, batch))
            }
            _ => self.get_run(&Stage::again(subject, kind, run)),
        }
    }
    pub fn built(&self, subject: usize, flavor: Flavor) -> Option<&Built> {
        self.get(subject, StageKind::Build(flavor))
            .and_then(Output::built)
    }
}

/// When each kind of work ended, in seconds from the start given to `execute`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PhaseTimes {
    pub builds_done_at: f64,
    /// None where no GPU stage ran.
    pub runs_done_at: Option<f64>,
    /// How long the profiler stages took.
    pub profiler: Option<f64>,
    /// How long the exclusive stages (one at a time, after the profiler) took.
    pub exclusive: Option<f64>,
    /// GPU stages that failed on a resource another program may have held, run again alone.
    pub rerun_alone: usize,
}

/// A GPU stage's place in the queue: on the H200 and H100, for programs whose plain run took 0.3 s,
/// initcheck took 1.3-5.6 s, racecheck 1.1 s, memcheck 0.5-0.9 s and synccheck 0.5 s.
fn longest_first(kind: StageKind) -> u8 {
    use crate::exercise::manifest::Tool;
    match kind {
        StageKind::Sanitize(Tool::Initcheck) => 0,
        StageKind::Sanitize(Tool::Racecheck) => 1,
        StageKind::Sanitize(Tool::Memcheck) => 2,
        StageKind::Sanitize(Tool::Synccheck) => 3,
        _ => 4,
    }
}

/// Run `stages` (and the builds they need) over `subs`, adding every output to `results`.
pub fn execute(
    ctx: &Context,
    wb: &Workbook,
    subs: &[Submission],
    stages: &[Stage],
    results: &mut Results,
    start: Instant,
) -> PhaseTimes {
    // A submission whose folder cannot be made fails its builds, which say why.
    let unprepared: Vec<Option<std::io::Error>> = subs
        .iter()
        .map(|sub| stages::materialise(sub).err())
        .collect();
    let builds = builds_needed(stages, results);
    let of = |r: Resource| not_run(stages, results, r);
    let (mut gpu, profiler, exclusive) = (
        of(Resource::Gpu),
        of(Resource::Profiler),
        of(Resource::Exclusive),
    );
    // The slowest kinds of run start first, so that none starts last and holds up the phase.
    gpu.sort_by_key(|s| longest_first(s.kind));
    let mut runs = Execution::new(ctx, wb, subs, start, unprepared, &builds, results);
    for s in &gpu {
        if s.kind == StageKind::Sass {
            runs.reach_after_build[s.subject] = true;
        }
    }
    let mut timeline = PhaseTimes::default();
    let share = GpuShare::of(ctx.config.gpu.as_deref());
    let pace = Pace::of(subs, &gpu);
    let beside = RunTerms::beside(ctx.gpu_memory_share(), pace.clone());
    phase_started(ctx, Phase::Shared, builds.len() + gpu.len(), start);
    let (built, mut ran) = std::thread::scope(|scope| {
        let gpu_runs = scope.spawn(|| {
            parallel(&gpu, ctx.config.gpu_jobs, |s| {
                let out = runs.run(s, &beside, Some(&share));
                pace.ended(&subs[s.subject], s, &out);
                out
            })
        });
        let built = parallel(&builds, ctx.config.cpu_jobs, |s| runs.build(s));
        timeline.builds_done_at = start.elapsed().as_secs_f64();
        (built, gpu_runs.join().expect("a GPU stage panicked"))
    });
    // A run that failed on a resource while others shared the GPU runs again alone, once every
    // other run on it has ended: one program holding all the memory must not fail another.
    let again: Vec<Again> = gpu
        .iter()
        .zip(&ran)
        .map(|(s, o)| run_again(s, o, &gpu, &ran, ctx.config.timeouts.tool))
        .collect();
    let _alone =
        (again.iter().any(|a| *a != Again::No) || !profiler.is_empty() || !exclusive.is_empty())
            .then(|| share.alone());
    timeline.rerun_alone += rerun_alone(&gpu, &mut ran, &again, &|s, limit| {
        runs.run(s, &RunTerms::alone(limit), None)
    });
    if runs.blocked.is_none() && !gpu.is_empty() {
        timeline.runs_done_at = Some(start.elapsed().as_secs_f64());
    }
    let timed = runs.profile(&profiler, &mut timeline);
    let alone = runs.time_alone(&exclusive, &mut timeline);
    for (s, o) in builds
        .into_iter()
        .zip(built)
        .chain(gpu.into_iter().zip(ran))
        .chain(profiler.into_iter().zip(timed))
        .chain(exclusive.into_iter().zip(alone))
    {
        results.outputs.insert(s, o);
    }
    results.spent.extend(runs.spent());
    timeline
}

/// `stage`'s end, with its output, as the engine's event.
fn stage_done(
    sub: &Submission,
    stage: &Stage,
    (from_s, secs): (f64, f64),
    out: &Output,
) -> EngineEvent {
    let failed = |e: &dyn std::fmt::Display| (StageOutcome::Failed, Some(e.to_string()));
    let (outcome, why) = match out {
        Output::NotRun(b) => (StageOutcome::NotRun, Some(b.to_string())),
        Output::Built(Err(e)) => failed(e),
        Output::Sanitized { run: Err(e), .. } => failed(e),
        Output::Ran { run: Err(e), .. } | Output::Called { run: Err(e), .. } => failed(e),
        Output::Timed {
            measured: Err(e), ..
        } => failed(e),
        _ => (StageOutcome::Ran, None),
    };
    EngineEvent::StageDone {
        submission: sub.name.clone(),
        variant: sub.variant.to_string(),
        stage: stage.kind.id(),
        run: stage.run,
        from_s,
        secs,
        outcome,
        why,
    }
}

/// A phase of `execute` begins, with `stages` to run (told only where it has any).
fn phase_started(ctx: &Context, phase: Phase, stages: usize, start: Instant) {
    if let Some(tell) = ctx.events.as_ref().filter(|_| stages > 0) {
        tell(&EngineEvent::PhaseStarted {
            phase,
            stages,
            at_s: start.elapsed().as_secs_f64(),
        });
    }
}

/// The builds `stages` ask for or need, none already in `results`: the sanitizer builds first.
fn builds_needed(stages: &[Stage], results: &Results) -> Vec<Stage> {
    let mut builds: Vec<Stage> = stages
        .iter()
        .filter(|s| s.kind.resource() == Resource::Cpu && !results.outputs.contains_key(s))
        .cloned()
        .collect();
    for s in stages {
        if let Some(flavor) = s.kind.needs() {
            let b = Stage::new(s.subject, StageKind::Build(flavor));
            if !results.outputs.contains_key(&b) && !builds.contains(&b) {
                builds.push(b);
            }
        }
    }
    builds.sort_by_key(|s| (s.kind != StageKind::Build(Flavor::Sanitize), s.subject));
    builds.dedup();
    builds
}

/// The stages of `stages` on resource `r` that have no output in `results` yet.
fn not_run(stages: &[Stage], results: &Results, r: Resource) -> Vec<Stage> {
    stages
        .iter()
        .filter(|s| s.kind.resource() == r && !results.outputs.contains_key(s))
        .cloned()
        .collect()
}

/// Each build's binary's place in `Runs::binaries`, by (subject, flavor).
fn slot_of(subject: usize, flavor: Flavor) -> usize {
    subject * 2 + usize::from(flavor == Flavor::Timing)
}

/// One `execute`'s stages as they run: each build's binary as soon as it exists (those built
/// earlier are there from the start), why GPU stages cannot run here, and where the time went.
struct Execution<'r, 's> {
    ctx: &'r Context,
    wb: &'r Workbook,
    subs: &'r [Submission<'s>],
    start: Instant,
    unprepared: Vec<Option<std::io::Error>>,
    blocked: Option<Blocked>,
    binaries: Slots<Option<Built>>,
    spent: std::sync::Mutex<Vec<Spent>>,
    /// Subjects whose compiled reach the SASS stage will read: analysed in the CPU slot of the last
    /// of their builds, so that the SASS stage finds it kept and holds a GPU slot for no compiler.
    reach_after_build: Vec<bool>,
    /// How many of each subject's builds in this execution have yet to end.
    builds_left: Vec<std::sync::atomic::AtomicUsize>,
}

impl<'r, 's> Execution<'r, 's> {
    fn new(
        ctx: &'r Context,
        wb: &'r Workbook,
        subs: &'r [Submission<'s>],
        start: Instant,
        unprepared: Vec<Option<std::io::Error>>,
        builds: &[Stage],
        results: &Results,
    ) -> Execution<'r, 's> {
        // Why GPU stages cannot run here (no GPU, unless a recording stands in for it).
        let blocked = ctx.gpu_blocked().map(Blocked::NoGpu);
        let binaries: Slots<Option<Built>> = Slots::new(subs.len() * 2);
        for (i, _) in subs.iter().enumerate() {
            for flavor in Flavor::BOTH {
                if !builds.contains(&Stage::new(i, StageKind::Build(flavor))) {
                    binaries.put(slot_of(i, flavor), results.built(i, flavor).cloned());
                }
            }
        }
        Execution {
            ctx,
            wb,
            subs,
            start,
            unprepared,
            blocked,
            binaries,
            spent: std::sync::Mutex::new(Vec::new()),
            reach_after_build: vec![false; subs.len()],
            builds_left: (0..subs.len())
                .map(|i| builds.iter().filter(|b| b.subject == i).count().into())
                .collect(),
        }
    }

    /// Every stage through here, so that the report can say where the time went, and the
    /// engine's events each stage's end.
    fn clocked(&self, s: &Stage, run: &dyn Fn() -> Output) -> Output {
        let from = self.start.elapsed().as_secs_f64();
        let out = run();
        let to = self.start.elapsed().as_secs_f64();
        if let Some(tell) = &self.ctx.events {
            tell(&stage_done(
                &self.subs[s.subject],
                s,
                (from, to - from),
                &out,
            ));
        }
        self.spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Spent {
                stage: format!("{} {}", self.subs[s.subject].variant, s.id()),
                from_s: from,
                secs: to - from,
                kind: Some(s.kind),
                name: self.subs[s.subject].name.clone(),
            });
        out
    }

    /// A stage that runs a build's binary, once that is built, on `terms`: beside others in a slot
    /// of `share` (a GPU stage's), or alone (the caller holds the GPU). Clocked from its start, not
    /// from the wait for its build or its slot.
    fn run(&self, s: &Stage, terms: &RunTerms, share: Option<&GpuShare>) -> Output {
        let flavor = s.kind.needs().expect("a stage that runs a build");
        if s.kind == StageKind::Sass {
            self.binaries.wait(slot_of(s.subject, Flavor::Sanitize)); // see `analyse_reach`
        }
        match (
            &self.blocked,
            self.binaries.wait(slot_of(s.subject, flavor)),
        ) {
            (_, None) => self.clocked(s, &|| Output::NotRun(Blocked::BuildFailed)),
            (Some(b), Some(_)) if s.kind.needs_gpu() => {
                self.clocked(s, &|| Output::NotRun(b.clone()))
            }
            (_, Some(b)) => {
                let _slot = share
                    .filter(|_| s.kind.needs_gpu())
                    .map(|share| share.beside(self.ctx.config.gpu_jobs));
                self.clocked(s, &|| {
                    stages::run_within(self.ctx, self.wb, &self.subs[s.subject], s, Some(&b), terms)
                })
            }
        }
    }

    /// A build, its binary put where the stages that need it wait.
    fn build(&self, s: &Stage) -> Output {
        // A build that panicked must still release the stages waiting for it.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match &self.unprepared[s.subject] {
                Some(e) => Output::Built(Err(BuildError::Io(
                    self.subs[s.subject].work.clone(),
                    std::io::Error::new(e.kind(), e.to_string()),
                ))),
                None => self.clocked(s, &|| {
                    stages::run(self.ctx, self.wb, &self.subs[s.subject], s, None)
                }),
            }
        }));
        let StageKind::Build(flavor) = s.kind else {
            unreachable!("only builds run on the CPU")
        };
        let built = result.as_ref().ok().and_then(Output::built).cloned();
        let left = self.builds_left[s.subject].fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        if self.reach_after_build[s.subject] && left == 1 {
            self.analyse_reach(s.subject, flavor, built.as_ref());
        }
        self.binaries.put(slot_of(s.subject, flavor), built);
        result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }

    /// The compiled-reach analysis of `subject` by the last of its builds (`built`; the other's is
    /// put, or about to be), before it hands its binary on: it reads both builds' objects, and the
    /// SASS stage, which waits for both binaries, finds it kept. None where the release build failed.
    fn analyse_reach(&self, subject: usize, flavor: Flavor, built: Option<&Built>) {
        let other = Flavor::BOTH.into_iter().find(|f| *f != flavor);
        let other = other.and_then(|f| self.binaries.wait(slot_of(subject, f)));
        let both: Vec<&Built> = built.into_iter().chain(other.as_ref()).collect();
        if both.iter().any(|b| b.flavor == Flavor::Timing) {
            stages::analyse_reach(self.ctx, self.wb, &self.subs[subject], subject, &both);
        }
    }

    /// The profiler stages, `ncu_jobs` processes at once.
    fn profile(&self, profiler: &[Stage], timeline: &mut PhaseTimes) -> Vec<Output> {
        phase_started(self.ctx, Phase::Profiler, profiler.len(), self.start);
        let phase = Instant::now();
        let mut timed = parallel(profiler, self.ctx.config.ncu_jobs, |s| {
            self.run(s, &RunTerms::alone(None), None)
        });
        // Likewise a profiled run (a program starting beside it may have taken the memory).
        let again: Vec<Again> = timed
            .iter()
            .map(|o| {
                if failed_on_resource(o) {
                    Again::Full
                } else {
                    Again::No
                }
            })
            .collect();
        timeline.rerun_alone += rerun_alone(profiler, &mut timed, &again, &|s, limit| {
            self.run(s, &RunTerms::alone(limit), None)
        });
        if !profiler.is_empty() && self.blocked.is_none() {
            timeline.profiler = Some(phase.elapsed().as_secs_f64());
        }
        timed
    }

    /// Wall-clock timings last, one at a time: nothing else on the GPU, and on cores of their own
    /// where the plan has some (`tools::cpus`).
    fn time_alone(&self, exclusive: &[Stage], timeline: &mut PhaseTimes) -> Vec<Output> {
        phase_started(self.ctx, Phase::Alone, exclusive.len(), self.start);
        let phase = Instant::now();
        let _own_cores = crate::tools::cpus::pin_thread(&self.ctx.config.cpus.timed);
        let alone = parallel(exclusive, 1, |s| self.run(s, &RunTerms::alone(None), None));
        if !exclusive.is_empty() && self.blocked.is_none() {
            timeline.exclusive = Some(phase.elapsed().as_secs_f64());
        }
        alone
    }

    /// Where the time went, in the order the stages started.
    fn spent(self) -> Vec<Spent> {
        let mut spent = self
            .spent
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        spent.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
        spent
    }
}

/// The measurements kept between plans (`engine::kept`), after `timing` ran: where some of its runs
/// were served from an earlier plan, whether the GPU still times `reference_call` (the reference
/// fix's fresh whole call) the same; if not, every kept stage of `timing` is taken again now. Where none was served, this call is what later plans
/// are held to. The line for the report where any was kept.
pub fn keep_or_measure_again(
    ctx: &Context,
    wb: &Workbook,
    subs: &[Submission],
    timing: &[Stage],
    reference_call: &Stage,
    results: &mut Results,
    started: std::time::Instant,
) -> Option<String> {
    let dir = kept::dir(ctx, &subs[reference_call.subject]);
    let served = timing
        .iter()
        .any(|s| results.get_run(s).is_some_and(Output::was_kept));
    let call_ns = crate::engine::evidence::evidence(None, results.get_run(reference_call))
        .call
        .and_then(crate::tools::served::CallTimes::judged_ns);
    if !served {
        if let Some(ns) = call_ns {
            kept::anchor(&dir, ns);
        }
        return None;
    }
    let clock = subs[reference_call.subject]
        .exercise()
        .map_or(crate::exercise::manifest::Clock::Kernel, |e| {
            e.manifest.manifest.clock()
        });
    match kept::same_gpu(&dir, call_ns, clock) {
        kept::Standing::Stands(line) => Some(line),
        kept::Standing::Stale(why) => {
            kept::forget(&dir);
            let again: Vec<Stage> = timing
                .iter()
                .filter(|s| subs[s.subject].keeps.contains(&s.kind))
                .cloned()
                .collect();
            for s in &again {
                results.outputs.remove(s);
            }
            execute(ctx, wb, subs, &again, results, started);
            if let Some(ns) = call_ns {
                kept::anchor(&dir, ns);
            }
            Some(why)
        }
    }
}

/// Values that threads wait for by index: one thread puts each, any number wait for it.
pub struct Slots<T> {
    values: std::sync::Mutex<Vec<Option<T>>>,
    filled: std::sync::Condvar,
}

impl<T: Clone> Slots<T> {
    pub fn new(len: usize) -> Slots<T> {
        Slots {
            values: std::sync::Mutex::new((0..len).map(|_| None).collect()),
            filled: std::sync::Condvar::new(),
        }
    }

    pub fn put(&self, index: usize, value: T) {
        self.values.lock().unwrap()[index] = Some(value);
        self.filled.notify_all();
    }

    /// Block until `index` has been put, then return a copy of it.
    pub fn wait(&self, index: usize) -> T {
        let mut values = self.values.lock().unwrap();
        loop {
            if let Some(v) = &values[index] {
                return v.clone();
            }
            values = self.filled.wait(values).unwrap();
        }
    }
}

/// Run a closure over items on `workers` threads, keeping the order of the results.
pub fn parallel<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                *results[i].lock().unwrap() = Some(f(item));
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().unwrap().expect("every item ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_gets_the_value_put_after_it_started_waiting() {
        let slots = Slots::new(2);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| slots.wait(1));
            slots.put(0, "exercise -G");
            slots.put(1, "solution -G");
            assert_eq!(waiter.join().unwrap(), "solution -G");
        });
        assert_eq!(slots.wait(0), "exercise -G");
    }

    #[test]
    fn parallel_keeps_the_order_of_the_items() {
        let items: Vec<u32> = (0..50).collect();
        for workers in [0, 1, 7, 64] {
            assert_eq!(
                parallel(&items, workers, |&i| i * 2),
                items.iter().map(|i| i * 2).collect::<Vec<_>>(),
                "{workers} workers"
            );
        }
    }
}
