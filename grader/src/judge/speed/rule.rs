//! The anti-cheat rules: each one's key, what it withholds and why, and a flag that one raised.

use serde::{Deserialize, Serialize};

use crate::exercise::rubric::GradeStage;
use crate::judge::verdict::Status;

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
    /// The timed kernels ran far faster under ncu than in the plain call timing (CUPTI's kernel
    /// times), beyond what the reference fix shows: the kernel ncu timed is not the one that runs.
    FasterUnderNcu,
    /// The call whose launches, copies and overlap are counted launched fewer kernels than the calls
    /// that are judged, or ran far quicker: the program did something else when traced.
    RecordedCall,
    /// Code in the marked regions that can tell when a tool watches or forge what the grader reads
    /// (`judge::tool_aware`): the tools' and the speed points are held for a person.
    ToolAware,
}

impl Rule {
    pub const ALL: [Rule; 16] = [
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
        Rule::FasterUnderNcu,
        Rule::RecordedCall,
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
            Rule::FasterUnderNcu => "faster-under-ncu",
            Rule::RecordedCall => "recorded-call",
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
                | Rule::RecordedCall
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
            Rule::ToolAware => "the compiled code reaches what neither the exercise nor its reference fix reaches (a C library or runtime function beyond the allowlist, a name taken for the whole program, a system call, code that runs before the harness's restrictions, code outside the regions now calling the regions' own), or its kernels read a clock the reference's do not: a program can always tell when compute-sanitizer or ncu watches it, and what it did then need not be what it does otherwise, so the tools' and the speed points are held for a person, who reads the lines named",
            Rule::FasterUnderNcu => "the judged time is ncu's, so the kernels ncu times must be the ones that run: the plain call timing records every kernel's time with CUPTI (the driver's own clock, whoever launched them), and where the kernels of a plain call took more than 1.5x longer against ncu's time than the reference fix's do against its own (graded on an H200, every reference fix and honest fix kept within 1.11x of its reference's ratio; a kernel chosen only under ncu showed 7.5x), the program ran something else when ncu watched; no speed credit",
            Rule::RecordedCall => "where the call is the clock, the launches, copies and overlap are counted on one call that CUPTI traces, served after a number of judged calls drawn from the grader's secret; the harness counts every call's launches, and recording only adds to a call's time, so a program whose recorded call launched fewer kernels than every judged call after the first, or took under 0.6x the quickest judged call, ran something else when it was recorded: its goals cannot be read from that call, and speed is left to a person",
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
            crate::judge::verdict::StepName::rule(self.rule.key()),
            Status::Failed,
            self.message.clone(),
        )
        .detail(self.rule.why())
    }
}
