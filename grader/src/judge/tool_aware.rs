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

use crate::exercise::regions;
use crate::exercise::workbook::Exercise;

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

/// The findings of `submitted` as one flag of the tool-aware rule (None where there are none):
/// each rule with its line, the first few of them.
pub fn flag(ex: &Exercise, submitted: &str) -> Option<crate::judge::speed::Flag> {
    flag_with(ex, submitted, &[])
}

/// The flag of the text and of the clock reads its compiled kernels have beyond the reference's
/// (`clock_reads_beyond`): reads the text scan could not see (a name built from pieces, a timer
/// reached through a library) show in the device code.
pub fn flag_with(
    ex: &Exercise,
    submitted: &str,
    compiled: &[SassClockRead],
) -> Option<crate::judge::speed::Flag> {
    let found = scan(ex, submitted);
    if found.is_empty() && compiled.is_empty() {
        return None;
    }
    let mut shown: Vec<String> = found
        .iter()
        .take(4)
        .map(|s| format!("line {}: {} (`{}`)", s.line, s.kind.describe(), s.token))
        .collect();
    shown.extend(compiled.iter().take(2).map(|r| format!("its compiled kernel `{}` reads the GPU's clock {} (`{}`), which the reference fix's does not", r.function, r.register(), r.instruction)));
    let hidden = found.len().saturating_sub(4) + compiled.len().saturating_sub(2);
    let more = if hidden > 0 {
        format!("; and {hidden} more")
    } else {
        String::new()
    };
    Some(crate::judge::speed::Flag::new(
        crate::judge::speed::Rule::ToolAware,
        format!("{}{more}", shown.join("; ")),
    ))
}

/// `flag_with` for a submission the scheduler built: the clock reads of `subject`'s compiled
/// kernels (its Sass stage in `results`) beyond those of the reference's (`reference`); the text
/// alone where either could not be read (no cuobjdump).
pub fn flag_built(
    ex: &Exercise,
    submitted: &str,
    results: &crate::judge::scheduler::Results,
    subject: usize,
    reference: &crate::judge::plan::Stage,
) -> Option<crate::judge::speed::Flag> {
    use crate::judge::plan::StageKind;
    use crate::judge::stages::Output;
    let compiled = match (
        results.get(subject, StageKind::Sass),
        results.get_run(reference),
    ) {
        (Some(Output::Sass { reads: Ok(mine) }), Some(Output::Sass { reads: Ok(theirs) })) => {
            clock_reads_beyond(mine, theirs)
        }
        _ => Vec::new(),
    };
    flag_with(ex, submitted, &compiled)
}

/// The workbook's reference solution, scanned as a submission, gives no finding (for `verify`).
/// The allowlist comes from the solution itself, so this fails only on what is never allowed: a
/// read of a clock register in inline assembly or a string.
pub fn workbook_clean(ex: &Exercise) -> Result<(), String> {
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
    Err(format!(
        "the reference solution of {} {}",
        ex.id(),
        list.join("; ")
    ))
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
struct Finding {
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

    fn allows(&self, f: &Finding) -> bool {
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

// ---------------------------------------------------------------------------------------------
// Reading the text.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokKind {
    Ident,
    /// A string literal, escapes decoded, adjacent literals joined.
    Str,
    Punct,
    /// Numbers and character literals.
    Other,
}

#[derive(Debug, Clone)]
struct Tok {
    kind: TokKind,
    text: String,
    line: usize,
}

impl Tok {
    fn is(&self, kind: TokKind, text: &str) -> bool {
        self.kind == kind && self.text == text
    }
    fn punct(&self, text: &str) -> bool {
        self.is(TokKind::Punct, text)
    }
}

/// Characters with their 1-based source line, after joining lines at a trailing backslash.
fn spliced(source: &str) -> Vec<(char, usize)> {
    let raw: Vec<char> = source.chars().collect();
    let mut out = Vec::with_capacity(raw.len());
    let (mut i, mut line) = (0, 1);
    while i < raw.len() {
        let c = raw[i];
        if c == '\\' {
            let mut j = i + 1;
            while j < raw.len() && (raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\r') {
                j += 1;
            }
            if j < raw.len() && raw[j] == '\n' {
                line += 1;
                i = j + 1;
                continue;
            }
        }
        out.push((c, line));
        if c == '\n' {
            line += 1;
        }
        i += 1;
    }
    out
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// A `\uXXXX` or `\UXXXXXXXX` at `i`: the character and the length.
fn ucn(s: &[(char, usize)], i: usize) -> Option<(char, usize)> {
    if s.get(i)?.0 != '\\' {
        return None;
    }
    let digits = match s.get(i + 1)?.0 {
        'u' => 4,
        'U' => 8,
        _ => return None,
    };
    let hex: String = s.get(i + 2..i + 2 + digits)?.iter().map(|c| c.0).collect();
    let c = char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?;
    Some((c, 2 + digits))
}

/// The body of a (non-raw) string or character literal from just after its opening quote, escapes
/// decoded; returns the text and the index after the closing quote.
fn quoted(s: &[(char, usize)], mut i: usize, quote: char) -> (String, usize) {
    let mut text = String::new();
    while i < s.len() {
        let c = s[i].0;
        if c == quote {
            return (text, i + 1);
        }
        if c == '\n' {
            return (text, i); // unterminated: stop at the line's end
        }
        if c != '\\' || i + 1 >= s.len() {
            text.push(c);
            i += 1;
            continue;
        }
        if let Some((u, len)) = ucn(s, i) {
            text.push(u);
            i += len;
            continue;
        }
        let e = s[i + 1].0;
        i += 2;
        match e {
            'n' => text.push('\n'),
            't' => text.push('\t'),
            'r' => text.push('\r'),
            'a' => text.push('\x07'),
            'b' => text.push('\x08'),
            'f' => text.push('\x0c'),
            'v' => text.push('\x0b'),
            'x' => {
                let mut v = 0u32;
                while i < s.len() && s[i].0.is_ascii_hexdigit() {
                    v = v
                        .wrapping_mul(16)
                        .wrapping_add(s[i].0.to_digit(16).unwrap_or(0));
                    i += 1;
                }
                text.push(char::from_u32(v & 0xff).unwrap_or('?'));
            }
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                let mut n = 1;
                while n < 3 && i < s.len() && s[i].0.is_digit(8) {
                    v = v * 8 + s[i].0.to_digit(8).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                text.push(char::from_u32(v & 0xff).unwrap_or('?'));
            }
            other => text.push(other),
        }
    }
    (text, i)
}

/// A raw string literal from its opening quote: `R"delim( ... )delim"`.
fn raw_string(s: &[(char, usize)], i: usize) -> (String, usize) {
    let mut j = i + 1;
    let mut delim = String::new();
    while j < s.len() && s[j].0 != '(' && delim.len() <= 16 {
        delim.push(s[j].0);
        j += 1;
    }
    let close: Vec<char> = std::iter::once(')')
        .chain(delim.chars())
        .chain(std::iter::once('"'))
        .collect();
    let start = j + 1;
    let mut k = start;
    while k + close.len() <= s.len() {
        if s[k..k + close.len()]
            .iter()
            .map(|c| c.0)
            .eq(close.iter().copied())
        {
            return (s[start..k].iter().map(|c| c.0).collect(), k + close.len());
        }
        k += 1;
    }
    (
        s[start.min(s.len())..].iter().map(|c| c.0).collect(),
        s.len(),
    )
}

/// The tokens of a whole source, comments dropped and adjacent string literals joined.
fn tokens(source: &str) -> Vec<Tok> {
    let s = spliced(source);
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    let at = |i: usize| s.get(i).map(|c| c.0);
    // A preprocessor directive ends at its line's end: a `;` there keeps a `#define`'s tokens from
    // reading on into the next line's.
    let (mut line_empty, mut in_directive) = (true, false);
    while i < s.len() {
        let (c, line) = s[i];
        if c == '\n' {
            if in_directive {
                out.push(Tok {
                    kind: TokKind::Punct,
                    text: ";".into(),
                    line,
                });
            }
            (line_empty, in_directive) = (true, false);
        } else if !(c.is_whitespace() || c == '/' && matches!(at(i + 1), Some('/' | '*'))) {
            in_directive |= line_empty && c == '#';
            line_empty = false;
        }
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == Some('/') {
            while i < s.len() && s[i].0 != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == Some('*') {
            i += 2;
            while i < s.len() && !(s[i].0 == '*' && at(i + 1) == Some('/')) {
                i += 1;
            }
            i += 2;
        } else if is_ident_start(c) || ucn(&s, i).is_some() {
            let mut name = String::new();
            while i < s.len() {
                if let Some((u, len)) = ucn(&s, i) {
                    name.push(u);
                    i += len;
                } else if is_ident_char(s[i].0) {
                    name.push(s[i].0);
                    i += 1;
                } else {
                    break;
                }
            }
            let next = at(i);
            if next == Some('"') && matches!(name.as_str(), "R" | "u8R" | "uR" | "UR" | "LR") {
                let (text, end) = raw_string(&s, i);
                out.push(Tok {
                    kind: TokKind::Str,
                    text,
                    line,
                });
                i = end;
            } else if next == Some('"') && matches!(name.as_str(), "u8" | "u" | "U" | "L") {
                let (text, end) = quoted(&s, i + 1, '"');
                out.push(Tok {
                    kind: TokKind::Str,
                    text,
                    line,
                });
                i = end;
            } else if next == Some('\'') && matches!(name.as_str(), "u8" | "u" | "U" | "L") {
                let (text, end) = quoted(&s, i + 1, '\'');
                out.push(Tok {
                    kind: TokKind::Other,
                    text,
                    line,
                });
                i = end;
            } else {
                out.push(Tok {
                    kind: TokKind::Ident,
                    text: name,
                    line,
                });
            }
        } else if c.is_ascii_digit() || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let mut text = String::new();
            while let Some(d) = at(i) {
                let exponent = matches!(d, '+' | '-') && text.ends_with(['e', 'E', 'p', 'P']);
                if !(d.is_alphanumeric() || d == '_' || d == '.' || d == '\'' || exponent) {
                    break;
                }
                text.push(d);
                i += 1;
            }
            out.push(Tok {
                kind: TokKind::Other,
                text,
                line,
            });
        } else if c == '"' {
            let (text, end) = quoted(&s, i + 1, '"');
            out.push(Tok {
                kind: TokKind::Str,
                text,
                line,
            });
            i = end;
        } else if c == '\'' {
            let (text, end) = quoted(&s, i + 1, '\'');
            out.push(Tok {
                kind: TokKind::Other,
                text,
                line,
            });
            i = end;
        } else {
            let two: String = [Some(c), at(i + 1)].iter().flatten().collect();
            if two == "::" || two == "->" {
                out.push(Tok {
                    kind: TokKind::Punct,
                    text: two,
                    line,
                });
                i += 2;
            } else {
                out.push(Tok {
                    kind: TokKind::Punct,
                    text: c.to_string(),
                    line,
                });
                i += 1;
            }
        }
    }
    // "/pr" "oc" is "/proc": adjacent literals are one (on the first one's line).
    let mut joined: Vec<Tok> = Vec::with_capacity(out.len());
    for t in out {
        match joined.last_mut() {
            Some(last) if last.kind == TokKind::Str && t.kind == TokKind::Str => {
                last.text.push_str(&t.text)
            }
            _ => joined.push(t),
        }
    }
    joined
}

// ---------------------------------------------------------------------------------------------
// The rules.

#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    /// Any use of the identifier.
    Any,
    /// The identifier followed by `(`, not a member (`.x(`, `->x(`) and not qualified by a name
    /// space other than `std`.
    Call,
    /// Any identifier that starts with this.
    Prefix,
    /// Only as `std::name`.
    Std,
}

use How::{Any, Call, Prefix, Std};

const RULES: &[(Kind, How, &[&str])] = &[
    (
        Kind::Clock,
        Any,
        &[
            "clock64",
            "__clock64",
            "clock_gettime",
            "clock_getres",
            "gettimeofday",
            "rdtsc",
            "rdtscp",
            "__rdtsc",
            "__rdtscp",
            "__builtin_ia32_rdtsc",
            "__builtin_ia32_rdtscp",
            "__builtin_ia32_rdpmc",
            "__builtin_readcyclecounter",
            "__builtin_readsteadycounter",
            "chrono",
            "steady_clock",
            "high_resolution_clock",
            "system_clock",
            "utc_clock",
            "file_clock",
            "cudaEventElapsedTime",
            "cuEventElapsedTime",
            "__globaltimer",
            "globaltimer",
            "timespec_get",
            "getrusage",
            "timer_create",
            "timerfd_create",
            "setitimer",
            "getitimer",
            "ftime",
        ],
    ),
    (Kind::Clock, Call, &["clock", "time", "alarm", "times"]),
    (
        Kind::Clock,
        Prefix,
        &[
            "CLOCK_",
            "get_sreg_clock",
            "get_sreg_globaltimer",
            "__nv_clock",
        ],
    ),
    (
        Kind::Environment,
        Any,
        &[
            "getenv",
            "secure_getenv",
            "environ",
            "__environ",
            "_environ",
            "setenv",
            "putenv",
            "unsetenv",
            "clearenv",
            "getauxval",
            "program_invocation_name",
            "program_invocation_short_name",
            "__progname",
            "gethostname",
            "getlogin",
            "getuid",
            "geteuid",
            "getpwuid",
            "getpwnam",
        ],
    ),
    (Kind::Environment, Call, &["uname"]),
    (
        Kind::Files,
        Any,
        &[
            "fopen",
            "fopen64",
            "freopen",
            "fdopen",
            "open64",
            "openat",
            "openat2",
            "creat",
            "creat64",
            "ifstream",
            "ofstream",
            "fstream",
            "basic_ifstream",
            "basic_ofstream",
            "basic_fstream",
            "filebuf",
            "basic_filebuf",
            "FILE",
            "readlink",
            "readlinkat",
            "realpath",
            "stat64",
            "lstat",
            "fstat",
            "fstatat",
            "statx",
            "faccessat",
            "euidaccess",
            "opendir",
            "fdopendir",
            "readdir",
            "scandir",
            "nftw",
            "mmap",
            "mmap64",
            "memfd_create",
            "shm_open",
            "dup2",
            "dup3",
            "fcntl",
            "ioctl",
            "unlink",
            "unlinkat",
            "renameat",
            "ftruncate",
            "mkdir",
            "rmdir",
            "chdir",
            "fchdir",
            "getcwd",
            "tmpfile",
            "tmpnam",
            "mkstemp",
            "mkdtemp",
            "filesystem",
            "pread",
            "pwrite",
            "pread64",
            "pwrite64",
            "preadv",
            "pwritev",
            "readv",
            "writev",
            "sendfile",
            "copy_file_range",
            "inotify_init",
            "inotify_add_watch",
            "fanotify_init",
            "flock",
        ],
    ),
    (Kind::Files, Call, &["open", "stat", "access", "dup"]),
    (
        Kind::Processes,
        Any,
        &[
            "fork",
            "vfork",
            "clone",
            "clone3",
            "__clone",
            "execv",
            "execve",
            "execvp",
            "execvpe",
            "execl",
            "execle",
            "execlp",
            "fexecve",
            "execveat",
            "popen",
            "pclose",
            "posix_spawn",
            "posix_spawnp",
            "killpg",
            "tgkill",
            "tkill",
            "sigaction",
            "atexit",
            "at_quick_exit",
            "__cxa_atexit",
            "__cxa_thread_atexit",
            "on_exit",
            "ptrace",
            "prctl",
            "syscall",
            "mount",
            "umount",
            "umount2",
            "unshare",
            "setns",
            "chroot",
            "pivot_root",
            "setsid",
            "setpgid",
            "setpgrp",
            "getppid",
            "waitpid",
            "wait3",
            "wait4",
            "waitid",
            "daemon",
            "sched_setaffinity",
            "setpriority",
            "setrlimit",
            "getrlimit",
            "prlimit",
            "seccomp",
        ],
    ),
    (
        Kind::Processes,
        Call,
        &["system", "kill", "raise", "signal"],
    ),
    (Kind::Processes, Prefix, &["pthread_"]),
    (Kind::Processes, Std, &["thread", "jthread", "async"]),
    (
        Kind::Symbols,
        Any,
        &[
            "dlsym",
            "dlvsym",
            "dlopen",
            "dlmopen",
            "dladdr",
            "dladdr1",
            "dlinfo",
            "dl_iterate_phdr",
            "_GLOBAL_OFFSET_TABLE_",
            "mprotect",
            "cudaGetDriverEntryPoint",
            "cudaGetDriverEntryPointByVersion",
            "cuGetProcAddress",
            "_r_debug",
        ],
    ),
    (
        Kind::Symbols,
        Prefix,
        &["RTLD_", "__libc_", "process_vm_", "_dl_"],
    ),
];

const ASM: &[&str] = &["asm", "__asm__", "__asm"];

/// Names a function definition in a region may not take: the C library's (a definition with the
/// signature of a declaration the headers made `extern "C"` is C linkage too), the launch path's
/// (`kernel<<<...>>>` calls them in the same file), and any rule's name above. Any function that the
/// exercise's code outside the regions calls counts too (`cudaMemcpy` in `cb_run`).
const HOOKED: &[&str] = &[
    "main",
    "exit",
    "_exit",
    "_Exit",
    "quick_exit",
    "abort",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "aligned_alloc",
    "posix_memalign",
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "strcmp",
    "strncmp",
    "strlen",
    "printf",
    "fprintf",
    "vfprintf",
    "vprintf",
    "snprintf",
    "puts",
    "fputs",
    "fputc",
    "putc",
    "fwrite",
    "fread",
    "fflush",
    "fclose",
    "fgetc",
    "write",
    "read",
    "close",
    "nanosleep",
    "sleep",
    "usleep",
    "strtol",
    "strtoll",
    "strtod",
    "strtof",
    "atoi",
    "atol",
    "atof",
    "sscanf",
    "fscanf",
    "__cxa_finalize",
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cudaLaunchKernel_ptsz",
    "cudaLaunchCooperativeKernel",
    "cudaLaunchHostFunc",
    "cudaConfigureCall",
    "cudaLaunch",
    "cudaSetupArgument",
    "cudaGetLastError",
    "cudaPeekAtLastError",
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "cudaMalloc",
    "cudaFree",
    "cudaMallocHost",
    "cudaFreeHost",
    "cudaMemset",
];

/// Words followed by a parenthesis that name no function (`for (...) {` is no definition).
const KEYWORDS: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "catch",
    "return",
    "sizeof",
    "alignof",
    "alignas",
    "decltype",
    "typeid",
    "static_assert",
    "noexcept",
    "throw",
    "do",
    "else",
    "new",
    "delete",
    "case",
    "default",
    "operator",
    "__launch_bounds__",
    "__attribute__",
    "__attribute",
    "__declspec",
    "requires",
    "co_await",
    "co_return",
    "co_yield",
    "asm",
    "__asm__",
    "__asm",
    "constexpr",
    "volatile",
    "const",
    "static_cast",
    "dynamic_cast",
    "reinterpret_cast",
    "const_cast",
    "__align__",
    "__cluster_dims__",
];

/// The harness's options, read from the command line (`/proc/self/cmdline` or a saved `argv`).
const HARNESS_OPTIONS: &[&str] = &[
    "--serve",
    "--call-times",
    "--repeat",
    "--vary",
    "--poison",
    "--gate",
    "--pinned",
    "--spin",
    "--timeline",
];

/// The tools' names and injection variables, in any case.
const TOOL_NAMES: &[&str] = &[
    "nsight",
    "sanitizer",
    "injection",
    "perfworks",
    "ld_preload",
    "cudabugs",
    "cupti",
];

/// Attributes that run code before `main` or play with symbols.
const ATTRIBUTES: &[&str] = &[
    "constructor",
    "destructor",
    "alias",
    "weak",
    "weakref",
    "ifunc",
    "section",
    "init_priority",
    "visibility",
];

/// Special registers and instructions that read a clock or counter, in strings.
fn clock_registers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices('%') {
        let name: String = text[at + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let clock = name.starts_with("clock") || name.starts_with("globaltimer");
        let counter = name
            .strip_prefix("pm")
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        if clock || counter {
            out.push(format!("%{name}"));
        }
    }
    for word in text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
        if matches!(word, "rdtsc" | "rdtscp" | "rdpmc") {
            out.push(word.to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// What a string literal's text names.
fn string_findings(text: &str) -> Vec<(Kind, String)> {
    let mut out: Vec<(Kind, String)> = clock_registers(text)
        .into_iter()
        .map(|r| (Kind::Clock, r))
        .collect();
    for dir in ["/proc", "/dev", "/sys", "/tmp"] {
        let hit = text.match_indices(dir).any(|(at, _)| {
            !text[at + dir.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        });
        if hit {
            out.push((Kind::Files, dir.to_string()));
        }
    }
    for opt in HARNESS_OPTIONS {
        if text.contains(opt) {
            out.push((Kind::Environment, opt.to_string()));
        }
    }
    let lower = text.to_lowercase();
    for name in TOOL_NAMES {
        if lower.contains(name) {
            out.push((Kind::Environment, name.to_string()));
        }
    }
    if lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w == "ncu")
    {
        out.push((Kind::Environment, "ncu".to_string()));
    }
    out
}

/// The names the file declares as variables, fields or parameters (`float time = 0;`,
/// `int clock,`): a type name before, `=`, `;`, `,`, `)`, `[` or `{` after.
fn declared_names(toks: &[Tok]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (k, t) in toks.iter().enumerate().skip(1) {
        if t.kind != TokKind::Ident {
            continue;
        }
        let p = &toks[k - 1];
        let typed = (p.kind == TokKind::Ident
            && !KEYWORDS.contains(&p.text.as_str())
            && !matches!(p.text.as_str(), "goto" | "using" | "namespace"))
            || ((p.punct("*") || p.punct("&"))
                && k >= 2
                && (toks[k - 2].kind == TokKind::Ident
                    || toks[k - 2].punct("*")
                    || toks[k - 2].punct(",")));
        let then = toks
            .get(k + 1)
            .is_some_and(|n| ["=", ";", ",", ")", "[", "{"].iter().any(|c| n.punct(c)));
        if typed && then {
            out.insert(t.text.clone());
        }
    }
    out
}

/// The rule a name matches. A [`How::Call`] name (`clock`, `time`, `open`, `system`, `signal`) is a
/// finding when called, when taken as `&name`, `::name` or `std::name`, and in any use where the
/// file declares no variable of that name (`auto c = clock;`).
fn rule_for(toks: &[Tok], i: usize, declared: &BTreeSet<String>) -> Option<(Kind, String)> {
    let t = &toks[i];
    let prev = i.checked_sub(1).map(|p| &toks[p]);
    let member = prev.is_some_and(|p| p.punct(".") || p.punct("->"));
    let qualified_by = prev.filter(|p| p.punct("::")).map(|_| {
        i.checked_sub(2)
            .map(|q| toks[q].text.as_str())
            .unwrap_or("")
    });
    let called = toks.get(i + 1).is_some_and(|n| n.punct("("));
    for (kind, how, names) in RULES {
        let hit = match how {
            Any => names.contains(&t.text.as_str()),
            Prefix => names.iter().any(|p| t.text.starts_with(p)),
            Call => {
                let global_or_std = qualified_by
                    .is_some_and(|q| q == "std" || !q.chars().next().is_some_and(is_ident_start));
                let unqualified = qualified_by.is_none();
                let address = prev.is_some_and(|p| p.punct("&"))
                    && toks
                        .get(i + 1)
                        .is_some_and(|n| !n.punct("[") && !n.punct("."));
                names.contains(&t.text.as_str())
                    && !member
                    && (global_or_std
                        || (unqualified && (called || address || !declared.contains(&t.text))))
            }
            Std => names.contains(&t.text.as_str()) && qualified_by == Some("std"),
        };
        if hit {
            let token = if *how == Std {
                format!("std::{}", t.text)
            } else {
                t.text.clone()
            };
            return Some((*kind, token));
        }
    }
    None
}

fn rule_names() -> impl Iterator<Item = &'static str> {
    RULES
        .iter()
        .filter(|(_, how, _)| matches!(how, Any | Call))
        .flat_map(|(_, _, names)| names.iter().copied())
}

/// Whether a function of this name, defined in a region, would stand in for one of the harness's,
/// CUDA's or the C library's, or for one that the exercise's code after the region calls. (A
/// student's kernel named `cudaSum` is none of these.)
fn hooked(name: &str, called_outside: &BTreeSet<String>) -> bool {
    HOOKED.contains(&name)
        || rule_names().any(|n| n == name)
        || called_outside.contains(name)
        || name.starts_with("__cuda")
        || name.starts_with("__cxa_")
        || name.starts_with("__libc_")
}

/// The `(` of the parameter or argument list after the name at `i`, past template arguments.
fn params_open(toks: &[Tok], i: usize) -> Option<usize> {
    let mut k = i + 1;
    if toks.get(k)?.punct("<") {
        let mut depth = 0usize;
        loop {
            let t = toks.get(k)?;
            if t.punct("<") {
                depth += 1;
            } else if t.punct(">") {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            } else if t.punct(";") || t.punct("{") || t.punct("}") || k > i + 40 {
                return None;
            }
            k += 1;
        }
        k += 1;
    }
    toks.get(k)?.punct("(").then_some(k)
}

/// The index of the token that closes the bracket opened at `open`.
fn matching(toks: &[Tok], open: usize) -> Option<usize> {
    let (o, c) = match toks[open].text.as_str() {
        "(" => ("(", ")"),
        "{" => ("{", "}"),
        "[" => ("[", "]"),
        _ => return None,
    };
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        if t.punct(o) {
            depth += 1;
        } else if t.punct(c) {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// Whether the name at `i`, followed by a parameter list, is a function definition: after the
/// closing parenthesis, a `{` comes before any `;`, `,`, `)`, `=` or `}` (qualifiers, attributes and
/// a trailing return type may come between).
fn is_definition(toks: &[Tok], i: usize) -> bool {
    if toks[i].kind != TokKind::Ident || KEYWORDS.contains(&toks[i].text.as_str()) {
        return false;
    }
    let Some(open) = params_open(toks, i) else {
        return false;
    };
    let Some(close) = matching(toks, open) else {
        return false;
    };
    let mut k = close + 1;
    while let Some(t) = toks.get(k) {
        if t.punct("{") {
            return true;
        }
        if t.punct("(") {
            // throw(...), noexcept(...), __attribute__((...)) after the parameters.
            match matching(toks, k) {
                Some(end) => k = end + 1,
                None => return false,
            }
            continue;
        }
        if t.punct(";")
            || t.punct(",")
            || t.punct(")")
            || t.punct("=")
            || t.punct("}")
            || t.kind == TokKind::Str
            || k > close + 40
        {
            return false;
        }
        k += 1;
    }
    false
}

/// Mnemonics of an inline-assembly template: the first word of each statement, labels, predicates,
/// braces and directives (`.reg`) left out.
fn mnemonics(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    for stmt in template.split([';', '\n']) {
        let mut s = stmt.trim().trim_start_matches(['{', '}']).trim();
        if let Some((label, rest)) = s.split_once(':') {
            if !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
                && !rest.starts_with(':')
            {
                s = rest.trim();
            }
        }
        if s.starts_with('@') {
            s = s
                .split_once(char::is_whitespace)
                .map(|(_, r)| r.trim())
                .unwrap_or("");
        }
        let word = s
            .split(|c: char| c.is_whitespace() || c == ',')
            .next()
            .unwrap_or("")
            .trim_end_matches(['{', '}']);
        if word.is_empty()
            || word.starts_with('.')
            || word.starts_with("//")
            || word.starts_with('#')
        {
            continue;
        }
        out.push(word.to_string());
    }
    out
}

/// Every finding on the lines of `source`'s marked regions, before any allowlist.
fn findings(source: &str) -> Vec<Finding> {
    let Ok(marked) = regions::parse(source) else {
        return Vec::new();
    };
    let toks = tokens(source);
    let lines: Vec<&str> = source.lines().collect();
    let excerpt = |line: usize| -> String {
        let text = lines
            .get(line.wrapping_sub(1))
            .copied()
            .unwrap_or("")
            .trim();
        if text.chars().count() > 120 {
            format!("{}...", text.chars().take(117).collect::<String>())
        } else {
            text.to_string()
        }
    };
    let inside = |line: usize| {
        marked
            .iter()
            .any(|r| r.begin_line < line && line < r.end_line)
    };
    let declared = declared_names(&toks);
    let called_outside: BTreeSet<String> = toks
        .iter()
        .enumerate()
        .filter(|(k, t)| {
            t.kind == TokKind::Ident && !inside(t.line) && params_open(&toks, *k).is_some()
        })
        .map(|(_, t)| t.text.clone())
        .collect();
    let mut out: Vec<Finding> = Vec::new();
    let mut seen: BTreeSet<(usize, Kind, String)> = BTreeSet::new();
    let mut push = |out: &mut Vec<Finding>,
                    line: usize,
                    kind: Kind,
                    token: String,
                    mnemonics: Vec<String>,
                    never_allowed: bool| {
        if seen.insert((line, kind, token.clone())) {
            out.push(Finding {
                suspect: Suspect {
                    line,
                    kind,
                    token,
                    excerpt: excerpt(line),
                },
                mnemonics,
                never_allowed,
            });
        }
    };
    for (i, t) in toks.iter().enumerate() {
        if !inside(t.line) {
            continue;
        }
        let next = toks.get(i + 1);
        match t.kind {
            TokKind::Str => {
                for (kind, token) in string_findings(&t.text) {
                    let never = kind == Kind::Clock;
                    push(&mut out, t.line, kind, token, Vec::new(), never);
                }
            }
            TokKind::Ident if ASM.contains(&t.text.as_str()) => {
                // asm [volatile|inline|goto]* ( "template" ... )
                let mut k = i + 1;
                while toks.get(k).is_some_and(|q| {
                    q.kind == TokKind::Ident
                        && matches!(
                            q.text.as_str(),
                            "volatile"
                                | "__volatile__"
                                | "__volatile"
                                | "inline"
                                | "__inline__"
                                | "goto"
                        )
                }) {
                    k += 1;
                }
                let template = toks
                    .get(k)
                    .filter(|q| q.punct("("))
                    .and_then(|_| toks.get(k + 1))
                    .filter(|q| q.kind == TokKind::Str);
                let (instrs, reads_clock) = match template {
                    Some(tpl) => (mnemonics(&tpl.text), !clock_registers(&tpl.text).is_empty()),
                    None => (vec![String::new()], false),
                };
                if !instrs.is_empty() || reads_clock {
                    push(
                        &mut out,
                        t.line,
                        Kind::InlineAssembly,
                        t.text.clone(),
                        instrs,
                        reads_clock,
                    );
                }
            }
            TokKind::Ident
                if t.text == "extern" && next.is_some_and(|n| n.is(TokKind::Str, "C")) =>
            {
                // extern "C" { ... } or extern "C" declaration-or-definition.
                let body = i + 2;
                let defines = if toks.get(body).is_some_and(|b| b.punct("{")) {
                    let end = matching(&toks, body).unwrap_or(toks.len() - 1);
                    (body + 1..end)
                        .any(|k| toks[k].kind == TokKind::Ident && is_definition(&toks, k))
                } else {
                    let mut k = body;
                    let mut defines = false;
                    while let Some(q) = toks.get(k) {
                        if q.punct(";") {
                            break;
                        }
                        if q.kind == TokKind::Ident && is_definition(&toks, k) {
                            defines = true;
                            break;
                        }
                        if q.punct("(") {
                            k = matching(&toks, k).unwrap_or(toks.len());
                        }
                        k += 1;
                    }
                    defines
                };
                let token = if defines {
                    "extern \"C\" definition"
                } else {
                    "extern \"C\""
                };
                push(
                    &mut out,
                    t.line,
                    Kind::Symbols,
                    token.to_string(),
                    Vec::new(),
                    false,
                );
            }
            TokKind::Ident
                if t.text == "operator"
                    && next.is_some_and(|n| n.text == "new" || n.text == "delete") =>
            {
                let token = format!("operator {}", next.map(|n| n.text.as_str()).unwrap_or(""));
                push(&mut out, t.line, Kind::Symbols, token, Vec::new(), false);
            }
            TokKind::Ident
                if t.text == "namespace"
                    && next.is_some_and(|n| matches!(n.text.as_str(), "std" | "cb" | "cuda")) =>
            {
                let token = format!("namespace {}", next.map(|n| n.text.as_str()).unwrap_or(""));
                push(&mut out, t.line, Kind::Symbols, token, Vec::new(), false);
            }
            TokKind::Punct if t.punct("[") && next.is_some_and(|n| n.punct("[")) => {
                let end = matching(&toks, i).unwrap_or(toks.len() - 1);
                for q in &toks[i..=end] {
                    if q.kind == TokKind::Ident && ATTRIBUTES.contains(&q.text.as_str()) {
                        push(
                            &mut out,
                            q.line,
                            Kind::Symbols,
                            format!("attribute {}", q.text),
                            Vec::new(),
                            false,
                        );
                    }
                }
            }
            _ => {}
        }
        if t.kind == TokKind::Ident
            && matches!(t.text.as_str(), "__attribute__" | "__attribute")
            && next.is_some_and(|n| n.punct("("))
        {
            let end = matching(&toks, i + 1).unwrap_or(toks.len() - 1);
            for q in &toks[i + 1..=end] {
                if q.kind == TokKind::Ident && ATTRIBUTES.contains(&q.text.trim_matches('_')) {
                    push(
                        &mut out,
                        q.line,
                        Kind::Symbols,
                        format!("attribute {}", q.text.trim_matches('_')),
                        Vec::new(),
                        false,
                    );
                }
            }
        }
        if t.kind != TokKind::Ident {
            continue;
        }
        if let Some((kind, token)) = rule_for(&toks, i, &declared) {
            push(&mut out, t.line, kind, token, Vec::new(), false);
        }
        if matches!(t.text.as_str(), "read" | "write") && raw_fd_call(&toks, i) {
            push(
                &mut out,
                t.line,
                Kind::Files,
                format!("{}(fd)", t.text),
                Vec::new(),
                false,
            );
        }
        let member = i
            .checked_sub(1)
            .is_some_and(|p| toks[p].punct(".") || toks[p].punct("->"));
        let scope = qualifiers(&toks, i);
        if !member && is_definition(&toks, i) {
            if scope
                .iter()
                .any(|q| matches!(q.as_str(), "cb" | "std" | "cuda"))
            {
                // A member or specialisation of the harness's, the standard library's or CUDA's, defined here.
                push(
                    &mut out,
                    t.line,
                    Kind::Symbols,
                    format!("{}::{}(...) {{...}}", scope.join("::"), t.text),
                    Vec::new(),
                    false,
                );
            } else if scope.is_empty() && hooked(&t.text, &called_outside) {
                push(
                    &mut out,
                    t.line,
                    Kind::Symbols,
                    format!("{}(...) {{...}}", t.text),
                    Vec::new(),
                    false,
                );
            }
        }
    }
    out.sort_by_key(|f| (f.suspect.line, f.suspect.kind));
    out
}

/// The names that qualify the name at `i` (`cb::Io::output`: `["cb", "Io"]`); a leading `::` is
/// the global scope and adds nothing.
fn qualifiers(toks: &[Tok], i: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut k = i;
    while k >= 2 && toks[k - 1].punct("::") && toks[k - 2].kind == TokKind::Ident {
        out.push(toks[k - 2].text.clone());
        k -= 2;
    }
    out.reverse();
    out
}

/// `read(` or `write(` called (not as a member) with a literal descriptor or `STD*_FILENO` first.
fn raw_fd_call(toks: &[Tok], i: usize) -> bool {
    let member = i
        .checked_sub(1)
        .is_some_and(|p| toks[p].punct(".") || toks[p].punct("->"));
    let qualified = i.checked_sub(1).is_some_and(|p| toks[p].punct("::"))
        && i.checked_sub(2)
            .is_some_and(|q| toks[q].kind == TokKind::Ident && toks[q].text != "std");
    if member || qualified || !toks.get(i + 1).is_some_and(|t| t.punct("(")) {
        return false;
    }
    let Some(arg) = toks.get(i + 2) else {
        return false;
    };
    let then_comma = toks.get(i + 3).is_some_and(|t| t.punct(","));
    let literal = arg.kind == TokKind::Other && arg.text.chars().all(|c| c.is_ascii_digit());
    let named = arg.kind == TokKind::Ident && arg.text.ends_with("_FILENO");
    then_comma && (literal || named)
}

// The SASS check: the device code's clock reads, read by `tools::sass`.
pub use crate::tools::sass::{clock_reads_beyond, clock_reads_in_sass, sass_job, SassClockRead};

#[cfg(test)]
mod tests {
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
