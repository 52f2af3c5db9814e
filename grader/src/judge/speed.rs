//! The one speed judge. `check`, `verify` and `grade` hand it what the timed runs of a version (and
//! of the reference fix and the original, timed in the same session) produced: ncu's kernel times
//! and counters, the outputs of every timed process, the harness's whole-call times and GPU memory.
//! It decides the speed credit and every anti-cheat rule, so that a file `check` fails for a named
//! reason loses its points in `grade` for the same one.
//!
//! What it trusts: ncu runs outside the program and the outputs are compared by the grader, so the
//! kernel time and "the timed runs' answers were right" cannot be faked from inside. The call times
//! come from the harness, inside the program's process: code that targets the harness can forge
//! them, which the judge catches only where the forgery is implausible (calls shorter than the
//! kernels they contain).

use std::collections::BTreeSet;
use std::path::Path;
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
    /// its kernels: host work or copies of its own.
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
    /// The call timing's process took far longer outside its reported calls than the reference's:
    /// work before or after the calls, or call times that were not the harness's.
    #[serde(rename = "unaccounted-time")]
    Unaccounted,
}

impl Rule {
    pub const ALL: [Rule; 13] = [
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
        }
    }

    /// Left to a person: the points it withholds (speed, or none) are for review, not a failure.
    pub fn review(self) -> bool {
        matches!(self, Rule::UnnamedKernels | Rule::Instructions | Rule::PhysicalFloor | Rule::TooFast | Rule::GpuMemory | Rule::Unaccounted)
    }

    /// The points the rule takes away. Rules about faked answers take the correctness points too;
    /// rules about how the time was made take the speed points; GPU memory only asks for a look.
    pub fn withholds(self) -> &'static [GradeStage] {
        match self {
            Rule::NoKernel | Rule::ProofOfWork | Rule::TimedOutputs | Rule::FreshInputs => &[GradeStage::Public, GradeStage::Hidden, GradeStage::Speed],
            Rule::GpuMemory => &[],
            _ => &[GradeStage::Speed],
        }
    }

    /// The rule in general, for the report's legend.
    pub fn why(self) -> &'static str {
        match self {
            Rule::NoKernel => "the exercise's kernels must do the work: none of them was launched in the timed runs, so the outputs came from somewhere else (the host, or another kernel)",
            Rule::ProofOfWork => "a kernel that computes its outputs reads its inputs: ncu's dram__bytes_read.sum of the timed kernels must reach 80% of the inputs' bytes (or of what the reference fix reads, where that is less)",
            Rule::TimedOutputs => "the runs that are timed (under ncu, and the whole-call timing) are checked too, on inputs that change between calls: outputs that differ from the reference fix's on the same inputs were not computed by what was timed",
            Rule::FreshInputs => "after the timed runs the program ran again on inputs it had never seen; outputs that were right before and wrong now were remembered, not computed",
            Rule::HostWork => "speed is the whole call of the exercise's entry point (host work, copies and every kernel, to the end of the GPU work), not only the kernels: time spent outside the kernels beyond what the reference fix spends there (30% of its call plus 0.5 ms) is work the kernel time does not show",
            Rule::HostCpu => "the harness clocks the CPU time of every thread of the program during each call (it waits for the GPU without spinning): a call that used more than 1.5x the reference fix's CPU time plus 2 ms did work on the host, even where threads hid it under the copies; where the call is the clock (its waits spin), the CPU time beyond the wall time is held to the reference's",
            Rule::UnevenRepeats => "every timed call must run the timed kernels the same way: calls that launch fewer kernels or run much faster than the others skipped work that a single call would do",
            Rule::UnnamedKernels => "kernels the exercise does not name and the reference does not launch ran in the timed runs: their time is not counted, so speed is left to a person",
            Rule::Instructions => "the timed kernels executed under a tenth of the reference fix's warp instructions: a better algorithm, or work done elsewhere; speed is left to a person",
            Rule::PhysicalFloor => "the time is under 80% of the physical floor (the inputs' bytes at this GPU's measured memcpy bandwidth): speed is left to a person",
            Rule::TooFast => "more than 10x faster than the reference fix: speed is left to a person",
            Rule::GpuMemory => "the timed calls held more than twice the reference fix's GPU memory plus 256 MiB: on a shared GPU that starves other programs; a person should look (no points are taken)",
            Rule::Unaccounted => "the grader clocks the call timing's whole process from outside: time it spent outside the calls the harness reported, beyond the reference fix's by more than 0.5 s and half again, is work before or after the calls or call times that were rewritten; speed is left to a person",
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
        Flag { rule, message, review: rule.review() }
    }

    /// A failed step named after the rule, with what was measured and the rule's reason.
    pub fn step(&self) -> crate::judge::verdict::Step {
        crate::judge::verdict::Step::new(format!("rule {}", self.rule.key()), Status::Failed, self.message.clone()).detail(self.rule.why())
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

/// What the harness's `--call-times` file says: each call's nanoseconds (wall and CPU) and the GPU
/// memory peak.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallTimes {
    pub calls_ns: Vec<f64>,
    /// Each call's CPU time, all threads (None from a harness older than the column).
    pub cpu_ns: Vec<Option<f64>>,
    pub gpu_memory: Option<f64>,
}

impl CallTimes {
    /// `WALL_NS [CPU_NS]` per call, then `gpu-memory BYTES`. A file whose calls mix one column
    /// and two was not written by one harness (a program rewrote it at exit: seen on the H100).
    pub fn parse(text: &str) -> Option<CallTimes> {
        let mut t = CallTimes::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if let Some(b) = line.strip_prefix("gpu-memory ") {
                t.gpu_memory = Some(b.trim().parse().ok()?);
                continue;
            }
            let mut fields = line.split_whitespace();
            t.calls_ns.push(fields.next()?.parse().ok()?);
            t.cpu_ns.push(match fields.next() {
                Some(c) => Some(c.parse().ok()?),
                None => None,
            });
            if fields.next().is_some() {
                return None;
            }
        }
        let with_cpu = t.cpu_ns.iter().filter(|c| c.is_some()).count();
        (!t.calls_ns.is_empty() && (with_cpu == 0 || with_cpu == t.cpu_ns.len())).then_some(t)
    }

    /// The least CPU time of a call after the first (the first loads the kernels).
    pub fn judged_cpu_ns(&self) -> Option<f64> {
        let rest = if self.cpu_ns.len() > 1 { &self.cpu_ns[1..] } else { &self.cpu_ns[..] };
        rest.iter().copied().collect::<Option<Vec<f64>>>()?.into_iter().reduce(f64::min)
    }

    /// The call the judge holds a version to: the fastest after the first (which loads the
    /// kernels). The inputs change between calls, so work cannot be done once and reused, and the
    /// fastest call is the steadiest: on an H100 the calls of one 57-reduction process spread from
    /// 32 to 67 ms, mostly in the workbook's copy of 268 MB to the GPU.
    pub fn judged_ns(&self) -> Option<f64> {
        let rest = if self.calls_ns.len() > 1 { &self.calls_ns[1..] } else { &self.calls_ns[..] };
        rest.iter().copied().reduce(f64::min)
    }

    pub fn total_ns(&self) -> f64 {
        self.calls_ns.iter().sum()
    }
}

/// What the timed runs of one version left: ncu's measurement and its outputs, and the call timing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timed<'a> {
    pub measured: Option<&'a Measured>,
    /// The outputs of the last call under ncu.
    pub ncu_output: Option<&'a Path>,
    /// The call timing's times (None where it did not run or failed) and its outputs.
    pub call: Option<&'a CallTimes>,
    pub call_output: Option<&'a Path>,
    /// Why the call timing has no times, where it ran and failed.
    pub call_failure: Option<&'a str>,
    /// The call timing's whole process, as the grader clocked it from outside.
    pub call_wall_ns: Option<f64>,
    /// Where the outputs are kept once read (the reference fix's, which grade compares with every
    /// learner of a chunk); None: read them at each comparison.
    pub read_once: Option<&'a ReadOnce>,
}

/// A version's timed outputs, read at most once. A bench output is up to 256 MiB, and grade
/// compares the reference fix's with each learner's: read for every pair, 60 pairs of bug
/// exercises spent 9-12 s of an H100 run reading them.
#[derive(Debug, Default)]
pub struct ReadOnce {
    ncu: OnceLock<Option<Vec<Buffer>>>,
    call: OnceLock<Option<Vec<Buffer>>>,
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
    let text = m.csv().and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    let launches = ncu::parse_metrics(&text).unwrap_or_default();
    let mine: Vec<_> = launches.iter().filter(|l| named.contains(&l.kernel)).collect();
    let sum = |k: &str| -> Option<f64> {
        let v: Vec<f64> = mine.iter().filter_map(|l| l.metrics.get(k).copied()).collect();
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
    m.inputs.iter().map(|b| crate::exercise::manifest::eval_len(b.len.get_ref(), &m.bench.params).unwrap_or(0) as f64 * b.dtype.size() as f64).sum()
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
        self.flags.iter().any(|f| f.rule.withholds().contains(&GradeStage::Speed))
    }
}

fn mb(bytes: f64) -> String {
    if bytes >= 1e6 {
        format!("{:.1} MB", bytes / 1e6)
    } else {
        format!("{:.1} kB", bytes / 1e3)
    }
}

/// Compare the outputs of one timed process with the reference fix's on the same inputs: None
/// where they agree or cannot be compared (the reference's own are missing), else what differs.
fn outputs_differ(mine: Option<&Path>, theirs: Option<&Path>, kept: Option<&OnceLock<Option<Vec<Buffer>>>>, ex: &Exercise, what: &str) -> Option<String> {
    let read = || theirs.and_then(|p| data::read_outputs(p).ok());
    let owned;
    let theirs = match kept {
        Some(k) => k.get_or_init(read).as_ref()?,
        None => {
            owned = read()?;
            &owned
        }
    };
    let Some(mine) = mine else { return Some(format!("the {what} wrote no outputs")) };
    let got = match data::read_outputs(mine) {
        Ok(g) => g,
        Err(e) => return Some(format!("the {what} left no readable outputs ({e})")),
    };
    match compare::compare(theirs, &got, ex.manifest.manifest.tolerance) {
        Comparison::Equal { .. } => None,
        Comparison::Shape(msg) => Some(format!("the {what}: {msg}")),
        Comparison::Mismatch(m) => Some(format!(
            "the {what}: {}[{}] = {} where the reference fix computed {} on the same inputs ({} of {} elements differ)",
            m.buffer, m.index, m.got, m.expected, m.bad_count, m.len
        )),
    }
}

/// Judge one version's speed and the rules. A version with no kernel time gets no speed points
/// (and the no-kernel rule where none of the named kernels ran); the caller reports a profiler
/// that failed, or a reference fix it could not time, as its own error first.
pub fn judge(i: &Inputs) -> Verdict {
    let m = &i.ex.manifest.manifest;
    let repeat = m.bench.repeat;
    let learner = i.learner.measured.map(|x| audit(x, &m.timing.kernels, repeat)).unwrap_or_default();
    let reference = i.reference.measured.map(|x| audit(x, &m.timing.kernels, repeat)).unwrap_or_default();
    let original = i.original.measured.map(|x| audit(x, &m.timing.kernels, repeat)).unwrap_or_default();
    let mut flags: Vec<Flag> = Vec::new();
    let mut flag = |rule: Rule, message: String| flags.push(Flag::new(rule, message));

    if !learner.named_launched {
        let ran = if learner.kernels.is_empty() { "no kernel at all".to_string() } else { learner.kernels.iter().cloned().collect::<Vec<_>>().join(", ") };
        flag(Rule::NoKernel, format!("the timed runs launched {ran}; the exercise's kernels are {}", m.timing.kernels.join(", ")));
    }
    let kept = i.reference.read_once;
    for (mine, theirs, kept, what) in [(i.learner.ncu_output, i.reference.ncu_output, kept.map(|k| &k.ncu), "run under ncu"), (i.learner.call_output, i.reference.call_output, kept.map(|k| &k.call), "call timing run")] {
        if let Some(why) = outputs_differ(mine, theirs, kept, i.ex, what) {
            flag(Rule::TimedOutputs, why);
        }
    }
    let compulsory = compulsory_bytes(i.ex);
    let needed = reference.dram_read.map_or(compulsory, |r| r.min(compulsory));
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
    let known: BTreeSet<&String> = m.timing.kernels.iter().chain(&reference.kernels).chain(&original.kernels).collect();
    let unknown: Vec<&String> = learner.kernels.iter().filter(|k| !known.contains(k)).collect();
    if !unknown.is_empty() && learner.named_launched {
        flag(Rule::UnnamedKernels, format!("kernels not named by the exercise ran: {}", unknown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
    }
    if let (Some(mine), Some(theirs)) = (learner.instructions, reference.instructions) {
        if mine < 0.1 * theirs {
            flag(Rule::Instructions, format!("{mine:.3e} warp instructions per run against the reference fix's {theirs:.3e}"));
        }
    }
    // ncu's kernel time; the judged time is the exercise's clock's (`judged_ns`).
    let ns = i.learner.measured.and_then(|x| x.nanoseconds);
    let by_call = m.clock() == Clock::Call;
    let judged_ns = |t: &Timed| if by_call { t.call.and_then(CallTimes::judged_ns) } else { t.measured.and_then(|x| x.nanoseconds) };
    let reference_ns = judged_ns(&i.reference).unwrap_or(f64::NAN);
    let original_ns = judged_ns(&i.original);
    if let (Some(ns), Some(p)) = (ns, i.peak) {
        let floor_ns = needed / p.memcpy_gbps;
        if ns < 0.8 * floor_ns {
            flag(Rule::PhysicalFloor, format!("{:.1} us, under the {:.1} us it takes to read {} at this GPU's {:.0} GB/s", ns / 1e3, floor_ns / 1e3, mb(needed), p.memcpy_gbps));
        }
    }
    if let Some(ns) = judged_ns(&i.learner) {
        if reference_ns / ns > 10.0 {
            flag(Rule::TooFast, format!("{:.1}x faster than the reference fix ({:.1} us against {:.1} us)", reference_ns / ns, ns / 1e3, reference_ns / 1e3));
        }
    }
    // The whole call against the kernels: what each version spends outside its kernels.
    let (call_l, call_r) = (i.learner.call.and_then(CallTimes::judged_ns), i.reference.call.and_then(CallTimes::judged_ns));
    if let Some(why) = i.learner.call_failure.filter(|_| learner.named_launched) {
        flag(Rule::HostWork, format!("the call timing run failed ({why}): a program whose time depends on being profiled gets no speed credit"));
    }
    if let (Some(cl), Some(cr), Some(kl)) = (call_l, call_r, ns) {
        let kr = i.reference.measured.and_then(|x| x.nanoseconds).unwrap_or(0.0);
        let extra = (cl - cr) - (kl - kr);
        let allowed = 0.3 * cr + 500_000.0;
        if cl < 0.5 * kl {
            flag(Rule::HostWork, format!("the harness reported calls of {:.1} us, shorter than the {:.1} us its kernels take under ncu: the call times were not measured by the harness", cl / 1e3, kl / 1e3));
        } else if extra > allowed && !by_call {
            // Where the clock is the call, time outside the kernels is what is judged.
            flag(
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
            );
        }
    }
    // CPU time, all threads: host work that runs beside the copies and kernels shows here even where
    // the wall clock does not (the H100: the 03 reference fix 9.3 ms a call, threaded-host 28.8 ms
    // over 16 threads in 9.8 ms of wall; scripts/gpu-calls-experiment.py).
    // Where the call is the clock its waits spin (the harness's --spin): a thread's CPU time is its
    // wall time whether it waits or works, and work on it lengthens the clock. What the clock cannot
    // see is other threads: the CPU time beyond the wall time (a 63-transfers half-fix on an H100
    // spun 17.2 ms in 17.0 ms of wall; the reference 7.8 ms in 7.6).
    let (cpu_l, cpu_r) = (i.learner.call.and_then(CallTimes::judged_cpu_ns), i.reference.call.and_then(CallTimes::judged_cpu_ns));
    if let (Some(l), Some(r)) = (cpu_l, cpu_r) {
        let beyond = |cpu: f64, wall: Option<f64>| (cpu - wall.unwrap_or(0.0)).max(0.0);
        let (jl, jr) = if by_call { (beyond(l, call_l), beyond(r, call_r)) } else { (l, r) };
        if jl > 1.5 * jr + 2e6 {
            let what = if by_call { " beyond its wall time" } else { "" };
            flag(Rule::HostCpu, format!("each call used {:.2} ms of CPU time (all threads, in {:.2} ms of wall time){what} against the reference fix's {:.2} ms", jl / 1e6, call_l.unwrap_or(f64::NAN) / 1e6, jr / 1e6));
        }
    }
    if let Some(c) = i.learner.call.filter(|c| c.calls_ns.len() != repeat.max(1) as usize) {
        flag(Rule::Unaccounted, format!("the call-times file holds {} calls where the harness makes {}: something besides the harness wrote it", c.calls_ns.len(), repeat.max(1)));
    }
    // Outside the reported calls, clocked by the grader: what the harness's own numbers cannot hide.
    let outside = |t: &Timed| Some(t.call_wall_ns? - t.call?.total_ns());
    if let (Some(ol), Some(or)) = (outside(&i.learner), outside(&i.reference)) {
        if ol > or + 500e6_f64.max(0.5 * or) {
            flag(Rule::Unaccounted, format!("the call timing's process spent {:.2} s outside the calls it reported, the reference fix's {:.2} s", ol / 1e9, or / 1e9));
        }
    }
    let (mem_l, mem_r) = (i.learner.call.and_then(|c| c.gpu_memory), i.reference.call.and_then(|c| c.gpu_memory));
    if let (Some(ml), Some(mr)) = (mem_l, mem_r) {
        if ml > 2.0 * mr + 256.0 * 1024.0 * 1024.0 {
            flag(Rule::GpuMemory, format!("{:.0} MiB of GPU memory in use during the timed calls, against the reference fix's {:.0} MiB", ml / 1048576.0, mr / 1048576.0));
        }
    }
    flags.sort_by_key(|f| f.rule);
    flags.dedup_by_key(|f| f.rule);

    let kernel_ns = ns;
    let Some(ns) = judged_ns(&i.learner) else {
        let why = match (by_call, i.learner.measured) {
            (true, _) => format!("the whole call was not timed ({})", i.learner.call_failure.unwrap_or("no call times")),
            (false, Some(x)) => x.why_untimed(),
            (false, None) => "not timed".into(),
        };
        return Verdict { fraction: 0.0, status: Status::Failed, summary: format!("no time: {why}"), speed: None, flags };
    };
    let clock = if by_call { " (whole call)" } else { "" };
    let ratio = ns / reference_ns;
    let (fraction, target, summary) = match (&m.perf, m.timing.max_ratio_to_reference.as_ref()) {
        (Some(p), _) => {
            let goal = *p.speedup.get_ref();
            let speedup = original_ns.map(|o| o / ns).unwrap_or(f64::NAN);
            // Credit from the edge of the noise band: the untouched file earns nothing.
            let band = NOISE_BAND.max(original.spread.unwrap_or(1.0)).min(goal.sqrt());
            let mut f = ((speedup / band).ln() / (goal / band).ln()).clamp(0.0, 1.0);
            if speedup >= goal {
                f = 1.0;
            }
            let missed: Vec<String> = i
                .perf
                .and_then(|s| Some(perf::goals(p, s.version("learner")?, s.version("original")?)))
                .unwrap_or_default()
                .iter()
                .filter(|g| !g.met)
                .map(|g| g.goal.metric.label().to_string())
                .collect();
            if !missed.is_empty() {
                f = f.min(0.5);
            }
            let goals = if missed.is_empty() { String::new() } else { format!("; goals missed: {}", missed.join(", ")) };
            (f, format!(">= {goal:.1}x the original{clock}"), format!("{speedup:.2}x the original{clock} (target {goal:.1}x){goals}"))
        }
        (None, Some(max)) => {
            let max = *max.get_ref();
            // Full points within the target, none at twice it, a straight line between.
            let f = if ratio <= max { 1.0 } else { (2.0 - ratio / max).clamp(0.0, 1.0) };
            (f, format!("<= {max:.2}x the reference fix"), format!("{ratio:.2}x the reference fix (target {max:.2}x)"))
        }
        (None, None) => (0.0, String::new(), "no speed target".into()),
    };
    let status = if fraction >= 1.0 { Status::Passed } else { Status::Failed };
    let call = match (by_call, call_l, call_r, kernel_ns) {
        (true, _, _, Some(k)) => format!("; its kernels {:.1} us under ncu", k / 1e3),
        (false, Some(l), Some(r), _) => format!("; whole call {:.2} ms (reference {:.2} ms)", l / 1e6, r / 1e6),
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
            gpu_memory_bytes: mem_l,
        }),
        flags,
    }
}

/// check's and verify's timing steps for the flags.
pub fn flag_steps(flags: &[Flag]) -> Vec<crate::judge::verdict::Step> {
    flags.iter().map(|f| f.step().stage("timing")).collect()
}

/// The timed evidence of one version from a plan's results: its timing stage (ncu) and its call
/// stage. `calls` holds the parsed call times, owned by the caller.
pub fn evidence<'r>(timing: Option<&'r crate::judge::stages::Output>, call: Option<&'r crate::judge::stages::Output>) -> Timed<'r> {
    use crate::judge::stages::Output;
    let mut t = Timed::default();
    if let Some(Output::Timed { measured: Ok(m), output, .. }) = timing {
        t.measured = Some(m);
        t.ncu_output = m.finished.success().then_some(output.as_path());
    }
    if let Some(Output::Called { run, times, output, failure, .. }) = call {
        t.call = times.as_ref();
        t.call_output = failure.is_none().then_some(output.as_path());
        t.call_failure = failure.as_deref();
        t.call_wall_ns = run.as_ref().ok().map(|f| f.wall.as_secs_f64() * 1e9);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_says_why_and_review_rules_take_at_most_the_speed_points() {
        for rule in Rule::ALL {
            assert!(rule.why().len() > 60, "{rule:?}");
            if rule.review() {
                assert!(rule.withholds().iter().all(|s| *s == GradeStage::Speed), "{rule:?}");
            }
        }
        let keys: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.key()).collect();
        assert_eq!(keys.len(), Rule::ALL.len(), "keys are unique");
        for rule in Rule::ALL {
            assert_eq!(serde_json::to_value(rule).unwrap(), rule.key(), "reports and the journal name a rule by its key");
        }
    }

    #[test]
    fn call_times_parse_and_the_judged_call_is_the_fastest_after_the_first() {
        let t = CallTimes::parse("900000 880000\n120000 130000\n150000 110000\ngpu-memory 1048576\n").unwrap();
        assert_eq!(t.calls_ns, [900000.0, 120000.0, 150000.0]);
        assert_eq!(t.judged_cpu_ns(), Some(110000.0), "the least CPU time after the first call, whichever call it was");
        assert_eq!(t.gpu_memory, Some(1048576.0));
        assert_eq!(t.judged_ns(), Some(120000.0), "the first call loads the kernels: not held against anyone");
        assert_eq!(t.total_ns(), 1170000.0);
        assert_eq!(CallTimes::parse("42\n").unwrap().judged_ns(), Some(42.0), "one call is that call");
        assert_eq!(CallTimes::parse("42\n43\n").unwrap().judged_cpu_ns(), None, "an older harness wrote no CPU column");
        assert_eq!(CallTimes::parse("42 1 7\n"), None, "three columns are not call times");
        // forge-times on the H100: its exit handler appended forged one-column lines to the file.
        assert_eq!(CallTimes::parse("290440645 297296904\n314390807 320329232\ngpu-memory 937230336\n90000\n91373\n"), None);
        assert_eq!(CallTimes::parse("gpu-memory 5\n"), None, "no call: no times");
        assert_eq!(CallTimes::parse("12 ms\n"), None, "garbage is no times, not zero");
    }

    fn race() -> Exercise {
        let text = include_str!("../../../exercises/03-race/exercise.toml");
        let manifest = crate::exercise::manifest::parse("03-race", Path::new("exercises/03-race/exercise.toml"), text).unwrap();
        Exercise { manifest, original: "", solution: "" }
    }

    /// Call times as the harness writes them: a first call that loads the kernels, then two of
    /// `wall_ms`, `cpu_ms`.
    fn calls(wall_ms: f64, cpu_ms: f64) -> CallTimes {
        let line = |w: f64, c: f64| format!("{:.0} {:.0}\n", w * 1e6, c * 1e6);
        CallTimes::parse(&format!("{}{}{}gpu-memory 1\n", line(3.0 * wall_ms, 3.0 * cpu_ms), line(wall_ms, cpu_ms), line(wall_ms, cpu_ms))).unwrap()
    }

    #[test]
    fn host_threads_hidden_under_the_copy_show_in_the_cpu_time() {
        let ex = race();
        let rules = |learner: &CallTimes, reference: &CallTimes| {
            let timed = |c| Timed { call: Some(c), ..Timed::default() };
            let inputs = Inputs { ex: &ex, learner: timed(learner), reference: timed(reference), original: Timed::default(), peak: None, perf: None };
            judge(&inputs).flags.into_iter().map(|f| f.rule).collect::<Vec<_>>()
        };
        // Medians of six processes each on an H100 (scripts/gpu-calls-experiment.py, alone).
        let reference = calls(9.18, 9.30);
        assert!(rules(&calls(9.84, 28.80), &reference).contains(&Rule::HostCpu), "threaded-host: 16 threads under the copy");
        assert!(rules(&calls(22.31, 22.65), &reference).contains(&Rule::HostCpu), "decoy-host: the sum on one thread");
        assert!(!rules(&calls(8.58, 8.72), &reference).contains(&Rule::HostCpu), "honest-alt");
        // Timed while three other processes started up beside each (gate-4): slower, still told apart.
        assert!(!rules(&calls(17.33, 13.84), &calls(13.71, 12.32)).contains(&Rule::HostCpu));
        assert!(rules(&calls(20.28, 33.04), &calls(13.71, 12.32)).contains(&Rule::HostCpu));
        // More calls than the bench makes: the file is not the harness's alone.
        let eight = CallTimes::parse(&"9000000\n".repeat(8)).unwrap();
        assert!(rules(&eight, &reference).contains(&Rule::Unaccounted));
        assert!(!rules(&reference, &reference).contains(&Rule::Unaccounted), "the bench's {} calls", ex.manifest.manifest.bench.repeat);
        // A harness without the CPU column judges nothing by it.
        let old = CallTimes::parse("9000000\n9000000\n").unwrap();
        assert!(!rules(&old, &old).contains(&Rule::HostCpu));
    }

    #[test]
    fn where_the_clock_is_the_call_the_whole_call_is_judged_and_host_time_is_not_a_rule() {
        let text = include_str!("../../../exercises/62-launches/exercise.toml");
        let manifest = crate::exercise::manifest::parse("62-launches", Path::new("exercises/62-launches/exercise.toml"), text).unwrap();
        let ex = Exercise { manifest, original: "", solution: "" };
        // The H100's calls (book/gpu-runs/2026-11-24-perf3/): the original 0.426 ms, the fix 0.042 ms.
        let judged = |learner: &CallTimes| {
            let (original, reference) = (calls(0.426, 0.42), calls(0.042, 0.04));
            let timed = |c| Timed { call: Some(c), ..Timed::default() };
            judge(&Inputs { ex: &ex, learner: timed(learner), reference: timed(&reference), original: timed(&original), peak: None, perf: None })
        };
        // The fix: 10x the original's whole call, almost all of it outside any kernel ncu would time.
        let fixed = judged(&calls(0.042, 0.04));
        assert_eq!(fixed.fraction, 1.0, "{}", fixed.summary);
        assert!(fixed.summary.contains("10.14x the original (whole call)"), "{}", fixed.summary);
        assert!(!fixed.flags.iter().any(|f| f.rule == Rule::HostWork), "{:?}", fixed.flags);
        // One launch per step instead of two (the half-fix, 0.282 ms): faster, short of the target.
        let half = judged(&calls(0.282, 0.28));
        assert!(half.fraction > 0.0 && half.fraction < 1.0, "{}", half.summary);
        // Waiting spins here: a half-fix's 17 ms of spinning is no host work, 16 threads beside
        // the copies are.
        let rules = |learner: &CallTimes| judged(learner).flags.into_iter().map(|f| f.rule).collect::<Vec<_>>();
        assert!(!rules(&calls(0.282, 0.285)).contains(&Rule::HostCpu));
        assert!(rules(&calls(0.042, 2.6)).contains(&Rule::HostCpu), "2.56 ms of CPU beyond a 0.042 ms call");
        // No call times: no time at all, whatever ncu measured.
        let none = judge(&Inputs { ex: &ex, learner: Timed { call_failure: Some("the program failed"), ..Timed::default() }, reference: Timed::default(), original: Timed::default(), peak: None, perf: None });
        assert!(none.speed.is_none() && none.summary.contains("whole call was not timed (the program failed)"), "{}", none.summary);
    }

    #[test]
    fn the_reference_outputs_kept_once_read_judge_every_learner_the_same() {
        use crate::exercise::reference::Data;
        let ex = race();
        let dir = tempfile::tempdir().unwrap();
        // One f32 buffer `total` as the harness writes outputs (see data::read_outputs).
        let write = |name: &str, total: f32| {
            let path = dir.path().join(name);
            let mut bytes = b"CBOT".to_vec();
            bytes.extend(1u32.to_le_bytes().into_iter().chain(1u32.to_le_bytes()).chain(5u16.to_le_bytes()));
            bytes.extend(b"total".iter().copied().chain([crate::exercise::dtype::DType::F32.code()]).chain(1u64.to_le_bytes()).chain(total.to_le_bytes()));
            std::fs::write(&path, bytes).unwrap();
            assert!(matches!(&data::read_outputs(&path).unwrap()[0].data, Data::F32(v) if v == &[total]));
            path
        };
        let (theirs, right, wrong) = (write("reference.out", 5000.0), write("right.out", 5000.0), write("wrong.out", 4000.0));
        let kept = ReadOnce::default();
        let rules = |mine: &Path, reference: &Path| {
            let learner = Timed { ncu_output: Some(mine), ..Timed::default() };
            let reference = Timed { ncu_output: Some(reference), read_once: Some(&kept), ..Timed::default() };
            judge(&Inputs { ex: &ex, learner, reference, original: Timed::default(), peak: None, perf: None }).flags.into_iter().map(|f| f.rule).collect::<Vec<_>>()
        };
        assert!(!rules(&right, &theirs).contains(&Rule::TimedOutputs));
        // Read once: gone from the disk, the reference's outputs still judge the next learner.
        std::fs::remove_file(&theirs).unwrap();
        assert!(rules(&wrong, &theirs).contains(&Rule::TimedOutputs));
        assert!(!rules(&right, &theirs).contains(&Rule::TimedOutputs));
    }
}
