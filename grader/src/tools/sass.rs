//! `cuobjdump -sass`: a binary's device code, read for the instructions that read a clock, the
//! global timer or a performance counter (what code that can tell it is watched compiles to,
//! whatever its text hides; `judge::tool_aware` judges them).

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tools::runner::Job;

/// One instruction of a binary's device code that reads a clock, the global timer or a
/// performance counter, with the function it is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SassClockRead {
    /// The (mangled) function name, as `cuobjdump -sass` gives it: `_Z8warp_sumPKfi`.
    pub function: String,
    /// The instruction, predicate and operands included: `CS2R R6, SR_CLOCKLO`.
    pub instruction: String,
}

impl SassClockRead {
    /// The special register read: `SR_CLOCKLO`.
    pub fn register(&self) -> &str {
        self.instruction
            .split([' ', ',', ';'])
            .find(|w| clock_register(w))
            .unwrap_or("")
    }
}

fn clock_register(word: &str) -> bool {
    matches!(
        word,
        "SR_CLOCKLO" | "SR_CLOCKHI" | "SR_GLOBALTIMERLO" | "SR_GLOBALTIMERHI"
    ) || word
        .strip_prefix("SR_PM")
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
}

/// The clock reads in the text of `cuobjdump -sass BINARY`: `S2R`, `CS2R` or `S2UR` (any width,
/// any predicate) of `SR_CLOCKLO`, `SR_CLOCKHI`, `SR_GLOBALTIMERLO`, `SR_GLOBALTIMERHI`, or a
/// performance counter `SR_PM0`-`SR_PM7` (which ncu programs).
///
/// An `-O3` build inlines `clock64()` into the kernel that uses it; a `-G` build keeps the reads in
/// functions of their own named `clock64` and `clock`. libcu++'s `cuda::barrier::wait` reads
/// `SR_GLOBALTIMERLO` for its back-off, so code that waits on a barrier shows reads it never wrote.
pub fn clock_reads_in_sass(sass: &str) -> Vec<SassClockRead> {
    let mut function = String::new();
    let mut out = Vec::new();
    for line in sass.lines() {
        let t = line.trim();
        if let Some(name) = t
            .strip_prefix("Function")
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix(':'))
        {
            function = name.trim().to_string();
            continue;
        }
        // `/*0030*/   CS2R R6, SR_CLOCKLO ;   /* 0x0000000000067805 */`
        let Some((addr, rest)) = t.strip_prefix("/*").and_then(|r| r.split_once("*/")) else {
            continue;
        };
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let instruction = rest.split(';').next().unwrap_or("").trim();
        let body = match instruction.strip_prefix('@') {
            Some(p) => p
                .split_once(char::is_whitespace)
                .map(|(_, r)| r.trim_start())
                .unwrap_or(""),
            None => instruction,
        };
        let opcode = body.split_whitespace().next().unwrap_or("");
        let base = opcode.split('.').next().unwrap_or("");
        if matches!(base, "S2R" | "CS2R" | "S2UR") && body.split([' ', ',']).any(clock_register) {
            out.push(SassClockRead {
                function: function.clone(),
                instruction: instruction.split_whitespace().collect::<Vec<_>>().join(" "),
            });
        }
    }
    out
}

/// The reads of `submitted` that the reference build does not have: a register read in a function
/// of a name where the reference reads that register nowhere (so the back-off inside a
/// `cuda::barrier` wait that the reference also makes is not counted).
pub fn clock_reads_beyond(
    submitted: &[SassClockRead],
    reference: &[SassClockRead],
) -> Vec<SassClockRead> {
    submitted
        .iter()
        .filter(|s| {
            !reference
                .iter()
                .any(|r| r.function == s.function && r.register() == s.register())
        })
        .cloned()
        .collect()
}

/// `cuobjdump -sass BINARY`: the device code of every function, as text for [`clock_reads_in_sass`].
/// (For SASS, cuobjdump runs nvdisasm, which it looks for beside itself or on `PATH`.)
pub fn sass_job(cuobjdump: &Path, binary: &Path, timeout: Duration) -> Job {
    Job::new(cuobjdump, timeout).arg("-sass").arg(binary)
}
