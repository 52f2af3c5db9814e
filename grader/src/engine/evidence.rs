//! The evidence a timed run leaves: what one version's timing stage (ncu) and call stage left in a
//! plan's results, as the judges read it, and the quickest of a version's confirming call runs.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::engine::plan::Timer;
use crate::engine::stages::Output;
use crate::exercise::reference::Buffer;
use crate::tools::ncu::Measured;
use crate::tools::served::CallTimes;

/// What the timed runs of one version left: ncu's measurement, the call timing, and each call's
/// outputs as the grader took them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timed<'a> {
    pub measured: Option<&'a Measured>,
    /// What the grader saw of the calls under ncu (their outputs changed after they ended?).
    pub ncu_calls: Option<&'a CallTimes>,
    /// Each call's outputs under ncu.
    pub ncu_outputs: &'a [PathBuf],
    /// The call timing's times (None where it did not run or failed) and each call's outputs.
    pub call: Option<&'a CallTimes>,
    pub call_outputs: &'a [PathBuf],
    /// Why the call timing has no times, where it ran and failed.
    pub call_failure: Option<&'a str>,
    /// The call timing's whole process, as the grader clocked it from outside.
    pub call_wall_ns: Option<f64>,
    /// What the GPU ran in the call timing's traced calls (CUPTI's records), where they were read.
    pub driver: Option<&'a crate::tools::driver::Driver>,
    /// The harness's timeline of the recorded call, with every call's count of launches.
    pub timeline: Option<&'a crate::tools::timeline::Timeline>,
    /// Where the outputs are kept once read (the reference fix's, which grade compares with every
    /// learner of a chunk); None: read them at each comparison.
    pub read_once: Option<&'a ReadOnce>,
}

/// A version's timed outputs, read at most once. A bench output is up to 256 MiB a call, and grade
/// compares the reference fix's with each learner's: read for every pair, 60 pairs of bug
/// exercises spent 9-12 s of an H100 run reading them.
#[derive(Debug, Default)]
pub struct ReadOnce {
    pub(crate) ncu: OnceLock<Option<Vec<Vec<Buffer>>>>,
    pub(crate) call: OnceLock<Option<Vec<Vec<Buffer>>>>,
}

impl Timed<'_> {
    /// Every kernel's time in one judged call of the plain call timing, as the driver recorded it
    /// (the least of the calls after the first, as the clock's): the kernel time outside ncu.
    pub fn plain_kernel_ns(&self) -> Option<f64> {
        self.driver?
            .judged_kernel_ns(&[], self.call?.calls_ns.len())
    }

    /// The kernels' time outside any timer's choice: ncu's where ncu timed the version, else the
    /// driver's of every kernel of a plain judged call. What the rules of the whole call set
    /// against the call.
    pub fn kernel_ns(&self) -> Option<f64> {
        self.measured
            .and_then(|x| x.nanoseconds)
            .or_else(|| self.plain_kernel_ns())
    }

    /// The judged time, as `timer` measures it: the whole call's, ncu's of the exercise's kernels,
    /// or the driver's of every kernel of a plain judged call.
    pub(crate) fn judged_ns(&self, timer: Timer) -> Option<f64> {
        match timer {
            Timer::Call => self.call.and_then(CallTimes::judged_ns),
            Timer::Ncu => self.measured.and_then(|x| x.nanoseconds),
            Timer::Driver => self.plain_kernel_ns(),
        }
    }
}

/// The timed evidence of one version from a plan's results: its timing stage (ncu) and its call
/// stage. `calls` holds the parsed call times, owned by the caller.
pub fn evidence<'r>(timing: Option<&'r Output>, call: Option<&'r Output>) -> Timed<'r> {
    let mut t = Timed::default();
    if let Some(Output::Timed {
        measured: Ok(m),
        calls,
        outputs,
        ..
    }) = timing
    {
        t.measured = Some(m);
        t.ncu_calls = calls.as_ref();
        t.ncu_outputs = if m.finished.success() { outputs } else { &[] };
    }
    if let Some(Output::Called {
        run,
        times,
        outputs,
        failure,
        driver,
        timeline,
        ..
    }) = call
    {
        t.driver = driver.as_ref().and_then(|d| d.as_ref().ok());
        t.timeline = timeline.as_ref();
        t.call = times.as_ref();
        t.call_outputs = if failure.is_none() { outputs } else { &[] };
        t.call_failure = failure.as_deref();
        t.call_wall_ns = run.as_ref().ok().map(|f| f.wall.as_secs_f64() * 1e9);
    }
    t
}

/// Of one version's call timing runs (the first, then those that confirm it), the one to judge:
/// the one with the quickest judged call, where every run ran all its calls (what a busy host added
/// to the others is not the program's); the first where any failed or was refused (a failure
/// stands, whatever a later run does). Where the driver times the kernels too, the kernels judged
/// are this run's: ranked by their kernels instead, a program that worked on the host in one run
/// (its kernels idle, its call slow) and honestly in the others would be judged on the run it
/// faked. (The rules of the whole call are settled over every round: `speed::judge_confirmed`.)
pub fn quickest_call<'r>(runs: impl IntoIterator<Item = Option<&'r Output>>) -> Option<&'r Output> {
    let runs: Vec<_> = runs.into_iter().collect();
    let first = *runs.first()?;
    let judged = |o: Option<&Output>| {
        let t = evidence(None, o);
        t.call_failure.is_none().then_some(t.call?.judged_ns()?)
    };
    let times: Option<Vec<f64>> = runs.iter().map(|&o| judged(o)).collect();
    match times {
        Some(times) => runs
            .iter()
            .zip(times)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .and_then(|(o, _)| *o),
        None => first,
    }
}
