//! The whole call against the reference fix's, and the call timings that confirm a rule of it
//! before it stands (a busy host can slow one version's calls and not the other's).

use crate::engine::plan::Timer;
use crate::exercise::workbook::Exercise;

use super::{judge, uneven, CallTimes, Flag, JudgeInputs, Rule, Verdict};
use crate::engine::evidence::{evidence, quickest_call, Timed};

/// The rules that weigh a version's whole call against the reference fix's: time outside the
/// kernels (where the clock is the kernels), CPU time, and the process's time outside its calls.
/// Each version's call timing ran once, at its own moment, so a busy host (another job's copies,
/// builds or sanitizers) can slow one and not the other; where one of these fires, both are timed
/// again back to back (`confirming_calls`) and judged on their quickest runs (`quickest_call`)
/// before it stands.
pub fn against_reference_call(learner: &Timed, reference: &Timed, by_call: bool) -> Vec<Flag> {
    let mut flags = Vec::new();
    // Outside the reported calls, clocked by the grader: what the harness's own numbers cannot
    // hide. On an H200 an honest 05-memset fix's process once spent 1.55 s outside its calls
    // against the reference's 0.93 s, beside a class's builds (book/gpu-runs/2026-11-29-plain-50/).
    let outside = |t: &Timed| Some(t.call_wall_ns? - t.call?.total_ns());
    if let (Some(ol), Some(or)) = (outside(learner), outside(reference)) {
        if ol > or + 500e6_f64.max(0.5 * or) {
            flags.push(Flag::new(Rule::Unaccounted, format!("the call timing's process spent {:.2} s outside the calls it reported, the reference fix's {:.2} s", ol / 1e9, or / 1e9)));
        }
    }
    let (call_l, call_r) = (
        learner.call.and_then(CallTimes::judged_ns),
        reference.call.and_then(CallTimes::judged_ns),
    );
    let kernels = |t: &Timed| t.kernel_ns();
    if let (Some(cl), Some(cr), Some(kl)) = (call_l, call_r, kernels(learner)) {
        let kr = kernels(reference).unwrap_or(0.0);
        let extra = (cl - cr) - (kl - kr);
        let allowed = 0.3 * cr + 500_000.0;
        // Where the clock is the call, time outside the kernels is what is judged.
        if cl >= 0.5 * kl && extra > allowed && !by_call {
            flags.push(Flag::new(
                Rule::HostWork,
                format!(
                    "the whole call took {:.2} ms against the reference fix's {:.2} ms, though its kernels take {:.1} us against {:.1} us: {:.2} ms outside the kernels beyond the reference's (allowed: {:.2} ms)",
                    cl / 1e6,
                    cr / 1e6,
                    kl / 1e3,
                    kr / 1e3,
                    extra / 1e6,
                    allowed / 1e6
                ),
            ));
        }
    }
    if let Some(why) = recorded_call_differs(learner).filter(|_| by_call) {
        flags.push(Flag::new(Rule::RecordedCall, why));
    }
    // Where the call is the clock the quickest judged call is the time: every judged call must
    // run as that one did (one that guessed wrong which call is traced ran its fix in a judged one).
    let spread = |t: &Timed| t.call.and_then(CallTimes::spread);
    if let (true, Some(l)) = (by_call, spread(learner)) {
        flags.extend(uneven(l, spread(reference), CALL_SPREAD_FLOOR, "judged"));
    }
    // CPU time, all threads: host work that runs beside the copies and kernels shows here even where
    // the wall clock does not (the H100: the 03 reference fix 9.3 ms a call, threaded-host 28.8 ms
    // over 16 threads in 9.8 ms of wall; scripts/gpu-calls-experiment.py).
    // Where the call is the clock its waits spin (the harness's --spin): a thread's CPU time is its
    // wall time whether it waits or works, and work on it lengthens the clock. What the clock cannot
    // see is other threads: the CPU time beyond the wall time (a 63-transfers half-fix on an H100
    // spun 17.2 ms in 17.0 ms of wall; the reference 7.8 ms in 7.6).
    let (cpu_l, cpu_r) = (
        learner.call.and_then(CallTimes::judged_cpu_ns),
        reference.call.and_then(CallTimes::judged_cpu_ns),
    );
    if let (Some(l), Some(r)) = (cpu_l, cpu_r) {
        let beyond = |cpu: f64, wall: Option<f64>| (cpu - wall.unwrap_or(0.0)).max(0.0);
        let (jl, jr, tick) = if by_call {
            (beyond(l, call_l), beyond(r, call_r), SPIN_CHARGE_NS)
        } else {
            (l, r, 0.0)
        };
        if jl > 1.5 * jr + 2e6 + tick {
            let what = if by_call { " beyond its wall time" } else { "" };
            flags.push(Flag::new(Rule::HostCpu, format!("each call used {:.2} ms of CPU time (all threads, in {:.2} ms of wall time){what} against the reference fix's {:.2} ms", jl / 1e6, call_l.unwrap_or(f64::NAN) / 1e6, jr / 1e6)));
        }
    }
    flags
}

/// Why the recorded call, on which the launch and copy goals are counted, is not one of the judged
/// calls run again, where it is not (`recorded-call`): it launched fewer kernels than every judged
/// call after the first (the wrappers count every call's, recorded or not; a graph counts once), or
/// it took under `RECORDED_CALL_SHARE` of the quickest judged call, where tracing only adds time.
/// No program knows which call is recorded (`Calls::judged`); one that guessed and ran its fix only
/// there launched less there.
fn recorded_call_differs(t: &Timed) -> Option<String> {
    let (calls, timeline) = (t.call?, t.timeline?);
    let recorded = timeline.shown()?.index;
    let judged: Vec<u64> = (1..calls.calls_ns.len() as u32)
        .filter_map(|k| timeline.launched.get(&k).copied())
        .collect();
    if let (Some(&mine), Some(&least)) = (timeline.launched.get(&recorded), judged.iter().min()) {
        if mine < least {
            return Some(format!("the recorded call launched {mine} kernels and graphs; every judged call after the first launched {least} or more"));
        }
    }
    let share = calls.recorded_ns? / calls.judged_ns()?;
    (share < RECORDED_CALL_SHARE).then(|| format!("the recorded call took {share:.2}x the quickest judged call, though recording only adds to a call's time"))
}

/// The least share of its quickest judged call that a version's recorded call may take
/// (`recorded-call`): the timeline's events and CUPTI only lengthen a call (an H200: 62's reference
/// fix 237.7 us recorded against 56.1 us judged), and calls' inputs differ only in scale. Chosen,
/// not measured, for a fix run only where it is traced: on 63 that call would take half the time.
pub const RECORDED_CALL_SHARE: f64 = 0.6;

/// The least spread of the judged calls after the first (slowest over quickest) that the rule
/// `uneven-repeats` takes for work left out of some calls where the call is the clock; it also
/// allows 1.25x the reference fix's own. One of five checks of 68-graphs' reference fix on an H100
/// timed a call at 615 us against the usual 370-406 us, 1.6x (book/gpu-runs/2026-11-26-perf-seconds/);
/// the rule is confirmed in further rounds before it stands.
pub const CALL_SPREAD_FLOOR: f64 = 2.0;

/// What a spinning thread's CPU time can be off by in one call: the kernel charges a running
/// thread's time to its cgroup at the scheduler's tick, and a thread that spins is always running,
/// so a call shorter than a tick is charged a whole tick or nothing (a thread that blocks is charged
/// when it switches, exactly). On the lent H100s the tick is 4 ms (250 Hz): two of 30 checks of
/// 67-zero-copy's and 69-prefetch's reference fixes were charged 4.04 and 4.03 ms in calls of 1.57
/// and 1.42 ms, against the reference's 0 beyond its wall (book/gpu-runs/2026-11-26-perf-seconds-2/).
pub const SPIN_CHARGE_NS: f64 = 4e6;

/// Why `learner`'s whole call, timed once at its own moment, is to be timed again, back to back
/// with the reference fix's (and the original's) before the verdict stands, in words; none where
/// it stands. Where its comparison with the reference fix's fired, or where it misses the speed
/// target by less than the noise of its clock: the host's where the call is the clock
/// (`CALL_NOISE`), the plain calls' where the driver times the kernels (`PLAIN_KERNEL_NOISE`).
pub fn call_doubts(
    ex: &Exercise,
    timer: Timer,
    learner: &Timed,
    reference: &Timed,
    original: &Timed,
) -> Vec<String> {
    let mut why: Vec<String> = against_reference_call(learner, reference, timer.by_call())
        .into_iter()
        .map(|f| format!("{}: {}", f.rule.key(), f.message))
        .collect();
    let near = match timer {
        Timer::Call => near_the_target(ex, learner, original)
            .then(|| format!("the whole call misses the speed target by less than {CALL_NOISE}x")),
        Timer::Driver => near_the_reference(ex, learner, reference).then(|| {
            format!("the kernels miss the reference fix's by less than {PLAIN_KERNEL_NOISE}x past the target")
        }),
        Timer::Ncu => None,
    };
    why.extend(near);
    why
}

/// How far past the bug track's target (a multiple of the reference fix's kernel time) a version
/// timed by the driver is timed again beside the reference before it loses its points: its plain
/// calls and the reference's ran at moments of their own, at boost clocks. A margin chosen, not
/// measured: a doubt costs one more call timing of each, and only slow files are doubted.
pub const PLAIN_KERNEL_NOISE: f64 = 1.5;

/// Whether the learner's kernels, as the driver recorded them, miss the bug track's target over
/// the reference fix's by less than `PLAIN_KERNEL_NOISE`.
fn near_the_reference(ex: &Exercise, learner: &Timed, reference: &Timed) -> bool {
    let Some(max) = ex.manifest.manifest.timing.max_ratio_to_reference.as_ref() else {
        return false;
    };
    let max = *max.get_ref();
    match (
        learner.judged_ns(Timer::Driver),
        reference.judged_ns(Timer::Driver),
    ) {
        (Some(l), Some(r)) if r > 0.0 => l / r > max && l / r < max * PLAIN_KERNEL_NOISE,
        _ => false,
    }
}

/// How much a whole call of the same program moves from one check to the next on one host: an
/// H100's 62-launches, 60-100 us a call (1.6x, book/gpu-runs/2026-11-25-perf-loop/); and one of
/// five checks of 68-graphs' reference fix timed its call at 615 us against 370-406 us, 1.19x the
/// original against a 1.2x target (book/gpu-runs/2026-11-26-perf-seconds/).
pub const CALL_NOISE: f64 = 1.7;

/// Whether the learner's whole call misses the speed target over the original's by less than
/// `CALL_NOISE` (a performance exercise whose clock is the call).
fn near_the_target(ex: &Exercise, learner: &Timed, original: &Timed) -> bool {
    let Some(perf) = &ex.manifest.manifest.perf else {
        return false;
    };
    let target = *perf.speedup.get_ref();
    match (
        original.call.and_then(CallTimes::judged_ns),
        learner.call.and_then(CallTimes::judged_ns),
    ) {
        (Some(o), Some(l)) if l > 0.0 => (target / CALL_NOISE..target).contains(&(o / l)),
        _ => false,
    }
}

/// The verdict on a version whose whole-call comparison was timed again: judged on the quickest
/// runs (`quickest`), whose outputs are checked as the first runs' were, keeping every flag the
/// first runs (`first`) earned except the comparison the confirmation settles. A rule of that
/// comparison stands only where it fired in every round (`rounds`: each of the learner's call
/// timings beside the reference fix's of the same round, the first included): a host busy with a
/// class's builds slows some rounds, a program that works on the host slows them all. On an H200
/// two verbatim copies of the reference fix lost their speed points to `host-work` when one run
/// pair was judged: one whole call 16.31 ms against the reference's 11.74 ms, their kernels the
/// same, where its other rounds took 12.7-14.0 ms (book/gpu-runs/2026-11-29-plain-50/).
pub fn judge_confirmed(
    first: &JudgeInputs,
    quickest: &JudgeInputs,
    rounds: &[(Timed, Timed)],
) -> Verdict {
    let by_call = first.timer.by_call();
    // The rules of the whole call that fired on the first runs, or on the quickest of each version
    // (which may come from two rounds: an honest copy's quickest call set against a reference call
    // whose waits slept looked like host work on the CPU, on an H200): each stands only where every
    // round, each version's calls back to back, showed it.
    let settled: Vec<Rule> = [first, quickest]
        .iter()
        .flat_map(|i| against_reference_call(&i.learner, &i.reference, by_call))
        .map(|f| f.rule)
        .collect();
    // A round that failed settles nothing (as `quickest_call` then judges the first runs).
    let timed = |t: &Timed| t.call_failure.is_none() && t.call.is_some();
    let settles = rounds.iter().all(|(l, r)| timed(l) && timed(r));
    let every_round = |rule: Rule| {
        !settles
            || rounds.iter().all(|(learner, reference)| {
                against_reference_call(learner, reference, by_call)
                    .iter()
                    .any(|f| f.rule == rule)
            })
    };
    let mut verdict = judge(quickest);
    verdict
        .flags
        .retain(|f| !settled.contains(&f.rule) || every_round(f.rule));
    for f in judge(first).flags {
        let stands = !settled.contains(&f.rule) || every_round(f.rule);
        if stands && !verdict.flags.iter().any(|g| g.rule == f.rule) {
            verdict.flags.push(f);
        }
    }
    verdict.flags.sort_by_key(|f| f.rule);
    verdict
}

/// One version's timed runs: ncu's, and its call timings (its own first, then any that confirm it).
pub struct TimedRuns<'r> {
    pub timing: Option<&'r crate::engine::stages::Output>,
    pub calls: Vec<Option<&'r crate::engine::stages::Output>>,
}

/// The verdict on `inputs`, or, where the whole calls were timed again (a confirming call timing
/// of the learner ran), on each version's quickest runs (`judge_confirmed`): the learner's, the
/// reference fix's and, where it was timed again too (the call is the clock), the original's.
pub fn judge_runs<'r>(
    inputs: &JudgeInputs<'r>,
    learner: TimedRuns<'r>,
    reference: TimedRuns<'r>,
    original: TimedRuns<'r>,
) -> Verdict {
    if learner.calls.iter().skip(1).all(Option::is_none) {
        return judge(inputs);
    }
    let original = if original.calls.iter().skip(1).any(Option::is_some) {
        evidence(original.timing, quickest_call(original.calls))
    } else {
        inputs.original
    };
    let quickest = JudgeInputs {
        learner: evidence(learner.timing, quickest_call(learner.calls.iter().copied())),
        reference: evidence(
            reference.timing,
            quickest_call(reference.calls.iter().copied()),
        ),
        original,
        ..*inputs
    };
    let rounds: Vec<(Timed, Timed)> = learner
        .calls
        .iter()
        .zip(&reference.calls)
        .filter(|(l, r)| l.is_some() && r.is_some())
        .map(|(&l, &r)| (evidence(learner.timing, l), evidence(reference.timing, r)))
        .collect();
    judge_confirmed(inputs, &quickest, &rounds)
}
