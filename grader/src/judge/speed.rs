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
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::exercise::compare::{self, Comparison};
use crate::exercise::data;
use crate::exercise::manifest::Clock;
use crate::exercise::reference::Buffer;
use crate::exercise::rubric::GradeStage;
use crate::exercise::workbook::Exercise;
use crate::judge::perf;
use crate::judge::verdict::Status;
use crate::tools::ncu::{self, Measured};
use crate::tools::peak::Peak;

/// An anti-cheat rule. Each says in the report why it fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// None of the exercise's named kernels ran: the work was done elsewhere.
    NoKernel,
    /// The timed kernels read far fewer DRAM bytes than the inputs hold.
    ProofOfWork,
    /// A timed process (under ncu, or the call timing) wrote outputs the reference fix does not.
    TimedOutputs,
    /// Outputs were wrong on fresh inputs after the timed runs (answers cached or keyed to inputs).
    FreshInputs,
    /// The whole call took far longer than its kernels, beyond what the reference fix spends outside
    /// its kernels: host work or copies of its own (or far shorter: another run than the one timed).
    HostWork,
    /// The calls used far more CPU time (all threads) than the reference fix's: host work, however
    /// well it hides under the copies.
    HostCpu,
    /// The timed kernels did not run the same way in every timed call (work skipped in some).
    UnevenRepeats,
    /// Kernels ran that neither the exercise names nor the reference launches.
    UnnamedKernels,
    /// Far fewer instructions than the reference fix executes.
    Instructions,
    /// Faster than reading the inputs once at this GPU's measured bandwidth.
    PhysicalFloor,
    /// More than 10x faster than the reference fix.
    TooFast,
    /// Far more GPU memory than the reference fix takes.
    GpuMemory,
    /// The call timing's process took far longer outside its calls than the reference's: work before
    /// or after the calls.
    #[serde(rename = "unaccounted-time")]
    Unaccounted,
    /// Code in the marked regions that can tell when a tool watches or forge what the grader reads
    /// (`judge::tool_aware`): the tools' and the speed points are held for a person.
    ToolAware,
}

impl Rule {
    pub const ALL: [Rule; 14] = [
        Rule::NoKernel,
        Rule::ProofOfWork,
        Rule::TimedOutputs,
        Rule::FreshInputs,
        Rule::HostWork,
        Rule::HostCpu,
        Rule::UnevenRepeats,
        Rule::UnnamedKernels,
        Rule::Instructions,
        Rule::PhysicalFloor,
        Rule::TooFast,
        Rule::GpuMemory,
        Rule::Unaccounted,
        Rule::ToolAware,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Rule::NoKernel => "no-kernel",
            Rule::ProofOfWork => "proof-of-work",
            Rule::TimedOutputs => "timed-outputs",
            Rule::FreshInputs => "fresh-inputs",
            Rule::HostWork => "host-work",
            Rule::HostCpu => "host-cpu",
            Rule::UnevenRepeats => "uneven-repeats",
            Rule::UnnamedKernels => "unnamed-kernels",
            Rule::Instructions => "instructions",
            Rule::PhysicalFloor => "physical-floor",
            Rule::TooFast => "too-fast",
            Rule::GpuMemory => "gpu-memory",
            Rule::Unaccounted => "unaccounted-time",
            Rule::ToolAware => "tool-aware",
        }
    }

    /// Left to a person: the points it withholds (speed, or none; a tool-aware program's tool points
    /// too) are for review, not a failure.
    pub fn review(self) -> bool {
        matches!(
            self,
            Rule::UnnamedKernels
                | Rule::Instructions
                | Rule::PhysicalFloor
                | Rule::TooFast
                | Rule::GpuMemory
                | Rule::Unaccounted
                | Rule::ToolAware
        )
    }

    /// The points the rule takes away. Rules about faked answers take the correctness points too;
    /// rules about how the time was made take the speed points; GPU memory only asks for a look.
    pub fn withholds(self) -> &'static [GradeStage] {
        match self {
            Rule::NoKernel | Rule::ProofOfWork | Rule::TimedOutputs | Rule::FreshInputs => {
                &[GradeStage::Public, GradeStage::Hidden, GradeStage::Speed]
            }
            Rule::GpuMemory => &[],
            // A program that can tell it is watched may have shown the tools and ncu something else.
            Rule::ToolAware => &[
                GradeStage::NamedTool,
                GradeStage::OtherTools,
                GradeStage::Speed,
            ],
            _ => &[GradeStage::Speed],
        }
    }

    /// The rule in general, for the report's legend.
    pub fn why(self) -> &'static str {
        match self {
            Rule::NoKernel => "the exercise's kernels must do the work: none of them was launched in the timed runs, so the outputs came from somewhere else (the host, or another kernel)",
            Rule::ProofOfWork => "a kernel that computes its outputs reads its inputs: ncu's dram__bytes_read.sum of the timed kernels must reach 80% of the inputs' bytes (or of what the reference fix reads, where that is less)",
            Rule::TimedOutputs => "every timed call (under ncu, and on the grader's clock) is checked, on inputs the program could not know before the call: outputs that differ from the reference fix's of the same call, or that changed after the call said it was done, were not computed by what was timed",
            Rule::FreshInputs => "after the timed runs the program ran again on inputs it had never seen; outputs that were right before and wrong now were remembered, not computed",
            Rule::HostWork => "speed is the whole call of the exercise's entry point (host work, copies and every kernel, to the end of the GPU work), not only the kernels: time spent outside the kernels beyond what the reference fix spends there (30% of its call plus 0.5 ms) is work the kernel time does not show",
            Rule::HostCpu => "the grader reads the CPU time of every process of the run, from outside, over each call (the program waits for the GPU without spinning): a call that used more than 1.5x the reference fix's CPU time plus 2 ms did work on the host, even where threads or other processes hid it under the copies; where the call is the clock (its waits spin), the CPU time beyond the wall time is held to the reference's, with one scheduler tick (4 ms) more: a spinning thread is charged its CPU time a tick at a time",
            Rule::UnevenRepeats => "every timed call must run the timed kernels the same way: calls that launch fewer kernels or run much faster than the others skipped work that a single call would do",
            Rule::UnnamedKernels => "kernels the exercise does not name and the reference does not launch ran in the timed runs: their time is not counted, so speed is left to a person",
            Rule::Instructions => "the timed kernels executed under a tenth of the reference fix's warp instructions: a better algorithm, or work done elsewhere; speed is left to a person",
            Rule::PhysicalFloor => "the time is under 80% of the physical floor (the inputs' bytes at this GPU's measured memcpy bandwidth): speed is left to a person",
            Rule::TooFast => "more than 10x faster than the reference fix: speed is left to a person",
            Rule::GpuMemory => "the timed calls held more than twice the reference fix's GPU memory plus 256 MiB: on a shared GPU that starves other programs; a person should look (no points are taken)",
            Rule::ToolAware => "code in the marked regions reads a clock or timer, the environment or the command line, /proc or other files, starts processes, uses inline assembly the exercise does not, or looks up or replaces functions: a program can always tell when compute-sanitizer or ncu watches it, and what it did then need not be what it does otherwise, so the tools' and the speed points are held for a person, who reads the lines named",
            Rule::Unaccounted => "the grader clocks the call timing's whole process: time it spent outside its calls, beyond the reference fix's by more than 0.5 s and half again, is work before or after the calls; speed is left to a person",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    pub rule: Rule,
    /// What was measured, in words.
    pub message: String,
    pub review: bool,
}

impl Flag {
    pub fn new(rule: Rule, message: String) -> Flag {
        Flag {
            rule,
            message,
            review: rule.review(),
        }
    }

    /// A failed step named after the rule, with what was measured and the rule's reason.
    pub fn step(&self) -> crate::judge::verdict::Step {
        crate::judge::verdict::Step::new(
            format!("rule {}", self.rule.key()),
            Status::Failed,
            self.message.clone(),
        )
        .detail(self.rule.why())
    }
}

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
}

/// What the grader's clock recorded of a timed process's calls (`tools::served`).
pub use crate::tools::served::CallTimes;

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
    /// Where the outputs are kept once read (the reference fix's, which grade compares with every
    /// learner of a chunk); None: read them at each comparison.
    pub read_once: Option<&'a ReadOnce>,
}

/// A version's timed outputs, read at most once. A bench output is up to 256 MiB a call, and grade
/// compares the reference fix's with each learner's: read for every pair, 60 pairs of bug
/// exercises spent 9-12 s of an H100 run reading them.
#[derive(Debug, Default)]
pub struct ReadOnce {
    ncu: OnceLock<Option<Vec<Vec<Buffer>>>>,
    call: OnceLock<Option<Vec<Vec<Buffer>>>>,
}

/// What ncu saw of one version's timed runs, for the anti-cheat rules.
#[derive(Debug, Clone, Default)]
pub struct Audit {
    pub kernels: BTreeSet<String>,
    pub named_launched: bool,
    /// Per run of the bench, summed over the named kernels.
    pub dram_read: Option<f64>,
    pub instructions: Option<f64>,
    /// The slowest over the fastest timed call of the named kernels; None where the launches do not
    /// split evenly into the calls.
    pub spread: Option<f64>,
}

pub fn audit(m: &Measured, named: &[String], repeat: u32) -> Audit {
    let kernels: BTreeSet<String> = m.launches.iter().map(|l| l.kernel.clone()).collect();
    let text = m
        .csv()
        .and_then(|p| crate::tools::untrusted::read_text(p).ok())
        .unwrap_or_default();
    let launches = ncu::parse_metrics(&text).unwrap_or_default();
    let mine: Vec<_> = launches
        .iter()
        .filter(|l| named.contains(&l.kernel))
        .collect();
    let sum = |k: &str| -> Option<f64> {
        let v: Vec<f64> = mine
            .iter()
            .filter_map(|l| l.metrics.get(k).copied())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / repeat.max(1) as f64)
    };
    Audit {
        named_launched: kernels.iter().any(|k| named.contains(k)),
        kernels,
        dram_read: sum("dram__bytes_read.sum"),
        instructions: sum("smsp__inst_executed.sum"),
        spread: ncu::repeat_spread(&m.launches, named, repeat),
    }
}

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
pub struct Inputs<'a> {
    pub ex: &'a Exercise,
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

/// Compare each call's outputs of one timed process with the reference fix's of the same call (the
/// same inputs): None where they agree or cannot be compared (the reference's own are missing),
/// else the first difference.
fn outputs_differ(
    mine: &[PathBuf],
    theirs: &[PathBuf],
    kept: Option<&OnceLock<Option<Vec<Vec<Buffer>>>>>,
    ex: &Exercise,
    what: &str,
) -> Option<String> {
    let read = || {
        on_threads(theirs, |p| data::read_outputs(p).ok())
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .filter(|v| !v.is_empty())
    };
    let owned;
    let theirs = match kept {
        Some(k) => k.get_or_init(read).as_ref()?,
        None => {
            owned = read()?;
            &owned
        }
    };
    if mine.len() < theirs.len() {
        return Some(format!(
            "the {what} left the outputs of {} of its {} calls",
            mine.len(),
            theirs.len()
        ));
    }
    let calls: Vec<(usize, &PathBuf, &Vec<Buffer>)> = mine
        .iter()
        .zip(theirs)
        .enumerate()
        .map(|(k, (mine, theirs))| (k + 1, mine, theirs))
        .collect();
    let tolerance = ex.manifest.manifest.tolerance;
    on_threads(&calls, |&(call, mine, theirs)| {
        let got = match data::read_outputs(mine) {
            Ok(g) => g,
            Err(e) => {
                return Some(format!(
                    "call {call} of the {what} left no readable outputs ({e})"
                ))
            }
        };
        match compare::compare(theirs, &got, tolerance) {
            Comparison::Equal { .. } => None,
            Comparison::Shape(msg) => Some(format!("call {call} of the {what}: {msg}")),
            Comparison::Mismatch(m) => Some(format!(
                "call {call} of the {what}: {}[{}] = {} where the reference fix computed {} on the same inputs ({} of {} elements differ)",
                m.buffer, m.index, m.got, m.expected, m.bad_count, m.len
            )),
        }
    })
    .into_iter()
    .flatten()
    .next()
}

/// `f` of each item, in order, at most `COMPARING` at a time: a call's outputs take 0.3 s to read
/// where they are 256 MiB (52-bank-conflicts, 63-transfers), and a check compares ten calls and
/// more. Memory: no more than `READING_AT_ONCE` calls' outputs are read at once in the whole
/// process, however many pairs `grade` judges side by side (one per core).
fn on_threads<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    const COMPARING: usize = 4;
    const READING_AT_ONCE: usize = 8;
    static READING: (std::sync::Mutex<usize>, std::sync::Condvar) =
        (std::sync::Mutex::new(0), std::sync::Condvar::new());
    /// A permit to read, given back when dropped (a panicking comparison included).
    struct Permit;
    impl Drop for Permit {
        fn drop(&mut self) {
            let (count, freed) = &READING;
            *count
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) -= 1;
            freed.notify_one();
        }
    }
    let permitted = |item: &T| {
        let (count, freed) = &READING;
        let mut n = count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *n >= READING_AT_ONCE {
            n = freed
                .wait(n)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *n += 1;
        drop(n);
        let _permit = Permit;
        f(item)
    };
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(COMPARING) {
        std::thread::scope(|s| {
            let running: Vec<_> = chunk
                .iter()
                .map(|item| s.spawn(|| permitted(item)))
                .collect();
            out.extend(
                running
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
            );
        });
    }
    out
}

/// The first call whose outputs changed after the program said it was done, in `what`.
fn written_late(calls: Option<&CallTimes>, what: &str) -> Option<String> {
    let k = calls?.changed.iter().position(|c| *c)? + 1;
    Some(format!("call {k} of the {what} went on writing its outputs after it said it was done (what the grader read at the end of the call differs from what was there a moment later): work after the clock stopped"))
}

/// The timed-outputs rule: every call of the learner's runs under ncu and on the grader's clock,
/// compared with the reference fix's of the same call, and none written after its call ended.
fn timed_outputs(i: &Inputs, repeat: u32) -> Option<Flag> {
    let kept = i.reference.read_once;
    // Every timed stage of a session serves the same calls: where the reference fix's run under ncu
    // was kept from an earlier check (`judge::kept`), its whole calls of this check stand for it.
    let (reference_ncu, reference_ncu_kept) = if i.reference.ncu_outputs.is_empty() {
        let served = (repeat as usize).min(i.reference.call_outputs.len());
        (&i.reference.call_outputs[..served], kept.map(|k| &k.call))
    } else {
        (i.reference.ncu_outputs, kept.map(|k| &k.ncu))
    };
    for (mine, theirs, kept, calls, what) in [
        (
            i.learner.ncu_outputs,
            reference_ncu,
            reference_ncu_kept,
            i.learner.ncu_calls,
            "run under ncu",
        ),
        (
            i.learner.call_outputs,
            i.reference.call_outputs,
            kept.map(|k| &k.call),
            i.learner.call,
            "call timing run",
        ),
    ] {
        if let Some(why) =
            outputs_differ(mine, theirs, kept, i.ex, what).or_else(|| written_late(calls, what))
        {
            return Some(Flag::new(Rule::TimedOutputs, why));
        }
    }
    None
}

/// The rules of the whole call on the grader's clock against the kernels ncu timed (`ns`) and the
/// reference fix's whole call: work on the host, time outside the calls, GPU memory.
fn call_rules(
    i: &Inputs,
    named_launched: bool,
    call_l: Option<f64>,
    ns: Option<f64>,
    by_call: bool,
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
    // Outside the reported calls, clocked by the grader: what the harness's own numbers cannot hide.
    let outside = |t: &Timed| Some(t.call_wall_ns? - t.call?.total_ns());
    if let (Some(ol), Some(or)) = (outside(&i.learner), outside(&i.reference)) {
        if ol > or + 500e6_f64.max(0.5 * or) {
            flag(Rule::Unaccounted, format!("the call timing's process spent {:.2} s outside the calls it reported, the reference fix's {:.2} s", ol / 1e9, or / 1e9));
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
    flags.extend(against_reference_call(&i.learner, &i.reference, by_call));
    flags
}

/// The share of the speed points, the target in words, and the verdict in words: against the
/// original where the exercise sets a speedup (from the edge of the original's noise, halved where
/// a performance goal is missed), else against the reference fix.
fn score(
    i: &Inputs,
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
    i: &Inputs,
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
    if let Some(read) = learner.dram_read.filter(|_| learner.named_launched) {
        if read < 0.8 * needed {
            flag(Rule::ProofOfWork, format!("the timed kernels read {} from DRAM per run; the inputs are {} and the reference fix reads {}", mb(read), mb(compulsory), reference.dram_read.map_or("?".into(), mb)));
        }
    }
    if learner.named_launched && repeat >= 2 {
        match (learner.spread, reference.spread) {
            (None, _) => flag(Rule::UnevenRepeats, format!("the timed kernels' launches do not split into the {repeat} timed calls the same way: some calls launched fewer")),
            (Some(s), r) if s > 1.5f64.max(1.25 * r.unwrap_or(1.0)) => {
                flag(Rule::UnevenRepeats, format!("the slowest timed call took {s:.2}x the fastest (the reference fix's: {})", r.map_or("?".into(), |r| format!("{r:.2}x"))))
            }
            _ => {}
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

/// Judge one version's speed and the rules. A version with no kernel time gets no speed points
/// (and the no-kernel rule where none of the named kernels ran); the caller reports a profiler
/// that failed, or a reference fix it could not time, as its own error first.
pub fn judge(i: &Inputs) -> Verdict {
    let m = &i.ex.manifest.manifest;
    let repeat = crate::judge::plan::profiled_calls(i.ex);
    let [learner, reference, original] = [&i.learner, &i.reference, &i.original].map(|t| {
        t.measured
            .map(|x| audit(x, &m.timing.kernels, repeat))
            .unwrap_or_default()
    });
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
    let by_call = m.clock() == Clock::Call;
    let reference_ns = i.reference.judged_ns(by_call).unwrap_or(f64::NAN);
    let original_ns = i.original.judged_ns(by_call);
    flags.extend(time_rules(i, ns, reference_ns, needed, by_call));
    // The whole call against the kernels: what each version spends outside its kernels.
    let (call_l, call_r) = (
        i.learner.call.and_then(CallTimes::judged_ns),
        i.reference.call.and_then(CallTimes::judged_ns),
    );
    let (cpu_l, cpu_r) = (
        i.learner.call.and_then(CallTimes::judged_cpu_ns),
        i.reference.call.and_then(CallTimes::judged_cpu_ns),
    );
    flags.extend(call_rules(i, learner.named_launched, call_l, ns, by_call));
    flags.sort_by_key(|f| f.rule);
    flags.dedup_by_key(|f| f.rule);

    let kernel_ns = ns;
    let Some(ns) = i.learner.judged_ns(by_call) else {
        return untimed(&i.learner, by_call, flags);
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
    Verdict {
        fraction,
        status,
        summary: format!("{:.1} us, {summary}{call}", ns / 1e3),
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
        }),
        flags,
    }
}

impl Timed<'_> {
    /// The judged time: the whole call's where the call is the clock (`by_call`), else ncu's of
    /// the kernels.
    fn judged_ns(&self, by_call: bool) -> Option<f64> {
        if by_call {
            self.call.and_then(CallTimes::judged_ns)
        } else {
            self.measured.and_then(|x| x.nanoseconds)
        }
    }
}

/// The rules of the learner's time itself: its kernels (`ns`, ncu's) faster than this GPU can
/// read the data they must (`needed`), or its judged time far faster than the reference fix's.
fn time_rules(
    i: &Inputs,
    ns: Option<f64>,
    reference_ns: f64,
    needed: f64,
    by_call: bool,
) -> Vec<Flag> {
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
    if let Some(ns) = i.learner.judged_ns(by_call) {
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
fn untimed(learner: &Timed, by_call: bool, flags: Vec<Flag>) -> Verdict {
    let why = match (by_call, learner.measured) {
        (true, _) => format!(
            "the whole call was not timed ({})",
            learner.call_failure.unwrap_or("no call times")
        ),
        (false, Some(x)) => x.why_untimed(),
        (false, None) => "not timed".into(),
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
    flags.iter().map(|f| f.step().stage("timing")).collect()
}

/// The rules that weigh a version's whole call against the reference fix's: time outside the
/// kernels (where the clock is the kernels) and CPU time. Each version's call timing ran once, at
/// its own moment, so a busy host (another job's copies, builds or sanitizers) can slow one and
/// not the other; where one of these fires, both are timed again back to back
/// (`confirming_calls`) and judged on their quickest runs (`quickest_call`) before it stands.
pub fn against_reference_call(learner: &Timed, reference: &Timed, by_call: bool) -> Vec<Flag> {
    let mut flags = Vec::new();
    let (call_l, call_r) = (
        learner.call.and_then(CallTimes::judged_ns),
        reference.call.and_then(CallTimes::judged_ns),
    );
    let kernels = |t: &Timed| t.measured.and_then(|x| x.nanoseconds);
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

/// What a spinning thread's CPU time can be off by in one call: the kernel charges a running
/// thread's time to its cgroup at the scheduler's tick, and a thread that spins is always running,
/// so a call shorter than a tick is charged a whole tick or nothing (a thread that blocks is charged
/// when it switches, exactly). On the lent H100s the tick is 4 ms (250 Hz): two of 30 checks of
/// 67-zero-copy's and 69-prefetch's reference fixes were charged 4.04 and 4.03 ms in calls of 1.57
/// and 1.42 ms, against the reference's 0 beyond its wall (book/gpu-runs/2026-11-26-perf-seconds-2/).
pub const SPIN_CHARGE_NS: f64 = 4e6;

/// Whether `learner`'s whole call, timed once at its own moment, is to be timed again, back to back
/// with the reference fix's (and the original's) before the verdict stands: where its comparison
/// with the reference fix's fired, or where the call is the clock and it misses the speed target by
/// less than the host's noise (`CALL_NOISE`).
pub fn doubts_call(ex: &Exercise, learner: &Timed, reference: &Timed, original: &Timed) -> bool {
    let by_call = ex.manifest.manifest.clock() == Clock::Call;
    !against_reference_call(learner, reference, by_call).is_empty()
        || (by_call && near_the_target(ex, learner, original))
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
/// first runs (`first`) earned except the comparison the confirmation settles.
pub fn judge_confirmed(first: &Inputs, quickest: &Inputs) -> Verdict {
    let by_call = first.ex.manifest.manifest.clock() == Clock::Call;
    let settled: Vec<Rule> = against_reference_call(&first.learner, &first.reference, by_call)
        .iter()
        .map(|f| f.rule)
        .collect();
    let mut verdict = judge(quickest);
    for f in judge(first).flags {
        if !settled.contains(&f.rule) && !verdict.flags.iter().any(|g| g.rule == f.rule) {
            verdict.flags.push(f);
        }
    }
    verdict.flags.sort_by_key(|f| f.rule);
    verdict
}

/// One version's timed runs: ncu's, and its call timings (its own first, then any that confirm it).
pub struct TimedRuns<'r> {
    pub timing: Option<&'r crate::judge::stages::Output>,
    pub calls: Vec<Option<&'r crate::judge::stages::Output>>,
}

/// The verdict on `inputs`, or, where the whole calls were timed again (a confirming call timing
/// of the learner ran), on each version's quickest runs (`judge_confirmed`): the learner's, the
/// reference fix's and, where it was timed again too (the call is the clock), the original's.
pub fn judge_runs<'r>(
    inputs: &Inputs<'r>,
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
    let quickest = Inputs {
        learner: evidence(learner.timing, quickest_call(learner.calls)),
        reference: evidence(reference.timing, quickest_call(reference.calls)),
        original,
        ..*inputs
    };
    judge_confirmed(inputs, &quickest)
}

/// Of one version's call timing runs (the first, then those that confirm it), the one to judge:
/// the one with the quickest judged call, where every run ran all its calls (what a busy host added
/// to the others is not the program's); the first where any failed or was refused (a failure
/// stands, whatever a later run does).
pub fn quickest_call<'r>(
    runs: impl IntoIterator<Item = Option<&'r crate::judge::stages::Output>>,
) -> Option<&'r crate::judge::stages::Output> {
    let runs: Vec<_> = runs.into_iter().collect();
    let first = *runs.first()?;
    let judged = |o: Option<&crate::judge::stages::Output>| {
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

/// The timed evidence of one version from a plan's results: its timing stage (ncu) and its call
/// stage. `calls` holds the parsed call times, owned by the caller.
pub fn evidence<'r>(
    timing: Option<&'r crate::judge::stages::Output>,
    call: Option<&'r crate::judge::stages::Output>,
) -> Timed<'r> {
    use crate::judge::stages::Output;
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
        ..
    }) = call
    {
        t.call = times.as_ref();
        t.call_outputs = if failure.is_none() { outputs } else { &[] };
        t.call_failure = failure.as_deref();
        t.call_wall_ns = run.as_ref().ok().map(|f| f.wall.as_secs_f64() * 1e9);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::stages::Output;
    use std::path::Path;

    #[test]
    fn every_rule_says_why_and_review_rules_take_at_most_the_speed_points() {
        for rule in Rule::ALL {
            assert!(rule.why().len() > 60, "{rule:?}");
            if rule.review() {
                // A person decides; a review never takes the points of the builds or the cases.
                assert!(
                    rule.withholds().iter().all(|s| matches!(
                        s,
                        GradeStage::Speed | GradeStage::NamedTool | GradeStage::OtherTools
                    )),
                    "{rule:?}"
                );
            }
        }
        let keys: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.key()).collect();
        assert_eq!(keys.len(), Rule::ALL.len(), "keys are unique");
        for rule in Rule::ALL {
            assert_eq!(
                serde_json::to_value(rule).unwrap(),
                rule.key(),
                "reports and the journal name a rule by its key"
            );
        }
    }

    /// Exercise `id` from its manifest's text (no sources: the judge reads none).
    fn exercise(id: &str, text: &str) -> Exercise {
        let path = format!("exercises/{id}/exercise.toml");
        let manifest = crate::exercise::manifest::parse(id, Path::new(&path), text).unwrap();
        Exercise {
            manifest,
            original: "",
            solution: "",
        }
    }

    fn race() -> Exercise {
        exercise(
            "03-race",
            include_str!("../../../exercises/03-race/exercise.toml"),
        )
    }

    /// Calls as the grader's clock records them: a first call that loads the kernels, then two of
    /// `wall_ms`, `cpu_ms`.
    fn calls(wall_ms: f64, cpu_ms: f64) -> CallTimes {
        let ns = |ms: f64| ms * 1e6;
        CallTimes {
            calls_ns: vec![ns(3.0 * wall_ms), ns(wall_ms), ns(wall_ms)],
            cpu_ns: vec![Some(ns(3.0 * cpu_ms)), Some(ns(cpu_ms)), Some(ns(cpu_ms))],
            changed: vec![false; 3],
            gpu_memory: Some(1.0),
            ..CallTimes::default()
        }
    }

    /// A version's timed runs as the stages leave them: ncu's kernel time, and call timings.
    fn runs(kernel_us: f64, calls: Vec<Option<CallTimes>>) -> (Output, Vec<Option<Output>>) {
        use crate::tools::runner::{Exit, Finished};
        let finished = || Finished::ended(Exit::Code(0), std::time::Duration::from_millis(500));
        let timing = Output::Timed {
            target: ncu::Target {
                name: "t".into(),
                program: "t".into(),
                args: Vec::new(),
                kernels: Vec::new(),
                counters: Vec::new(),
                every_kernel: false,
                repeat: 1,
            },
            measured: Ok(Measured {
                nanoseconds: Some(kernel_us * 1e3),
                launches: Vec::new(),
                command: String::new(),
                finished: finished(),
                attempts: 1,
                busy: false,
                tool_failure: None,
                counters: None,
            }),
            calls: None,
            outputs: Vec::new(),
            kept: false,
        };
        let called = |times: Option<CallTimes>| Output::Called {
            command: String::new(),
            run: Ok(finished()),
            failure: times
                .is_none()
                .then(|| "the program exited before its call 2".into()),
            times,
            timeline: None,
            outputs: Vec::new(),
            kept: false,
        };
        (timing, calls.into_iter().map(|c| Some(called(c))).collect())
    }

    #[test]
    fn a_whole_call_slowed_by_a_busy_host_is_timed_again_and_judged_on_the_quickest_runs() {
        let ex = race();
        let rules = |learner: &(Output, Vec<Option<Output>>),
                     reference: &(Output, Vec<Option<Output>>)| {
            let inputs = Inputs {
                ex: &ex,
                learner: evidence(Some(&learner.0), learner.1[0].as_ref()),
                reference: evidence(Some(&reference.0), reference.1[0].as_ref()),
                original: Timed::default(),
                peak: None,
                perf: None,
            };
            let doubted = doubts_call(&ex, &inputs.learner, &inputs.reference, &inputs.original);
            fn all(r: &(Output, Vec<Option<Output>>)) -> TimedRuns<'_> {
                TimedRuns {
                    timing: Some(&r.0),
                    calls: r.1.iter().map(Option::as_ref).collect(),
                }
            }
            let none = TimedRuns {
                timing: None,
                calls: Vec::new(),
            };
            let verdict = judge_runs(&inputs, all(learner), all(reference), none);
            let rules: Vec<Rule> = verdict.flags.iter().map(|f| f.rule).collect();
            (doubted, rules)
        };
        let wall = |ms: f64| Some(calls(ms, ms));
        // The H100 on 2026-11-25, two graders on one host: the reference fix of 03 as a student,
        // 19.95 ms a call against the reference's 12.30 ms timed at another moment, the kernels
        // 40.0 us against 40.1 us (book/gpu-runs/2026-11-25-trust/). Timed again back to back,
        // both take their usual time: no host work.
        let reference = runs(40.1, vec![wall(12.30), wall(12.41), wall(12.22)]);
        let honest = runs(40.0, vec![wall(19.95), wall(12.52), wall(12.38)]);
        let (doubted, flagged) = rules(&honest, &reference);
        assert!(doubted);
        assert!(!flagged.contains(&Rule::HostWork), "{flagged:?}");
        // Not timed again (no confirming run): the first comparison stands.
        let (honest_once, reference_once) =
            (runs(40.0, vec![wall(19.95)]), runs(40.1, vec![wall(12.30)]));
        assert!(rules(&honest_once, &reference_once)
            .1
            .contains(&Rule::HostWork));
        // decoy-host adds the input up on the host: slow every time.
        let decoy = runs(40.0, vec![wall(22.31), wall(22.52), wall(22.40)]);
        assert!(rules(&decoy, &reference).1.contains(&Rule::HostWork));
        // A confirming run that failed settles nothing: the first comparison stands.
        let failed_again = runs(40.0, vec![wall(19.95), None, wall(12.38)]);
        assert!(rules(&failed_again, &reference).1.contains(&Rule::HostWork));
        // The CPU time is confirmed the same way: threaded-host's 16 threads every time.
        let threads = |wall_ms: f64| Some(calls(wall_ms, 28.8));
        let threaded = runs(40.0, vec![threads(9.84), threads(9.80), threads(9.90)]);
        assert!(rules(&threaded, &reference).1.contains(&Rule::HostCpu));
    }

    #[test]
    fn outputs_are_compared_in_order_and_never_more_than_eight_calls_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let items: Vec<usize> = (0..12).collect();
        // Three checks' comparisons side by side, as grade judges pairs on every core.
        let runs: Vec<Vec<usize>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        on_threads(&items, |&i| {
                            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(n, Ordering::SeqCst);
                            std::thread::yield_now();
                            now.fetch_sub(1, Ordering::SeqCst);
                            i * 10
                        })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in runs {
            assert_eq!(r, items.iter().map(|i| i * 10).collect::<Vec<_>>());
        }
        assert!((1..=8).contains(&most.load(Ordering::SeqCst)));
    }

    #[test]
    fn a_call_clocked_fix_just_short_of_its_target_is_timed_again_with_the_original() {
        let ex = exercise(
            "68-graphs",
            include_str!("../../../exercises/68-graphs/exercise.toml"),
        );
        let target = *ex
            .manifest
            .manifest
            .perf
            .as_ref()
            .unwrap()
            .speedup
            .get_ref();
        let wall = |us: f64| Some(calls(us / 1e3, us / 1e3));
        // An H100, 2026-11-26: one of five checks of the reference fix timed its call at 615 us
        // against the original's 730 (1.19x, the target 1.2x); the others 370-406 us.
        let original = runs(700.0, vec![wall(730.0), wall(742.0), wall(735.0)]);
        let reference = runs(620.0, vec![wall(380.0), wall(376.0), wall(379.0)]);
        let slow_first = runs(620.0, vec![wall(615.0), wall(372.0), wall(381.0)]);
        let judged = |learner: &(Output, Vec<Option<Output>>), timed_again: bool| {
            let inputs = Inputs {
                ex: &ex,
                learner: evidence(Some(&learner.0), learner.1[0].as_ref()),
                reference: evidence(Some(&reference.0), reference.1[0].as_ref()),
                original: evidence(Some(&original.0), original.1[0].as_ref()),
                peak: None,
                perf: None,
            };
            let doubted = doubts_call(&ex, &inputs.learner, &inputs.reference, &inputs.original);
            let n = if timed_again { 3 } else { 1 };
            fn all(r: &(Output, Vec<Option<Output>>), n: usize) -> TimedRuns<'_> {
                TimedRuns {
                    timing: Some(&r.0),
                    calls: r.1.iter().take(n).map(Option::as_ref).collect(),
                }
            }
            let v = judge_runs(
                &inputs,
                all(learner, n),
                all(&reference, n),
                all(&original, n),
            );
            (doubted, v.speed.and_then(|s| s.speedup_over_original))
        };
        let (doubted, once) = judged(&slow_first, false);
        assert!(doubted && once.unwrap() < target, "{once:?}");
        let (_, again) = judged(&slow_first, true);
        assert!(
            again.unwrap() > 1.9,
            "judged on the quickest runs: {again:?}"
        );
        // Far below the target (the untouched file, 1.0x at best): no doubt, nothing timed again.
        let untouched = runs(700.0, vec![wall(1300.0), wall(1310.0), wall(1290.0)]);
        assert!(!judged(&untouched, false).0);
    }

    #[test]
    fn host_threads_hidden_under_the_copy_show_in_the_cpu_time() {
        let ex = race();
        let rules = |learner: &CallTimes, reference: &CallTimes| {
            let timed = |c| Timed {
                call: Some(c),
                ..Timed::default()
            };
            let inputs = Inputs {
                ex: &ex,
                learner: timed(learner),
                reference: timed(reference),
                original: Timed::default(),
                peak: None,
                perf: None,
            };
            judge(&inputs)
                .flags
                .into_iter()
                .map(|f| f.rule)
                .collect::<Vec<_>>()
        };
        // Medians of six processes each on an H100 (scripts/gpu-calls-experiment.py, alone).
        let reference = calls(9.18, 9.30);
        assert!(
            rules(&calls(9.84, 28.80), &reference).contains(&Rule::HostCpu),
            "threaded-host: 16 threads under the copy"
        );
        assert!(
            rules(&calls(22.31, 22.65), &reference).contains(&Rule::HostCpu),
            "decoy-host: the sum on one thread"
        );
        assert!(
            !rules(&calls(8.58, 8.72), &reference).contains(&Rule::HostCpu),
            "honest-alt"
        );
        // Timed while three other processes started up beside each (gate-4): slower, still told apart.
        assert!(!rules(&calls(17.33, 13.84), &calls(13.71, 12.32)).contains(&Rule::HostCpu));
        assert!(rules(&calls(20.28, 33.04), &calls(13.71, 12.32)).contains(&Rule::HostCpu));
        // A run without a cgroup has no CPU time: nothing is judged by it.
        let unknown = CallTimes {
            cpu_ns: vec![None; 3],
            ..calls(9.0, 0.0)
        };
        assert!(!rules(&unknown, &unknown).contains(&Rule::HostCpu));
    }

    #[test]
    fn where_the_clock_is_the_call_the_whole_call_is_judged_and_host_time_is_not_a_rule() {
        let ex = exercise(
            "62-launches",
            include_str!("../../../exercises/62-launches/exercise.toml"),
        );
        // The H100's calls (book/gpu-runs/2026-11-24-perf3/): the original 0.426 ms, the fix 0.042 ms.
        let judged = |learner: &CallTimes| {
            let (original, reference) = (calls(0.426, 0.42), calls(0.042, 0.04));
            let timed = |c| Timed {
                call: Some(c),
                ..Timed::default()
            };
            judge(&Inputs {
                ex: &ex,
                learner: timed(learner),
                reference: timed(&reference),
                original: timed(&original),
                peak: None,
                perf: None,
            })
        };
        // The fix: 10x the original's whole call, almost all of it outside any kernel ncu would time.
        let fixed = judged(&calls(0.042, 0.04));
        assert_eq!(fixed.fraction, 1.0, "{}", fixed.summary);
        assert!(
            fixed.summary.contains("10.14x the original (whole call)"),
            "{}",
            fixed.summary
        );
        assert!(
            !fixed.flags.iter().any(|f| f.rule == Rule::HostWork),
            "{:?}",
            fixed.flags
        );
        // One launch per step instead of two (the half-fix, 0.282 ms): faster, short of the target.
        let half = judged(&calls(0.282, 0.28));
        assert!(
            half.fraction > 0.0 && half.fraction < 1.0,
            "{}",
            half.summary
        );
        // Waiting spins here: a half-fix's 17 ms of spinning is no host work, 16 threads beside
        // the copies are.
        let rules = |learner: &CallTimes| {
            judged(learner)
                .flags
                .into_iter()
                .map(|f| f.rule)
                .collect::<Vec<_>>()
        };
        assert!(!rules(&calls(0.282, 0.285)).contains(&Rule::HostCpu));
        assert!(
            rules(&calls(0.042, 8.6)).contains(&Rule::HostCpu),
            "8.56 ms of CPU beyond a 0.042 ms call"
        );
        // A tick charged to the spinning thread inside a short call is not host work: 67-zero-copy's
        // reference fix, 4.04 ms charged in a call of 1.57 ms on an H100.
        assert!(!rules(&calls(1.57, 4.04)).contains(&Rule::HostCpu));
        // No call times: no time at all, whatever ncu measured.
        let none = judge(&Inputs {
            ex: &ex,
            learner: Timed {
                call_failure: Some("the program failed"),
                ..Timed::default()
            },
            reference: Timed::default(),
            original: Timed::default(),
            peak: None,
            perf: None,
        });
        assert!(
            none.speed.is_none()
                && none
                    .summary
                    .contains("whole call was not timed (the program failed)"),
            "{}",
            none.summary
        );
    }

    /// One f32 buffer `total` as the harness writes outputs (see data::read_outputs), in `dir`.
    fn write_total(dir: &Path, name: &str, total: f32) -> PathBuf {
        use crate::exercise::reference::Data;
        let path = dir.join(name);
        let mut bytes = b"CBOT".to_vec();
        bytes.extend(
            1u32.to_le_bytes()
                .into_iter()
                .chain(1u32.to_le_bytes())
                .chain(5u16.to_le_bytes()),
        );
        bytes.extend(
            b"total"
                .iter()
                .copied()
                .chain([crate::exercise::dtype::DType::F32.code()])
                .chain(1u64.to_le_bytes())
                .chain(total.to_le_bytes()),
        );
        std::fs::write(&path, bytes).unwrap();
        assert!(
            matches!(&data::read_outputs(&path).unwrap()[0].data, Data::F32(v) if v == &[total])
        );
        path
    }

    /// Three calls' outputs, `<prefix>1.out` to `<prefix>3.out`, of the `totals`.
    fn three_calls(dir: &Path, prefix: &str, totals: [f32; 3]) -> Vec<PathBuf> {
        (1..=3)
            .zip(totals)
            .map(|(n, total)| write_total(dir, &format!("{prefix}{n}.out"), total))
            .collect()
    }

    /// The flags the judge raises on `learner` against `reference` (no original, no peak).
    fn flags_of(ex: &Exercise, learner: Timed, reference: Timed) -> Vec<Flag> {
        judge(&Inputs {
            ex,
            learner,
            reference,
            original: Timed::default(),
            peak: None,
            perf: None,
        })
        .flags
    }

    #[test]
    fn the_reference_outputs_kept_once_read_judge_every_learner_the_same() {
        let ex = race();
        let dir = tempfile::tempdir().unwrap();
        // Three calls each: the reference's, an honest learner's, and one that is wrong in its
        // second call only (the judged one, had it been the fastest).
        let theirs = three_calls(dir.path(), "r", [5000.0, 4000.0, 4500.0]);
        let right = three_calls(dir.path(), "a", [5000.0, 4000.0, 4500.0]);
        let lazy = three_calls(dir.path(), "b", [5000.0, 5000.0, 4500.0]);
        let kept = ReadOnce::default();
        let judged = |mine: &[PathBuf], reference: &[PathBuf], late: Option<&CallTimes>| {
            let learner = Timed {
                ncu_outputs: mine,
                ncu_calls: late,
                ..Timed::default()
            };
            let reference = Timed {
                ncu_outputs: reference,
                read_once: Some(&kept),
                ..Timed::default()
            };
            flags_of(&ex, learner, reference)
        };
        let timed_outputs = |flags: &[Flag]| {
            flags
                .iter()
                .find(|f| f.rule == Rule::TimedOutputs)
                .map(|f| f.message.clone())
        };
        assert_eq!(timed_outputs(&judged(&right, &theirs, None)), None);
        // Read once: gone from the disk, the reference's outputs still judge the next learner.
        for f in &theirs {
            std::fs::remove_file(f).unwrap();
        }
        let why =
            timed_outputs(&judged(&lazy, &theirs, None)).expect("the lazy second call is caught");
        assert!(
            why.starts_with("call 2 of the run under ncu: total[0] = 5000"),
            "{why}"
        );
        assert_eq!(timed_outputs(&judged(&right, &theirs, None)), None);
        assert!(
            timed_outputs(&judged(&right[..2], &theirs, None))
                .is_some_and(|w| w.contains("2 of its 3 calls")),
            "a call's outputs missing"
        );
        // Right outputs, but written after the call said it was done.
        let late = CallTimes {
            changed: vec![false, true, false],
            ..calls(1.0, 1.0)
        };
        assert!(timed_outputs(&judged(&right, &theirs, Some(&late)))
            .is_some_and(|w| w.contains("call 2 of the run under ncu went on writing")));

        // The reference fix's profile kept from an earlier check (no outputs under ncu): its
        // whole calls of this check, the same calls, judge the learner's calls under ncu.
        let fresh = three_calls(dir.path(), "c", [5000.0, 4000.0, 4500.0]);
        let against_calls = |mine: &[PathBuf]| {
            let learner = Timed {
                ncu_outputs: mine,
                call_outputs: &right,
                ..Timed::default()
            };
            let reference = Timed {
                call_outputs: &fresh,
                ..Timed::default()
            };
            timed_outputs(&flags_of(&ex, learner, reference))
        };
        assert_eq!(against_calls(&right), None);
        assert!(against_calls(&lazy)
            .is_some_and(|w| w.starts_with("call 2 of the run under ncu: total[0] = 5000")));
    }
}
