//! The one speed judge. `check`, `verify` and `grade` hand it what the timed runs of a version (and
//! of the reference fix and the original, timed in the same session) produced: ncu's kernel times
//! and counters, every timed call's outputs, the grader's clock of every call and the run's CPU
//! time. It decides the speed credit and every anti-cheat rule, so that a file `check` fails for a
//! named reason loses its points in `grade` for the same one.
//!
//! What it trusts: only what was measured outside the program. ncu runs outside it; the grader
//! serves every timed call (`tools::served`): it writes inputs the program cannot know before the
//! call, clocks the call itself, takes the outputs itself and compares every call's with the
//! reference fix's of the same call; it reads the CPU time of the run's processes from outside.
//! What the program reports of itself (the GPU memory it used, the timeline of its calls) only
//! ever asks a person to look, or draws a picture.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::engine::evidence::Timed;
use crate::engine::plan::Timer;
use crate::exercise::rubric::GradeStage;
use crate::exercise::workbook::Exercise;
use crate::judge::perf;
use crate::judge::verdict::Status;
use crate::tools::peak::Peak;

mod audit;
mod calls;
mod outputs;
mod rule;

use audit::version_audit;
pub use audit::{audit, driver_audit, Audit};
pub use calls::*;
use outputs::timed_outputs;
pub use rule::{Flag, Rule};

/// The speed a version was judged at.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpeedResult {
    pub learner_ns: f64,
    pub reference_ns: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_ns: Option<f64>,
    pub ratio_to_reference: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_over_original: Option<f64>,
    /// The target in words ("<= 1.50x the reference fix", ">= 2.5x the original").
    pub target: String,
    /// The whole call (the fastest after the first), where the call timing ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner_call_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_call_ns: Option<f64>,
    /// The CPU time of a call (all threads; the least after the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner_call_cpu_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_call_cpu_ns: Option<f64>,
    /// The most device memory in use during the timed calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory_bytes: Option<f64>,
    /// Every kernel's time in a plain judged call (CUPTI's; the least after the first), where the
    /// calls were traced: set beside ncu's by the rule `faster-under-ncu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner_plain_kernel_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_plain_kernel_ns: Option<f64>,
}

/// What the grader's clock recorded of a timed process's calls (`tools::served`).
pub use crate::tools::served::CallTimes;

/// The bytes the bench's inputs hold: what any kernel that computes the outputs must read.
pub fn compulsory_bytes(ex: &Exercise) -> f64 {
    let m = &ex.manifest.manifest;
    m.inputs
        .iter()
        .map(|b| {
            crate::exercise::manifest::eval_len(b.len.get_ref(), &m.bench.params).unwrap_or(0)
                as f64
                * b.dtype.size() as f64
        })
        .sum()
}

/// Where speed credit starts: ncu at base clocks repeats a kernel's time within about 1%, and two
/// processes within about 3% (verify's reruns); a speedup inside this band is noise, not work.
pub const NOISE_BAND: f64 = 1.05;

/// Everything the judge needs of one run of the three versions.
pub struct JudgeInputs<'a> {
    pub ex: &'a Exercise,
    /// What measured the judged time (`plan::Timer::of`).
    pub timer: Timer,
    pub learner: Timed<'a>,
    pub reference: Timed<'a>,
    pub original: Timed<'a>,
    pub peak: Option<&'a Peak>,
    /// The performance track's summary of the three versions (metrics and goals).
    pub perf: Option<&'a perf::PerfSummary>,
}

/// The judge's decision on one version.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The share of the speed points (1.0: the target was reached).
    pub fraction: f64,
    pub status: Status,
    /// "53.2 us, 1.02x the reference fix (target 1.50x)".
    pub summary: String,
    pub speed: Option<SpeedResult>,
    pub flags: Vec<Flag>,
}

impl Verdict {
    /// Whether a flag takes the speed points (or every point).
    pub fn withheld(&self) -> bool {
        self.flags
            .iter()
            .any(|f| f.rule.withholds().contains(&GradeStage::Speed))
    }
}

fn mb(bytes: f64) -> String {
    if bytes >= 1e6 {
        format!("{:.1} MB", bytes / 1e6)
    } else {
        format!("{:.1} kB", bytes / 1e3)
    }
}

/// The rules of the whole call on the grader's clock against the kernels ncu timed (`ns`) and the
/// reference fix's whole call: work on the host, time outside the calls, GPU memory.
fn call_rules(
    i: &JudgeInputs,
    named_launched: bool,
    call_l: Option<f64>,
    ns: Option<f64>,
) -> Vec<Flag> {
    let mut flags: Vec<Flag> = Vec::new();
    let mut flag = |rule: Rule, message: String| flags.push(Flag::new(rule, message));
    if let Some(why) = i.learner.call_failure.filter(|_| named_launched) {
        flag(Rule::HostWork, format!("the call timing run failed ({why}): a program whose time depends on being profiled gets no speed credit"));
    }
    if let (Some(cl), Some(kl)) = (call_l, ns) {
        if cl < 0.5 * kl {
            flag(Rule::HostWork, format!("the grader clocked calls of {:.1} us, shorter than the {:.1} us its kernels take under ncu: the run that was clocked did not run the kernels that were timed", cl / 1e3, kl / 1e3));
        }
    }
    let (mem_l, mem_r) = (
        i.learner.call.and_then(|c| c.gpu_memory),
        i.reference.call.and_then(|c| c.gpu_memory),
    );
    if let (Some(ml), Some(mr)) = (mem_l, mem_r) {
        if ml > 2.0 * mr + 256.0 * 1024.0 * 1024.0 {
            flag(Rule::GpuMemory, format!("{:.0} MiB of GPU memory in use during the timed calls, against the reference fix's {:.0} MiB", ml / 1048576.0, mr / 1048576.0));
        }
    }
    flags.extend(against_reference_call(
        &i.learner,
        &i.reference,
        i.timer.by_call(),
    ));
    flags
}

/// The share of the speed points, the target in words, and the verdict in words: against the
/// original where the exercise sets a speedup (from the edge of the original's noise, halved where
/// a performance goal is missed), else against the reference fix.
fn score(
    i: &JudgeInputs,
    ns: f64,
    ratio: f64,
    original_ns: Option<f64>,
    original_spread: Option<f64>,
    clock: &str,
) -> (f64, String, String) {
    let m = &i.ex.manifest.manifest;
    match (&m.perf, m.timing.max_ratio_to_reference.as_ref()) {
        (Some(p), _) => {
            let goal = *p.speedup.get_ref();
            let speedup = original_ns.map(|o| o / ns).unwrap_or(f64::NAN);
            // Credit from the edge of the noise band: the untouched file earns nothing.
            let band = NOISE_BAND
                .max(original_spread.unwrap_or(1.0))
                .min(goal.sqrt());
            let mut f = ((speedup / band).ln() / (goal / band).ln()).clamp(0.0, 1.0);
            if speedup >= goal {
                f = 1.0;
            }
            let missed: Vec<String> = i
                .perf
                .and_then(|s| {
                    Some(perf::goals(
                        p,
                        s.version("learner")?,
                        s.version("original")?,
                    ))
                })
                .unwrap_or_default()
                .iter()
                .filter(|g| !g.met)
                .map(|g| g.goal.metric.label().to_string())
                .collect();
            if !missed.is_empty() {
                f = f.min(0.5);
            }
            let goals = if missed.is_empty() {
                String::new()
            } else {
                format!("; goals missed: {}", missed.join(", "))
            };
            (
                f,
                format!(">= {goal:.1}x the original{clock}"),
                format!("{speedup:.2}x the original{clock} (target {goal:.1}x){goals}"),
            )
        }
        (None, Some(max)) => {
            let max = *max.get_ref();
            // Full points within the target, none at twice it, a straight line between.
            let f = if ratio <= max {
                1.0
            } else {
                (2.0 - ratio / max).clamp(0.0, 1.0)
            };
            (
                f,
                format!("<= {max:.2}x the reference fix"),
                format!("{ratio:.2}x the reference fix (target {max:.2}x)"),
            )
        }
        (None, None) => (0.0, String::new(), "no speed target".into()),
    }
}

/// The rules of what the timed kernels did, from ncu's launches and counters (the learner's, the
/// reference fix's and the original's audits): the exercise's kernels ran, read their inputs, split
/// evenly into the calls, and did their share of the work; no other kernel ran.
fn kernel_rules(
    i: &JudgeInputs,
    [learner, reference, original]: [&Audit; 3],
    repeat: u32,
    compulsory: f64,
    needed: f64,
) -> Vec<Flag> {
    let m = &i.ex.manifest.manifest;
    let mut flags: Vec<Flag> = Vec::new();
    let mut flag = |rule: Rule, message: String| flags.push(Flag::new(rule, message));
    if !learner.named_launched {
        let ran = if learner.kernels.is_empty() {
            "no kernel at all".to_string()
        } else {
            learner
                .kernels
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        };
        flag(
            Rule::NoKernel,
            format!(
                "the timed runs launched {ran}; the exercise's kernels are {}",
                m.timing.kernels.join(", ")
            ),
        );
    }
    // Managed inputs reach DRAM by page migration, which ncu counts unevenly (`managed_inputs`).
    let read = learner
        .dram_read
        .filter(|_| learner.named_launched && !m.timing.managed_inputs);
    if let Some(read) = read {
        if read < 0.8 * needed {
            flag(Rule::ProofOfWork, format!("the timed kernels read {} from DRAM per run; the inputs are {} and the reference fix reads {}", mb(read), mb(compulsory), reference.dram_read.map_or("?".into(), mb)));
        }
    }
    if learner.named_launched && repeat >= 2 {
        let floor = if i.timer == Timer::Driver {
            PLAIN_SPREAD_FLOOR
        } else {
            1.5
        };
        match (learner.spread, reference.spread) {
            (None, _) => flag(Rule::UnevenRepeats, format!("the timed kernels' launches do not split into the {repeat} timed calls the same way: some calls launched fewer")),
            (Some(s), r) => {
                if let Some(f) = uneven(s, r, floor, "timed") {
                    flag(f.rule, f.message)
                }
            }
        }
    }
    let known: BTreeSet<&String> = m
        .timing
        .kernels
        .iter()
        .chain(&reference.kernels)
        .chain(&original.kernels)
        .collect();
    let unknown: Vec<&String> = learner
        .kernels
        .iter()
        .filter(|k| !known.contains(k))
        .collect();
    if !unknown.is_empty() && learner.named_launched {
        flag(
            Rule::UnnamedKernels,
            format!(
                "kernels not named by the exercise ran: {}",
                unknown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    if let (Some(mine), Some(theirs)) = (learner.instructions, reference.instructions) {
        if mine < 0.1 * theirs {
            flag(
                Rule::Instructions,
                format!(
                    "{mine:.3e} warp instructions per run against the reference fix's {theirs:.3e}"
                ),
            );
        }
    }
    flags
}

/// `uneven-repeats` where the slowest of a version's calls took `spread` times the quickest, beyond
/// `floor` and 1.25x the reference fix's own spread: the calls did not all do the same work.
/// `which`: the calls weighed ("timed", "judged").
pub(super) fn uneven(spread: f64, reference: Option<f64>, floor: f64, which: &str) -> Option<Flag> {
    (spread > floor.max(1.25 * reference.unwrap_or(1.0))).then(|| {
        Flag::new(
            Rule::UnevenRepeats,
            format!(
                "the slowest {which} call took {spread:.2}x the quickest (the reference fix's: {})",
                reference.map_or("?".into(), |r| format!("{r:.2}x"))
            ),
        )
    })
}

/// The least spread of the plain calls' kernel times that the rule `uneven-repeats` takes for
/// work left out of some calls, where the driver times them (`Timer::Driver`): they run at boost
/// clocks with warm caches, after the grader wrote each call's inputs, and move more from call to
/// call than ncu's at base clocks (1.5x there). The rule also allows 1.25x the reference fix's own.
pub const PLAIN_SPREAD_FLOOR: f64 = 2.0;

/// Judge one version's speed and the rules. A version with no kernel time gets no speed points
/// (and the no-kernel rule where none of the named kernels ran); the caller reports a profiler
/// that failed, or a reference fix it could not time, as its own error first.
pub fn judge(i: &JudgeInputs) -> Verdict {
    let m = &i.ex.manifest.manifest;
    let repeat = crate::engine::plan::profiled_calls(i.ex);
    let [learner, reference, original] = [&i.learner, &i.reference, &i.original]
        .map(|t| version_audit(t, i.timer, &m.timing.kernels, repeat));
    let compulsory = compulsory_bytes(i.ex);
    let needed = reference
        .dram_read
        .map_or(compulsory, |r| r.min(compulsory));
    let mut flags: Vec<Flag> = timed_outputs(i, repeat).into_iter().collect();
    flags.extend(kernel_rules(
        i,
        [&learner, &reference, &original],
        repeat,
        compulsory,
        needed,
    ));
    // ncu's kernel time; the judged time is the exercise's clock's (`judged_ns`).
    let ns = i.learner.measured.and_then(|x| x.nanoseconds);
    let by_call = i.timer.by_call();
    let reference_ns = i.reference.judged_ns(i.timer).unwrap_or(f64::NAN);
    let original_ns = i.original.judged_ns(i.timer);
    flags.extend(time_rules(i, ns, reference_ns, needed));
    // The whole call against the kernels: what each version spends outside its kernels.
    let (call_l, call_r) = (
        i.learner.call.and_then(CallTimes::judged_ns),
        i.reference.call.and_then(CallTimes::judged_ns),
    );
    let (cpu_l, cpu_r) = (
        i.learner.call.and_then(CallTimes::judged_cpu_ns),
        i.reference.call.and_then(CallTimes::judged_cpu_ns),
    );
    flags.extend(call_rules(i, learner.named_launched, call_l, ns));
    flags.extend(faster_under_ncu(i));
    flags.sort_by_key(|f| f.rule);
    flags.dedup_by_key(|f| f.rule);

    let kernel_ns = ns;
    let Some(ns) = i.learner.judged_ns(i.timer) else {
        return untimed(&i.learner, i.timer, flags);
    };
    let clock = if by_call { " (whole call)" } else { "" };
    let ratio = ns / reference_ns;
    let (fraction, target, summary) = score(i, ns, ratio, original_ns, original.spread, clock);
    let status = if fraction >= 1.0 {
        Status::Passed
    } else {
        Status::Failed
    };
    let call = match (by_call, call_l, call_r, kernel_ns) {
        (true, _, _, Some(k)) => format!("; its kernels {:.1} us under ncu", k / 1e3),
        (false, Some(l), Some(r), _) => format!(
            "; whole call {:.2} ms (reference {:.2} ms)",
            l / 1e6,
            r / 1e6
        ),
        _ => String::new(),
    };
    let timer = if i.timer == Timer::Driver {
        "; its kernels as the driver recorded them in its plain calls"
    } else {
        ""
    };
    Verdict {
        fraction,
        status,
        summary: format!("{:.1} us, {summary}{call}{timer}", ns / 1e3),
        speed: Some(SpeedResult {
            learner_ns: ns,
            reference_ns,
            original_ns,
            ratio_to_reference: ratio,
            speedup_over_original: original_ns.map(|o| o / ns),
            target,
            learner_call_ns: call_l,
            reference_call_ns: call_r,
            learner_call_cpu_ns: cpu_l,
            reference_call_cpu_ns: cpu_r,
            gpu_memory_bytes: i.learner.call.and_then(|c| c.gpu_memory),
            learner_plain_kernel_ns: i.learner.plain_kernel_ns(),
            reference_plain_kernel_ns: i.reference.plain_kernel_ns(),
        }),
        flags,
    }
}

/// How far a version's kernel time in the plain calls (CUPTI's) may sit above its time under ncu,
/// as a multiple of the reference fix's own ratio, before the kernels ncu timed are taken for not
/// the ones that run. ncu runs kernels at base clocks with cold caches, the plain calls at boost
/// clocks with warm ones: a ratio of its own per exercise, which the reference fix's gives. On an
/// H200 (book/gpu-runs/2026-11-29-driver-47/) the plain/ncu ratios of the reference fixes ran from
/// 0.28 (35-dynpar-shared) to 4.5 (11-overflow, against ncu's time of the named `frame_sums` only,
/// not its `make_frames`: both sides now count every kernel), and a fix graded as a learner kept
/// within 1.11x of its reference's ratio (honest fixes in other styles within 1.06x); ncu-probe's
/// kernel chosen only under ncu showed 7.5x.
pub const PLAIN_OVER_NCU_BAND: f64 = 1.5;

/// Below this much plain kernel time beyond ncu's, no flag: launches of a few microseconds move by
/// more than the band between processes.
pub const PLAIN_OVER_NCU_SLACK_NS: f64 = 5_000.0;

/// The rule `faster-under-ncu`: where ncu's kernel time is the judged time, the kernels of the
/// plain call timing (every kernel, CUPTI's times) against ncu's of every kernel it profiled (every
/// kernel where grade audits, else the named ones), set beside the reference fix's.
fn faster_under_ncu(i: &JudgeInputs) -> Option<Flag> {
    if i.timer != Timer::Ncu {
        return None;
    }
    let repeat = f64::from(crate::engine::plan::profiled_calls(i.ex).max(1));
    let ncu = |t: &Timed| {
        let m = t.measured?;
        let all: f64 = m.launches.iter().map(|l| l.nanoseconds).sum::<f64>() / repeat;
        Some(if m.launches.is_empty() {
            m.nanoseconds?
        } else {
            all
        })
        .filter(|&n| n > 0.0)
    };
    let (pl, kl) = (i.learner.plain_kernel_ns()?, ncu(&i.learner)?);
    let (pr, kr) = (i.reference.plain_kernel_ns()?, ncu(&i.reference)?);
    let (rl, rr) = (pl / kl, pr / kr);
    (rl > rr * PLAIN_OVER_NCU_BAND && pl - kl * rr > PLAIN_OVER_NCU_SLACK_NS).then(|| {
        Flag::new(
            Rule::FasterUnderNcu,
            format!(
                "its kernels took {:.1} us a call outside ncu against {:.1} us under it ({rl:.2}x); the reference fix's {:.1} us against {:.1} us ({rr:.2}x)",
                pl / 1e3,
                kl / 1e3,
                pr / 1e3,
                kr / 1e3
            ),
        )
    })
}

/// The rules of the learner's time itself: its kernels (`ns`, ncu's) faster than this GPU can
/// read the data they must (`needed`), or its judged time far faster than the reference fix's.
fn time_rules(i: &JudgeInputs, ns: Option<f64>, reference_ns: f64, needed: f64) -> Vec<Flag> {
    let mut flags: Vec<Flag> = Vec::new();
    let mut flag = |rule: Rule, message: String| flags.push(Flag::new(rule, message));
    if let (Some(ns), Some(p)) = (ns, i.peak) {
        let floor_ns = needed / p.memcpy_gbps;
        if ns < 0.8 * floor_ns {
            flag(
                Rule::PhysicalFloor,
                format!(
                    "{:.1} us, under the {:.1} us it takes to read {} at this GPU's {:.0} GB/s",
                    ns / 1e3,
                    floor_ns / 1e3,
                    mb(needed),
                    p.memcpy_gbps
                ),
            );
        }
    }
    if let Some(ns) = i.learner.judged_ns(i.timer) {
        if reference_ns / ns > 10.0 {
            flag(
                Rule::TooFast,
                format!(
                    "{:.1}x faster than the reference fix ({:.1} us against {:.1} us)",
                    reference_ns / ns,
                    ns / 1e3,
                    reference_ns / 1e3
                ),
            );
        }
    }
    flags
}

/// The verdict on a version with no judged time: no speed points, and why (`flags` stand).
fn untimed(learner: &Timed, timer: Timer, flags: Vec<Flag>) -> Verdict {
    let why = match (timer, learner.measured) {
        (Timer::Call, _) => format!(
            "the whole call was not timed ({})",
            learner.call_failure.unwrap_or("no call times")
        ),
        (Timer::Driver, _) => format!(
            "the driver recorded no kernel of its plain calls ({})",
            learner.call_failure.unwrap_or(if learner.driver.is_some() {
                "no kernel ran in a judged call"
            } else {
                "no record of the GPU's work"
            })
        ),
        (Timer::Ncu, Some(x)) => x.why_untimed(),
        (Timer::Ncu, None) => "not timed".into(),
    };
    Verdict {
        fraction: 0.0,
        status: Status::Failed,
        summary: format!("no time: {why}"),
        speed: None,
        flags,
    }
}

/// check's and verify's timing steps for the flags.
pub fn flag_steps(flags: &[Flag]) -> Vec<crate::judge::verdict::Step> {
    flags
        .iter()
        .map(|f| f.step().stage(crate::engine::plan::StageKind::Timing))
        .collect()
}

#[cfg(test)]
mod tests;
