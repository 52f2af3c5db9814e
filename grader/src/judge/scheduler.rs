//! The one executor: runs any list of stages over submissions. Builds run on the CPU cores; each
//! GPU stage starts as soon as the binary it needs is built (at most `gpu_jobs` at once); profiler
//! stages run last, when no other stage of the run uses the GPU, `ncu_jobs` processes at once. A
//! stage whose build is missing from the list is added; builds already in `Results` are reused.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::exercise::workbook::Workbook;
use crate::judge::context::Context;
use crate::judge::kept;
use crate::judge::plan::{Resource, Stage, StageKind, Submission};
use crate::judge::stages::{self, Blocked, Output};
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
            .chain(crate::judge::plan::confirming_runs(batch))
            .map(|run| self.get_run(&Stage::again(subject, StageKind::Call, run)))
            .collect()
    }
    /// A subject's timed stage of `kind` as the judge reads it: run `run`'s, but for the whole call
    /// the quickest of that run and batch `batch`'s confirming runs (`speed::quickest_call`).
    pub fn judged(&self, subject: usize, run: u32, batch: u32, kind: StageKind) -> Option<&Output> {
        match kind {
            StageKind::Call => {
                crate::judge::speed::quickest_call(self.call_runs(subject, run, batch))
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
pub struct Timeline {
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

/// What a run that failed for want of a GPU resource says: out of device memory, the device busy
/// or unavailable. Another program on the same GPU can cause these; a kernel's own bad launch
/// configuration (too many threads, too much shared memory) is not one of them.
const RESOURCE_FAILURES: &[&str] = &[
    "out of memory",
    "cudaErrorMemoryAllocation",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "cudaErrorDevicesUnavailable",
    "busy or unavailable",
    "cudaErrorStartupFailure",
    // compute-sanitizer's words when it cannot set itself up on the GPU: seen on an H100 while
    // another program held all of its memory (a reference fix then "failed" racecheck).
    "Error: Device not supported",
];

/// Whether a GPU stage's run failed on a shared resource (and so may not be the program's fault).
pub fn failed_on_resource(o: &Output) -> bool {
    // The runs that share the GPU with other programs: the tools, the plain runs and the timings.
    let Some(finished) = o.finished().filter(|_| {
        matches!(
            o,
            Output::Ran { .. } | Output::Sanitized { .. } | Output::Timed { .. }
        )
    }) else {
        return false;
    };
    if finished.success() || finished.exit == crate::tools::runner::Exit::TimedOut {
        return false;
    }
    let text = finished.output();
    RESOURCE_FAILURES.iter().any(|p| text.contains(p))
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

/// Why GPU stages cannot run here (no GPU, unless a recording stands in for it).
fn gpu_blocked(ctx: &Context) -> Option<Blocked> {
    ctx.gpu_blocked().map(Blocked::NoGpu)
}

/// Run `stages` (and the builds they need) over `subs`, adding every output to `results`.
pub fn execute(
    ctx: &Context,
    wb: &Workbook,
    subs: &[Submission],
    stages: &[Stage],
    results: &mut Results,
    start: Instant,
) -> Timeline {
    // A submission whose folder cannot be made fails its builds, which say why.
    let unprepared: Vec<Option<std::io::Error>> = subs
        .iter()
        .map(|sub| stages::materialise(sub).err())
        .collect();
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
    let of = |r: Resource| {
        stages
            .iter()
            .filter(|s| s.kind.resource() == r && !results.outputs.contains_key(s))
            .cloned()
            .collect::<Vec<_>>()
    };
    let (mut gpu, profiler, exclusive) = (
        of(Resource::Gpu),
        of(Resource::Profiler),
        of(Resource::Exclusive),
    );
    // The slowest kinds of run start first, so that none starts last and holds up the phase.
    gpu.sort_by_key(|s| longest_first(s.kind));
    let blocked = gpu_blocked(ctx);

    // Each build's binary, by (subject, flavor), as soon as it exists; those built earlier are there.
    let slot_of =
        |subject: usize, flavor: Flavor| subject * 2 + usize::from(flavor == Flavor::Timing);
    let binaries: Slots<Option<Built>> = Slots::new(subs.len() * 2);
    for (i, _) in subs.iter().enumerate() {
        for flavor in Flavor::BOTH {
            if !builds.contains(&Stage::new(i, StageKind::Build(flavor))) {
                binaries.put(slot_of(i, flavor), results.built(i, flavor).cloned());
            }
        }
    }
    let run_within = |s: &Stage, tool_limit: Option<std::time::Duration>| -> Output {
        let flavor = s.kind.needs().expect("a stage that runs a build");
        let built = binaries.wait(slot_of(s.subject, flavor));
        match (&blocked, built) {
            (_, None) => Output::NotRun(Blocked::BuildFailed),
            (Some(b), Some(_)) if s.kind.needs_gpu() => Output::NotRun(b.clone()),
            (_, Some(b)) => stages::run_within(ctx, wb, &subs[s.subject], s, Some(&b), tool_limit),
        }
    };
    let spent = std::sync::Mutex::new(Vec::new());
    // Every stage through here, so that the report can say where the time went.
    let clocked = |s: &Stage, run: &dyn Fn() -> Output| -> Output {
        let from = start.elapsed().as_secs_f64();
        let out = run();
        let to = start.elapsed().as_secs_f64();
        spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Spent {
                stage: format!("{} {}", subs[s.subject].variant, s.id()),
                from_s: from,
                secs: to - from,
                kind: Some(s.kind),
                name: subs[s.subject].name.clone(),
            });
        out
    };
    let run_within = |s: &Stage, limit: Option<std::time::Duration>| -> Output {
        clocked(s, &|| run_within(s, limit))
    };
    let run_on_build = |s: &Stage| run_within(s, None);
    let mut timeline = Timeline::default();
    let share = gpu_share(ctx.config.gpu.as_deref());
    let shared = (!gpu.is_empty()).then(|| {
        share
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    });
    let (built, ran) = std::thread::scope(|scope| {
        let runs = scope.spawn(|| parallel(&gpu, ctx.config.gpu_jobs, run_on_build));
        let built = parallel(&builds, ctx.config.cpu_jobs, |s| {
            // A build that panicked must still release the stages waiting for it.
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    match &unprepared[s.subject] {
                        Some(e) => Output::Built(Err(BuildError::Io(
                            subs[s.subject].work.clone(),
                            std::io::Error::new(e.kind(), e.to_string()),
                        ))),
                        None => clocked(s, &|| stages::run(ctx, wb, &subs[s.subject], s, None)),
                    }
                }));
            let StageKind::Build(flavor) = s.kind else {
                unreachable!("only builds run on the CPU")
            };
            binaries.put(
                slot_of(s.subject, flavor),
                result.as_ref().ok().and_then(Output::built).cloned(),
            );
            result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        timeline.builds_done_at = start.elapsed().as_secs_f64();
        let ran = runs.join().expect("a GPU stage panicked");
        (built, ran)
    });
    // A run that failed on a resource while others shared the GPU runs again alone, now that every
    // other GPU stage has ended: one program holding all the memory must not fail another.
    let mut ran = ran;
    drop(shared);
    let again: Vec<Again> = gpu
        .iter()
        .zip(&ran)
        .map(|(s, o)| run_again(s, o, &gpu, &ran, ctx.config.timeouts.tool))
        .collect();
    let _alone =
        (again.iter().any(|a| *a != Again::No) || !profiler.is_empty() || !exclusive.is_empty())
            .then(|| {
                share
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            });
    timeline.rerun_alone += rerun_alone(&gpu, &mut ran, &again, &run_within);
    if blocked.is_none() && !gpu.is_empty() {
        timeline.runs_done_at = Some(start.elapsed().as_secs_f64());
    }
    let phase = Instant::now();
    let mut timed = parallel(&profiler, ctx.config.ncu_jobs, run_on_build);
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
    timeline.rerun_alone += rerun_alone(&profiler, &mut timed, &again, &run_within);
    if !profiler.is_empty() && blocked.is_none() {
        timeline.profiler = Some(phase.elapsed().as_secs_f64());
    }
    // Wall-clock timings last, one at a time: nothing else on the GPU.
    let phase = Instant::now();
    let alone = parallel(&exclusive, 1, run_on_build);
    if !exclusive.is_empty() && blocked.is_none() {
        timeline.exclusive = Some(phase.elapsed().as_secs_f64());
    }
    for (s, o) in builds
        .into_iter()
        .zip(built)
        .chain(gpu.into_iter().zip(ran))
        .chain(profiler.into_iter().zip(timed))
        .chain(exclusive.into_iter().zip(alone))
    {
        results.outputs.insert(s, o);
    }
    let mut spent = spent
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    spent.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
    results.spent.extend(spent);
    timeline
}

/// The measurements kept between plans (`judge::kept`), after `timing` ran: where some of its runs
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
    let call_ns = crate::judge::speed::evidence(None, results.get_run(reference_call))
        .call
        .and_then(crate::judge::speed::CallTimes::judged_ns);
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

/// Who has a GPU: any number of executions side by side (sanitizers, cases), or one alone (reruns
/// of resource failures, the profiler, the whole calls). grade runs a chunk's fresh inputs while
/// the next chunk's tools run; this keeps each "alone" alone all the same. One per GPU.
fn gpu_share(gpu: Option<&str>) -> std::sync::Arc<std::sync::RwLock<()>> {
    type Shares = std::sync::Mutex<BTreeMap<Option<String>, std::sync::Arc<std::sync::RwLock<()>>>>;
    static SHARES: std::sync::OnceLock<Shares> = std::sync::OnceLock::new();
    let mut shares = SHARES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    shares.entry(gpu.map(str::to_string)).or_default().clone()
}

/// Whether, and how, a GPU stage runs again alone once the others have ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Again {
    No,
    /// It failed on a resource another program may have held: again, with its full time limit.
    Full,
    /// A tool that stalled beside other runs: again, held to a limit its peers set (`run_again`).
    Stalled(std::time::Duration),
}

/// A stalled tool run alone is held to this many times the slowest run of the same tool that
/// finished in the batch (at least `STALL_FLOOR`): the stalled initcheck below took 1-12 s alone.
const STALL_FACTOR: u32 = 4;
/// Where no other program ran the tool (`check` runs the tools on the learner's file alone), this
/// many times the program's own plain run: the tools ran programs 2-20x slower than their plain
/// runs on the H100 (initcheck of a 0.3 s run: up to 5.6 s).
const STALL_PLAIN_FACTOR: u32 = 50;
const STALL_FLOOR: std::time::Duration = std::time::Duration::from_secs(30);

fn timed_out(o: &Output) -> bool {
    o.finished()
        .is_some_and(|f| f.exit == crate::tools::runner::Exit::TimedOut)
}

/// How `stage` runs again, if it does: a failure on a shared resource with its full limit; a tool
/// that stalled (see `stalled`) within a limit derived from its peers, so that a program that
/// stalls only under a tool (it can tell) costs one short wait alone, not a second full one.
fn run_again(
    stage: &Stage,
    output: &Output,
    stages: &[Stage],
    outputs: &[Output],
    limit: std::time::Duration,
) -> Again {
    if failed_on_resource(output) {
        return Again::Full;
    }
    if !stalled(stage, output, stages, outputs) {
        return Again::No;
    }
    let walls = |same: &dyn Fn(&Stage) -> bool| {
        stages
            .iter()
            .zip(outputs)
            .filter(|(s, o)| same(s) && !timed_out(o))
            .filter_map(|(_, o)| o.wall())
            .max()
    };
    let slowest_peer = walls(&|s| s.kind == stage.kind).map(|w| w * STALL_FACTOR);
    let own_plain = || {
        walls(&|s| {
            s.subject == stage.subject
                && matches!(s.kind, StageKind::Correctness | StageKind::Hidden)
        })
        .map(|w| w * STALL_PLAIN_FACTOR)
    };
    Again::Stalled(
        slowest_peer
            .or_else(own_plain)
            .map_or(limit, |w| w.max(STALL_FLOOR).min(limit)),
    )
}

/// Whether a tool run ran out of time beside other runs while the same program, run plainly in
/// the same batch, finished in time: the tool stalled, not the program. On an H100, one initcheck
/// of 60 (05-memset's original, 12 processes sharing the GPU) ran into grade's 90 s limit where
/// the others took 1-12 s; a grade must not hang on that.
fn stalled(stage: &Stage, output: &Output, stages: &[Stage], outputs: &[Output]) -> bool {
    matches!(stage.kind, StageKind::Sanitize(_))
        && timed_out(output)
        && stages.iter().zip(outputs).any(|(s, o)| {
            s.subject == stage.subject
                && matches!(s.kind, StageKind::Correctness | StageKind::Hidden)
                && matches!(o, Output::Ran { run: Ok(_), .. })
                && !timed_out(o)
        })
}

/// Run again, one at a time, each of `stages` that `again` marks; how many ran again. Even one
/// stage alone in its run may have shared the GPU with another run (grade ends one chunk beside the
/// next chunk's tools). A program whose stalled tool stalls again alone has shown the stall is its
/// own: its other stalled tools keep their time-out rather than each waiting again.
fn rerun_alone(
    stages: &[Stage],
    outputs: &mut [Output],
    again: &[Again],
    run: &dyn Fn(&Stage, Option<std::time::Duration>) -> Output,
) -> usize {
    let mut count = 0;
    let mut stalls_alone = std::collections::BTreeSet::new();
    for ((s, o), a) in stages.iter().zip(outputs.iter_mut()).zip(again) {
        let limit = match *a {
            Again::No => continue,
            Again::Stalled(_) if stalls_alone.contains(&s.subject) => continue,
            Again::Full => None,
            Again::Stalled(limit) => Some(limit),
        };
        *o = run(s, limit);
        count += 1;
        if matches!(a, Again::Stalled(_)) && timed_out(o) {
            stalls_alone.insert(s.subject);
        }
    }
    count
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

    fn ran(code: i32, text: &str) -> Output {
        use crate::tools::runner::{Captured, Exit, Finished};
        let stdout = Captured {
            bytes: text.as_bytes().to_vec(),
            dropped: 0,
        };
        let finished = Finished {
            stdout,
            ..Finished::ended(Exit::Code(code), Default::default())
        };
        Output::Ran {
            command: String::new(),
            run: Ok(finished),
            outputs: Vec::new(),
            bounds: crate::judge::stages::Bounds::plain(Default::default()),
        }
    }

    #[test]
    fn failures_for_want_of_the_gpu_are_told_from_the_programs_own() {
        // racecheck of the 03-race reference fix on an H100 while the `hog` student held the memory.
        let hogged = "========= COMPUTE-SANITIZER\n========= Error: Device not supported. Please refer to the \"Supported Devices\" section of the sanitizer documentation\n========= Target application returned an error\n";
        assert!(failed_on_resource(&ran(86, hogged)));
        assert!(failed_on_resource(&ran(
            3,
            "CUDA error at reduce.cu:51: out of memory (cudaMalloc(&d_in, n * sizeof(float)))"
        )));
        assert!(
            !failed_on_resource(&ran(
                3,
                "CUDA error at softmax.cu:60: invalid configuration argument"
            )),
            "a launch of its own making"
        );
        assert!(
            !failed_on_resource(&ran(0, "out of memory")),
            "a run that succeeded is not run again"
        );
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

    #[test]
    fn a_tool_that_ran_out_of_time_is_run_again_alone_only_where_the_program_finished() {
        use crate::exercise::manifest::Tool;
        use crate::tools::runner::Exit;
        let timed_out = |o: Output| match o {
            Output::Ran { run: Ok(mut f), .. } => {
                f.exit = Exit::TimedOut;
                f
            }
            _ => unreachable!(),
        };
        let sanitized = |f| Output::Sanitized {
            tool: Tool::Initcheck,
            run: Ok(crate::tools::sanitizer::ToolRun {
                tool: Tool::Initcheck,
                command: String::new(),
                records: Vec::new(),
                xml_path: Default::default(),
                finished: f,
            }),
            findings: Vec::new(),
            bounds: crate::judge::stages::Bounds::plain(Default::default()),
        };
        let plain = |f| Output::Ran {
            command: String::new(),
            run: Ok(f),
            outputs: Vec::new(),
            bounds: crate::judge::stages::Bounds::plain(Default::default()),
        };
        let tool = Stage::new(0, StageKind::Sanitize(Tool::Initcheck));
        let stages = [tool.clone(), Stage::new(0, StageKind::Correctness)];
        let finished = [sanitized(timed_out(ran(0, ""))), ran(0, "")];
        assert!(
            stalled(&tool, &finished[0], &stages, &finished),
            "the program finished: the tool stalled"
        );
        let hung = [
            sanitized(timed_out(ran(0, ""))),
            plain(timed_out(ran(0, ""))),
        ];
        assert!(
            !stalled(&tool, &hung[0], &stages, &hung),
            "the program hangs too: no second wait"
        );
        let in_time = [
            sanitized(match ran(0, "") {
                Output::Ran { run: Ok(f), .. } => f,
                _ => unreachable!(),
            }),
            ran(0, ""),
        ];
        assert!(!stalled(&tool, &in_time[0], &stages, &in_time));
        let mut outputs = finished;
        let again = [Again::Full, Again::No];
        assert_eq!(
            rerun_alone(&stages, &mut outputs, &again, &|_, _| ran(0, "alone")),
            1
        );
        assert!(
            matches!(&outputs[0], Output::Ran { run: Ok(f), .. } if f.output().contains("alone"))
        );
    }

    #[test]
    fn a_stalled_tool_waits_alone_only_as_long_as_its_peers_took_and_a_program_stalls_alone_once() {
        use crate::exercise::manifest::Tool;
        use crate::tools::runner::{Exit, Finished};
        use std::time::Duration;
        let finished = |exit, secs| Finished::ended(exit, Duration::from_secs(secs));
        let tool = |tool, exit, secs| Output::Sanitized {
            tool,
            run: Ok(crate::tools::sanitizer::ToolRun {
                tool,
                command: String::new(),
                records: Vec::new(),
                xml_path: Default::default(),
                finished: finished(exit, secs),
            }),
            findings: Vec::new(),
            bounds: crate::judge::stages::Bounds::plain(Default::default()),
        };
        let plain = |secs| Output::Ran {
            command: String::new(),
            run: Ok(finished(Exit::Code(0), secs)),
            outputs: Vec::new(),
            bounds: crate::judge::stages::Bounds::plain(Default::default()),
        };
        // Subject 0 stalls under both tools (its plain run finished); subject 1's initcheck took 12 s.
        let stages = [
            Stage::new(0, StageKind::Sanitize(Tool::Initcheck)),
            Stage::new(0, StageKind::Sanitize(Tool::Racecheck)),
            Stage::new(0, StageKind::Correctness),
            Stage::new(1, StageKind::Sanitize(Tool::Initcheck)),
            Stage::new(1, StageKind::Correctness),
        ];
        let outputs = [
            tool(Tool::Initcheck, Exit::TimedOut, 90),
            tool(Tool::Racecheck, Exit::TimedOut, 90),
            plain(1),
            tool(Tool::Initcheck, Exit::Code(0), 12),
            plain(1),
        ];
        let limit = Duration::from_secs(90);
        let again: Vec<Again> = stages
            .iter()
            .zip(&outputs)
            .map(|(s, o)| run_again(s, o, &stages, &outputs, limit))
            .collect();
        assert_eq!(
            again[0],
            Again::Stalled(Duration::from_secs(48)),
            "4 x the 12 s of the finished initcheck"
        );
        assert_eq!(
            again[1],
            Again::Stalled(Duration::from_secs(50)),
            "no other racecheck finished: 50x the program's own plain run"
        );
        assert_eq!(&again[2..], [Again::No; 3]);
        let limits = std::sync::Mutex::new(Vec::new());
        let mut rerun = outputs;
        let count = rerun_alone(&stages, &mut rerun, &again, &|s, l| {
            limits.lock().unwrap().push(l);
            tool(
                if s.kind == StageKind::Sanitize(Tool::Racecheck) {
                    Tool::Racecheck
                } else {
                    Tool::Initcheck
                },
                Exit::TimedOut,
                l.unwrap().as_secs(),
            )
        });
        assert_eq!(
            (count, limits.into_inner().unwrap()),
            (1, vec![Some(Duration::from_secs(48))]),
            "stalled alone too: racecheck is not waited for again"
        );
        let slow = [tool(Tool::Racecheck, Exit::TimedOut, 90), plain(70)];
        assert_eq!(
            run_again(&stages[1], &slow[0], &stages[1..3], &slow, limit),
            Again::Stalled(limit),
            "never above the configured limit"
        );
        let quick = [
            tool(Tool::Initcheck, Exit::TimedOut, 90),
            plain(1),
            tool(Tool::Initcheck, Exit::Code(0), 2),
            plain(1),
        ];
        let quick_stages = [
            stages[0].clone(),
            stages[2].clone(),
            stages[3].clone(),
            stages[4].clone(),
        ];
        assert_eq!(
            run_again(&quick_stages[0], &quick[0], &quick_stages, &quick, limit),
            Again::Stalled(STALL_FLOOR),
            "never below the floor"
        );
    }
}
