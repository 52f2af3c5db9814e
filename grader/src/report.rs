//! Presentation: check reports and verification records as text for a terminal. (JSON is the
//! structs themselves, serialised by the CLI.)

use std::fmt::Write as _;
use std::path::Path;

use crate::check::CheckReport;
use crate::outcome::{Finding, Outcome, Status, Step};
use crate::verify::VerificationRecord;
use crate::workbook::Exercise;

fn mark(status: Status) -> &'static str {
    match status {
        Status::Passed => "ok  ",
        Status::Failed => "FAIL",
        Status::TimedOut => "TIME",
        Status::ToolError => "TOOL",
        Status::Skipped => "skip",
    }
}

fn step_line(out: &mut String, s: &Step) {
    let secs = s.wall_ms as f64 / 1000.0;
    let _ = writeln!(out, "  [{}] {:<28} {}{}", mark(s.status), s.name, s.summary, if s.wall_ms > 0 { format!("  ({secs:.1}s)") } else { String::new() });
}

/// A few lines of `path` around `line`, the line itself marked.
pub fn excerpt(path: &Path, line: usize, context: usize) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    if line == 0 || line > lines.len() {
        return None;
    }
    let (from, to) = (line.saturating_sub(context + 1), (line + context).min(lines.len()));
    let mut out = String::new();
    for (i, l) in lines[from..to].iter().enumerate() {
        let n = from + i + 1;
        let _ = writeln!(out, "    {} {n:>4} | {l}", if n == line { ">" } else { " " });
    }
    Some(out)
}

fn dim3(d: Option<[u32; 3]>) -> String {
    d.map(|[x, y, z]| format!("({x},{y},{z})")).unwrap_or_else(|| "?".into())
}

fn finding(out: &mut String, f: &Finding, source: &Path, shown_as: &str) {
    let hazards = f.hazards.map(|h| format!(", {h} hazards")).unwrap_or_default();
    let _ = writeln!(out, "\n  {} {}: {} ({} record(s){hazards})", f.tool, f.kind, f.text, f.records);
    if f.thread.is_some() || f.block.is_some() {
        let _ = writeln!(out, "    first seen in thread {} of block {}", dim3(f.thread), dim3(f.block));
    }
    for l in &f.locations {
        let here = Path::new(&l.path).file_name() == source.file_name();
        let shown = if here { shown_as.to_string() } else { l.path.clone() };
        let func = l.function.as_deref().map(|f| format!(" in {f}")).unwrap_or_default();
        let _ = writeln!(out, "  --> {shown}:{}:1 ({}{func})", l.line, l.role);
        if here {
            if let Some(x) = excerpt(source, l.line as usize, 1) {
                out.push_str(&x);
            }
        }
    }
}

pub fn check_text(report: &CheckReport, ex: &Exercise, source: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} - {}", report.exercise, report.title);
    if let Some(g) = &report.gpu {
        let _ = writeln!(out, "  GPU: {} (sm_{}{}, CUDA {})", g.name, g.compute_capability.0, g.compute_capability.1, g.driver_cuda_version);
    }
    for s in &report.steps {
        step_line(&mut out, s);
    }
    let m = &ex.manifest.manifest;
    for f in &report.findings {
        finding(&mut out, f, source, &report.source);
    }
    if !report.findings.is_empty() {
        let _ = writeln!(out, "\n  What it means: {}", m.explain.finding);
        if let Some(correct) = report.steps.iter().find(|s| s.name == "correctness") {
            if correct.status == Status::Passed {
                let _ = writeln!(out, "  Yet the outputs were right: {}", m.explain.silent);
            }
        }
        let _ = writeln!(out, "  Lesson: book/src/{}", m.chapter);
    }
    for s in report.steps.iter().filter(|s| s.status != Status::Passed && s.detail.is_some()) {
        let _ = writeln!(out, "\n  {}:\n{}", s.name, indent(s.detail.as_deref().unwrap_or(""), 4, 40));
    }
    if let Some(t) = &report.timing {
        let _ = writeln!(out, "\n  ncu gpu__time_duration.sum over {} (base clocks, per call):", t.kernels.join(", "));
        if let Some(o) = t.original_ns {
            let _ = writeln!(out, "    original   {:>10.1} us", o / 1e3);
        }
        let _ = writeln!(out, "    reference  {:>10.1} us", t.reference_ns / 1e3);
        let _ = writeln!(out, "    yours      {:>10.1} us", t.learner_ns / 1e3);
        if let Some(s) = t.speedup_over_original {
            let _ = writeln!(out, "    speedup over the original: {s:.2}x");
        }
        let _ = writeln!(out, "    ratio to the reference fix: {:.2}x (target <= {:.2}x)", t.ratio_to_reference, t.max_ratio_to_reference);
    }
    let _ = writeln!(out, "\n{}", verdict(&report.outcome));
    out
}

pub fn verdict(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => "PASS".into(),
        Outcome::Fail { step } => format!("FAIL at step `{step}`"),
        Outcome::ToolError { step, message } => format!("TOOL ERROR at step `{step}`: {message}"),
        Outcome::Timeout { step } => format!("TIMEOUT at step `{step}`: the process group was killed"),
        Outcome::NotGradable { reason } => format!("NOT GRADABLE: {reason}"),
        Outcome::Skipped { reason } => format!("SKIPPED (exit {}): {reason}", outcome.exit_code()),
    }
}

fn indent(text: &str, by: usize, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines.iter().take(max_lines).map(|l| format!("{}{l}\n", " ".repeat(by))).collect();
    if lines.len() > max_lines {
        let _ = writeln!(out, "{}[... {} more lines]", " ".repeat(by), lines.len() - max_lines);
    }
    out
}

pub fn verify_text(record: &VerificationRecord) -> String {
    let mut out = String::new();
    match &record.gpu {
        Some(g) => {
            let _ = writeln!(out, "GPU: {} ({}), driver {}", g.name, record.arch, record.driver_version.as_deref().unwrap_or("?"));
        }
        None => {
            let _ = writeln!(out, "No GPU: checking manifests, regions and builds ({})", record.arch);
        }
    }
    for e in &record.exercises {
        let _ = writeln!(out, "\n{} - {} [{}]", e.id, e.title, e.outcome.label());
        for s in &e.checks {
            step_line(&mut out, s);
        }
        if let Some(p) = &e.plain_run {
            let _ = writeln!(out, "  [info] plain run of the exercise:    {p}");
        }
        for s in e.checks.iter().filter(|s| s.status != Status::Passed && s.status != Status::Skipped && s.detail.is_some()) {
            let _ = writeln!(out, "    {}:\n{}", s.name, indent(s.detail.as_deref().unwrap_or(""), 6, 20));
        }
    }
    let _ = writeln!(out, "\n{:<11} {:<10} {:<34} {:<9} {:>11} {:>11} {:>7}  outcome", "exercise", "tool", "intended finding", "plain run", "original", "solution", "rerun");
    for e in &record.exercises {
        let found = e
            .finding
            .as_ref()
            .map(|f| {
                let at = f.locations.first().map(|l| format!("{}:{}", Path::new(&l.path).file_name().unwrap_or_default().to_string_lossy(), l.line)).unwrap_or_default();
                format!("{} {at}", f.kind)
            })
            .unwrap_or_else(|| "-".into());
        let us = |v: Option<f64>| v.map(|v| format!("{:.1} us", v / 1e3)).unwrap_or_else(|| "-".into());
        let plain = match e.plain_run_correct {
            Some(true) => "correct",
            Some(false) => "wrong",
            None => "-",
        };
        let _ = writeln!(
            out,
            "{:<11} {:<10} {:<34} {:<9} {:>11} {:>11} {:>7}  {}",
            e.id,
            e.tool.name(),
            found,
            plain,
            us(e.timing.as_ref().and_then(|t| t.original_ns)),
            us(e.timing.as_ref().map(|t| t.reference_ns)),
            e.timing.as_ref().map(|t| format!("{:.3}x", t.rerun_ratio)).unwrap_or_else(|| "-".into()),
            e.outcome.label()
        );
    }
    let _ = writeln!(out, "\nverify took {:.1} s; {}", record.wall_seconds, verdict(&record.outcome));
    out
}
