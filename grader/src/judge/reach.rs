//! The gate of the trust rules: what a submission's compiled code can reach beyond what the untouched
//! exercise and the reference fix reach, and beyond [`ALLOWED`]. Each finding names the source line
//! the object's line information gives. An overload, a template, a lambda or a helper kernel is fine
//! as long as it reaches nothing new; how the text spells anything does not matter here (the text
//! rules of `judge::tool_aware` only explain a finding in the feedback).
//!
//! What is judged, for the host object of the student's file (`tools::reach`):
//! - **Symbols it leaves undefined**: a C library or runtime function, variable or harness entry
//!   neither version uses and the allowlist does not name (`getenv`, `environ`, `fopen`, `dlsym`,
//!   `pthread_create`, `clock_gettime`, `syscall`, `sleep`, ...), however it was reached: by name, by
//!   its address in a struct, through a template.
//! - **`syscall` instructions** in its host code.
//! - **Names it takes for the whole program**: a C-linkage function it defines (which the linker
//!   then binds every other caller to, libc's and the CUDA runtime's too), a definition of a symbol
//!   the exercise leaves to the harness or the runtime, `operator new`/`delete`.
//! - **Hooks**: code outside the regions (the exercise's own, the harness's headers) that now calls
//!   a function written in a region under a name that code never called there before (an
//!   `operator!=` that `CB_CHECK` picks for `cudaError_t`, a `cudaMemcpy` overload that `cb_run`'s
//!   copies select), or region code compiled into a function outside the regions.
//! - **Code before the filter**: a `.preinit_array`, constructors with a priority, an indirect
//!   function (IFUNC) whose resolver runs during relocation.
//!
//! The SASS of the kernels (`tools::sass`) is judged beside this, for the device's clocks.

use serde::{Deserialize, Serialize};

use crate::exercise::regions::Region;
use crate::tools::reach::{base_name, unmangled, Origin, Reach};

/// One thing the submission's compiled code can do that neither version of the exercise does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Beyond {
    /// The line of the submitted file, where the object says.
    pub line: Option<usize>,
    pub what: String,
}

impl std::fmt::Display for Beyond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

/// Undefined symbols any fix may reach, whatever the exercise's versions use: the CUDA runtime
/// (less [`DENIED`]), the C++ runtime and library's allocation, strings, streams and containers,
/// memory and string functions, libm, and printing to the standard streams. Entries ending in `*`
/// are prefixes. Nothing here reads a clock, the environment, a file, or starts anything.
pub const ALLOWED: &[&str] = &[
    "cuda*",
    "__cuda*",
    "__nv*",
    "__cxa_*",
    "_Unwind_*",
    "__gxx_personality_v0",
    "__dso_handle",
    "__stack_chk_fail",
    "__assert_fail",
    "__errno_location",
    "operator new*",
    "operator delete*",
    "std::__throw_*",
    "std::__glibcxx_assert_fail*",
    "std::terminate()",
    "std::__cxx11::basic_string*",
    "std::basic_string*",
    "std::basic_ostream*",
    "std::ostream::*",
    "std::basic_ios*",
    "std::ios_base::Init*",
    "std::__ostream_insert*",
    "std::cout",
    "std::cerr",
    "std::_Rb_tree*",
    "std::__detail::_Prime_rehash_policy*",
    "std::_Hash_bytes*",
    "std::__detail::_List_node_base*",
    "vtable for __cxxabiv1::*",
    "typeinfo for *",
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "strlen",
    "strcmp",
    "strncmp",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "aligned_alloc",
    "posix_memalign",
    "abort",
    "exit",
    "printf",
    "fprintf",
    "puts",
    "putchar",
    "fputs",
    "fputc",
    "fwrite",
    "fflush",
    "snprintf",
    "sprintf",
    "__printf_chk",
    "__fprintf_chk",
    "__sprintf_chk",
    "__snprintf_chk",
    "__memcpy_chk",
    "__memset_chk",
    "stdout",
    "stderr",
    "qsort",
    // Number parsing (`std::stoi` and friends; glibc 2.38 names them `__isoc23_strto*`).
    "strto*",
    "__isoc23_strto*",
    "abs",
    "labs",
    "rand",
    "srand",
    "sqrt*",
    "cbrt*",
    "exp*",
    "log*",
    "pow*",
    "sin*",
    "cos*",
    "tan*",
    "atan*",
    "erf*",
    "fabs*",
    "floor*",
    "ceil*",
    "round*",
    "lround*",
    "trunc*",
    "fmod*",
    "fma*",
    "fmax*",
    "fmin*",
    "hypot*",
    "ldexp*",
    "frexp*",
    "__isnan*",
    "__isinf*",
];

/// CUDA runtime functions the prefix would allow but a fix has no use for: the driver's own
/// entry points (any driver function, unseen by the runtime), the runtime's private table, and
/// switching the profiler on and off.
pub const DENIED: &[&str] = &[
    "cudaGetDriverEntryPoint*",
    "cudaGetExportTable",
    "cudaProfilerStart",
    "cudaProfilerStop",
];

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// Whether any fix may leave `symbol` undefined.
pub fn allowed(symbol: &str) -> bool {
    ALLOWED.iter().any(|p| matches(p, symbol)) && !DENIED.iter().any(|p| matches(p, symbol))
}

/// C library variables that a definition at global scope would take over.
const LIBC_VARIABLES: &[&str] = &[
    "environ",
    "__environ",
    "stdin",
    "stdout",
    "stderr",
    "errno",
    "optarg",
    "optind",
    "opterr",
];

/// One compiled version of the exercise: its reach and its regions.
#[derive(Clone, Copy)]
pub struct Version<'a> {
    pub reach: &'a Reach,
    pub regions: &'a [Region],
}

impl Version<'_> {
    fn in_region(&self, origin: &Origin) -> bool {
        matches!(origin, Origin::Source(l) if self.regions.iter().any(|r| r.contains(*l)))
    }
    /// Code the student cannot change: the file outside its regions, and the harness's headers.
    fn outside(&self, origin: &Origin) -> bool {
        matches!(origin, Origin::Harness)
            || (matches!(origin, Origin::Source(_)) && !self.in_region(origin))
    }
    fn line(&self, origin: &Origin) -> Option<usize> {
        match origin {
            Origin::Source(l) => Some(*l),
            _ => None,
        }
    }
    /// The line of the file where `function` begins, where the object says.
    fn home_line(&self, function: &str) -> Option<usize> {
        self.reach.homes.get(function).and_then(|h| self.line(h))
    }
    /// The first line of the file that refers to `symbol`.
    fn first_use(&self, symbol: &str) -> Option<usize> {
        self.reach
            .references
            .iter()
            .filter(|r| r.symbol == symbol)
            .find_map(|r| self.line(&r.from))
    }
    /// The base names of the region's functions that code outside the regions calls.
    fn hooks_allowed(&self) -> Vec<String> {
        self.reach
            .references
            .iter()
            .filter(|r| self.outside(&r.from))
            .filter(|r| {
                self.reach
                    .homes
                    .get(&r.symbol)
                    .is_some_and(|h| self.in_region(h))
            })
            .map(|r| base_name(&r.symbol))
            .collect()
    }
}

/// What `learner` reaches beyond `original` and `reference`: empty where nothing.
pub fn beyond(learner: Version, original: Version, reference: Version) -> Vec<Beyond> {
    let mut found = Vec::new();
    let known = |pick: fn(&Reach) -> Vec<String>| -> Vec<String> {
        [original, reference]
            .iter()
            .flat_map(|v| pick(v.reach))
            .collect()
    };
    let undefined_before = known(|r| r.undefined.clone());
    for symbol in &learner.reach.undefined {
        if !undefined_before.contains(symbol) && !allowed(symbol) {
            found.push(Beyond {
                line: learner.first_use(symbol),
                what: format!(
                    "reaches `{symbol}`, which neither the exercise nor the reference fix uses"
                ),
            });
        }
    }
    for (origin, function) in &learner.reach.syscalls {
        found.push(Beyond {
            line: learner.line(origin),
            what: format!("makes a system call itself (a `syscall` instruction in `{function}`)"),
        });
    }
    names_taken(
        learner,
        &undefined_before,
        &known(|r| r.defined.iter().map(|d| d.0.clone()).collect()),
        &mut found,
    );
    hooks(learner, original, reference, &mut found);
    for f in &learner.reach.ifuncs {
        found.push(Beyond {
            line: learner.home_line(f),
            what: format!("defines `{f}` as an indirect function, whose resolver runs while the program is loaded, before the grader's restrictions"),
        });
    }
    let sections_before = known(|r| r.sections.clone());
    for s in &learner.reach.sections {
        let early = s == ".preinit_array"
            || [".init_array.", ".ctors.", ".fini_array.", ".dtors."]
                .iter()
                .any(|p| s.starts_with(p));
        if early && !sections_before.contains(s) {
            found.push(Beyond {
                line: None,
                what: format!("places code in `{s}`, which runs before the grader's restrictions or in an order of its own"),
            });
        }
    }
    // Those with a line first, in the file's order: what a person reads first.
    found.sort_by_key(|b| (b.line.is_none(), b.line));
    found.dedup();
    found
}

/// Definitions that take a name for the whole program.
fn names_taken(
    learner: Version,
    undefined_before: &[String],
    defined_before: &[String],
    found: &mut Vec<Beyond>,
) {
    for (name, function) in &learner.reach.defined {
        if defined_before.contains(name) {
            continue;
        }
        let kernel_stub = learner
            .reach
            .defined
            .iter()
            .any(|(n, _)| n == &format!("__device_stub__{name}"));
        let why = if undefined_before.contains(name) {
            Some("defines `{}`, which the exercise takes from the harness or the runtime")
        } else if *function
            && unmangled(name)
            && !kernel_stub
            && !name.starts_with("__device_stub__")
        {
            Some("defines the C function `{}`, which takes that name for the whole program (the C library's and the CUDA runtime's callers included)")
        } else if !*function && LIBC_VARIABLES.contains(&name.as_str()) {
            Some("defines `{}`, a variable of the C library")
        } else if name.starts_with("operator new") || name.starts_with("operator delete") {
            Some("replaces `{}` for the whole program")
        } else {
            None
        };
        if let Some(why) = why {
            let line = learner.home_line(name);
            found.push(Beyond {
                line,
                what: why.replace("{}", name),
            });
        }
    }
}

/// Code outside the regions that now runs a region's function it did not call before, by a name of
/// its own (an overload of a function the exercise defines keeps the name, and is fine).
fn hooks(learner: Version, original: Version, reference: Version, found: &mut Vec<Beyond>) {
    let mut allowed_names = original.hooks_allowed();
    allowed_names.extend(reference.hooks_allowed());
    for r in &learner.reach.references {
        if !learner.outside(&r.from) {
            continue;
        }
        let Some(home) = learner
            .reach
            .homes
            .get(&r.symbol)
            .filter(|h| learner.in_region(h))
        else {
            continue;
        };
        if allowed_names.contains(&base_name(&r.symbol)) {
            continue;
        }
        let at = match &r.from {
            Origin::Source(l) => format!("line {l}"),
            _ => "the harness's header".into(),
        };
        found.push(Beyond {
            line: learner.line(home),
            what: format!("`{}`, written in a region, is called by the code outside the regions ({at}, in `{}`) in place of what it called before", r.symbol, r.caller),
        });
    }
    for (function, line) in &learner.reach.inlined {
        let outside_function = learner
            .reach
            .homes
            .get(function)
            .is_some_and(|h| learner.outside(h));
        if outside_function && learner.in_region(&Origin::Source(*line)) {
            found.push(Beyond {
                line: Some(*line),
                what: format!("code of a region is compiled into `{function}`, which is outside the regions (a function forced inline into the exercise's own code)"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::reach::Reference;

    fn region(begin: usize, end: usize) -> Vec<Region> {
        vec![Region {
            name: "bug".into(),
            begin_line: begin,
            end_line: end,
        }]
    }

    #[test]
    fn the_allowlist_names_no_clock_environment_file_or_process() {
        for denied in [
            "getenv", "environ", "fopen", "open", "dlsym", "pthread_create", "clock_gettime",
            "syscall", "sleep", "fork", "cudaGetDriverEntryPoint", "std::chrono::_V2::steady_clock::now()",
            "std::thread::_M_start_thread(std::unique_ptr<std::thread::_State, std::default_delete<std::thread::_State> >, void (*)())",
        ] {
            assert!(!allowed(denied), "{denied}");
        }
        for ok in [
            "cudaStreamCreate",
            "operator new(unsigned long)",
            "sqrtf",
            "memcpy",
            "std::__throw_length_error(char const*)",
        ] {
            assert!(allowed(ok), "{ok}");
        }
    }

    #[test]
    fn an_operator_the_harness_macro_calls_is_a_hook_and_an_overload_is_not() {
        let reach = |extra: &str, called_from: usize| Reach {
            homes: [
                ("cb_run(cb::Io&)".to_string(), Origin::Source(40)),
                (
                    "launch_sum(float const*, int)".to_string(),
                    Origin::Source(12),
                ),
                (extra.to_string(), Origin::Source(20)),
            ]
            .into(),
            references: vec![
                Reference {
                    from: Origin::Source(42),
                    caller: "cb_run(cb::Io&)".into(),
                    symbol: "launch_sum(float const*, int)".into(),
                },
                Reference {
                    from: Origin::Source(called_from),
                    caller: "cb_run(cb::Io&)".into(),
                    symbol: extra.into(),
                },
            ],
            ..Reach::default()
        };
        let original = reach("warp_sum(float*)", 15);
        let regions = region(10, 30);
        let v = |r| Version {
            reach: r,
            regions: &regions,
        };
        let hook = reach("operator!=(cudaError, cudaError)", 44);
        let found = beyond(v(&hook), v(&original), v(&original));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].what.contains("operator!=") && found[0].line == Some(20),
            "{found:?}"
        );
        let overload = reach("launch_sum(float const*, int, int)", 44);
        assert_eq!(beyond(v(&overload), v(&original), v(&original)), vec![]);
    }

    #[test]
    fn new_symbols_definitions_and_early_sections_are_named() {
        let original = Reach {
            undefined: vec!["cudaMemcpy".into(), "exit".into()],
            ..Reach::default()
        };
        let learner = Reach {
            undefined: vec![
                "cudaMemcpy".into(),
                "getenv".into(),
                "cudaStreamCreate".into(),
            ],
            defined: vec![
                ("clock_gettime".into(), true),
                ("cudaMemcpy".into(), true),
                ("counter".into(), false),
            ],
            sections: vec![".preinit_array".into()],
            references: vec![Reference {
                from: Origin::Source(7),
                caller: "f()".into(),
                symbol: "getenv".into(),
            }],
            syscalls: vec![(Origin::Source(9), "f()".into())],
            ..Reach::default()
        };
        let regions = region(1, 20);
        let v = |r| Version {
            reach: r,
            regions: &regions,
        };
        let found: Vec<String> = beyond(v(&learner), v(&original), v(&original))
            .iter()
            .map(|b| b.to_string())
            .collect();
        assert!(
            found
                .iter()
                .any(|f| f.starts_with("line 7: reaches `getenv`")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|f| f.contains("C function `clock_gettime`")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|f| f.contains("defines `cudaMemcpy`")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|f| f.starts_with("line 9: makes a system call")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|f| f.contains(".preinit_array")),
            "{found:?}"
        );
        assert!(
            !found
                .iter()
                .any(|f| f.contains("counter") || f.contains("cudaStreamCreate")),
            "{found:?}"
        );
    }
}
