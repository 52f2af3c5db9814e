//! `check`'s report: the steps, every finding with its source, what it means, the timing of a
//! performance exercise, the reference solution's diff and the verdict.

use std::fmt::Write as _;
use std::path::Path;

use crate::exercise::manifest::Manifest;
use crate::exercise::workbook::Exercise;
use crate::judge::verdict::{self, Outcome, Status, StepName};
use crate::plans::check::{CheckReport, TimingSummary};
use crate::tools::sandbox::Level;

use super::{
    diff_text, failed_step_details, finding, gpu_and_sandbox, paint, perf_text, step_line, verdict,
    BOLD,
};

/// How `check`'s report is shown to the learner who ran it.
#[derive(Debug, Clone, Default)]
pub struct CheckView {
    /// The learner's file as they would open it from where they stand
    /// (`exercises/03-race/reduce.cu`); compiler diagnostics name it so. None: as nvcc said it.
    pub source_shown: Option<String>,
    /// The sandbox and trust lines too (`--verbose`); without, the sandbox only where it is weaker
    /// than the full one.
    pub verbose: bool,
    /// How the learner types the command (`cargo xtask`), for what to do next.
    pub command: String,
    /// The exercise's lesson, as a path from where they stand.
    pub lesson: String,
    /// Recordings of this exercise's tool runs (paths from where they stand), for
    /// `--replay-tools` where there is no GPU.
    pub recordings: Vec<String>,
}

/// The report as a reference: every line (`--verbose`), nvcc's names as it gave them.
pub fn check_text(report: &CheckReport, ex: &Exercise, source: &Path) -> String {
    let view = CheckView {
        verbose: true,
        command: "cargo xtask".into(),
        lesson: format!("book/src/{}", ex.manifest.manifest.chapter),
        ..CheckView::default()
    };
    check_text_for(report, ex, source, &view)
}

/// The report for the learner, as `view` says.
pub fn check_text_for(
    report: &CheckReport,
    ex: &Exercise,
    source: &Path,
    view: &CheckView,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} - {}", report.exercise, report.title);
    // The full sandbox goes without saying, but for `--verbose`.
    let sandbox =
        (view.verbose || report.isolation != Level::Namespaces).then_some(&report.isolation);
    gpu_and_sandbox(&mut out, report.gpu.as_ref(), sandbox);
    if view.verbose && !report.trust.is_empty() {
        let _ = writeln!(out, "  Trust: {}", report.trust);
    }
    for s in &report.steps {
        step_line(&mut out, s);
    }
    let m = &ex.manifest.manifest;
    findings_text(&mut out, report, source);
    explanation_text(&mut out, report, ex);
    let rename = view
        .source_shown
        .as_deref()
        .map(|shown| (ex.manifest.source_name(), shown));
    failed_step_details(&mut out, &report.steps, rename);
    if let Some(t) = &report.timing {
        timing_text(&mut out, t);
    }
    if let Some(p) = &report.perf {
        out.push_str(&perf_text(p));
        let _ = writeln!(out, "\n  What it means: {}", m.explain.finding);
        lesson_line(&mut out, m);
    }
    if let Some(diff) = &report.solution_diff {
        let _ = writeln!(
            out,
            "\n  The reference solution, as a diff against your file:"
        );
        out.push_str(&diff_text(diff));
    }
    let _ = writeln!(out, "\n{}", verdict(&report.outcome));
    if matches!(report.outcome, Outcome::Skipped { .. }) {
        what_now(&mut out, &report.exercise, view);
    }
    out
}

/// After SKIPPED: what the learner can do on this machine.
fn what_now(out: &mut String, id: &str, view: &CheckView) {
    let cmd = &view.command;
    let _ = writeln!(out, "\nWhat you can do here:");
    let _ = writeln!(out, "  - read the next hint: {cmd} hint {id}");
    let _ = writeln!(
        out,
        "  - read the lesson: {} (or all the book: {cmd} book --serve)",
        view.lesson
    );
    for r in &view.recordings {
        let name = Path::new(r)
            .file_name()
            .map_or(r.clone(), |n| n.to_string_lossy().into_owned());
        let _ = writeln!(
            out,
            "  - see what the tools said on a GPU of the version recorded in `{name}` (your file is still built): {cmd} --replay-tools {r} check {id}"
        );
    }
}

/// Every finding, with its place in the learner's file.
fn findings_text(out: &mut String, report: &CheckReport, source: &Path) {
    // The learner's file, read once for every finding's columns and excerpts.
    let text = if report.findings.is_empty() {
        None
    } else {
        std::fs::read_to_string(source).ok()
    };
    for f in &report.findings {
        finding(out, f, source, text.as_deref(), &report.source);
    }
}

/// What the findings mean, how the plain run compares, and the lesson to read.
fn explanation_text(out: &mut String, report: &CheckReport, ex: &Exercise) {
    let m = &ex.manifest.manifest;
    // For a bug no tool sees, the plain run is the finding (wrong outputs, the hang, the crash),
    // and it gets the finding's explanation.
    let correctness = report.steps.iter().find(|s| s.is(StepName::Correctness));
    let run_shows = correctness.is_some_and(|c| verdict::run_shows(ex.manifest.detector(), c));
    if report.findings.is_empty() && !run_shows {
        return;
    }
    let _ = writeln!(out, "\n  What it means: {}", m.explain.finding);
    match correctness {
        _ if report.findings.is_empty() => {}
        Some(c) if c.status == Status::Passed => {
            let _ = writeln!(
                out,
                "  {} {}",
                paint(BOLD, "Yet the outputs were right:"),
                m.explain.silent
            );
        }
        Some(c) => {
            let _ = writeln!(
                out,
                "  {} {}",
                paint(BOLD, "And the plain run was wrong too:"),
                c.summary
            );
        }
        None => {}
    }
    lesson_line(out, m);
}

/// The book chapter that teaches the exercise's bug.
fn lesson_line(out: &mut String, m: &Manifest) {
    let _ = writeln!(
        out,
        "  {} book/src/{} (`cargo xtask book --serve` to read it)",
        paint(BOLD, "Lesson:"),
        m.chapter
    );
}

/// ncu's times of the original, the reference fix and the learner's version.
fn timing_text(out: &mut String, t: &TimingSummary) {
    let _ = writeln!(
        out,
        "\n  ncu gpu__time_duration.sum over {} (base clocks, per call):",
        t.kernels.join(", ")
    );
    if let Some(o) = t.original_ns {
        let _ = writeln!(out, "    original   {:>10.1} us", o / 1e3);
    }
    let _ = writeln!(out, "    reference  {:>10.1} us", t.reference_ns / 1e3);
    let _ = writeln!(out, "    yours      {:>10.1} us", t.learner_ns / 1e3);
    if let Some(s) = t.speedup_over_original {
        let _ = writeln!(out, "    speedup over the original: {s:.2}x");
    }
    let _ = writeln!(
        out,
        "    ratio to the reference fix: {:.2}x (target <= {:.2}x)",
        t.ratio_to_reference, t.max_ratio_to_reference
    );
}
