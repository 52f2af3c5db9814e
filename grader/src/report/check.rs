//! `check`'s report: the steps, every finding with its source, what it means, the timing of a
//! performance exercise, the reference solution's diff and the verdict.

use std::fmt::Write as _;
use std::path::Path;

use crate::exercise::manifest::Manifest;
use crate::exercise::workbook::Exercise;
use crate::judge::verdict::{self, Status, StepName};
use crate::plans::check::{CheckReport, TimingSummary};

use super::{
    diff_text, failed_step_details, finding, gpu_and_sandbox, paint, perf_text, step_line, verdict,
    BOLD,
};

pub fn check_text(report: &CheckReport, ex: &Exercise, source: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} - {}", report.exercise, report.title);
    gpu_and_sandbox(&mut out, report.gpu.as_ref(), &report.isolation);
    if !report.trust.is_empty() {
        let _ = writeln!(out, "  Trust: {}", report.trust);
    }
    for s in &report.steps {
        step_line(&mut out, s);
    }
    let m = &ex.manifest.manifest;
    findings_text(&mut out, report, source);
    explanation_text(&mut out, report, ex);
    failed_step_details(&mut out, &report.steps);
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
    out
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
