//! `sanitize`'s report as text (`sarif` writes the same report for editors).

use std::fmt::Write as _;
use std::path::Path;

use crate::plans::sanitize::{
    KernelProfile, MergedFinding, ProfileReport, SanitizeReport, ToolStatus, ToolSummary,
};

use super::{
    failed_step_details, finding, gpu_and_sandbox, paint, shown_path, step_line, verdict,
    SourceTexts, BAD, BOLD, GOOD, WARN,
};

/// `sanitize`'s report: a line per tool, then every finding with its source, what it means, and
/// which follow from which.
pub fn sanitize_text(r: &SanitizeReport, cwd: &Path) -> String {
    let mut out = String::new();
    let program = r.program.replace(&format!("{}/", cwd.display()), "");
    let _ = writeln!(
        out,
        "sanitize {program}{}",
        if r.args.is_empty() {
            String::new()
        } else {
            format!(" -- {}", r.args.join(" "))
        }
    );
    gpu_and_sandbox(&mut out, r.gpu.as_ref(), Some(&r.isolation));
    for s in &r.steps {
        step_line(&mut out, s);
    }
    for t in r.tools.iter().filter(|t| t.status != ToolStatus::NotRun) {
        tool_line(&mut out, t);
    }
    findings_text(&mut out, &r.findings, cwd);
    failed_step_details(&mut out, &r.steps, None);
    if let Some(c) = &r.caveat {
        let _ = writeln!(out, "\n  Note: {c}");
    }
    if let Some(p) = &r.profile {
        profile_text(&mut out, p);
    }
    let kinds = r
        .findings
        .iter()
        .filter(|m| m.follow_on_of.is_none())
        .count();
    let _ = writeln!(
        out,
        "\n{}{}",
        verdict(&r.outcome),
        if kinds > 0 {
            format!(": {kinds} finding(s) to fix")
        } else {
            String::new()
        }
    );
    out
}

/// A tool that ran: how it ended, what it said, how long it took.
fn tool_line(out: &mut String, t: &ToolSummary) {
    let status = match t.status {
        ToolStatus::Clean => paint(GOOD, "clean"),
        ToolStatus::Findings => paint(BAD, format!("{} finding(s)", t.findings)),
        ToolStatus::Crashed => paint(BAD, "crashed"),
        ToolStatus::TimedOut => paint(WARN, "timed out"),
        ToolStatus::ToolError => paint(WARN, "tool error"),
        ToolStatus::NotRun => String::new(),
    };
    let wall = if t.wall_ms > 0 {
        format!("  ({:.1}s)", t.wall_ms as f64 / 1e3)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  {:<10} {status:<12} {}{wall}",
        t.tool.name(),
        t.summary
    );
}

/// Every finding, numbered, with where it was seen and what it follows from (or, the first of its
/// kind, what it means).
fn findings_text(out: &mut String, findings: &[MergedFinding], cwd: &Path) {
    let mut texts = SourceTexts::default();
    let mut explained = std::collections::BTreeSet::new();
    for (i, m) in findings.iter().enumerate() {
        let f = &m.finding;
        let mut one = String::new();
        match f.locations.first() {
            Some(first) => {
                let text = texts.get(&first.path);
                finding(
                    &mut one,
                    f,
                    Path::new(&first.path),
                    text.as_deref(),
                    &shown_path(&first.path, cwd),
                );
            }
            None => finding(&mut one, f, Path::new(""), None, ""),
        }
        // The finding's number on its first line: "[2] memcheck api-error: ...".
        out.push_str(&one.replacen("\n  ", &format!("\n  [{}] ", i + 1), 1));
        if f.threads > 1 || f.blocks > 1 {
            let _ = writeln!(
                out,
                "    seen in {} thread(s) of {} block(s)",
                f.threads, f.blocks
            );
        }
        match m.follow_on_of {
            Some(k) => {
                let _ = writeln!(
                    out,
                    "    {} [{}]: fix that one first",
                    paint(BOLD, "Follows from"),
                    k + 1
                );
            }
            None if explained.insert(f.kind) => {
                let _ = writeln!(out, "    What it means: {}", m.explanation);
            }
            None => {}
        }
    }
}

/// `--profile`: a row per kernel under ncu, then what its numbers suggest.
fn profile_text(out: &mut String, p: &ProfileReport) {
    let _ = writeln!(out, "\n  {} ({})", paint(BOLD, "Profile"), p.note);
    if let Some(e) = &p.error {
        let _ = writeln!(out, "    {}: {e}", paint(WARN, "no profile"));
    }
    if !p.kernels.is_empty() {
        let _ = writeln!(
            out,
            "    {:<24} {:>8} {:>11} {:>9} {:>9} {:>8} {:>9} {:>7}",
            "kernel", "launches", "time", "sect/req", "conflicts", "thr/inst", "occupancy", "dram"
        );
    }
    for k in &p.kernels {
        kernel_row(out, k);
    }
    for k in &p.kernels {
        for h in &k.hints {
            let _ = writeln!(out, "    {}: {h}", k.kernel);
        }
    }
}

fn kernel_row(out: &mut String, k: &KernelProfile) {
    let pct = |v: Option<f64>| v.map(|v| format!("{v:.0}%")).unwrap_or_else(|| "-".into());
    let _ = writeln!(
        out,
        "    {:<24} {:>8} {:>8.1} us {:>9} {:>9} {:>8} {:>9} {:>7}",
        k.kernel,
        k.launches,
        k.time_ns / 1e3,
        k.sectors_per_request
            .map(|s| format!("{s:.1}"))
            .unwrap_or_else(|| "-".into()),
        k.bank_conflicts
            .map(|c| format!("{c:.0}"))
            .unwrap_or_else(|| "-".into()),
        k.threads_per_instruction
            .map(|t| format!("{t:.1}"))
            .unwrap_or_else(|| "-".into()),
        pct(k.occupancy_pct),
        pct(k.dram_pct_of_peak)
    );
}
