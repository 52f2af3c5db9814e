//! What a plan is made of: submissions (one version of an exercise's source, in a work folder of its
//! own) and typed stages with stable ids. `check`, `verify`, `sanitize` and `grade` are phases of
//! stages over submissions (`plans::session`); the scheduler runs any such list.

use std::path::PathBuf;

use crate::exercise::cases::Cases;
use crate::exercise::manifest::{Clock, Tool};
use crate::exercise::regions::Region;
use crate::exercise::workbook::{Exercise, Workbook};
use crate::tools::nvcc::{Flavor, Reuse};

pub use crate::engine::timer::Timer;

/// Any CUDA program, for `sanitize`: its own sources and flags (or a binary built elsewhere), run
/// with its own arguments from the folder it was started in.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub sources: Vec<PathBuf>,
    pub nvcc_flags: Vec<String>,
    pub args: Vec<std::ffi::OsString>,
    /// `--bin`: built elsewhere, not built again.
    pub prebuilt: Option<PathBuf>,
    /// Where it runs, and may write besides its work folder (the user's own folder: a program that
    /// writes its results there must still work under the sandbox).
    pub cwd: PathBuf,
    /// Also profile the -O3 -lineinfo build with ncu (`sanitize --profile`).
    pub profile: bool,
    /// Copies of `sources` that nvcc compiles, with their local includes beside them, in a folder
    /// the sandbox's user can read (`plans::sanitize` makes them, reading the files as the user
    /// who ran it); empty: nvcc reads `sources` themselves.
    pub staged: Vec<PathBuf>,
}

impl Program {
    /// The files nvcc compiles: the staged copies where there are some.
    pub fn build_sources(&self) -> &[PathBuf] {
        if self.staged.is_empty() {
            &self.sources
        } else {
            &self.staged
        }
    }
}

/// What a submission is.
#[derive(Debug)]
pub enum Target<'a> {
    /// An exercise's file: built with the harness, run on the exercise's seeded cases.
    Exercise {
        exercise: &'a Exercise,
        cases: &'a Cases,
    },
    /// Any CUDA program.
    Program(Program),
}

/// One version of an exercise's source (or one program), graded in its own work folder. An
/// exercise's text is copied into that folder before anything reads it, so what is built is
/// exactly what was graded, and each submission's binaries, outputs, HOME and TMPDIR stay apart
/// from every other's.
#[derive(Debug)]
pub struct Submission<'a> {
    /// The exercise's id, or the program's name: keys the work folder and recordings.
    pub name: String,
    /// "learner", "original", "reference", "program" (later: a student's name).
    pub variant: String,
    /// Where the text came from, for messages and for the learner's report.
    pub origin: PathBuf,
    pub text: String,
    pub regions: Vec<Region>,
    /// `.cudabugs/work/<plan>/<name>/<variant>`: the only folder its code may write.
    pub work: PathBuf,
    pub reuse: Reuse,
    pub target: Target<'a>,
    /// `grade`'s hidden and fresh cases (none elsewhere).
    pub secret: Option<&'a SecretCases>,
    /// The timed stages whose runs are kept between plans (`engine::kept`): none unless a plan says.
    pub keeps: &'static [StageKind],
}

/// An exercise's hidden cases and the fresh inputs of the check after timing.
#[derive(Debug, Default)]
pub struct SecretCases {
    pub hidden: Cases,
    pub fresh: Cases,
}

impl<'a> Submission<'a> {
    pub fn new(
        wb: &Workbook,
        plan: &str,
        exercise: &'a Exercise,
        variant: &str,
        origin: PathBuf,
        text: String,
        cases: &'a Cases,
    ) -> Submission<'a> {
        let regions = crate::exercise::regions::parse(&text).unwrap_or_default();
        Submission {
            name: exercise.id().to_string(),
            variant: variant.to_string(),
            origin,
            text,
            regions,
            work: work_root(wb).join(plan).join(exercise.id()).join(variant),
            reuse: Reuse::Never,
            target: Target::Exercise { exercise, cases },
            secret: None,
            keeps: &[],
        }
    }

    /// Keep the runs of the timed stages `role` keeps between plans (`kept_kinds`).
    pub fn keeping(mut self, role: Role) -> Submission<'a> {
        if let Some(ex) = self.exercise() {
            self.keeps = kept_kinds(role, ex.manifest.manifest.clock());
        }
        self
    }

    /// Whether a binary an earlier build left may be kept (new submissions: never).
    pub fn reusing(mut self, reuse: Reuse) -> Submission<'a> {
        self.reuse = reuse;
        self
    }

    /// Any program, named after its first source (or binary).
    pub fn program(wb: &Workbook, plan: &str, program: Program) -> Submission<'a> {
        let first = program
            .prebuilt
            .as_ref()
            .or(program.sources.first())
            .cloned()
            .unwrap_or_default();
        let name: String = first
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Submission {
            work: work_root(wb).join(plan).join(&name).join("program"),
            name,
            variant: "program".into(),
            origin: first,
            text: String::new(),
            regions: Vec::new(),
            reuse: Reuse::Never,
            target: Target::Program(program),
            secret: None,
            keeps: &[],
        }
    }

    pub fn exercise(&self) -> Option<&'a Exercise> {
        match &self.target {
            Target::Exercise { exercise, .. } => Some(exercise),
            Target::Program(_) => None,
        }
    }

    /// The exercise's cases (none for a program).
    pub fn cases(&self) -> &'a Cases {
        static NONE: std::sync::LazyLock<Cases> = std::sync::LazyLock::new(Cases::default);
        match &self.target {
            Target::Exercise { cases, .. } => cases,
            Target::Program(_) => &NONE,
        }
    }

    /// The files the program's source locations refer to: the copy nvcc compiled, or the sources.
    pub fn sources(&self) -> Vec<PathBuf> {
        match &self.target {
            Target::Exercise { exercise, .. } => {
                vec![self.work.join(exercise.manifest.source_name())]
            }
            Target::Program(p) => p.sources.clone(),
        }
    }

    /// The untouched exercise of a hang exercise (its original text, in any plan) is bounded by the
    /// manifest's `timeout_s` in every run, so that proving it hangs costs seconds, not the
    /// general limits; every other text keeps those limits (a fix may be slower than the hang's limit).
    pub fn hang_limit(&self) -> Option<std::time::Duration> {
        let ex = self.exercise()?;
        ex.manifest
            .hang_timeout()
            .filter(|_| self.text == ex.original)
    }

    /// "region `wait` (sum.cu:12-30)": the exercise's own region as this text has it.
    pub fn region_text(&self) -> Option<String> {
        let ex = self.exercise()?;
        let name = ex.manifest.region().get_ref();
        let at = self
            .regions
            .iter()
            .find(|r| &r.name == name)
            .map(|r| {
                format!(
                    " ({}:{}-{})",
                    ex.manifest.source_name(),
                    r.begin_line,
                    r.end_line
                )
            })
            .unwrap_or_default();
        Some(format!("region `{name}`{at}"))
    }

    /// The copy of the text that nvcc compiles (exercises).
    pub fn source(&self) -> PathBuf {
        self.sources().into_iter().next().unwrap_or_default()
    }

    /// The name ncu and recordings know it by: "03-learner", "histogram-program".
    pub fn label(&self) -> String {
        match self.exercise() {
            Some(ex) => format!("{}-{}", ex.number(), self.variant),
            None => format!("{}-{}", self.name, self.variant),
        }
    }

    pub fn binary(&self, flavor: Flavor) -> PathBuf {
        self.work.join(flavor.dir_name()).join(self.label())
    }
}

/// Where every submission's work folder lives (`Workbook::work_root`).
pub fn work_root(wb: &Workbook) -> PathBuf {
    wb.work_root()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StageKind {
    /// An nvcc build: `-G` for the sanitizers (`Flavor::Sanitize`), `-O3 -lineinfo` for correctness
    /// and timing (`Flavor::Timing`).
    Build(Flavor),
    /// The -G build under one compute-sanitizer tool, on the cases marked `sanitize`.
    Sanitize(Tool),
    /// The release build on every case, outputs poisoned first, compared with the reference.
    Correctness,
    /// The same on the instructor's hidden cases (`grade`).
    Hidden,
    /// The same on fresh inputs, after the timed runs (`grade`'s check against cached answers).
    Fresh,
    /// The release build on the bench input under ncu.
    Timing,
    /// The release build on the bench input alone on the GPU, each whole call of the entry point
    /// clocked by the grader (host work and copies included), after the profiler stages. Where
    /// the clock is the call, one call more, not judged, whose copies, launches and syncs the
    /// harness records (their metrics and the lessons' pictures; recording costs the host about
    /// 2 us an operation).
    Call,
    /// A program's release build under ncu with the performance metrics (`sanitize --profile`).
    Profile,
    /// The release build's device code read for clock reads (`cuobjdump -sass`): what a program
    /// that can tell it is watched compiles to, whatever its text hides.
    Sass,
}

impl StageKind {
    /// The stable id reports and recordings use.
    pub fn id(self) -> String {
        match self {
            StageKind::Build(Flavor::Sanitize) => "build-debug".into(),
            StageKind::Build(Flavor::Timing) => "build-release".into(),
            StageKind::Sanitize(t) => format!("sanitize:{t}"),
            StageKind::Correctness => "correctness".into(),
            StageKind::Hidden => "hidden".into(),
            StageKind::Fresh => "fresh".into(),
            StageKind::Timing => "timing".into(),
            StageKind::Call => "call".into(),
            StageKind::Profile => "profile".into(),
            StageKind::Sass => "sass".into(),
        }
    }

    /// Which build the stage runs, if it runs one.
    pub fn needs(self) -> Option<Flavor> {
        match self {
            StageKind::Build(_) => None,
            StageKind::Sanitize(_) => Some(Flavor::Sanitize),
            StageKind::Correctness
            | StageKind::Hidden
            | StageKind::Fresh
            | StageKind::Timing
            | StageKind::Call
            | StageKind::Profile
            | StageKind::Sass => Some(Flavor::Timing),
        }
    }

    /// Whether the stage times the submission (ncu, or the clock of the whole call): it runs as
    /// `check` runs it in every plan, with nothing but the GPU's own settings.
    pub fn timed(self) -> bool {
        matches!(self, StageKind::Timing | StageKind::Call)
    }

    /// Whether the stage needs a GPU (every stage that runs the submission's code does).
    pub fn needs_gpu(self) -> bool {
        !matches!(self, StageKind::Build(_) | StageKind::Sass)
    }

    pub fn resource(self) -> Resource {
        match self {
            StageKind::Build(_) => Resource::Cpu,
            // Beside the GPU stages, as soon as its build is there; it needs no GPU (`needs_gpu`).
            // (The scheduler runs only builds on its CPU slots: a SASS stage there panicked in a
            // grade on an H200, book/gpu-runs/2026-11-29-trust-47/4-bench.)
            StageKind::Sass => Resource::Gpu,
            StageKind::Sanitize(_)
            | StageKind::Correctness
            | StageKind::Hidden
            | StageKind::Fresh => Resource::Gpu,
            StageKind::Timing | StageKind::Profile => Resource::Profiler,
            StageKind::Call => Resource::Exclusive,
        }
    }
}

/// The part a version plays in a timed comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A learner's version (`check`, `grade`).
    Learner,
    /// The reference fix it is compared with.
    Reference,
    /// The untouched exercise (a performance exercise's speedup is over it).
    Original,
    /// `verify`: the reference fix standing in for both (the judge must give it every point).
    Solution,
}

/// The timed stages of one version under `timer`, decided here for every plan. ncu for each
/// version where ncu or the call times it: the kernel time, the counters and the anti-cheat rules
/// (not for an original that hangs: it would hold the profiler's lock for its whole limit). The
/// whole call where the exercise's clock is the call, where the driver times the kernels in it, or
/// where the judge holds a learner's host work to the reference's (`check` and `grade`; `verify`
/// does not); where the clock is the call, that process records the timeline too (`StageKind::Call`).
pub fn timed_kinds(ex: &Exercise, timer: Timer, role: Role) -> Vec<StageKind> {
    let by_call = timer.by_call();
    if role == Role::Original && ex.manifest.hang_timeout().is_some() {
        return Vec::new();
    }
    if timer == Timer::Driver {
        return vec![StageKind::Call];
    }
    let mut kinds = vec![StageKind::Timing];
    if by_call || matches!(role, Role::Learner | Role::Reference) {
        kinds.push(StageKind::Call);
    }
    kinds
}

/// The timed stages a version keeps between plans (`engine::kept`): the original's and the
/// reference fix's profiles; the original's whole call too, where the judged time is ncu's (where
/// it is the call's, the original's call is timed afresh, as the learner's and the reference fix's
/// are: the speedup a check reports compares calls of the same moment, and their timelines come
/// with them). None of the learner's.
pub fn kept_kinds(role: Role, clock: Clock) -> &'static [StageKind] {
    match (role, clock) {
        (Role::Original, Clock::Kernel) => &[StageKind::Timing, StageKind::Call],
        (Role::Original | Role::Reference, _) => &[StageKind::Timing],
        (Role::Learner | Role::Solution, _) => &[],
    }
}

/// How many of the bench's calls run under ncu: every one where ncu's kernel time is the judged
/// time; one where the clock is the whole call, whose time the call timing takes (ncu then gives the
/// counters and the rules' evidence per call: 62-launches' original launches 96 kernels a call,
/// each about 0.25 s under ncu on an H100). Every call profiled costs its launches times ncu's
/// passes (on an H200: 0.4 s a call for 51-coalesce, 3.7 s for 60-scan's original;
/// scripts/gpu-ncu-passes.sh): a bench that launches much repeats less.
pub fn profiled_calls(ex: &Exercise) -> u32 {
    if Timer::profiled(ex).by_call() {
        1
    } else {
        ex.manifest.manifest.bench.repeat.max(1)
    }
}

/// How many times a doubted comparison of whole calls is timed again (`speed::against_reference_call`):
/// each round the reference fix's call timing, then each doubted version's, back to back.
pub const CONFIRMING_ROUNDS: u32 = 2;
/// The first run number of the confirming call timings (`confirming_runs`).
pub const CONFIRMING_RUNS: u32 = 1 << 20;

/// The run numbers of the confirming call timings of batch `batch` (grade's chunk): apart from every
/// other run of the same subjects, whose folders another batch may still be reading.
pub fn confirming_runs(batch: u32) -> impl Iterator<Item = u32> {
    (1..=CONFIRMING_ROUNDS).map(move |round| CONFIRMING_RUNS + batch * CONFIRMING_ROUNDS + round)
}

/// The confirming call timings: per round, the reference fix's, then each doubted subject's.
pub fn confirming_calls(reference: usize, doubted: &[usize], batch: u32) -> Vec<Stage> {
    confirming_runs(batch)
        .flat_map(|run| {
            std::iter::once(reference)
                .chain(doubted.iter().copied())
                .map(move |s| Stage::again(s, StageKind::Call, run))
        })
        .collect()
}

/// What a stage occupies while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// A CPU core (builds).
    Cpu,
    /// A slot on the GPU (sanitizer and program runs; several at once).
    Gpu,
    /// The profiler: after every GPU stage of the same run has finished, so that nothing else
    /// runs kernels while ncu times them.
    Profiler,
    /// The GPU alone, one stage at a time, after the profiler stages: wall-clock timings.
    Exclusive,
}

/// One stage of a plan: a kind over one submission. `run` tells repeats of one kind apart (verify
/// times the solution twice, in two processes).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stage {
    pub subject: usize,
    pub kind: StageKind,
    pub run: u32,
}

impl Stage {
    pub fn new(subject: usize, kind: StageKind) -> Stage {
        Stage {
            subject,
            kind,
            run: 0,
        }
    }
    pub fn again(subject: usize, kind: StageKind, run: u32) -> Stage {
        Stage { subject, kind, run }
    }
    /// "sanitize:racecheck", "timing#1".
    pub fn id(&self) -> String {
        if self.run == 0 {
            self.kind.id()
        } else {
            format!("{}#{}", self.kind.id(), self.run)
        }
    }
}

/// What names the stage a step comes from (`verdict::Step::stage`): a kind, by its id ("timing"),
/// or one stage, run number and all ("timing#1"); the id is never spelled out a second time.
pub trait StageId {
    fn stage_id(&self) -> String;
}

impl StageId for StageKind {
    fn stage_id(&self) -> String {
        self.id()
    }
}

impl StageId for Stage {
    fn stage_id(&self) -> String {
        self.id()
    }
}

impl<T: StageId> StageId for &T {
    fn stage_id(&self) -> String {
        (**self).stage_id()
    }
}

/// The check of a learner's text and device code against the tool-aware rule (`check`): a step of
/// its own, right after the builds, that no stage runs.
pub struct RegionsCheck;

impl StageId for RegionsCheck {
    fn stage_id(&self) -> String {
        "regions".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercise::workbook::Exercise;

    /// 07-leak's manifest with its `[expect]` made a hang's, and its texts as given.
    fn exercise(expect: &str, original: &'static str) -> Exercise {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap();
        let text = std::fs::read_to_string(root.join("exercises/07-leak/exercise.toml")).unwrap();
        let start = text.find("[expect]").unwrap();
        let end = start + text[start..].find("\n\n").unwrap();
        let text = format!("{}{expect}{}", &text[..start], &text[end..]);
        let manifest = crate::exercise::manifest::parse(
            "07-leak",
            std::path::Path::new("exercise.toml"),
            &text,
        )
        .unwrap();
        Exercise {
            manifest,
            original,
            solution: "// the fix\n",
        }
    }

    #[test]
    fn only_the_untouched_hang_exercise_is_held_to_the_hangs_limit() {
        let wb = Workbook::new(std::env::temp_dir(), &[], &[]).unwrap();
        let cases = Cases::default();
        let original = "// ANCHOR: alloc\nwhile (true) {}\n// ANCHOR_END: alloc\n";
        let hang = exercise(
            "[expect]\ndetector = \"hang\"\nregion = \"alloc\"\ntimeout_s = 2",
            original,
        );
        let sub = |ex: &'static Exercise, text: &str| {
            Submission::new(
                &wb,
                "check",
                ex,
                "learner",
                PathBuf::from("leak.cu"),
                text.to_string(),
                &cases,
            )
        };
        let hang: &'static Exercise = Box::leak(Box::new(hang));
        assert_eq!(
            sub(hang, original).hang_limit(),
            Some(std::time::Duration::from_secs(2))
        );
        assert_eq!(
            sub(hang, "// edited\n").hang_limit(),
            None,
            "an edited file keeps the general limits"
        );
        let bounds = crate::engine::stages::Bounds::of(
            &sub(hang, original),
            std::time::Duration::from_secs(60),
        );
        assert_eq!(
            (bounds.limit, bounds.region.as_deref()),
            (
                std::time::Duration::from_secs(2),
                Some("region `alloc` (center.cu:1-3)")
            )
        );
        let leak: &'static Exercise = Box::leak(Box::new(exercise(
            "[expect]\ntool = \"memcheck\"\nkind = \"leak\"\nregion = \"alloc\"",
            original,
        )));
        assert_eq!(
            sub(leak, original).hang_limit(),
            None,
            "not a hang exercise"
        );
        assert_eq!(
            crate::engine::stages::Bounds::of(
                &sub(leak, original),
                std::time::Duration::from_secs(60)
            )
            .limit,
            std::time::Duration::from_secs(60)
        );
    }

    #[test]
    fn only_the_original_and_the_reference_fix_keep_and_no_judged_whole_call_is_kept() {
        let kinds = kept_kinds;
        for clock in [Clock::Kernel, Clock::Call] {
            assert!(
                kinds(Role::Learner, clock).is_empty() && kinds(Role::Solution, clock).is_empty()
            );
            assert!(!kinds(Role::Reference, clock).contains(&StageKind::Call));
            assert!(kinds(Role::Reference, clock).contains(&StageKind::Timing));
        }
        assert!(kinds(Role::Original, Clock::Kernel).contains(&StageKind::Call));
        assert!(
            !kinds(Role::Original, Clock::Call).contains(&StageKind::Call),
            "the speedup over the original compares calls of one moment"
        );
    }
}
