//! The verification record: what verify found of each exercise, the machine, its tools, and
//! where the time went.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::scheduler;
use crate::exercise::manifest::{Detector, FindingKind, Tool, Track};
use crate::judge::perf::PerfSummary;
use crate::judge::verdict::{Finding, Outcome, Status, Step, StepName};
use crate::plans::sanitize::ToolStatus;
use crate::tools::gpu::GpuInfo;
use crate::tools::sandbox::Level;
pub const RECORD_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolVersions {
    pub nvcc: Option<String>,
    pub compute_sanitizer: Option<String>,
    pub ncu: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyTiming {
    pub kernels: Vec<String>,
    /// The untouched exercise (None where it crashed or ncu saw no launch).
    pub original_ns: Option<f64>,
    /// The solution.
    pub reference_ns: f64,
    /// The solution again, in a second process: the noise floor of the ratio (--survey only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_ratio: Option<f64>,
    /// The slowest over the fastest of the bench's repeats inside the solution's one ncu process
    /// (none where the bench runs once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_spread: Option<f64>,
    pub speedup_over_original: Option<f64>,
    pub max_ratio_to_reference: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExerciseRecord {
    pub id: String,
    pub title: String,
    pub bug_class: String,
    /// The tool that must flag the untouched exercise (none where the cases are the detector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Tool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_kind: Option<FindingKind>,
    #[serde(default)]
    pub detector: Detector,
    pub region: String,
    pub checks: Vec<Step>,
    /// The finding that shows the exercise fails for its intended reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<Finding>,
    /// What the named tool printed on the untouched exercise (the text a learner sees).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_output: Option<String>,
    /// Whether a plain run of the untouched exercise (-O3) gave right answers: the bug is silent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plain_run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plain_run_correct: Option<bool>,
    /// Plain runs of the untouched exercise, each a fresh process: how often the bug was silent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plain_runs: Option<PlainRuns>,
    /// What each of the four tools said of the untouched exercise: the "which tool catches what"
    /// table of the book is drawn from these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub original_under_tools: Vec<ToolSighting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<VerifyTiming>,
    /// The track (records before the performance track are all bugs).
    #[serde(default)]
    pub track: Track,
    /// A performance exercise: the original, the solution (and a library baseline) under ncu in one
    /// run, with this GPU's measured peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf: Option<PerfSummary>,
    /// Not applicable on this GPU, and why ("needs compute capability 9.0 (Hopper); this GPU, ...
    /// is 8.0"): nothing of it ran but the manifest's checks, and it counts neither as a pass nor
    /// as a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl ExerciseRecord {
    /// "n/a" for an exercise this GPU cannot run, else the outcome's label.
    pub fn label(&self) -> &'static str {
        if self.not_applicable.is_some() {
            "n/a"
        } else {
            self.outcome.label()
        }
    }

    /// The untouched exercise's ncu time, from either track's timing.
    pub fn original_ns(&self) -> Option<f64> {
        self.timing
            .as_ref()
            .and_then(|t| t.original_ns)
            .or_else(|| self.perf_version("original").map(|v| v.nanoseconds))
    }

    /// The solution's ncu time, from either track's timing.
    pub fn reference_ns(&self) -> Option<f64> {
        self.timing
            .as_ref()
            .map(|t| t.reference_ns)
            .or_else(|| self.perf_version("reference").map(|v| v.nanoseconds))
    }

    /// What showed the exercise's problem, in a few words for tables: the tool's record at its
    /// line, the hang or the crash with its region, wrong outputs, or the performance gap.
    pub fn evidence(&self) -> String {
        if let Some(f) = &self.finding {
            return match f.locations.first() {
                Some(l) => format!("{} at {}", f.kind, l.short()),
                None => format!("{} (no line)", f.kind),
            };
        }
        if let Some(r) = self.perf_version("reference") {
            let target = self
                .perf
                .as_ref()
                .map(|p| format!(" (>= {:.2}x)", p.target_speedup))
                .unwrap_or_default();
            return format!("slow: the fix is {:.2}x{target}", r.speedup);
        }
        // The plain runs' own check says it: "5 of 5 plain runs hung: ...".
        let stopped = |name: StepName| {
            self.checks
                .iter()
                .find(|c| c.is(name) && c.status == Status::Passed)
                .is_some()
        };
        match self.detector {
            Detector::WrongOutput => "wrong output (no tool sees it)".into(),
            Detector::Hang if stopped(StepName::ExerciseHangs) => {
                format!("hangs in `{}`", self.region)
            }
            Detector::Crash if stopped(StepName::ExerciseCrashes) => {
                format!("crashes in `{}`", self.region)
            }
            _ => "-".into(),
        }
    }

    /// One version of a performance exercise's record.
    pub fn perf_version(&self, name: &str) -> Option<&crate::judge::perf::VersionPerf> {
        self.perf.as_ref().and_then(|p| p.version(name))
    }
}

/// How many plain runs of the untouched exercise gave right outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlainRuns {
    pub runs: u32,
    pub correct: u32,
    /// Runs that crashed or timed out (neither right nor merely wrong).
    pub failed: u32,
}

/// One tool's verdict on the untouched exercise.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolSighting {
    pub tool: Tool,
    pub status: ToolStatus,
    /// The kinds it reported, each with the region it pointed into ("-" for none).
    pub kinds: Vec<String>,
    /// Whether it reported something inside the exercise's expected region (where the bug is, or
    /// where its tool must point).
    pub in_bug_region: bool,
}

/// How many times `verify --survey` runs each untouched exercise plainly.
pub const PLAIN_RUNS: u32 = 5;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerificationRecord {
    pub schema: u32,
    pub created: String,
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuInfo>,
    pub arch: String,
    /// The sandbox every program ran in (absent in records made before the sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Level>,
    pub driver_version: Option<String>,
    pub tools: ToolVersions,
    pub wall_seconds: f64,
    /// Where the wall time went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<Phases>,
    pub exercises: Vec<ExerciseRecord>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Where the wall time of `verify` went, in seconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Phases {
    /// From the start until every build had finished.
    pub builds_done_at: f64,
    /// From the start until every sanitizer and program run had finished (each starts as soon as
    /// its binary is built, so they overlap the builds); none without a GPU.
    pub runs_done_at: Option<f64>,
    /// From the start until the runs' outputs and findings were judged (the cases compared with
    /// the references, the tools' reports read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_at: Option<f64>,
    /// The ncu phase after them.
    pub timing: Option<f64>,
    /// The whole calls after it (with their timelines, where the clock is the call), one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<f64>,
    /// The judgement of the timed runs after them (each call's outputs compared with the reference
    /// fix's, the rules, the library baselines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judging_timed: Option<f64>,
    /// Where the time went, by kind of stage: each run's own seconds (they overlap).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_kind: Vec<KindTime>,
}

/// The runs of one kind of stage in a plan: how many, their seconds added up, the longest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KindTime {
    /// The stage's id without its run number: "build-debug", "sanitize:racecheck", "timing".
    pub kind: String,
    pub runs: usize,
    pub secs: f64,
    pub longest_secs: f64,
    /// Whose run was the longest: "63-transfers reference".
    pub longest: String,
}

/// `spent` summed by kind of stage, the kind with the most seconds first.
pub fn time_by_kind(spent: &[scheduler::Spent]) -> Vec<KindTime> {
    let mut by: BTreeMap<String, KindTime> = BTreeMap::new();
    for s in spent {
        let Some(kind) = s.kind else { continue };
        let k = by.entry(kind.id()).or_insert_with(|| KindTime {
            kind: kind.id(),
            ..KindTime::default()
        });
        k.runs += 1;
        k.secs += s.secs;
        if s.secs > k.longest_secs {
            k.longest_secs = s.secs;
            let variant = s.stage.split(' ').next().unwrap_or_default();
            k.longest = format!("{} {variant}", s.name);
        }
    }
    let mut all: Vec<KindTime> = by.into_values().collect();
    all.sort_by(|a, b| b.secs.total_cmp(&a.secs));
    all
}

/// The outcome of a verification: the worst of the exercises this GPU can run (one it cannot is
/// n/a, never a failure); skipped where it can run none of them.
pub fn overall(exercises: &[ExerciseRecord]) -> Outcome {
    let applicable: Vec<&ExerciseRecord> = exercises
        .iter()
        .filter(|e| e.not_applicable.is_none())
        .collect();
    match (applicable.is_empty(), exercises.first()) {
        (true, Some(first)) => Outcome::Skipped {
            reason: format!(
                "no exercise applies to this GPU: {}",
                first.not_applicable.clone().unwrap_or_default()
            ),
        },
        _ => Outcome::worst(applicable.iter().map(|e| &e.outcome)),
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::plan::StageKind;

    #[test]
    fn the_time_is_summed_by_kind_of_stage_the_largest_first() {
        let spent = |stage: &str, kind, name: &str, secs| scheduler::Spent {
            stage: stage.into(),
            from_s: 0.0,
            secs,
            kind: Some(kind),
            name: name.into(),
        };
        let racecheck = StageKind::Sanitize(Tool::Racecheck);
        let by = time_by_kind(&[
            spent(
                "original sanitize:racecheck",
                racecheck,
                "30-mbarrier-count",
                6.0,
            ),
            spent("reference sanitize:racecheck", racecheck, "03-race", 1.5),
            spent("reference timing", StageKind::Timing, "63-transfers", 9.5),
            spent("reference call#3", StageKind::Call, "62-launches", 0.5),
            spent("original call", StageKind::Call, "62-launches", 0.25),
        ]);
        let kinds: Vec<(&str, usize, f64)> = by
            .iter()
            .map(|k| (k.kind.as_str(), k.runs, k.secs))
            .collect();
        assert_eq!(
            kinds,
            [
                ("timing", 1, 9.5),
                ("sanitize:racecheck", 2, 7.5),
                ("call", 2, 0.75)
            ]
        );
        assert_eq!(
            (by[1].longest_secs, by[1].longest.as_str()),
            (6.0, "30-mbarrier-count original")
        );
        let text = crate::report::time_by_kind_text(&by);
        assert!(text.contains("  sanitize:racecheck     2 runs      7.5 s  (longest 6.0 s: 30-mbarrier-count original)"), "{text}");
    }
}
