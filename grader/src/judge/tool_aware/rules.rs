//! The rules: the names, paths and attributes each kind of finding is made of, and how a name or a
//! string literal matches them.

use std::collections::BTreeSet;

use super::tokens::{is_ident_start, Tok, TokKind};
use super::Kind;

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

pub(super) const ASM: &[&str] = &["asm", "__asm__", "__asm"];

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
pub(super) const KEYWORDS: &[&str] = &[
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
pub(super) const ATTRIBUTES: &[&str] = &[
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
pub(super) fn clock_registers(text: &str) -> Vec<String> {
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
pub(super) fn string_findings(text: &str) -> Vec<(Kind, String)> {
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
pub(super) fn declared_names(toks: &[Tok]) -> BTreeSet<String> {
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
pub(super) fn rule_for(
    toks: &[Tok],
    i: usize,
    declared: &BTreeSet<String>,
) -> Option<(Kind, String)> {
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
pub(super) fn hooked(name: &str, called_outside: &BTreeSet<String>) -> bool {
    HOOKED.contains(&name)
        || rule_names().any(|n| n == name)
        || called_outside.contains(name)
        || name.starts_with("__cuda")
        || name.starts_with("__cxa_")
        || name.starts_with("__libc_")
}
