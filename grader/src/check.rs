//! `check`: build the learner's file, run it under its exercise's tool, check its outputs against the
//! Rust reference, time it against the original and the reference fix, and give a verdict.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::context::Context;
use crate::gpu::GpuInfo;
use crate::ncu;
use crate::nvcc::{self, Built, Flavor, Reuse};
use crate::outcome::{Finding, Outcome, Status, Step};
use crate::regions;
use crate::steps::{self, Cases};
use crate::workbook::{Exercise, Workbook};

#[derive(Debug, Clone, Serialize)]
pub struct TimingSummary {
    pub kernels: Vec<String>,
    pub learner_ns: f64,
    pub reference_ns: f64,
    pub original_ns: Option<f64>,
    pub speedup_over_original: Option<f64>,
    pub ratio_to_reference: f64,
    pub max_ratio_to_reference: f64,
    pub command: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub exercise: String,
    pub title: String,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuInfo>,
    pub arch: String,
    pub steps: Vec<Step>,
    pub findings: Vec<Finding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<TimingSummary>,
    /// After a pass (never before): the reference solution as a unified diff against the learner's file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solution_diff: Option<String>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Where a variant of an exercise is built: `.cudabugs/build/<id>/<variant>/<flavor>/<nn>-<variant>`.
pub fn binary_path(wb: &Workbook, ex: &Exercise, variant: &str, flavor: Flavor) -> PathBuf {
    wb.work_dir()
        .join("build")
        .join(ex.id())
        .join(variant)
        .join(flavor.dir_name())
        .join(format!("{}-{variant}", ex.number()))
}

/// Write an embedded source (original or solution) where nvcc can compile it.
pub fn materialise(wb: &Workbook, ex: &Exercise, variant: &str, text: &str) -> std::io::Result<PathBuf> {
    let dir = wb.work_dir().join("build").join(ex.id()).join(variant);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(ex.manifest.source_name());
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
        std::fs::write(&path, text)?;
    }
    Ok(path)
}

pub fn build_step(ctx: &Context, wb: &Workbook, ex: &Exercise, variant: &str, source: &Path, flavor: Flavor, reuse: Reuse, step_name: &str) -> (Step, Option<Built>) {
    match nvcc::build(&ctx.nvcc, &ctx.arch, flavor, &ctx.harness, source, &binary_path(wb, ex, variant, flavor), reuse) {
        Ok(b) => {
            let kept = if b.reused { "; unchanged since the last build, binary kept" } else { "" };
            let s = Step::new(step_name, Status::Passed, format!("nvcc {} ({}){kept}", flavor.flags().join(" "), ctx.arch))
                .command(b.command.clone())
                .wall(b.wall);
            (s, Some(b))
        }
        Err(nvcc::BuildError::Compile { output, exit, .. }) => {
            (Step::new(step_name, Status::Failed, format!("nvcc {}: the file does not compile ({exit})", flavor.flags().join(" "))).detail(output), None)
        }
        Err(nvcc::BuildError::TimedOut(d)) => (Step::new(step_name, Status::TimedOut, format!("nvcc took longer than {d:?}")), None),
        Err(e) => (Step::new(step_name, Status::ToolError, e.to_string()), None),
    }
}

/// Check the learner's version of one exercise. `say` receives progress lines.
pub fn check(ctx: &Context, wb: &Workbook, ex: &Exercise, mut say: impl FnMut(&str)) -> CheckReport {
    let m = &ex.manifest.manifest;
    let learner = wb.learner_path(ex);
    let mut report = CheckReport {
        exercise: ex.id().to_string(),
        title: m.title.clone(),
        source: wb.display_path(&learner),
        gpu: ctx.gpu_info().cloned(),
        arch: ctx.arch.clone(),
        steps: Vec::new(),
        findings: Vec::new(),
        timing: None,
        solution_diff: None,
        outcome: Outcome::Pass,
    };
    let text = match std::fs::read_to_string(&learner) {
        Ok(t) => t,
        Err(e) => {
            report.outcome = Outcome::NotGradable {
                reason: format!("cannot read {}: {e}; `cargo xtask reset {}` restores the original", report.source, ex.id()),
            };
            return report;
        }
    };
    // Regions of the learner's file, for locating findings; a learner may have removed the markers.
    let learner_regions = regions::parse(&text).unwrap_or_default();

    // 1. Both builds of the learner's file, side by side; a file saved unchanged is not rebuilt.
    say(&format!("building {} (-G and -O3 -lineinfo)", report.source));
    let mut built = Vec::new();
    for (step, b) in steps::parallel(&Flavor::BOTH, 2, |&flavor| {
        build_step(ctx, wb, ex, "learner", &learner, flavor, Reuse::IfUnchanged, &format!("build {}", flavor.flags()[0]))
    }) {
        report.steps.push(step);
        built.extend(b);
    }
    if built.len() < 2 {
        return finish(report);
    }
    let (debug, timing) = (&built[0], &built[1]);

    // 2. Everything else needs a GPU.
    if let Some(reason) = ctx.no_gpu_reason() {
        report.steps.push(Step::new("gpu", Status::Skipped, reason));
        return finish(report);
    }
    let cases_dir = wb.work_dir().join("cases").join(ex.id());
    let cases = match steps::prepare_cases(ex, &cases_dir) {
        Ok(c) => c,
        Err(e) => {
            report.steps.push(Step::new("inputs", Status::ToolError, format!("cannot write the inputs: {e}")));
            return finish(report);
        }
    };

    // 3. The exercise's named tool on the -G build.
    let Some(sanitizer) = ctx.tools.sanitizer.clone() else {
        report.steps.push(Step::new(m.expect.tool.name(), Status::ToolError, "compute-sanitizer not found (set CUDABUGS_COMPUTE_SANITIZER or CUDA_HOME)"));
        return finish(report);
    };
    say(&format!("running {} under compute-sanitizer --tool {}", report.source, m.expect.tool));
    let tool = steps::run_tool(&sanitizer, m.expect.tool, debug, &cases, &learner_regions, m.expect.tool.name(), "learner");
    report.findings = tool.findings;
    report.steps.push(tool.step);

    // 4. Correctness, even after a tool failure: "the output was right anyway" is the lesson.
    say("checking the outputs against the Rust reference");
    report.steps.push(steps::run_correctness(timing, &cases, m.tolerance, "correctness", "learner"));
    if report.steps.iter().any(|s| s.status != Status::Passed) {
        return finish(report);
    }

    // 5. Timing against the original and the reference fix, in one ncu session.
    say("timing with ncu: the original, the reference fix and yours");
    let step = time_against_references(ctx, wb, ex, timing, &cases, &mut report);
    report.steps.push(step);
    let mut report = finish(report);
    if report.outcome == Outcome::Pass {
        // Against the text that was graded, read once at the start.
        report.solution_diff = Some(crate::learner::solution_diff(ex, &text));
    }
    report
}

fn time_against_references(ctx: &Context, wb: &Workbook, ex: &Exercise, learner: &Built, cases: &Cases, report: &mut CheckReport) -> Step {
    let m = &ex.manifest.manifest;
    let Some(ncu_path) = ctx.tools.ncu.clone() else {
        return Step::new("timing", Status::ToolError, "ncu not found (set CUDABUGS_NCU or CUDA_HOME)");
    };
    let started = Instant::now();
    // The original and the reference come from this binary: built once, then kept until they change.
    let mut builds = Vec::new();
    for result in steps::parallel(&[("original", ex.original), ("reference", ex.solution)], 2, |&(variant, text)| {
        let source = materialise(wb, ex, variant, text).map_err(|e| format!("cannot write the {variant} source: {e}"))?;
        match build_step(ctx, wb, ex, variant, &source, Flavor::Timing, Reuse::IfUnchanged, variant) {
            (_, Some(b)) => Ok((variant, b)),
            (step, None) => Err(format!("the embedded {variant} does not build: {}", step.summary)),
        }
    }) {
        match result {
            Ok(b) => builds.push(b),
            Err(e) => return Step::new("timing", Status::ToolError, e),
        }
    }
    builds.push(("learner", learner.clone()));
    let targets: Vec<ncu::Target> = builds
        .iter()
        .map(|(v, b)| steps::bench_target(&format!("{}-{v}", ex.number()), b, cases, m, v))
        .collect();
    let csv_dir = wb.work_dir().join("build").join(ex.id()).join("ncu");
    let timing = match ncu::run(&ncu_path, &targets, &csv_dir, ncu::default_jobs(), steps::NCU_TIMEOUT) {
        Ok(t) => t,
        Err(e) => return Step::new("timing", Status::ToolError, e.to_string()).wall(started.elapsed()),
    };
    let name = |v: &str| format!("{}-{v}", ex.number());
    let time_of = |v: &str| timing.nanoseconds(&name(v));
    let (Some(learner_ns), Some(reference_ns)) = (time_of("learner"), time_of("reference")) else {
        let failed = if time_of("reference").is_none() { "reference" } else { "learner" };
        let measured = timing.per_target.get(&name(failed));
        let output = measured.map(|m| m.finished.output()).unwrap_or_default();
        let why = measured.map(|m| m.why_untimed()).unwrap_or_default();
        return Step::new("timing", Status::ToolError, format!("ncu could not time the {failed} version ({why})"))
            .detail(output)
            .command(timing.commands())
            .wall(started.elapsed());
    };
    let original_ns = time_of("original");
    let max_ratio = *m.timing.max_ratio_to_reference.get_ref();
    let summary = TimingSummary {
        kernels: m.timing.kernels.clone(),
        learner_ns,
        reference_ns,
        original_ns,
        speedup_over_original: original_ns.map(|o| o / learner_ns),
        ratio_to_reference: learner_ns / reference_ns,
        max_ratio_to_reference: max_ratio,
        command: timing.commands(),
    };
    let ratio = summary.ratio_to_reference;
    report.timing = Some(summary);
    let (status, verdict) = if ratio <= max_ratio { (Status::Passed, "within") } else { (Status::Failed, "over") };
    Step::new("timing", status, format!("{:.1} us, {ratio:.2}x the reference fix ({verdict} the {max_ratio:.2}x target)", learner_ns / 1e3))
        .command(timing.commands())
        .wall(started.elapsed())
}

fn finish(mut report: CheckReport) -> CheckReport {
    report.outcome = Outcome::from_steps(&report.steps);
    report
}
