//! `verify`'s report: each exercise's checks, a table of them all, and where the time went.

use std::fmt::Write as _;

use crate::judge::verdict::{Outcome, Status};
use crate::plans::verify::{ExerciseRecord, VerificationRecord};

use super::{indent, step_line, verdict};

pub fn verify_text(record: &VerificationRecord) -> String {
    let mut out = String::new();
    gpu_line(&mut out, record);
    for e in &record.exercises {
        exercise_checks(&mut out, e);
    }
    summary_table(&mut out, record);
    not_applicable_line(&mut out, record);
    let phases = record
        .phases
        .as_ref()
        .map(|p| format!(" ({})", phases_text(p)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\nverify took {:.1} s{phases}; {}",
        record.wall_seconds,
        verdict(&record.outcome)
    );
    if let Some(p) = &record.phases {
        out.push_str(&time_by_kind_text(&p.by_kind));
    }
    if let Some(level) = record.isolation {
        let _ = writeln!(out, "Sandbox: {}", level.describe());
    }
    out
}

/// The GPU verified on, or that there was none.
fn gpu_line(out: &mut String, record: &VerificationRecord) {
    match &record.gpu {
        Some(g) => {
            let _ = writeln!(
                out,
                "GPU: {} ({}), driver {}",
                g.name,
                record.arch,
                record.driver_version.as_deref().unwrap_or("?")
            );
        }
        None => {
            let _ = writeln!(
                out,
                "No GPU: checking manifests, regions and builds ({})",
                record.arch
            );
        }
    }
}

/// An exercise's checks, the details of those that did not pass.
fn exercise_checks(out: &mut String, e: &ExerciseRecord) {
    let _ = writeln!(out, "\n{} - {} [{}]", e.id, e.title, e.label());
    if let Some(why) = &e.not_applicable {
        let _ = writeln!(out, "  [n/a ] not applicable on this GPU: {why}");
    }
    for s in &e.checks {
        step_line(out, s);
    }
    if let Some(p) = &e.plain_run {
        let _ = writeln!(out, "  [info] plain run of the exercise:    {p}");
    }
    for s in e
        .checks
        .iter()
        .filter(|s| s.status != Status::Passed && s.status != Status::Skipped && s.detail.is_some())
    {
        let _ = writeln!(
            out,
            "    {}:\n{}",
            s.name,
            indent(s.detail.as_deref().unwrap_or(""), 6, 20)
        );
    }
}

/// A row per exercise: its tool, what was found, the plain runs, the times, the noise, the outcome.
fn summary_table(out: &mut String, record: &VerificationRecord) {
    let id_w = record
        .exercises
        .iter()
        .map(|e| e.id.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let _ = writeln!(
        out,
        "\n{:<id_w$} {:<10} {:<36} {:<9} {:>11} {:>11} {:>7}  outcome",
        "exercise", "tool", "intended finding", "plain run", "original", "solution", "noise"
    );
    for e in &record.exercises {
        let us = |v: Option<f64>| {
            v.map(|v| format!("{:.1} us", v / 1e3))
                .unwrap_or_else(|| "-".into())
        };
        let _ = writeln!(
            out,
            "{:<id_w$} {:<10} {:<36} {:<9} {:>11} {:>11} {:>7}  {}",
            e.id,
            crate::exercise::manifest::shown_by(e.tool, e.detector),
            e.evidence(),
            plain_runs_cell(e),
            us(e.original_ns()),
            us(e.reference_ns()),
            e.timing
                .as_ref()
                .and_then(|t| t.rerun_ratio.or(t.repeat_spread))
                .or_else(|| e.perf_version("reference").and_then(|v| v.repeat_spread))
                .map(|r| format!("{r:.3}x"))
                .unwrap_or_else(|| "-".into()),
            e.label()
        );
    }
}

/// Right in how many of the plain runs.
fn plain_runs_cell(e: &ExerciseRecord) -> String {
    match (e.plain_runs, e.plain_run_correct) {
        (Some(p), _) => format!("{}/{} right", p.correct, p.runs),
        (None, Some(true)) => "correct".into(),
        (None, Some(false)) => "wrong".into(),
        (None, None) => "-".into(),
    }
}

/// Exercises this GPU cannot run are neither passes nor failures: said once, with the count.
fn not_applicable_line(out: &mut String, record: &VerificationRecord) {
    let na: Vec<&str> = record
        .exercises
        .iter()
        .filter(|e| e.not_applicable.is_some())
        .map(|e| e.id.as_str())
        .collect();
    if !na.is_empty() {
        let applicable = record.exercises.len() - na.len();
        let passed = record
            .exercises
            .iter()
            .filter(|e| e.not_applicable.is_none() && e.outcome == Outcome::Pass)
            .count();
        let _ = writeln!(out, "\n{passed} of {applicable} applicable exercise(s) passed; n/a on this GPU (not counted): {}", na.join(", "));
    }
}

/// Where a plan's time went, a line per kind of stage: "  sanitize:racecheck  66 runs  154.2 s
/// (longest 6.1 s: 30-mbarrier-count original)". Nothing where no stage was clocked.
pub fn time_by_kind_text(by_kind: &[crate::plans::verify::KindTime]) -> String {
    if by_kind.is_empty() {
        return String::new();
    }
    let width = by_kind.iter().map(|k| k.kind.len()).max().unwrap_or(0);
    let mut out = String::from(
        "Where the time went (each run's own seconds; runs overlap, so they add up to more):\n",
    );
    for k in by_kind {
        let _ = writeln!(
            out,
            "  {:<width$}  {:>4} runs  {:>7.1} s  (longest {:.1} s: {})",
            k.kind, k.runs, k.secs, k.longest_secs, k.longest
        );
    }
    out
}

/// "builds done at 3.7 s, sanitizer runs at 13.1 s, judged at 13.4 s, then ncu 14.5 s, whole calls
/// 2.0 s, the timed runs judged in 1.2 s"
pub fn phases_text(p: &crate::plans::verify::Phases) -> String {
    let mut text = format!("builds done at {:.1} s", p.builds_done_at);
    for (what, at) in [
        ("sanitizer runs at", p.runs_done_at),
        ("judged at", p.judged_at),
        ("then ncu", p.timing),
        ("whole calls", p.calls),
        ("the timed runs judged in", p.judging_timed),
    ] {
        if let Some(t) = at {
            text.push_str(&format!(", {what} {t:.1} s"));
        }
    }
    text
}
