//! `cuobjdump -sass`: a binary's device code, read for the instructions that read a clock, the
//! global timer or a performance counter (what code that can tell it is watched compiles to,
//! whatever its text hides; `judge::tool_aware` judges them).

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tools::launcher::Launcher;
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

/// `cuobjdump -sass FILE`: the device code of every function of a binary or of one cubin, as text
/// for [`clock_reads_in_sass`]. (For SASS, cuobjdump runs nvdisasm, which it looks for beside itself
/// or on `PATH`: once per cubin, 0.2-0.3 s each, however little the cubin holds.)
pub fn sass_job(cuobjdump: &Path, file: &Path, timeout: Duration) -> Job {
    Job::new(cuobjdump, timeout).arg("-sass").arg(file)
}

/// `cuobjdump -xelf all BINARY`: every cubin of the binary written into the job's folder (its
/// `cwd`), as cuobjdump names them (`reduce.sm_90.cubin`). It runs no nvdisasm.
pub fn extract_job(cuobjdump: &Path, binary: &Path, timeout: Duration) -> Job {
    Job::new(cuobjdump, timeout)
        .args(["-xelf", "all"])
        .arg(binary)
}

/// The cubins `extract_job` wrote into `dir`, as its output `said` names them ("Extracting ELF file
/// 2: reduce.sm_90.cubin"), in that order. None unless every cubin it named is a regular file of
/// its own there (two cubins of one name would leave one file: the caller then reads the whole
/// binary instead); a link or a folder is not followed.
pub fn extracted_cubins(dir: &Path, said: &str) -> Option<Vec<Vec<u8>>> {
    let names: Vec<&str> = said
        .lines()
        .filter(|l| l.trim_start().starts_with("Extracting ELF file"))
        .map(|l| l.split_once(": ").map(|(_, name)| name.trim()))
        .collect::<Option<_>>()?;
    let distinct: HashSet<&str> = names.iter().copied().collect();
    if distinct.len() != names.len() || names.iter().any(|n| n.contains('/') || n.is_empty()) {
        return None;
    }
    names
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let is_file = std::fs::symlink_metadata(&path).ok()?.file_type().is_file();
            is_file.then(|| std::fs::read(&path).ok()).flatten()
        })
        .collect()
}

/// Whether a cubin has to be disassembled for its clock reads: not when it is byte for byte one of
/// `ours` (the harness's own device code, which every binary links), nor when it holds no code
/// (the empty stub nvcc's link adds: no function, nothing to read). Anything else is read, a
/// cubin this cannot parse included.
pub fn needs_reading(cubin: &[u8], ours: &HashSet<blake3::Hash>) -> bool {
    !ours.contains(&blake3::hash(cubin)) && holds_code(cubin)
}

/// Whether an ELF file has a section that can hold instructions: executable, or named `.text*`
/// (where cuobjdump finds a function's code). A file that does not parse as ELF may hold anything.
fn holds_code(elf: &[u8]) -> bool {
    use object::{Object as _, ObjectSection as _, SectionFlags};
    const SHF_EXECINSTR: u64 = 0x4;
    let Ok(file) = object::File::parse(elf) else {
        return true;
    };
    file.sections().any(|section| {
        let executable = matches!(section.flags(), SectionFlags::Elf { sh_flags } if sh_flags & SHF_EXECINSTR != 0);
        executable || section.name().map_or(true, |n| n.starts_with(".text"))
    })
}

/// The harness object's own cubins, by content, as every binary links them: written out by
/// cuobjdump (outside the sandbox: the object is the grader's own build of its own sources, in a
/// folder of its own). Empty where they cannot be had: every cubin is then read, as before.
pub fn harness_cubins(
    launcher: &dyn Launcher,
    cuobjdump: &Path,
    object: &Path,
    timeout: Duration,
) -> HashSet<blake3::Hash> {
    let read = || {
        let dir = tempfile::tempdir().ok()?;
        let finished = launcher
            .launch(&extract_job(cuobjdump, object, timeout).cwd(dir.path()))
            .ok()
            .filter(|f| f.success())?;
        let cubins = extracted_cubins(dir.path(), &finished.stdout.text())?;
        Some(cubins.iter().map(|b| blake3::hash(b)).collect())
    };
    read().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three cubins of one 03-race binary (`tests/fixtures/cubins/README.md`).
    fn cubin(name: &str) -> Vec<u8> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cubins");
        std::fs::read(dir.join(name)).unwrap()
    }

    #[test]
    fn only_the_exercise_s_own_cubin_is_disassembled() {
        let (own, warm, stub) = (
            cubin("reduce.sm_90.cubin"),
            cubin("harness-warm.sm_75.cubin"),
            cubin("link-stub.sm_90.cubin"),
        );
        let ours = HashSet::from([blake3::hash(&warm)]);
        assert!(needs_reading(&own, &ours));
        assert!(!needs_reading(&warm, &ours));
        assert!(!needs_reading(&stub, &ours));
        // Without the harness's hashes its cubin holds code like any other, and is read.
        assert!(needs_reading(&warm, &HashSet::new()));
        assert!(holds_code(&own) && holds_code(&warm) && !holds_code(&stub));
    }

    #[test]
    fn a_cubin_that_differs_from_the_harness_s_by_one_byte_or_does_not_parse_is_read() {
        let warm = cubin("harness-warm.sm_75.cubin");
        let ours = HashSet::from([blake3::hash(&warm)]);
        let mut changed = warm.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        assert!(needs_reading(&changed, &ours));
        // Not an ELF file, or one cut short: whatever it holds is read.
        assert!(needs_reading(b"not a cubin", &ours));
        assert!(needs_reading(&cubin("link-stub.sm_90.cubin")[..40], &ours));
    }

    #[test]
    fn extracted_cubins_are_the_files_cuobjdump_named_and_none_if_one_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.sm_90.cubin"), b"b").unwrap();
        std::fs::write(dir.path().join("a.sm_75.cubin"), b"a").unwrap();
        std::fs::create_dir(dir.path().join("home.cubin")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link.cubin")).unwrap();
        let said = |names: &[&str]| -> String {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| format!("Extracting ELF file {:>4}: {n}\n", i + 1))
                .collect()
        };
        let got = extracted_cubins(dir.path(), &said(&["b.sm_90.cubin", "a.sm_75.cubin"]));
        assert_eq!(got, Some(vec![b"b".to_vec(), b"a".to_vec()]));
        // Nothing extracted, nothing to read.
        assert_eq!(extracted_cubins(dir.path(), ""), Some(vec![]));
        // A name written twice (one file for two cubins), a file not there, a link, a folder or a
        // path: the whole binary is read instead.
        for names in [
            &["a.sm_75.cubin", "a.sm_75.cubin"][..],
            &["c.sm_90.cubin"],
            &["link.cubin"],
            &["home.cubin"],
            &["../a.sm_75.cubin"],
        ] {
            assert_eq!(
                extracted_cubins(dir.path(), &said(names)),
                None,
                "{names:?}"
            );
        }
    }
}
