//! `exercise.toml`: the typed manifest of one exercise, parsed with serde + toml and validated so that
//! every error names the file and the line.
//!
//! One file: the manifest's schema, its types and what they answer (checks: `validate.rs`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

pub use crate::exercise::dtype::DType;
pub use crate::exercise::metric::Metric;

mod options;
#[cfg(test)]
mod tests;
mod validate;

pub use options::{check_options, OptionError, OptionValue, SANITIZER_OPTIONS};
pub use validate::{eval_len, is_valid_id, validate_sources, LenError, MAX_ELEMENTS, MAX_PARAM};

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
    /// The toolkit headers a fix may `#include` inside the marked regions (`headers = ["mma.h"]`),
    /// each one of [`REGION_HEADERS`]. No other directive but a local `#pragma` may stand there.
    #[serde(default)]
    pub headers: Option<Spanned<Vec<String>>>,
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

/// The headers a manifest's `headers` may name: the toolkit's own, for the half type, the tensor
/// cores, asynchronous copies, cooperative groups and barriers. Nothing here can reach the harness
/// or the file system; a header of the student's own never can.
pub const REGION_HEADERS: &[&str] = &[
    "cuda_fp16.h",
    "cuda_bf16.h",
    "mma.h",
    "cuda_pipeline.h",
    "cooperative_groups.h",
    "cooperative_groups/reduce.h",
    "cooperative_groups/memcpy_async.h",
    "cuda/barrier",
    "cuda/pipeline",
];

impl Manifest {
    /// The headers a region of this exercise may include.
    pub fn region_headers(&self) -> &[String] {
        self.headers.as_ref().map_or(&[], |h| h.get_ref())
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

pub use cudabugs_compute::codec::Dist;

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
    /// The timed kernels read inputs that the host wrote into managed memory: page migration brings
    /// them over, and how much of that ncu counts as the kernels' DRAM reads varies from run to run
    /// (34: 80.5 kB and 177.8 kB of its 262.1 kB, the same fix in one `verify`), so the rule
    /// `proof-of-work` does not judge them.
    #[serde(default)]
    pub managed_inputs: bool,
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

pub fn find_line(text: &str, needle: &str) -> Option<usize> {
    text.find(needle).map(|off| line_of(text, off))
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
    validate::validate_fields(&loaded)?;
    Ok(loaded)
}
