//! Code in a submission's marked regions that could let the program tell it is watched (a clock
//! around a shared-memory access that racecheck slows down, the tools' injection variables in the
//! environment, its own command line in `/proc`), or forge what the grader reads afterwards (a file
//! rewritten at exit, a hooked `cudaMemcpy`). Each finding names its rule, its token and its line,
//! for the student's feedback and for a person's review; nothing here withholds points by itself.
//!
//! # How the text is read
//! The whole file is read as the C++ preprocessor's first phases would (lines joined at a trailing
//! backslash, comments dropped, `\u` names and string escapes decoded, adjacent string literals
//! joined: `"/pr" "oc"` is `"/proc"`, `"%%glob" "altimer"` is `"%%globaltimer"`), and only the tokens
//! on lines inside the marked regions are judged. Names match as whole identifiers (`clock64 (`
//! does, `my_clock64_count` does not); paths and register names match inside string literals.
//! A region may not hold `#define`, `#include` or `#if` (the tamper check refuses them), so no macro
//! of the student's own can hide a name.
//!
//! # What the rules are
//! - [`Kind::Clock`]: `clock64`, `clock()`, `time()`, `clock_gettime`, `gettimeofday`, `std::chrono`
//!   and its clocks, `rdtsc`, `cudaEventElapsedTime`, `CLOCK_*`, CCCL's `get_sreg_clock*`, and the
//!   PTX registers `%clock*`, `%globaltimer*` and `%pm0`-`%pm7` (performance counters, which ncu
//!   programs) in any string. `cudaEventRecord` alone times nothing and is not a finding;
//!   `__nanosleep` and host sleeps wait without reading anything, and a spin-wait backs off with
//!   them honestly, so they are not findings either; `%smid`/`%nsmid` say where a block runs, not
//!   when or under which tool (inline assembly that reads them is still a finding of its own).
//! - [`Kind::Environment`]: `getenv`, `environ` and friends, `getauxval`, the host's and user's
//!   names, and strings that name the tools (`NV_NSIGHT*`, `NV_SANITIZER*`, `ncu`, `LD_PRELOAD`,
//!   `CUDABUGS*`) or the harness's options (`--call-times`, `--repeat`, ...).
//! - [`Kind::Files`]: `fopen`, `open(`, streams, `FILE`, `stat(`, `access(`, `mmap`, `dup2`, ...,
//!   any string path under `/proc`, `/dev`, `/sys` or `/tmp`, and `read(`/`write(` whose first
//!   argument is a literal file descriptor or `STD*_FILENO` (with a variable as the descriptor they
//!   are not flagged: `read` and `write` are common names, and a descriptor other than 0-2 has to
//!   come from a call that is flagged itself).
//! - [`Kind::Processes`]: `fork`, `clone`, `exec*`, `system(`, `popen`, `pthread_*`, `std::thread`,
//!   `std::async`, signals, `atexit` and other exit handlers, `ptrace`, `prctl`, `syscall`, name
//!   spaces, `setsid`, `getppid` (compute-sanitizer and ncu are the parent), resource limits.
//! - [`Kind::InlineAssembly`]: `asm`/`__asm__` unless every instruction of the statement appears in
//!   the inline assembly of the exercise's original or solution regions; an empty template (a
//!   compiler barrier) is not a finding. A statement that reads a clock register is always one.
//! - [`Kind::Symbols`]: `dlsym`, `dlopen`, `RTLD_*`, `__libc_*`, `mprotect`, `process_vm_*`,
//!   `cudaGetDriverEntryPoint`, `cuGetProcAddress`; any `extern "C"` (a region cannot `#include`, so
//!   a C declaration is how it reaches the rest of libc; one with a body interposes that function for
//!   the whole process); a function definition whose name the code outside the regions calls
//!   (`cudaMemcpy` overloads that `cb_run` picks are how the fixtures' `decoy-host` and
//!   `profiler-aware` hook the harness), or that is the C library's, `main`, `exit` or one of
//!   CUDA's launch, copy and synchronisation calls; a definition of a member or specialisation of
//!   `cb::`, `std::` or `cuda::`; `operator new`/`delete`; reopening `namespace std`, `cb` or `cuda`;
//!   the attributes `constructor`, `destructor`, `alias`, `weak`, `ifunc`, `section`.
//!
//! # What the allowlist is
//! What the workbook's own code does in the exercise's original or solution regions is not a
//! finding: both are scanned with the same rules, and a finding of the same kind and token is
//! dropped (per token: an original that calls `fopen` does not allow `getenv`). A read of a clock
//! register (`%clock*`, `%globaltimer*`, `%pm*`, `rdtsc`) is never allowed. Today no region of the
//! workbook needs the allowlist except for the functions it defines for the code after it
//! (`warp_sum`, `launch_sum`), which would otherwise read as hooks; so an extra overload of one of
//! those (`profiler-aware`'s second kernel `sum`) is not a finding by itself.
//!
//! # What a text scan cannot see
//! - A name or path assembled at run time: characters pushed into a `std::string`, a `char[]`
//!   written one element at a time, bytes XORed with a key, a path from `argv` or a file.
//! - A function reached through a pointer the program got from a library it legitimately uses:
//!   a CUDA library's own timer, or a libc function found by walking `link_map` data reached through
//!   a harness pointer. `dlsym` and the driver entry-point calls are flagged; a hand-written ELF
//!   walk is not.
//! - Timing without a clock: counting spin-loop iterations against an atomic another block bumps,
//!   or the SM's performance counters read by an instruction the text never names. The SASS check
//!   ([`clock_reads_in_sass`]) sees clock and counter registers whatever the source did.
//! - Behaviour that only differs under the tools because the tools make it slow (a watchdog on
//!   `cudaStreamQuery`, a `cudaEventQuery` poll count), and a hook through an overload of a name
//!   that only the exercise's own code after the region uses.
//! - Code that runs before `main` (a namespace-scope object with a constructor, a static initialised
//!   by a call) is not a finding by itself: it is ordinary C++. What such code does is judged like
//!   any other code (the `hog` fixture is found by its C declaration of `sleep`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::exercise::workbook::Exercise;

mod findings;
mod flag;
mod rules;
mod tokens;

use findings::findings;
pub use flag::{flag, flag_built, flag_with, host_beyond, Compiled, Host};

/// What a finding lets a program do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Clock,
    Environment,
    Files,
    Processes,
    InlineAssembly,
    Symbols,
}

impl Kind {
    /// The rule in plain words, for the student's feedback.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Clock => "reads a clock or timer",
            Kind::Environment => "looks at its environment or command line (variables, the tools' names, the harness's options)",
            Kind::Files => "opens files or paths under /proc, /dev, /sys or /tmp",
            Kind::Processes => "starts processes or threads, handles signals, or registers code to run at exit",
            Kind::InlineAssembly => "uses inline assembly that the exercise's own code does not use",
            Kind::Symbols => "looks up or replaces functions (C linkage, dlsym, a function the harness, CUDA or the C library provides)",
        }
    }
}

/// One finding: the line in the submitted file (1-based), the rule, the token that matched and the
/// line itself (trimmed, shortened).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspect {
    pub line: usize,
    pub kind: Kind,
    pub token: String,
    pub excerpt: String,
}

/// Findings of `submitted`'s marked regions, less what the exercise's own original and solution
/// regions already do. A file whose regions do not parse gives none (the tamper check refuses it).
pub fn scan(ex: &Exercise, submitted: &str) -> Vec<Suspect> {
    let allow = Allowlist::of(&[ex.original, ex.solution]);
    scan_with(&allow, submitted)
}

/// Every finding in the marked regions of `source`, with no allowlist (what [`scan`] filters).
pub fn scan_regions(source: &str) -> Vec<Suspect> {
    findings(source).into_iter().map(|f| f.suspect).collect()
}

/// The workbook's reference solution, scanned as a submission, gives no finding (for `verify`).
/// The allowlist comes from the solution itself, so this fails only on what is never allowed: a
/// read of a clock register in inline assembly or a string.
pub fn workbook_clean(ex: &Exercise) -> Result<(), ClockInSolution> {
    let found = scan(ex, ex.solution);
    if found.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = found
        .iter()
        .map(|s| {
            format!(
                "line {}: {} (`{}`): {}",
                s.line,
                s.kind.describe(),
                s.token,
                s.excerpt
            )
        })
        .collect();
    Err(ClockInSolution {
        exercise: ex.id().to_string(),
        findings: list,
    })
}

/// The reference solution reads a clock where no submission may (`workbook_clean`): each finding,
/// "line N: what (`token`): excerpt".
#[derive(Debug, thiserror::Error)]
#[error("the reference solution of {exercise} {}", .findings.join("; "))]
pub struct ClockInSolution {
    pub exercise: String,
    pub findings: Vec<String>,
}

fn scan_with(allow: &Allowlist, submitted: &str) -> Vec<Suspect> {
    findings(submitted)
        .into_iter()
        .filter(|f| !allow.allows(f))
        .map(|f| f.suspect)
        .collect()
}

/// A finding before the allowlist: inline assembly carries its instructions, and some findings may
/// never be allowed.
struct CodeFinding {
    suspect: Suspect,
    /// For inline assembly: the instruction mnemonics of the statement.
    mnemonics: Vec<String>,
    never_allowed: bool,
}

#[derive(Default)]
struct Allowlist {
    tokens: BTreeSet<(Kind, String)>,
    mnemonics: BTreeSet<String>,
}

impl Allowlist {
    fn of(texts: &[&str]) -> Allowlist {
        let mut allow = Allowlist::default();
        for f in texts.iter().flat_map(|t| findings(t)) {
            if f.suspect.kind == Kind::InlineAssembly {
                allow.mnemonics.extend(f.mnemonics);
            } else {
                allow.tokens.insert((f.suspect.kind, f.suspect.token));
            }
        }
        allow
    }

    fn allows(&self, f: &CodeFinding) -> bool {
        if f.never_allowed {
            return false;
        }
        if f.suspect.kind == Kind::InlineAssembly {
            return f.mnemonics.iter().all(|m| self.mnemonics.contains(m));
        }
        self.tokens
            .contains(&(f.suspect.kind, f.suspect.token.clone()))
    }
}

// The SASS check: the device code's clock reads, read by `tools::sass`.
pub use crate::tools::sass::{clock_reads_beyond, clock_reads_in_sass, sass_job, SassClockRead};

#[cfg(test)]
mod tests {
    use super::findings::mnemonics;
    use super::*;

    /// A source of one region `bug` holding `body`, with harness-like code around it.
    fn region(body: &str) -> String {
        format!("#include \"cudabugs.cuh\"\nint before;\n// ANCHOR: bug\n{body}\n// ANCHOR_END: bug\nint after = clock();\n")
    }

    fn kinds(found: &[Suspect]) -> Vec<(Kind, &str)> {
        found.iter().map(|s| (s.kind, s.token.as_str())).collect()
    }

    fn raw(body: &str) -> Vec<Suspect> {
        scan_regions(&region(body))
    }

    /// The region `body` is flagged for exactly `expected` (kind and token), in that order.
    fn flags(body: &str, expected: &[(Kind, &str)]) {
        assert_eq!(kinds(&raw(body)), expected, "{body}");
    }

    #[test]
    fn clocks_and_timers() {
        flags("long long t0 = clock64();", &[(Kind::Clock, "clock64")]);
        flags("long long t0 = clock64 ();", &[(Kind::Clock, "clock64")]);
        flags("int t = clock();", &[(Kind::Clock, "clock")]);
        flags(
            "auto t = std::chrono::steady_clock::now();",
            &[(Kind::Clock, "chrono"), (Kind::Clock, "steady_clock")],
        );
        flags(
            "timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);",
            &[
                (Kind::Clock, "clock_gettime"),
                (Kind::Clock, "CLOCK_MONOTONIC"),
            ],
        );
        flags(
            "cudaEventElapsedTime(&ms, a, b);",
            &[(Kind::Clock, "cudaEventElapsedTime")],
        );
        flags("long t = time(nullptr);", &[(Kind::Clock, "time")]);
        flags(
            "auto t = cuda::ptx::get_sreg_clock64();",
            &[(Kind::Clock, "get_sreg_clock64")],
        );
        // Events that time nothing, sleeps, member names and longer names are not clocks.
        assert!(raw("cudaEventRecord(e); __nanosleep(100); x.clock(); s->time(3); int my_clock64_count = 0; float time_ms = 1;").is_empty());
        // A function taken by name is as good as a call, unless the name is a variable of the file's.
        flags("auto c = &::clock;", &[(Kind::Clock, "clock")]);
        flags("long (*now)(long*) = time;", &[(Kind::Clock, "time")]);
        flags("auto c = std::clock;", &[(Kind::Clock, "clock")]);
        assert!(raw("float time = 0.0f;\nfor (int s = 0; s < 4; ++s) time += dt(s, time);\nconst float* clock, *open;\nuse(&open[1], clock[0]);").is_empty());
    }

    #[test]
    fn environment_files_processes_symbols() {
        flags(
            "const char* p = std::getenv(\"HOME\");",
            &[(Kind::Environment, "getenv")],
        );
        flags("extern char** environ;", &[(Kind::Environment, "environ")]);
        flags(
            "FILE* f = std::fopen(\"cache.bin\", \"rb\");",
            &[(Kind::Files, "FILE"), (Kind::Files, "fopen")],
        );
        flags(
            "auto s = proc_strings(\"/proc/self/cmdline\");",
            &[(Kind::Files, "/proc")],
        );
        flags("write(2, buf, n);", &[(Kind::Files, "write(fd)")]);
        assert!(raw("write(out, buf, n); io.read(0, x); printf(\"host/device\\n\");").is_empty());
        flags("if (fork() == 0) _exit(0);", &[(Kind::Processes, "fork")]);
        flags(
            "static int f = std::atexit(forge);",
            &[(Kind::Processes, "atexit")],
        );
        flags("std::thread t(work);", &[(Kind::Processes, "std::thread")]);
        flags(
            "pthread_create(&t, nullptr, f, nullptr);",
            &[(Kind::Processes, "pthread_create")],
        );
        flags(
            "void* f = dlsym(RTLD_NEXT, \"clock_gettime\");",
            &[(Kind::Symbols, "dlsym"), (Kind::Symbols, "RTLD_NEXT")],
        );
        flags(
            "extern \"C\" unsigned sleep(unsigned);",
            &[(Kind::Symbols, "extern \"C\"")],
        );
        let interposed =
            raw("extern \"C\" int clock_gettime(int c, timespec* t) {\n  return 0;\n}");
        assert_eq!(
            kinds(&interposed),
            [
                (Kind::Clock, "clock_gettime"),
                (Kind::Symbols, "extern \"C\" definition"),
                (Kind::Symbols, "clock_gettime(...) {...}")
            ]
        );
        let hook = raw("cudaError_t cudaMemcpy(float* d, const float* s, size_t n, cudaMemcpyKind k) {\n  return cudaMemcpy((void*)d, (const void*)s, n, k);\n}");
        assert_eq!(kinds(&hook), [(Kind::Symbols, "cudaMemcpy(...) {...}")]);
        // Calls of the same names are not definitions, nor is a macro (which the tamper check refuses).
        assert!(raw(
            "#define cudaMemcpy(d, s, n, k) cudaMemcpy(d, s, n, k)\nstatic int pad() { return 0; }"
        )
        .is_empty());
        assert!(raw("CB_CHECK(cudaMemcpy(d, s, n, cudaMemcpyHostToDevice));\nif (cudaDeviceSynchronize() != cudaSuccess) { return; }").is_empty());
        flags(
            "__attribute__((constructor)) static void early() {}",
            &[(Kind::Symbols, "attribute constructor")],
        );
        flags(
            "namespace std { int x; }",
            &[(Kind::Symbols, "namespace std")],
        );
        // A kernel named like a CUDA call is the student's own; a specialisation of the harness's is not.
        assert!(raw("__global__ void cudaSum(const float* x, float* total, int n) {}").is_empty());
        let special = raw("template <> float* cb::Io::output<float>(const char* name, size_t* len) {\n  return nullptr;\n}");
        assert_eq!(
            kinds(&special),
            [(Kind::Symbols, "cb::Io::output(...) {...}")]
        );
    }

    #[test]
    fn a_definition_of_what_the_code_after_the_region_calls_is_a_hook_unless_the_workbook_defines_it(
    ) {
        let with = |body: &str| {
            format!("int before;\n// ANCHOR: bug\n{body}\n// ANCHOR_END: bug\nvoid cb_run() {{ finish(launch(3)); }}\n")
        };
        let original = with("int launch(int n) { return n; }");
        let allow = Allowlist::of(&[&original]);
        let hook = with("int launch(int n) { return n; }\nvoid finish(int v) { }");
        assert_eq!(
            kinds(&scan_regions(&hook)),
            [
                (Kind::Symbols, "launch(...) {...}"),
                (Kind::Symbols, "finish(...) {...}")
            ]
        );
        assert_eq!(
            kinds(&scan_with(&allow, &hook)),
            [(Kind::Symbols, "finish(...) {...}")]
        );
    }

    #[test]
    fn normalisation_sees_through_split_literals_comments_and_splices() {
        flags(
            "auto f = std::fopen(\"/pr\" \"oc/self/environ\", \"r\");",
            &[(Kind::Files, "fopen"), (Kind::Files, "/proc")],
        );
        flags("auto s = \"/pr\"\n   \"oc\";", &[(Kind::Files, "/proc")]);
        flags("auto s = \"\\x2fproc\";", &[(Kind::Files, "/proc")]);
        flags(
            "asm volatile(\"mov.u64 %0, %%glob\" \"altimer;\" : \"=l\"(t));",
            &[(Kind::Clock, "%globaltimer"), (Kind::InlineAssembly, "asm")],
        );
        // A name split by a comment is two names; a name joined by a backslash-newline is one.
        assert!(
            raw("long long t = clo/* */ck64; // clock64() in a comment\n/* getenv(\"X\") */")
                .is_empty()
        );
        flags("long long t = clo\\\nck64();", &[(Kind::Clock, "clock64")]);
        flags(
            "long long t = \\u0063lock64();",
            &[(Kind::Clock, "clock64")],
        );
        // Whole tokens only.
        assert!(raw(
            "int my_clock64_count = 0, getenv_calls = 1, forked = 2; float environment = 0.0f;"
        )
        .is_empty());
        // Paths only as paths.
        assert!(raw("printf(\"host/device /tmpl\\n\");").is_empty());
        flags("mark(\"/tmp/leftover-marker\");", &[(Kind::Files, "/tmp")]);
        flags("const char* d = R\"(/dev/shm)\";", &[(Kind::Files, "/dev")]);
        flags(
            "if (starts_with(*e, \"NV_NSIGHT_INJECTION\")) {}",
            &[
                (Kind::Environment, "nsight"),
                (Kind::Environment, "injection"),
            ],
        );
    }

    #[test]
    fn line_numbers_are_the_submitted_files_and_outside_lines_are_not_scanned() {
        let src = region("int a = 0;\n\nlong long t = clock64();\n\n  // getenv\n  const char* h = getenv(\"HOME\");");
        let found = scan_regions(&src);
        assert_eq!(
            found
                .iter()
                .map(|s| (s.line, s.token.as_str()))
                .collect::<Vec<_>>(),
            [(6, "clock64"), (9, "getenv")]
        );
        assert_eq!(found[0].excerpt, "long long t = clock64();");
        // `clock()` after the region (line 11) is the workbook's, not the student's.
        assert!(!found.iter().any(|s| s.line > 10));
        assert!(scan_regions("no regions here; clock64();").is_empty());
    }

    #[test]
    fn inline_assembly_and_its_allowlist() {
        let cp = "asm volatile(\"cp.async.ca.shared.global [%0], [%1], 16;\" :: \"r\"(d), \"l\"(s));\nasm volatile(\"cp.async.commit_group;\");";
        let original = region(cp);
        let solution = region(&format!("{cp}\nasm volatile(\"{{\\n .reg .pred p;\\n cp.async.wait_group 0;\\n}}\" ::: \"memory\");"));
        let allow = Allowlist::of(&[&original, &solution]);
        assert_eq!(
            kinds(&scan_regions(&solution)),
            [
                (Kind::InlineAssembly, "asm"),
                (Kind::InlineAssembly, "asm"),
                (Kind::InlineAssembly, "asm")
            ]
        );
        // The same instructions, in another order and spelling of the keyword, are allowed.
        let same = region(
            "__asm__ __volatile__(\"cp.async.commit_group;\");\nasm(\"cp.async.wait_group 0;\");",
        );
        assert!(scan_with(&allow, &same).is_empty());
        // Another instruction is not; a clock read is never, even through an allowed instruction.
        assert_eq!(
            kinds(&scan_with(&allow, &region("asm(\"membar.gl;\");"))),
            [(Kind::InlineAssembly, "asm")]
        );
        let clock_allow =
            Allowlist::of(&[&region("asm(\"mov.u64 %0, %1;\" : \"=l\"(a) : \"l\"(b));")]);
        let timed = region(
            "unsigned long long g;\nasm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(g));",
        );
        assert_eq!(
            kinds(&scan_with(&clock_allow, &timed)),
            [(Kind::Clock, "%globaltimer"), (Kind::InlineAssembly, "asm")]
        );
        // An empty template is a compiler barrier, not code.
        assert!(raw("asm volatile(\"\" ::: \"memory\");").is_empty());
        flags(
            "unsigned lo, hi; __asm__ volatile(\"rdtsc\" : \"=a\"(lo), \"=d\"(hi));",
            &[(Kind::Clock, "rdtsc"), (Kind::InlineAssembly, "__asm__")],
        );
    }

    #[test]
    fn the_allowlist_is_per_token() {
        let original = region("FILE* f = std::fopen(\"data.bin\", \"rb\");");
        let allow = Allowlist::of(&[&original]);
        let sub =
            region("FILE* f = std::fopen(\"other.bin\", \"rb\");\nconst char* e = getenv(\"X\");");
        assert_eq!(
            kinds(&scan_with(&allow, &sub)),
            [(Kind::Environment, "getenv")]
        );
    }

    #[test]
    fn mnemonics_skip_labels_predicates_braces_and_directives() {
        let tpl = "{\n .reg .pred p;\n setp.eq.u32 p, %1, 0;\n @p bra DONE;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %2;\nDONE:\n}";
        assert_eq!(
            mnemonics(tpl),
            [
                "setp.eq.u32",
                "bra",
                "mbarrier.try_wait.parity.shared::cta.b64"
            ]
        );
        assert!(mnemonics("").is_empty());
    }

    #[test]
    fn sass_parser_finds_the_reads_and_their_functions() {
        let sass = "\t\tFunction : _Z5stampPy\n        /*0020*/                   CS2R R4, SR_GLOBALTIMERLO ;         /* 0x0000000000047805 */\n        /*0030*/               @P0 S2UR UR6, SR_CLOCKHI ;        /* 0x00000000000679c3 */\n        /*0040*/                   S2R R7, SR_TID.X ;        /* 0x0 */\n\t\tFunction : clock64\n        /*0000*/                   CS2R.32 R4, SR_CLOCKLO ;\n";
        let reads = clock_reads_in_sass(sass);
        assert_eq!(reads.len(), 3);
        assert_eq!(
            reads[0],
            SassClockRead {
                function: "_Z5stampPy".into(),
                instruction: "CS2R R4, SR_GLOBALTIMERLO".into()
            }
        );
        assert_eq!(reads[1].instruction, "@P0 S2UR UR6, SR_CLOCKHI");
        assert_eq!(
            (reads[2].function.as_str(), reads[2].register()),
            ("clock64", "SR_CLOCKLO")
        );
        assert_eq!(clock_reads_beyond(&reads, &reads[..1]), reads[1..].to_vec());
        let job = sass_job(
            std::path::Path::new("/x/cuobjdump"),
            std::path::Path::new("/w/prog"),
            std::time::Duration::from_secs(5),
        );
        assert_eq!(job.display(), "/x/cuobjdump -sass /w/prog");
    }

    #[test]
    fn kinds_serialise_in_kebab_case_and_describe_themselves() {
        assert_eq!(
            serde_json::to_string(&Kind::InlineAssembly).unwrap(),
            "\"inline-assembly\""
        );
        assert_eq!(
            serde_json::from_str::<Kind>("\"clock\"").unwrap(),
            Kind::Clock
        );
        assert_eq!(Kind::Clock.describe(), "reads a clock or timer");
    }
}
