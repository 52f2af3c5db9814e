//! What a plan is made of: submissions (one version of an exercise's source, in a work folder of its
//! own) and typed stages with stable ids. `check`, `verify` (and later `grade` and `sanitize`) are
//! lists of stages over submissions; the scheduler runs any such list.

use std::path::PathBuf;

use crate::exercise::cases::Cases;
use crate::exercise::manifest::Tool;
use crate::exercise::regions::Region;
use crate::exercise::workbook::{Exercise, Workbook};
use crate::tools::nvcc::{Flavor, Reuse};

/// One version of an exercise's source, graded in its own work folder. The text is copied into
/// that folder before anything reads it, so what is built is exactly what was graded, and each
/// submission's binaries, outputs, HOME and TMPDIR stay apart from every other's.
#[derive(Debug)]
pub struct Submission<'a> {
    pub exercise: &'a Exercise,
    /// "learner", "original", "reference" (later: a student's name).
    pub variant: String,
    /// Where the text came from, for messages and for the learner's report.
    pub origin: PathBuf,
    pub text: String,
    pub regions: Vec<Region>,
    /// `.cudabugs/work/<plan>/<exercise>/<variant>`: the only folder its code may write.
    pub work: PathBuf,
    pub reuse: Reuse,
    pub cases: &'a Cases,
}

impl<'a> Submission<'a> {
    pub fn new(wb: &Workbook, plan: &str, exercise: &'a Exercise, variant: &str, origin: PathBuf, text: String, reuse: Reuse, cases: &'a Cases) -> Submission<'a> {
        let regions = crate::exercise::regions::parse(&text).unwrap_or_default();
        Submission { exercise, variant: variant.to_string(), origin, text, regions, work: work_root(wb).join(plan).join(exercise.id()).join(variant), reuse, cases }
    }

    /// The copy of the text that nvcc compiles.
    pub fn source(&self) -> PathBuf {
        self.work.join(self.exercise.manifest.source_name())
    }

    /// The name ncu and recordings know it by: "03-learner".
    pub fn label(&self) -> String {
        format!("{}-{}", self.exercise.number(), self.variant)
    }

    pub fn binary(&self, flavor: Flavor) -> PathBuf {
        self.work.join(flavor.dir_name()).join(self.label())
    }
}

/// Where every submission's work folder lives; hidden from every sandboxed run but its own folder.
pub fn work_root(wb: &Workbook) -> PathBuf {
    wb.work_dir().join("work")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StageKind {
    /// nvcc -G, for the sanitizers.
    BuildDebug,
    /// nvcc -O3 -lineinfo, for correctness and timing.
    BuildRelease,
    /// The -G build under one compute-sanitizer tool, on the cases marked `sanitize`.
    Sanitize(Tool),
    /// The release build on every case, outputs poisoned first, compared with the reference.
    Correctness,
    /// The release build on the bench input under ncu.
    Timing,
}

impl StageKind {
    /// The stable id reports and recordings use.
    pub fn id(self) -> String {
        match self {
            StageKind::BuildDebug => "build-debug".into(),
            StageKind::BuildRelease => "build-release".into(),
            StageKind::Sanitize(t) => format!("sanitize:{t}"),
            StageKind::Correctness => "correctness".into(),
            StageKind::Timing => "timing".into(),
        }
    }

    /// Which build the stage runs, if it runs one.
    pub fn needs(self) -> Option<Flavor> {
        match self {
            StageKind::BuildDebug | StageKind::BuildRelease => None,
            StageKind::Sanitize(_) => Some(Flavor::Sanitize),
            StageKind::Correctness | StageKind::Timing => Some(Flavor::Timing),
        }
    }

    pub fn resource(self) -> Resource {
        match self {
            StageKind::BuildDebug | StageKind::BuildRelease => Resource::Cpu,
            StageKind::Sanitize(_) | StageKind::Correctness => Resource::Gpu,
            StageKind::Timing => Resource::Profiler,
        }
    }

    pub fn build(flavor: Flavor) -> StageKind {
        match flavor {
            Flavor::Sanitize => StageKind::BuildDebug,
            Flavor::Timing => StageKind::BuildRelease,
        }
    }
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
        Stage { subject, kind, run: 0 }
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
