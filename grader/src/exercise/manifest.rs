//! `exercise.toml`: the typed manifest of one exercise, parsed with serde + toml and validated so that
//! every error names the file and the line.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

pub use crate::exercise::dtype::DType;
pub use crate::exercise::metric::Metric;
use crate::exercise::reference;
use crate::exercise::regions;

/// The manifest format this grader writes about. Bump it when a field changes meaning. Format 2 added
/// `kind` (the bug and performance tracks) and `[perf]`; format 1 manifests (bug exercises) are still
/// read as they are.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest format still read.
pub const OLDEST_FORMAT: u32 = 1;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: Spanned<u32>,
    /// The lowest compute capability the exercise runs on, "major.minor" ("9.0": Hopper, for
    /// clusters, mbarriers and TMA). On an older GPU the exercise is skipped, never failed.
    pub requires: Option<Spanned<String>>,
    /// The track: a bug to find (format 1 knows only these) or a correct kernel to make fast.
    pub kind: Option<Spanned<Track>>,
    pub title: String,
    /// How far along the path the exercise sits: 1 (first steps: one index, one size, one call),
    /// 2 (practice: synchronisation, the API's errors, layouts), 3 (deeper: what the tools see
    /// only in part, or the newest hardware). The book marks each lesson with it.
    pub level: Option<Spanned<u8>>,
    /// What is wrong, in a few words: the bug class, or for the performance track the cause of the
    /// slowness ("uncoalesced loads").
    pub bug_class: String,
    /// The `.cu` file name, the same in `exercises/<id>/` and `solutions/<id>/`.
    pub source: Spanned<String>,
    /// Book chapter (path inside `book/src`).
    pub chapter: String,
    /// The Rust reference that computes the expected outputs (see `reference.rs`).
    pub reference: Spanned<String>,
    /// What shows the bug (bug track only).
    pub expect: Option<Expect>,
    /// What the fix must reach (performance track only).
    pub perf: Option<Perf>,
    /// Where the harness keeps the buffers `cb_run` receives: pageable (`std::vector`, the default)
    /// or pinned (`cudaMallocHost`, as an application that streams data allocates them once).
    #[serde(default)]
    pub host_memory: HostMemory,
    /// How nvcc builds the exercise beyond the plan's flavour: relocatable device code for dynamic
    /// parallelism, or the GPU's architecture-specific features (`sm_90a`, for `wgmma`).
    #[serde(default)]
    pub build: BuildOptions,
    pub inputs: Vec<BufferSpec>,
    pub outputs: Vec<BufferSpec>,
    #[serde(rename = "case")]
    pub cases: Vec<Case>,
    pub bench: Bench,
    pub tolerance: Tolerance,
    pub timing: Timing,
    pub hints: Spanned<Vec<String>>,
    /// Plain-words explanation of the finding, shown under the tool's record.
    pub explain: Explain,
    /// Points per stage of `grade` (defaults: `rubric::Rubric::default`).
    #[serde(default)]
    pub rubric: Option<crate::exercise::rubric::Rubric>,
}

impl Manifest {
    pub fn track(&self) -> Track {
        self.kind.as_ref().map(|k| *k.get_ref()).unwrap_or_default()
    }

    /// The clock that judges the exercise's speed (the kernels' for the bug track).
    pub fn clock(&self) -> Clock {
        self.perf.as_ref().map(|p| p.clock).unwrap_or_default()
    }

    /// The harness options every run of the exercise's bench and cases gets: its host memory, and
    /// spinning waits where the call is the clock (the harness spins only in timed calls).
    pub fn harness_flags(&self) -> Vec<&'static str> {
        self.host_memory
            .harness_flag()
            .into_iter()
            .chain(self.clock().harness_flag())
            .collect()
    }
}

/// `[build]`: what an exercise needs from nvcc beyond `-G` or `-O3 -lineinfo`. Each key names a
/// CUDA feature, never a raw flag, so a manifest cannot hand nvcc arbitrary options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BuildOptions {
    /// Relocatable device code, linked with the device runtime: a kernel that launches kernels.
    #[serde(default)]
    pub rdc: bool,
    /// Build for the GPU's architecture-specific target (`sm_90a` on Hopper): `wgmma`,
    /// `setmaxnreg`. Such code runs on that architecture only, so `requires` must name it.
    #[serde(default)]
    pub arch_specific: bool,
}

impl BuildOptions {
    /// The nvcc flags these options add (the -arch is the plan's, see `arch`).
    pub fn flags(self) -> &'static [&'static str] {
        if self.rdc {
            &["-rdc=true", "-lcudadevrt"]
        } else {
            &[]
        }
    }

    /// The -arch for this exercise on a plan whose -arch is `plan_arch` ("sm_90" -> "sm_90a").
    pub fn arch(self, plan_arch: &str) -> String {
        if self.arch_specific && !plan_arch.ends_with('a') {
            format!("{plan_arch}a")
        } else {
            plan_arch.to_string()
        }
    }
}

/// What shows that the untouched exercise has its bug: a sanitizer record of a given kind in a
/// marked region, or, for the classes no sanitizer sees on today's GPUs, wrong outputs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub detector: Detector,
    /// The tool that reports the bug (detector "sanitizer" only).
    pub tool: Option<Tool>,
    /// The kind of record it writes (detector "sanitizer" only).
    pub kind: Option<FindingKind>,
    /// Name of the marked region the finding must point into; for "wrong-output", where the bug is;
    /// for "hang", where the threads wait.
    pub region: Spanned<String>,
    /// Extra compute-sanitizer options for `tool`'s runs, of the exercise and of its solution alike
    /// (the solution must be clean under them): `["--racecheck-deadlock-timeout", "1000"]`. Only
    /// the options of `SANITIZER_OPTIONS` are accepted.
    pub options: Option<Spanned<Vec<String>>>,
    /// Detector "hang": a run longer than this many seconds counts as hung (default
    /// `DEFAULT_HANG_TIMEOUT_S`). Every run of the untouched exercise is bounded by it.
    pub timeout_s: Option<Spanned<f64>>,
}

/// How long a hang exercise's run may take before it counts as hung, where `timeout_s` is not given.
/// The exercises' plain runs take well under a second; the tools' a few seconds at most.
pub const DEFAULT_HANG_TIMEOUT_S: f64 = 3.0;

impl Expect {
    /// The tool and the kind of record that must flag the untouched exercise; none where the cases
    /// are the detector. Validation guarantees both are set for detector "sanitizer".
    /// For a hang, the tool whose deadlock report shows it, where the manifest names one.
    pub fn sanitizer(&self) -> Option<(Tool, FindingKind)> {
        match self.detector {
            Detector::Sanitizer => Some((
                self.tool.expect("validated manifest"),
                self.kind.expect("validated manifest"),
            )),
            Detector::Hang => self.tool.zip(self.kind),
            Detector::WrongOutput | Detector::Crash | Detector::Speed => None,
        }
    }

    /// The extra options for `tool`'s runs (none for the other tools).
    pub fn options_for(&self, tool: Tool) -> &[String] {
        match (&self.options, self.tool) {
            (Some(o), Some(t)) if t == tool => o.get_ref(),
            _ => &[],
        }
    }
}

/// A compute capability, "major.minor" (so in JSON too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Capability {
    pub major: u32,
    pub minor: u32,
}

impl Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Capability {
    /// "9.0" -> 9.0; None for anything else.
    pub fn parse(text: &str) -> Option<Capability> {
        let (major, minor) = text.split_once('.')?;
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
        if !(digits(major) && digits(minor)) {
            return None;
        }
        Some(Capability {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }

    /// The architecture's name, for messages ("Hopper").
    pub fn family(self) -> &'static str {
        match (self.major, self.minor) {
            (7, 0..=2) => "Volta",
            (7, _) => "Turing",
            (8, 9) => "Ada",
            (8, _) => "Ampere",
            (9, _) => "Hopper",
            (10..=12, _) => "Blackwell",
            (m, _) if m < 7 => "pre-Volta",
            _ => "a newer architecture",
        }
    }

    /// "sm_90+": the tag tables show for an exercise that needs this capability.
    pub fn tag(self) -> String {
        format!("sm_{}{}+", self.major, self.minor)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The compute-sanitizer options a manifest may pass (2025.3.1's `--help`), per tool, and the
/// values each takes: the modes made for one class of bug. Options that change what a record
/// means for the grader (`--print-limit`, `--xml`, `--racecheck-report`) are not among them.
pub const SANITIZER_OPTIONS: &[(Tool, &str, OptionValue)] = &[
    (
        Tool::Memcheck,
        "--leak-check",
        OptionValue::OneOf(&["full", "no"]),
    ),
    (
        Tool::Memcheck,
        "--track-stream-ordered-races",
        OptionValue::OneOf(&["all", "use-before-alloc", "use-after-free", "no"]),
    ),
    (
        Tool::Memcheck,
        "--check-bulk-copy",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Memcheck,
        "--check-device-heap",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Memcheck,
        "--report-api-errors",
        OptionValue::OneOf(&["all", "explicit", "no"]),
    ),
    (Tool::Memcheck, "--padding", OptionValue::Number),
    (
        Tool::Racecheck,
        "--racecheck-deadlock-timeout",
        OptionValue::Number,
    ),
    (
        Tool::Racecheck,
        "--racecheck-continue-on-deadlock",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Racecheck,
        "--racecheck-memcpy-async",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Racecheck,
        "--racecheck-detect-level",
        OptionValue::OneOf(&["info", "warn", "error"]),
    ),
    (
        Tool::Racecheck,
        "--check-bulk-copy",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (Tool::Initcheck, "--track-unused-memory", OptionValue::Flag),
    (
        Tool::Initcheck,
        "--unused-memory-threshold",
        OptionValue::Number,
    ),
    (
        Tool::Initcheck,
        "--check-api-memory-access",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Synccheck,
        "--missing-barrier-init-is-fatal",
        OptionValue::OneOf(&["yes", "no"]),
    ),
];

/// What follows an option in `options`: nothing, one of some words, or a whole number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionValue {
    Flag,
    OneOf(&'static [&'static str]),
    Number,
}

/// Check `options` for `tool`: each option on the allow-list for that tool, followed by a value
/// where it takes one (as separate items: `["--leak-check", "full"]`). The error says which item.
pub fn check_options(tool: Tool, options: &[String]) -> Result<(), String> {
    let mut items = options.iter();
    while let Some(option) = items.next() {
        let Some((_, _, value)) = SANITIZER_OPTIONS
            .iter()
            .find(|(t, name, _)| *t == tool && name == option)
        else {
            let other = SANITIZER_OPTIONS
                .iter()
                .filter(|(_, name, _)| name == option)
                .map(|(t, _, _)| t.name())
                .collect::<Vec<_>>();
            let known = SANITIZER_OPTIONS
                .iter()
                .filter(|(t, _, _)| *t == tool)
                .map(|(_, n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ");
            return Err(if other.is_empty() {
                format!("option `{option}` is not one the grader passes to {tool} (it takes: {known}; write a value as its own item, `[\"--leak-check\", \"full\"]`)")
            } else {
                format!(
                    "option `{option}` belongs to {}, not {tool}",
                    other.join(" and ")
                )
            });
        };
        match value {
            OptionValue::Flag => {}
            OptionValue::OneOf(words) => match items.next() {
                Some(v) if words.contains(&v.as_str()) => {}
                got => {
                    return Err(format!(
                        "option `{option}` takes one of {} as the next item, got {}",
                        words.join("|"),
                        got.map(|g| format!("`{g}`")).unwrap_or("nothing".into())
                    ))
                }
            },
            OptionValue::Number => match items.next() {
                Some(v) if v.parse::<u32>().is_ok() => {}
                got => {
                    return Err(format!(
                        "option `{option}` takes a whole number as the next item, got {}",
                        got.map(|g| format!("`{g}`")).unwrap_or("nothing".into())
                    ))
                }
            },
        }
    }
    Ok(())
}

/// The two tracks of the workbook.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Track {
    /// The exercise has a bug: a tool's record or wrong outputs show it.
    #[default]
    Bug,
    /// The exercise is correct but slow: ncu's time and metrics show it.
    Perf,
}

impl Track {
    pub fn name(self) -> &'static str {
        match self {
            Track::Bug => "bug",
            Track::Perf => "perf",
        }
    }
}

/// A performance exercise's target: how much faster than the original, in the same ncu session,
/// and which metrics must move (`[perf]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Perf {
    /// The marked region that holds the slow code.
    pub region: Spanned<String>,
    /// The fix must be at least this many times faster than the original (timed in the same run).
    pub speedup: Spanned<f64>,
    /// The metrics that explain this exercise, in the order they are shown (3 to 5).
    pub metrics: Spanned<Vec<Metric>>,
    /// Metrics that must have moved the right way.
    #[serde(default, rename = "goal")]
    pub goals: Vec<Goal>,
    /// A library kernel timed in the same session for comparison (cuBLAS for the matmul).
    #[serde(default)]
    pub baseline: Option<Baseline>,
    /// The clock that judges the speedup: ncu's kernel time, or the whole call of the entry point
    /// (for exercises whose cost is outside the kernels: launches, syncs, copies).
    #[serde(default)]
    pub clock: Clock,
}

/// What a performance exercise's speedup is measured with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// ncu's time of the named kernels, at base clocks with the caches flushed.
    #[default]
    Kernel,
    /// The harness's whole call of `cb_run` (host work, copies, launches and every kernel, to the end
    /// of the GPU work), the fastest after the first, each version alone on the GPU.
    Call,
}

impl Clock {
    pub fn key(self) -> &'static str {
        match self {
            Clock::Kernel => "kernel",
            Clock::Call => "call",
        }
    }

    /// The harness's option for the timed calls: where the call is the clock, waits spin, since a
    /// blocked thread's wake-up (20-60 us on an H100) is noise beside calls of 0.1 ms.
    fn harness_flag(self) -> Option<&'static str> {
        match self {
            Clock::Kernel => None,
            Clock::Call => Some("--spin"),
        }
    }
}

/// The host memory the harness hands to `cb_run`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostMemory {
    #[default]
    Pageable,
    Pinned,
}

impl HostMemory {
    /// The harness's option for it (harness/harness.cu).
    fn harness_flag(self) -> Option<&'static str> {
        match self {
            HostMemory::Pageable => None,
            HostMemory::Pinned => Some("--pinned"),
        }
    }
}

/// One metric's bound: `at_least` or `at_most`, in the metric's own unit, or with `of_original` as a
/// multiple of the original's value (`at_most = 0.1, of_original = true`: a tenth of it at most).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Goal {
    pub metric: Metric,
    pub at_least: Option<f64>,
    pub at_most: Option<f64>,
    #[serde(default)]
    pub of_original: bool,
}

/// Library kernels the grader can time beside an exercise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Baseline {
    /// cuBLAS fp32 SGEMM (TF32 off) at the bench's `m`, `n`, `k`.
    CublasSgemm,
}

/// What shows an exercise's problem, in one word for tables: the tool's name, "cases" where no
/// tool sees the bug and the plain runs do, "ncu" for the performance track.
pub fn shown_by(tool: Option<Tool>, detector: Detector) -> &'static str {
    match (tool, detector) {
        (Some(t), _) => t.name(),
        (None, Detector::Speed) => "ncu",
        (None, Detector::Hang) => "timeout",
        (None, Detector::Crash) => "signal",
        (None, _) => "cases",
    }
}

/// What catches an exercise's bug.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detector {
    /// A compute-sanitizer tool (`tool`, `kind`).
    #[default]
    Sanitizer,
    /// No sanitizer flags this class on sm_90: the cases, run plainly, give wrong outputs.
    WrongOutput,
    /// The threads wait forever (a barrier or spin-wait that is never released): the run outlives
    /// `timeout_s` and is killed; `tool`/`kind` name a deadlock report where a tool gives one.
    Hang,
    /// The host program dies by a signal (SIGSEGV, SIGBUS) in the plain run: a device pointer
    /// dereferenced on the host, say.
    Crash,
    /// The performance track: the original is correct, ncu shows it slow. Implied by `kind = "perf"`
    /// (never written in `[expect]`).
    Speed,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explain {
    /// What this kind of record means.
    pub finding: String,
    /// Why a plain run looked right (or why it did not).
    pub silent: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    Memcheck,
    Racecheck,
    Initcheck,
    Synccheck,
}

impl Tool {
    pub const ALL: [Tool; 4] = [
        Tool::Memcheck,
        Tool::Racecheck,
        Tool::Initcheck,
        Tool::Synccheck,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Tool::Memcheck => "memcheck",
            Tool::Racecheck => "racecheck",
            Tool::Initcheck => "initcheck",
            Tool::Synccheck => "synccheck",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kinds of record the grader tells apart (see `sanitizer.rs` for how records map to them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// memcheck: an access outside any allocation.
    OutOfBounds,
    /// memcheck: a misaligned access.
    Misaligned,
    /// memcheck --leak-check full: device memory never freed.
    Leak,
    /// memcheck: a CUDA API call returned an error.
    ApiError,
    /// racecheck: a shared-memory hazard between threads.
    SharedRace,
    /// initcheck: a device read of memory nothing wrote.
    UninitializedRead,
    /// initcheck: a host API (cudaMemcpy) copied memory nothing wrote.
    UninitializedCopy,
    /// synccheck: threads of one block wait at different barriers.
    DivergentBarrier,
    /// synccheck: a barrier with invalid arguments (e.g. a __syncwarp mask).
    InvalidBarrier,
    /// memcheck: the hardware raised an exception in a kernel (e.g. an illegal instruction).
    DeviceException,
    /// memcheck: an invalid or double `free` on the device heap ("Malloc/Free error").
    HeapError,
    /// memcheck --leak-check full: device-heap memory (`malloc` in a kernel) never freed.
    HeapLeak,
    /// memcheck --track-stream-ordered-races: memory of `cudaMallocAsync`/`cudaFreeAsync` used
    /// before its allocation or after its free in stream order.
    StreamOrderedRace,
    /// racecheck (--racecheck-memcpy-async): a hazard on an asynchronous copy (`cp.async`) read
    /// before its wait.
    AsyncCopyRace,
    /// memcheck --check-bulk-copy: an invalid `cp.async.bulk` (TMA) copy.
    BulkCopy,
    /// racecheck --racecheck-deadlock-timeout: threads waiting at a synchronization that never ends.
    Deadlock,
    /// memcheck: a thread's stack overflowed (deep recursion in device code).
    StackOverflow,
    /// initcheck --track-unused-memory: an allocation (or part of it) never used.
    UnusedMemory,
    /// Any other record.
    Other,
}

impl FindingKind {
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::OutOfBounds => "out-of-bounds",
            FindingKind::Misaligned => "misaligned",
            FindingKind::Leak => "leak",
            FindingKind::ApiError => "api-error",
            FindingKind::SharedRace => "shared-race",
            FindingKind::UninitializedRead => "uninitialized-read",
            FindingKind::UninitializedCopy => "uninitialized-copy",
            FindingKind::DivergentBarrier => "divergent-barrier",
            FindingKind::InvalidBarrier => "invalid-barrier",
            FindingKind::DeviceException => "device-exception",
            FindingKind::HeapError => "heap-error",
            FindingKind::HeapLeak => "heap-leak",
            FindingKind::StreamOrderedRace => "stream-ordered-race",
            FindingKind::AsyncCopyRace => "async-copy-race",
            FindingKind::BulkCopy => "bulk-copy",
            FindingKind::Deadlock => "deadlock",
            FindingKind::StackOverflow => "stack-overflow",
            FindingKind::UnusedMemory => "unused-memory",
            FindingKind::Other => "other",
        }
    }

    /// Whether the tool's record of this kind can name a source line. A device-heap leak cannot:
    /// the manual gives it neither a host nor a device backtrace, only the bytes and the address.
    pub fn has_location(self) -> bool {
        self != FindingKind::HeapLeak
    }

    /// The tool that writes records of this kind (none for `other`).
    pub fn tool(self) -> Option<Tool> {
        use FindingKind::*;
        match self {
            OutOfBounds | Misaligned | Leak | ApiError | DeviceException | HeapError | HeapLeak
            | StreamOrderedRace | BulkCopy | StackOverflow => Some(Tool::Memcheck),
            SharedRace | AsyncCopyRace | Deadlock => Some(Tool::Racecheck),
            UninitializedRead | UninitializedCopy | UnusedMemory => Some(Tool::Initcheck),
            DivergentBarrier | InvalidBarrier => Some(Tool::Synccheck),
            Other => None,
        }
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferSpec {
    pub name: String,
    pub dtype: DType,
    /// Element count: a product of parameter names and integers, e.g. `"rows * cols"`.
    pub len: Spanned<String>,
    /// How inputs are drawn (inputs only).
    #[serde(default)]
    pub dist: Option<Dist>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Dist {
    /// Floats uniform in [lo, hi).
    Uniform { lo: f64, hi: f64 },
    /// Integers uniform in [lo, hi].
    Integers { lo: i64, hi: i64 },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub seed: u64,
    pub params: BTreeMap<String, i64>,
    /// Also run this case under the sanitizers (keep these small: the tools are slow).
    #[serde(default)]
    pub sanitize: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bench {
    pub seed: u64,
    pub params: BTreeMap<String, i64>,
    /// How many times the harness calls the entry point under ncu.
    pub repeat: u32,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    pub atol: f64,
    pub rtol: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// Kernel function names whose ncu times are summed.
    pub kernels: Vec<String>,
    /// The learner's time may be at most this multiple of the reference fix's time (bug track; the
    /// performance track's target is `[perf] speedup`).
    pub max_ratio_to_reference: Option<Spanned<f64>>,
}

/// A manifest error that names the file and (where known) the line.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ManifestError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.path.display(), line, self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// A parsed manifest together with where it came from, so later errors can point back into it.
#[derive(Debug, Clone)]
pub struct LoadedManifest {
    pub id: String,
    pub path: PathBuf,
    pub text: String,
    pub manifest: Manifest,
}

impl LoadedManifest {
    /// The points each stage of `grade` is worth for this exercise. Where no tool sees the bug (the
    /// cases are the detector) the named tool's points go to the hidden cases; on the performance
    /// track, where nothing is named, to speed.
    pub fn grade_points(&self) -> Vec<(crate::exercise::rubric::GradeStage, f64)> {
        use crate::exercise::rubric::GradeStage;
        let moved_to = match self.track() {
            Track::Perf => Some(GradeStage::Speed),
            // No tool named (wrong outputs, a hang no tool reports, a crash): the cases decide.
            Track::Bug if self.expected_finding().is_none() => Some(GradeStage::Hidden),
            Track::Bug => None,
        };
        self.manifest
            .rubric
            .unwrap_or_default()
            .for_exercise(moved_to)
    }

    /// Line (1-based) of a byte offset in the manifest text.
    pub fn line_of(&self, offset: usize) -> usize {
        line_of(&self.text, offset)
    }

    pub fn error_at(
        &self,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
    ) -> ManifestError {
        ManifestError {
            path: self.path.clone(),
            line: Some(self.line_of(span.start)),
            message: message.into(),
        }
    }

    /// The marked region the exercise is about: where the bug is, or the slow code.
    pub fn region(&self) -> &Spanned<String> {
        match (&self.manifest.expect, &self.manifest.perf) {
            (Some(e), _) => &e.region,
            (None, Some(p)) => &p.region,
            (None, None) => unreachable!("validation requires [expect] or [perf]"),
        }
    }

    pub fn track(&self) -> Track {
        self.manifest.track()
    }

    /// The tool and kind of record that must flag the untouched exercise (bug track, sanitizer
    /// detector); None where the cases are the detector or the exercise is slow, not buggy.
    pub fn expected_finding(&self) -> Option<(Tool, FindingKind)> {
        self.manifest.expect.as_ref().and_then(Expect::sanitizer)
    }

    /// The compute-sanitizer tools that can check this exercise. racecheck, initcheck and synccheck
    /// do not support dynamic parallelism (the manual's known limitations; on an H200 each wrote a
    /// record for 35-dynpar-shared's correct solution), so an exercise built with `rdc` is checked
    /// by memcheck alone.
    pub fn tools(&self) -> Vec<Tool> {
        if self.manifest.build.rdc {
            vec![Tool::Memcheck]
        } else {
            Tool::ALL.to_vec()
        }
    }

    /// What shows the untouched exercise's problem.
    pub fn detector(&self) -> Detector {
        match &self.manifest.expect {
            Some(e) => e.detector,
            None => Detector::Speed,
        }
    }

    pub fn source_name(&self) -> &str {
        self.manifest.source.get_ref()
    }

    /// The exercise's level on the path, 1 to 3 (validated), where it declares one.
    pub fn level(&self) -> Option<u8> {
        self.manifest.level.as_ref().map(|l| *l.get_ref())
    }

    /// The compute capability the exercise needs, if it declares one (validated).
    pub fn requires(&self) -> Option<Capability> {
        self.manifest
            .requires
            .as_ref()
            .and_then(|r| Capability::parse(r.get_ref()))
    }

    /// Extra options for `tool`'s runs of this exercise and its solution.
    pub fn tool_options(&self, tool: Tool) -> &[String] {
        self.manifest
            .expect
            .as_ref()
            .map(|e| e.options_for(tool))
            .unwrap_or_default()
    }

    /// A hang exercise's limit: every run of its untouched version is bounded by it. None for
    /// the other detectors.
    pub fn hang_timeout(&self) -> Option<std::time::Duration> {
        let e = self
            .manifest
            .expect
            .as_ref()
            .filter(|e| e.detector == Detector::Hang)?;
        Some(std::time::Duration::from_secs_f64(
            e.timeout_s
                .as_ref()
                .map(|t| *t.get_ref())
                .unwrap_or(DEFAULT_HANG_TIMEOUT_S),
        ))
    }

    pub fn all_cases(&self) -> impl Iterator<Item = (&str, u64, &BTreeMap<String, i64>)> {
        self.manifest
            .cases
            .iter()
            .map(|c| (c.name.as_str(), c.seed, &c.params))
    }
}

pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// Parse one manifest's text. `id` is the exercise folder name.
pub fn parse(id: &str, path: &Path, text: &str) -> Result<LoadedManifest, ManifestError> {
    let manifest: Manifest = toml::from_str(text).map_err(|e| ManifestError {
        path: path.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().to_string(),
    })?;
    let loaded = LoadedManifest {
        id: id.to_string(),
        path: path.to_path_buf(),
        text: text.to_string(),
        manifest,
    };
    validate_fields(&loaded)?;
    Ok(loaded)
}

/// The largest parameter value a case may give.
pub const MAX_PARAM: i64 = 1 << 31;
/// The most elements one buffer may hold (1 GiB of f32).
pub const MAX_ELEMENTS: usize = 1 << 28;

/// Checks a manifest can make on its own (no source files needed).
fn validate_fields(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    let format = *man.format.get_ref();
    if !(OLDEST_FORMAT..=FORMAT_VERSION).contains(&format) {
        return Err(m.error_at(
            man.format.span(),
            format!("format {format} is not supported (this grader reads formats {OLDEST_FORMAT} to {FORMAT_VERSION})"),
        ));
    }
    if let Some(kind) = man.kind.as_ref().filter(|_| format < 2) {
        return Err(m.error_at(
            kind.span(),
            "`kind` needs `format = 2` (format 1 manifests are bug exercises)",
        ));
    }
    if !is_valid_id(&m.id) {
        return Err(ManifestError {
            path: m.path.clone(),
            line: None,
            message: format!("exercise folder `{}` must be named NN-name (two digits, a dash, lowercase letters)", m.id),
        });
    }
    if !man.source.get_ref().ends_with(".cu") || man.source.get_ref().contains('/') {
        return Err(m.error_at(
            man.source.span(),
            "source must be a bare file name ending in .cu",
        ));
    }
    if reference::lookup(man.reference.get_ref()).is_none() {
        return Err(m.error_at(
            man.reference.span(),
            format!(
                "unknown reference `{}`; known: {}",
                man.reference.get_ref(),
                reference::names().join(", ")
            ),
        ));
    }
    if man.cases.len() < 5 {
        return Err(ManifestError {
            path: m.path.clone(),
            line: None,
            message: format!("needs at least 5 [[case]] entries, has {}", man.cases.len()),
        });
    }
    if !man.cases.iter().any(|c| c.sanitize) {
        return Err(ManifestError {
            path: m.path.clone(),
            line: None,
            message: "at least one [[case]] must have `sanitize = true`".into(),
        });
    }
    let params: Vec<&String> = man.bench.params.keys().collect();
    for case in &man.cases {
        let names: Vec<&String> = case.params.keys().collect();
        if names != params {
            return Err(ManifestError {
                path: m.path.clone(),
                line: find_line(&m.text, &format!("\"{}\"", case.name)),
                message: format!(
                    "case `{}` has params {names:?}, but [bench] has {params:?}",
                    case.name
                ),
            });
        }
    }
    // The buffers must be the reference's own: names, dtypes and lengths.
    let signature =
        reference::signature(man.reference.get_ref()).expect("every reference has a signature");
    let norm = |e: &str| e.split_whitespace().collect::<String>();
    for (label, declared, expected) in [
        ("input", &man.inputs, signature.inputs),
        ("output", &man.outputs, signature.outputs),
    ] {
        let got: Vec<(String, DType, String)> = declared
            .iter()
            .map(|b| (b.name.clone(), b.dtype, norm(b.len.get_ref())))
            .collect();
        let want: Vec<(String, DType, String)> = expected
            .iter()
            .map(|(n, d, l)| (n.to_string(), *d, norm(l)))
            .collect();
        if got != want {
            let show = |v: &[(String, DType, String)]| {
                v.iter()
                    .map(|(n, d, l)| format!("{n}: {d:?}[{l}]"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let at = declared
                .first()
                .map(|b| b.len.span())
                .unwrap_or(man.reference.span());
            return Err(m.error_at(
                at,
                format!(
                    "reference `{}` takes {label}s [{}], the manifest declares [{}]",
                    man.reference.get_ref(),
                    show(&want),
                    show(&got)
                ),
            ));
        }
    }
    // Every case (and the bench) must give every buffer a length that can be allocated.
    let all_params = man
        .cases
        .iter()
        .map(|c| (c.name.as_str(), &c.params))
        .chain([("bench", &man.bench.params)]);
    for (case, params) in all_params {
        let line =
            find_line(&m.text, &format!("\"{case}\"")).or_else(|| find_line(&m.text, "[bench]"));
        if let Some((name, v)) = params.iter().find(|(_, v)| **v < 0 || **v > MAX_PARAM) {
            return Err(ManifestError {
                path: m.path.clone(),
                line,
                message: format!(
                    "case `{case}`: parameter `{name}` = {v} is outside 0..={MAX_PARAM}"
                ),
            });
        }
        // A parameter the reference loops over, which no buffer's length bounds, has the
        // reference's own limit: past it, computing the expected outputs would take hours.
        for (name, v) in params {
            if let Some(limit) = reference::loop_limit(man.reference.get_ref(), name) {
                if *v > limit {
                    return Err(ManifestError {
                        path: m.path.clone(),
                        line,
                        message: format!(
                            "case `{case}`: parameter `{name}` = {v} is more than {limit}, the most times the reference `{}` repeats its step",
                            man.reference.get_ref()
                        ),
                    });
                }
            }
        }
        for spec in man.inputs.iter().chain(&man.outputs) {
            match eval_len(spec.len.get_ref(), params) {
                Err(msg) => return Err(m.error_at(spec.len.span(), format!("case `{case}`, buffer `{}`: {msg}", spec.name))),
                Ok(len) if len > MAX_ELEMENTS => {
                    return Err(ManifestError {
                        path: m.path.clone(),
                        line,
                        message: format!("case `{case}`: buffer `{}` would hold {len} elements, more than {MAX_ELEMENTS}", spec.name),
                    })
                }
                Ok(_) => {}
            }
        }
    }
    for input in &man.inputs {
        let fits = match (input.dtype, input.dist) {
            (_, None) => Err("needs a `dist`".to_string()),
            (d, Some(Dist::Uniform { lo, hi })) if d.is_float() => {
                if lo.is_finite()
                    && hi.is_finite()
                    && lo < hi
                    && lo.abs() <= f32::MAX as f64
                    && hi.abs() <= f32::MAX as f64
                {
                    Ok(())
                } else {
                    Err(format!(
                        "uniform needs finite lo < hi within f32, got [{lo}, {hi})"
                    ))
                }
            }
            (DType::I32, Some(Dist::Integers { lo, hi }))
                if lo <= hi && lo >= i32::MIN as i64 && hi <= i32::MAX as i64 =>
            {
                Ok(())
            }
            (DType::U32, Some(Dist::Integers { lo, hi }))
                if lo <= hi && lo >= 0 && hi <= u32::MAX as i64 =>
            {
                Ok(())
            }
            (d, Some(Dist::Integers { lo, hi })) if !d.is_float() => Err(format!(
                "integers [{lo}, {hi}] do not fit {d:?} (lo <= hi, within the type)"
            )),
            (d, _) => Err(format!("dist kind does not fit dtype {d:?}")),
        };
        if let Err(why) = fits {
            return Err(m.error_at(input.len.span(), format!("input `{}`: {why}", input.name)));
        }
    }
    validate_track(m)?;
    if let Some(r) = &m.manifest.rubric {
        crate::exercise::rubric::validate(r).map_err(|e| ManifestError {
            path: m.path.clone(),
            line: find_line(&m.text, "[rubric]"),
            message: e.to_string(),
        })?;
    }
    if let Some(level) = &man.level {
        if !(1..=3).contains(level.get_ref()) {
            return Err(m.error_at(
                level.span(),
                format!(
                    "level = {}: 1 (first steps), 2 (practice) or 3 (deeper)",
                    level.get_ref()
                ),
            ));
        }
    }
    if let Some(req) = &man.requires {
        if Capability::parse(req.get_ref()).is_none() {
            return Err(m.error_at(req.span(), format!("requires = \"{}\": write a compute capability as \"major.minor\", e.g. \"9.0\" for Hopper", req.get_ref())));
        }
    }
    if man.build.arch_specific && man.requires.is_none() {
        return Err(ManifestError {
            path: m.path.clone(),
            line: find_line(&m.text, "arch_specific"),
            message: "[build] arch_specific = true builds for this GPU's architecture only (sm_90a runs on Hopper alone): name it with requires = \"9.0\"".into(),
        });
    }
    if let Some(expect) = &man.expect {
        validate_expect(m, expect)?;
    }
    if man.hints.get_ref().len() < 3 {
        return Err(m.error_at(man.hints.span(), "give three progressive hints"));
    }
    if man.timing.kernels.is_empty() {
        return Err(ManifestError {
            path: m.path.clone(),
            line: find_line(&m.text, "[timing]"),
            message: "timing.kernels must name at least one kernel".into(),
        });
    }
    if let Some(ratio) = man
        .timing
        .max_ratio_to_reference
        .as_ref()
        .filter(|r| *r.get_ref() < 1.0)
    {
        return Err(m.error_at(ratio.span(), "max_ratio_to_reference must be >= 1.0"));
    }
    if man.bench.repeat == 0 {
        return Err(ManifestError {
            path: m.path.clone(),
            line: find_line(&m.text, "repeat"),
            message: "bench.repeat must be at least 1".into(),
        });
    }
    Ok(())
}

/// What each detector needs and forbids in `[expect]`.
fn validate_expect(m: &LoadedManifest, expect: &Expect) -> Result<(), ManifestError> {
    let expect_line = find_line(&m.text, "[expect]");
    let err = |message: String| ManifestError {
        path: m.path.clone(),
        line: expect_line,
        message,
    };
    let detector = match expect.detector {
        Detector::Sanitizer => "sanitizer",
        Detector::WrongOutput => "wrong-output",
        Detector::Hang => "hang",
        Detector::Crash => "crash",
        Detector::Speed => return Err(err("`detector = \"speed\"` is not written: a performance exercise says `kind = \"perf\"` and has `[perf]`, not `[expect]`".into())),
    };
    match (expect.detector, expect.tool, expect.kind) {
        (Detector::Sanitizer, Some(_), Some(_)) | (Detector::Hang, _, _) if expect.tool.is_some() == expect.kind.is_some() => {}
        (Detector::WrongOutput | Detector::Crash, None, None) => {}
        (Detector::Sanitizer, _, _) => return Err(err("[expect] needs `tool` and `kind` (or `detector = \"wrong-output\"` where no tool sees the bug)".into())),
        (Detector::Hang, _, _) => return Err(err("[expect] with `detector = \"hang\"` names both `tool` and `kind` (the tool's deadlock report) or neither".into())),
        (_, _, _) => return Err(err(format!("[expect] with `detector = \"{detector}\"` names no `tool` or `kind`: no tool is claimed to catch it"))),
    }
    if let (Some(tool), Some(kind)) = (expect.tool, expect.kind) {
        if kind.tool().is_some_and(|t| t != tool) {
            let at = find_line(&m.text, &format!("\"{}\"", kind.name())).or(expect_line);
            return Err(ManifestError {
                path: m.path.clone(),
                line: at,
                message: format!(
                    "kind `{kind}` is a record of {}, not of {tool}",
                    kind.tool().expect("checked")
                ),
            });
        }
    }
    if let Some(options) = &expect.options {
        let Some(tool) = expect.tool else {
            return Err(m.error_at(
                options.span(),
                format!(
                    "`options` are a tool's: detector `{detector}` names no `tool` to pass them to"
                ),
            ));
        };
        check_options(tool, options.get_ref()).map_err(|why| m.error_at(options.span(), why))?;
    }
    if let Some(t) = &expect.timeout_s {
        if expect.detector != Detector::Hang {
            return Err(m.error_at(t.span(), "`timeout_s` is the limit of a hang (`detector = \"hang\"`); other runs have the grader's own limits"));
        }
        if !(t.get_ref().is_finite() && (0.5..=60.0).contains(t.get_ref())) {
            return Err(m.error_at(
                t.span(),
                format!(
                    "timeout_s = {} must lie between 0.5 and 60 seconds",
                    t.get_ref()
                ),
            ));
        }
    }
    Ok(())
}

/// What each track needs and forbids: a bug has `[expect]` and `timing.max_ratio_to_reference`; a
/// performance exercise has `[perf]` instead, with metrics the grader knows and goals that say which
/// way they must move.
fn validate_track(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    let at = |needle: &str| find_line(&m.text, needle);
    let err = |line: Option<usize>, message: String| ManifestError {
        path: m.path.clone(),
        line,
        message,
    };
    match man.track() {
        Track::Bug => {
            if man.expect.is_none() {
                return Err(err(None, "a bug exercise needs [expect]: which tool finds the bug, or `detector = \"wrong-output\"`".into()));
            }
            if man.perf.is_some() {
                return Err(err(at("[perf]"), "[perf] belongs to performance exercises: add `kind = \"perf\"` (format 2), or remove it".into()));
            }
            if man.timing.max_ratio_to_reference.is_none() {
                return Err(err(at("[timing]"), "a bug exercise needs `timing.max_ratio_to_reference` (how much slower than the reference fix a fix may be)".into()));
            }
        }
        Track::Perf => {
            if man.expect.is_some() {
                return Err(err(at("[expect]"), "a performance exercise has no bug to expect: remove [expect] (its original must be clean and correct)".into()));
            }
            if let Some(ratio) = &man.timing.max_ratio_to_reference {
                return Err(m.error_at(ratio.span(), "a performance exercise is judged by `[perf] speedup`, not max_ratio_to_reference"));
            }
            let Some(perf) = &man.perf else {
                return Err(err(None, "a performance exercise (`kind = \"perf\"`) needs [perf]: region, speedup, metrics".into()));
            };
            if !(*perf.speedup.get_ref() > 1.0 && perf.speedup.get_ref().is_finite()) {
                return Err(m.error_at(perf.speedup.span(), "speedup must be a number above 1.0 (how many times faster than the original the fix must be)"));
            }
            let shown = perf.metrics.get_ref();
            if !(3..=5).contains(&shown.len()) {
                return Err(m.error_at(
                    perf.metrics.span(),
                    format!(
                        "name 3 to 5 metrics that explain this exercise, not {}",
                        shown.len()
                    ),
                ));
            }
            if let Some(needs) = shown
                .iter()
                .find(|k| k.needs_baseline())
                .filter(|_| perf.baseline.is_none())
            {
                return Err(m.error_at(
                    perf.metrics.span(),
                    format!(
                        "metric `{}` compares with a library kernel: set `baseline`",
                        needs.key()
                    ),
                ));
            }
            for goal in &perf.goals {
                let line = at(&format!("\"{}\"", goal.metric.key()));
                match (goal.at_least, goal.at_most) {
                    (Some(v), None) | (None, Some(v)) if v.is_finite() => {}
                    _ => {
                        return Err(err(
                            line,
                            format!(
                            "goal for `{}`: give exactly one finite bound, `at_least` or `at_most`",
                            goal.metric.key()
                        ),
                        ))
                    }
                }
                if !shown.contains(&goal.metric) {
                    return Err(err(line, format!("goal for `{}`: add the metric to `metrics`, so the learner sees what is judged", goal.metric.key())));
                }
            }
            if perf.clock == Clock::Call && man.bench.repeat < 2 {
                return Err(err(at("repeat"), "`clock = \"call\"` judges the fastest call after the first (which loads the kernels): set bench.repeat to 2 or more".into()));
            }
            if let Some(timeline) = shown
                .iter()
                .find(|k| k.from_timeline())
                .filter(|_| perf.clock != Clock::Call)
            {
                return Err(m.error_at(
                    perf.metrics.span(),
                    format!(
                        "metric `{}` is read from the call's timeline: set `clock = \"call\"`",
                        timeline.key()
                    ),
                ));
            }
            if perf.baseline == Some(Baseline::CublasSgemm) {
                if let Some(missing) = ["m", "n", "k"]
                    .iter()
                    .find(|p| !man.bench.params.contains_key(**p))
                {
                    return Err(err(at("[bench]"), format!("baseline cublas-sgemm takes the bench's `m`, `n` and `k`: `{missing}` is missing")));
                }
            }
        }
    }
    Ok(())
}

/// Checks that need the exercise's sources: the marked regions exist and parse.
pub fn validate_sources(
    m: &LoadedManifest,
    exercise: &str,
    solution: &str,
) -> Result<(), ManifestError> {
    let expect_region = m.region().get_ref();
    for (label, text) in [("exercise", exercise), ("solution", solution)] {
        let regions = regions::parse(text).map_err(|e| ManifestError {
            path: PathBuf::from(format!("{}/{}", label_dir(label, &m.id), m.source_name())),
            line: Some(e.line),
            message: e.message,
        })?;
        if !regions.iter().any(|r| &r.name == expect_region) {
            return Err(m.error_at(
                m.region().span(),
                format!("the {label} source has no region `{expect_region}` (mark it with `// ANCHOR: {expect_region}` ... `// ANCHOR_END: {expect_region}`)"),
            ));
        }
    }
    Ok(())
}

fn label_dir(label: &str, id: &str) -> String {
    match label {
        "exercise" => format!("exercises/{id}"),
        _ => format!("solutions/{id}"),
    }
}

pub fn find_line(text: &str, needle: &str) -> Option<usize> {
    text.find(needle).map(|off| line_of(text, off))
}

pub fn is_valid_id(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() > 3
        && b[0].is_ascii_digit()
        && b[1].is_ascii_digit()
        && b[2] == b'-'
        && id[3..]
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
}

/// Evaluate a length expression: a `*`-separated product of integers and parameter names.
pub fn eval_len(expr: &str, params: &BTreeMap<String, i64>) -> Result<usize, String> {
    let mut product: i64 = 1;
    for factor in expr.split('*').map(str::trim) {
        let value = if let Ok(v) = factor.parse::<i64>() {
            v
        } else if let Some(v) = params.get(factor) {
            *v
        } else {
            return Err(format!("unknown parameter `{factor}` in length `{expr}`"));
        };
        product = product
            .checked_mul(value)
            .ok_or_else(|| format!("length `{expr}` overflows"))?;
    }
    usize::try_from(product).map_err(|_| format!("length `{expr}` is negative"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RACE: &str = include_str!("../../../exercises/15-global-race/exercise.toml");
    const LEAK: &str = include_str!("../../../exercises/07-leak/exercise.toml");
    const MATMUL: &str = include_str!("../../../exercises/54-matmul/exercise.toml");

    #[test]
    fn a_performance_exercise_names_its_target_metrics_and_baseline() {
        let m = parsed("54-matmul", MATMUL).unwrap();
        assert_eq!(
            (
                m.track(),
                m.detector(),
                m.region().get_ref().as_str(),
                m.expected_finding()
            ),
            (Track::Perf, Detector::Speed, "kernel", None)
        );
        let perf = m.manifest.perf.as_ref().unwrap();
        assert_eq!(
            (*perf.speedup.get_ref(), perf.baseline),
            (3.0, Some(Baseline::CublasSgemm))
        );
        assert_eq!(perf.goals[0].metric, Metric::ShareOfBaseline);
    }

    #[test]
    fn the_call_clock_needs_repeats_and_the_timeline_metrics_need_the_call_clock() {
        let error = |text: &str| parsed("54-matmul", text).unwrap_err();
        let m = parsed("54-matmul", MATMUL).unwrap();
        assert_eq!(
            (
                m.manifest.perf.as_ref().unwrap().clock,
                m.manifest.host_memory
            ),
            (Clock::Kernel, HostMemory::Pageable),
            "the defaults"
        );
        let by_call = MATMUL.replace("[perf]\n", "[perf]\nclock = \"call\"\n");
        let m = parsed("54-matmul", &by_call).unwrap();
        assert_eq!(m.manifest.perf.as_ref().unwrap().clock, Clock::Call);
        let once = by_call.replace("repeat = 3", "repeat = 1");
        let e = error(&once);
        assert!(
            e.message.contains("fastest call after the first")
                && e.line == find_line(&once, "repeat = 1"),
            "{e}"
        );
        let e = error(&MATMUL.replace("\"dram-share\"", "\"launches\""));
        assert!(
            e.message.contains("read from the call's timeline") && e.message.contains("launches"),
            "{e}"
        );
        parsed(
            "54-matmul",
            &by_call.replace("\"dram-share\"", "\"copy-overlap\""),
        )
        .unwrap();
        let pinned = parsed("54-matmul", &format!("host_memory = \"pinned\"\n{MATMUL}")).unwrap();
        assert_eq!(pinned.manifest.harness_flags(), ["--pinned"]);
        let both = parsed("54-matmul", &format!("host_memory = \"pinned\"\n{by_call}")).unwrap();
        assert_eq!(
            (both.manifest.clock(), both.manifest.harness_flags()),
            (Clock::Call, vec!["--pinned", "--spin"])
        );
        let e = error(&format!("host_memory = \"locked\"\n{MATMUL}"));
        assert!(e.message.contains("locked") && e.line == Some(1), "{e}");
    }

    #[test]
    fn each_track_refuses_the_other_tracks_fields_at_their_line() {
        let error = |text: &str| parsed("54-matmul", text).unwrap_err();
        // Format 1 knows only bug exercises.
        let e = error(&MATMUL.replace("format = 2", "format = 1"));
        assert!(
            e.message.contains("`kind` needs `format = 2`") && e.line == Some(2),
            "{e}"
        );
        let with_expect = format!(
            "{MATMUL}\n[expect]\ntool = \"memcheck\"\nkind = \"leak\"\nregion = \"kernel\"\n"
        );
        let e = error(&with_expect);
        assert!(
            e.message.contains("no bug to expect") && e.line == find_line(&with_expect, "[expect]"),
            "{e}"
        );
        let e = error(&MATMUL.replace("[timing]\n", "[timing]\nmax_ratio_to_reference = 1.5\n"));
        assert!(e.message.contains("judged by `[perf] speedup`"), "{e}");
        let e = error(&MATMUL.replace("speedup = 3.0", "speedup = 0.9"));
        assert!(
            e.message.contains("above 1.0") && e.line == find_line(MATMUL, "speedup = 3.0"),
            "{e}"
        );
        // An unknown metric is a serde error at its line.
        let e = error(&MATMUL.replace("\"dram-share\"", "\"dram-bandwidth\""));
        assert!(
            e.message.contains("dram-bandwidth") && e.line == find_line(MATMUL, "metrics = ["),
            "{e}"
        );
        let e = error(&MATMUL.replace("metric = \"share-of-baseline\"", "metric = \"occupancy\""));
        assert!(e.message.contains("add the metric to `metrics`"), "{e}");
        let e = error(&MATMUL.replace("baseline = \"cublas-sgemm\"\n", ""));
        assert!(e.message.contains("set `baseline`"), "{e}");
        let e = error(&MATMUL.replace("at_least = 30.0", "at_least = 30.0\nat_most = 90.0"));
        assert!(e.message.contains("exactly one finite bound"), "{e}");
        // A bug exercise still needs its ratio target and its [expect].
        let e = parsed(
            "07-leak",
            &LEAK.replace("max_ratio_to_reference = 1.5\n", ""),
        )
        .unwrap_err();
        assert!(
            e.message.contains("needs `timing.max_ratio_to_reference`"),
            "{e}"
        );
    }

    fn parsed(id: &str, text: &str) -> Result<LoadedManifest, ManifestError> {
        parse(id, Path::new("exercise.toml"), text)
    }

    #[test]
    fn a_bug_no_tool_sees_names_the_cases_and_no_tool() {
        let m = parsed("15-global-race", RACE).unwrap();
        assert_eq!(
            (m.detector(), m.expected_finding()),
            (Detector::WrongOutput, None)
        );
        // Claiming a tool for it is refused, at the [expect] line.
        let claimed = RACE.replace(
            "detector = \"wrong-output\"",
            "detector = \"wrong-output\"\ntool = \"racecheck\"",
        );
        let e = parsed("15-global-race", &claimed).unwrap_err();
        assert!(
            e.message.contains("names no `tool` or `kind`")
                && e.line == find_line(&claimed, "[expect]"),
            "{e}"
        );
    }

    #[test]
    fn a_sanitizer_detector_needs_its_tool_and_kind() {
        let m = parsed("07-leak", LEAK).unwrap();
        assert_eq!(
            m.expected_finding(),
            Some((Tool::Memcheck, FindingKind::Leak))
        );
        let e = parsed("07-leak", &LEAK.replace("kind = \"leak\"\n", "")).unwrap_err();
        assert!(e.message.contains("needs `tool` and `kind`"), "{e}");
    }

    /// The 07 manifest with its `[expect]` table replaced.
    fn with_expect(expect: &str) -> String {
        let start = LEAK.find("[expect]").unwrap();
        let end = start + LEAK[start..].find("\n\n").unwrap();
        format!("{}{expect}{}", &LEAK[..start], &LEAK[end..])
    }

    #[test]
    fn tool_options_are_checked_against_the_tools_allow_list_at_their_line() {
        let text = with_expect("[expect]\ntool = \"memcheck\"\nkind = \"stream-ordered-race\"\noptions = [\"--track-stream-ordered-races\", \"all\"]\nregion = \"alloc\"");
        let m = parsed("07-leak", &text).unwrap();
        assert_eq!(
            m.tool_options(Tool::Memcheck),
            ["--track-stream-ordered-races", "all"]
        );
        assert!(
            m.tool_options(Tool::Racecheck).is_empty(),
            "the options are the named tool's only"
        );
        let options_line = find_line(&text, "options = ");
        for (bad, says) in [
            (
                "[\"--racecheck-deadlock-timeout\", \"1000\"]",
                "belongs to racecheck, not memcheck",
            ),
            (
                "[\"--print-limit\", \"1\"]",
                "not one the grader passes to memcheck",
            ),
            ("[\"--track-stream-ordered-races\"]", "got nothing"),
            ("[\"--track-stream-ordered-races\", \"some\"]", "got `some`"),
            ("[\"--track-stream-ordered-races=all\"]", "as its own item"),
        ] {
            let e = parsed(
                "07-leak",
                &text.replace("[\"--track-stream-ordered-races\", \"all\"]", bad),
            )
            .unwrap_err();
            assert!(
                e.message.contains(says) && e.line == options_line,
                "{bad}: {e}"
            );
        }
        // A flag takes no value; a number must be one.
        assert!(check_options(
            Tool::Initcheck,
            &[
                "--track-unused-memory".into(),
                "--unused-memory-threshold".into(),
                "50".into()
            ]
        )
        .is_ok());
        assert!(check_options(
            Tool::Racecheck,
            &["--racecheck-deadlock-timeout".into(), "soon".into()]
        )
        .unwrap_err()
        .contains("whole number"));
        // Options need a tool to go to.
        let e = parsed(
            "15-global-race",
            &RACE.replace(
                "detector = \"wrong-output\"",
                "detector = \"wrong-output\"\noptions = [\"--leak-check\", \"full\"]",
            ),
        )
        .unwrap_err();
        assert!(e.message.contains("names no `tool`"), "{e}");
    }

    #[test]
    fn a_kind_belongs_to_its_tool() {
        let e = parsed(
            "07-leak",
            &with_expect("[expect]\ntool = \"memcheck\"\nkind = \"deadlock\"\nregion = \"alloc\""),
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("kind `deadlock` is a record of racecheck, not of memcheck")
                && e.line.is_some(),
            "{e}"
        );
        for kind in [
            "heap-error",
            "heap-leak",
            "stream-ordered-race",
            "bulk-copy",
            "stack-overflow",
        ] {
            parsed(
                "07-leak",
                &with_expect(&format!(
                    "[expect]\ntool = \"memcheck\"\nkind = \"{kind}\"\nregion = \"alloc\""
                )),
            )
            .unwrap();
        }
        parsed("07-leak", &with_expect("[expect]\ntool = \"racecheck\"\nkind = \"async-copy-race\"\noptions = [\"--racecheck-memcpy-async\", \"yes\"]\nregion = \"alloc\"")).unwrap();
        parsed("07-leak", &with_expect("[expect]\ntool = \"initcheck\"\nkind = \"unused-memory\"\noptions = [\"--track-unused-memory\"]\nregion = \"alloc\"")).unwrap();
    }

    #[test]
    fn a_hang_has_a_limit_and_may_name_the_tool_that_reports_it() {
        let hang = with_expect("[expect]\ndetector = \"hang\"\nregion = \"alloc\"\ntimeout_s = 2\ntool = \"racecheck\"\nkind = \"deadlock\"\noptions = [\"--racecheck-deadlock-timeout\", \"1000\"]");
        let m = parsed("07-leak", &hang).unwrap();
        assert_eq!(
            (m.detector(), m.expected_finding(), m.hang_timeout()),
            (
                Detector::Hang,
                Some((Tool::Racecheck, FindingKind::Deadlock)),
                Some(std::time::Duration::from_secs(2))
            )
        );
        assert_eq!(
            m.tool_options(Tool::Racecheck),
            ["--racecheck-deadlock-timeout", "1000"]
        );
        // Without a tool: a timeout is the only evidence; the default limit applies.
        let bare = with_expect("[expect]\ndetector = \"hang\"\nregion = \"alloc\"");
        let m = parsed("07-leak", &bare).unwrap();
        assert_eq!(
            (m.expected_finding(), m.hang_timeout()),
            (
                None,
                Some(std::time::Duration::from_secs_f64(DEFAULT_HANG_TIMEOUT_S))
            )
        );
        assert_eq!(shown_by(None, Detector::Hang), "timeout");
        let e = parsed("07-leak", &hang.replace("kind = \"deadlock\"\n", "")).unwrap_err();
        assert!(e.message.contains("both `tool` and `kind`"), "{e}");
        let e = parsed("07-leak", &hang.replace("timeout_s = 2", "timeout_s = 600")).unwrap_err();
        assert!(
            e.message.contains("between 0.5 and 60") && e.line == find_line(&hang, "timeout_s"),
            "{e}"
        );
        // A limit belongs to hangs only.
        let e = parsed(
            "07-leak",
            &LEAK.replace("kind = \"leak\"", "kind = \"leak\"\ntimeout_s = 3"),
        )
        .unwrap_err();
        assert!(e.message.contains("limit of a hang"), "{e}");
    }

    #[test]
    fn a_crash_names_no_tool() {
        let crash = with_expect("[expect]\ndetector = \"crash\"\nregion = \"alloc\"");
        let m = parsed("07-leak", &crash).unwrap();
        assert_eq!(
            (m.detector(), m.expected_finding(), m.hang_timeout()),
            (Detector::Crash, None, None)
        );
        let e = parsed(
            "07-leak",
            &crash.replace("region", "tool = \"memcheck\"\nkind = \"leak\"\nregion"),
        )
        .unwrap_err();
        assert!(
            e.message.contains("`detector = \"crash\"` names no `tool`"),
            "{e}"
        );
    }

    #[test]
    fn a_level_is_one_to_three() {
        assert_eq!(parsed("07-leak", LEAK).unwrap().level(), Some(1));
        let unleveled = LEAK.replacen("level = 1\n", "", 1);
        assert_eq!(parsed("07-leak", &unleveled).unwrap().level(), None);
        let e = parsed("07-leak", &LEAK.replacen("level = 1", "level = 4", 1)).unwrap_err();
        assert!(e.message.contains("level = 4") && e.line == Some(3), "{e}");
    }

    #[test]
    fn a_loop_count_past_its_references_limit_is_refused_at_its_case() {
        const ZERO_COPY: &str = include_str!("../../../exercises/67-zero-copy/exercise.toml");
        assert!(parsed("67-zero-copy", ZERO_COPY).is_ok());
        let many = ZERO_COPY.replacen("sweeps = 300", "sweeps = 2147483648", 1);
        let e = parsed("67-zero-copy", &many).unwrap_err();
        assert!(
            e.message
                .contains("`sweeps` = 2147483648 is more than 1024")
                && e.line == find_line(&many, "\"4096 cells, 300 sweeps"),
            "{e:?}"
        );
    }

    #[test]
    fn build_options_name_features_not_flags() {
        let plain = parsed("07-leak", LEAK).unwrap().manifest.build;
        assert_eq!(
            (plain.flags(), plain.arch("sm_90")),
            (&[][..], "sm_90".to_string())
        );
        let both =
            format!("requires = \"9.0\"\n{LEAK}\n[build]\nrdc = true\narch_specific = true\n");
        let options = parsed("07-leak", &both).unwrap().manifest.build;
        assert_eq!(
            (
                options.flags(),
                options.arch("sm_90"),
                options.arch("sm_90a")
            ),
            (
                &["-rdc=true", "-lcudadevrt"][..],
                "sm_90a".to_string(),
                "sm_90a".to_string()
            )
        );
        // Architecture-specific code runs on one architecture: the manifest must gate on it.
        let ungated = format!("{LEAK}\n[build]\narch_specific = true\n");
        let e = parsed("07-leak", &ungated).unwrap_err();
        assert!(
            e.message.contains("requires") && e.line == find_line(&ungated, "arch_specific"),
            "{e:?}"
        );
        // A raw flag is not a key.
        let raw = format!("{LEAK}\n[build]\nflags = [\"-Xptxas\"]\n");
        let e = parsed("07-leak", &raw).unwrap_err();
        assert!(e.message.contains("unknown field"), "{e:?}");
    }

    #[test]
    fn requires_is_a_compute_capability() {
        let gated = format!("requires = \"9.0\"\n{LEAK}");
        let m = parsed("07-leak", &gated).unwrap();
        let cap = m.requires().unwrap();
        assert_eq!(
            (cap, cap.to_string(), cap.family(), cap.tag()),
            (
                Capability { major: 9, minor: 0 },
                "9.0".into(),
                "Hopper",
                "sm_90+".into()
            )
        );
        assert!(
            Capability { major: 8, minor: 0 } < cap
                && Capability {
                    major: 10,
                    minor: 0
                } > cap
                && Capability { major: 9, minor: 1 } > cap
        );
        assert_eq!(parsed("07-leak", LEAK).unwrap().requires(), None);
        for bad in ["9", "sm_90", "9.0.1", "nine"] {
            let e = parsed(
                "07-leak",
                &format!(
                    "format = 1\nrequires = \"{bad}\"\n{}",
                    LEAK.replacen("format = 1\n", "", 1)
                ),
            )
            .unwrap_err();
            assert!(
                e.message.contains("major.minor") && e.line == Some(2),
                "{bad}: {e}"
            );
        }
    }
}
