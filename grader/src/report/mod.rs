//! Presentation: check reports, verification records and the learner's progress as text for a
//! terminal. (JSON is the structs themselves, serialised by the CLI.) Colours are ANSI styles in the
//! text; the CLI prints through anstream, which strips them for pipes, NO_COLOR and `--color never`.

use std::fmt::{Display, Write as _};
use std::path::Path;

use anstyle::{AnsiColor, Style};

pub mod gradebook;
pub mod sarif;
pub mod similarity;

use crate::exercise::workbook::Exercise;
use crate::judge::check::CheckReport;
use crate::judge::sanitize::{SanitizeReport, ToolStatus};
use crate::judge::verdict::{self, Finding, Outcome, Status, Step};
use crate::judge::verify::VerificationRecord;
use crate::learner::Progress;

const GOOD: Style = AnsiColor::Green.on_default();
const BAD: Style = AnsiColor::Red.on_default().bold();
const WARN: Style = AnsiColor::Yellow.on_default();
const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();

fn paint(style: Style, text: impl Display) -> String {
    format!("{style}{text}{style:#}")
}

fn mark(status: Status) -> String {
    match status {
        Status::Passed => paint(GOOD, "ok  "),
        Status::Failed => paint(BAD, "FAIL"),
        Status::TimedOut => paint(BAD, "TIME"),
        Status::Hung => paint(BAD, "HUNG"),
        Status::ToolError => paint(WARN, "TOOL"),
        Status::Skipped => paint(WARN, "skip"),
    }
}

fn step_line(out: &mut String, s: &Step) {
    let secs = s.wall_ms as f64 / 1000.0;
    let _ = writeln!(
        out,
        "  [{}] {:<28} {}{}",
        mark(s.status),
        s.name,
        s.summary,
        if s.wall_ms > 0 {
            format!("  ({secs:.1}s)")
        } else {
            String::new()
        }
    );
}

/// A few lines of `path` around `line`, the line itself marked.
pub fn excerpt(text: &str, line: usize, context: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    if line == 0 || line > lines.len() {
        return None;
    }
    let (from, to) = (
        line.saturating_sub(context + 1),
        (line + context).min(lines.len()),
    );
    let mut out = String::new();
    for (i, l) in lines[from..to].iter().enumerate() {
        let n = from + i + 1;
        if n == line {
            let _ = writeln!(
                out,
                "    {} {} | {}",
                paint(BAD, ">"),
                paint(BOLD, format!("{n:>4}")),
                paint(BOLD, l)
            );
        } else {
            let _ = writeln!(out, "      {n:>4} | {l}");
        }
    }
    Some(out)
}

/// The column of the first non-blank character of a line (1-based): the tools give lines, editors
/// want `path:line:col`.
pub(crate) fn first_column(text: &str, line: usize) -> usize {
    text.lines()
        .nth(line.wrapping_sub(1))
        .map(|l| l.chars().take_while(|c| c.is_whitespace()).count() + 1)
        .unwrap_or(1)
}

fn dim3(d: Option<[u32; 3]>) -> String {
    d.map(|[x, y, z]| format!("({x},{y},{z})"))
        .unwrap_or_else(|| "?".into())
}

/// One finding; `text` is the learner's file (when it could be read), for columns and excerpts.
fn finding(out: &mut String, f: &Finding, source: &Path, text: Option<&str>, shown_as: &str) {
    let hazards = f
        .hazards
        .map(|h| format!(", {h} hazards"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\n  {}: {} ({}{hazards})",
        paint(BOLD, format!("{} {}", f.tool, f.kind)),
        f.text,
        crate::tools::sanitizer::records_text(f.records)
    );
    if f.thread.is_some() || f.block.is_some() {
        let _ = writeln!(
            out,
            "    first seen in thread {} of block {}",
            dim3(f.thread),
            dim3(f.block)
        );
    }
    for l in &f.locations {
        let here = Path::new(&l.path).file_name() == source.file_name();
        let shown = if here {
            shown_as.to_string()
        } else {
            l.path.clone()
        };
        let func = l
            .function
            .as_deref()
            .map(|f| format!(" in {f}"))
            .unwrap_or_default();
        let mine = text.filter(|_| here);
        let column = mine.map(|t| first_column(t, l.line as usize)).unwrap_or(1);
        let _ = writeln!(out, "  --> {shown}:{}:{column} ({}{func})", l.line, l.role);
        if let Some(x) = mine.and_then(|t| excerpt(t, l.line as usize, 1)) {
            out.push_str(&x);
        }
    }
}

pub fn check_text(report: &CheckReport, ex: &Exercise, source: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} - {}", report.exercise, report.title);
    if let Some(g) = &report.gpu {
        let _ = writeln!(
            out,
            "  GPU: {} (sm_{}{}, CUDA {})",
            g.name, g.compute_capability.0, g.compute_capability.1, g.driver_cuda_version
        );
    }
    let _ = writeln!(out, "  Sandbox: {}", report.isolation.describe());
    if !report.trust.is_empty() {
        let _ = writeln!(out, "  Trust: {}", report.trust);
    }
    for s in &report.steps {
        step_line(&mut out, s);
    }
    let m = &ex.manifest.manifest;
    // The learner's file, read once for every finding's columns and excerpts.
    let text = if report.findings.is_empty() {
        None
    } else {
        std::fs::read_to_string(source).ok()
    };
    for f in &report.findings {
        finding(&mut out, f, source, text.as_deref(), &report.source);
    }
    // For a bug no tool sees, the plain run is the finding (wrong outputs, the hang, the crash),
    // and it gets the finding's explanation.
    let correctness = report.steps.iter().find(|s| s.name == "correctness");
    let run_shows = correctness.is_some_and(|c| verdict::run_shows(ex.manifest.detector(), c));
    if !report.findings.is_empty() || run_shows {
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
        let _ = writeln!(
            out,
            "  {} book/src/{} (`cargo xtask book --serve` to read it)",
            paint(BOLD, "Lesson:"),
            m.chapter
        );
    }
    for s in report
        .steps
        .iter()
        .filter(|s| s.status != Status::Passed && s.detail.is_some())
    {
        let _ = writeln!(
            out,
            "\n  {}:\n{}",
            s.name,
            indent(s.detail.as_deref().unwrap_or(""), 4, 40)
        );
    }
    if let Some(t) = &report.timing {
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
    if let Some(p) = &report.perf {
        out.push_str(&perf_text(p));
        let _ = writeln!(out, "\n  What it means: {}", m.explain.finding);
        let _ = writeln!(
            out,
            "  {} book/src/{} (`cargo xtask book --serve` to read it)",
            paint(BOLD, "Lesson:"),
            m.chapter
        );
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

/// A performance exercise's versions side by side: time, speedup, the exercise's metrics, the place
/// on this GPU's roofline, and what each metric means.
pub fn perf_text(p: &crate::judge::perf::PerfSummary) -> String {
    let mut out = String::new();
    let peak = &p.peak;
    let clock = match p.clock {
        crate::exercise::manifest::Clock::Kernel => format!(
            "ncu over {} (base clocks, caches flushed; the median of the bench's repeats)",
            p.kernels.join(", ")
        ),
        crate::exercise::manifest::Clock::Call => {
            format!("the whole call of cb_run (the harness's clock, the fastest call after the first, alone on the GPU), with ncu's time of {} beside it", p.kernels.join(", "))
        }
    };
    let _ = writeln!(out, "\n  {clock}, on {}:", peak.device);
    let label_w = p
        .shown
        .iter()
        .map(|m| m.label().len())
        .max()
        .unwrap_or(0)
        .max(20);
    let names: Vec<&str> = p
        .versions
        .iter()
        .map(|v| {
            if v.version == "learner" {
                "yours"
            } else {
                v.version.as_str()
            }
        })
        .collect();
    let row = |out: &mut String, label: &str, cells: Vec<String>| {
        let _ = writeln!(
            out,
            "    {label:<label_w$} {}",
            cells.iter().map(|c| format!("{c:>12}")).collect::<String>()
        );
    };
    row(&mut out, "", names.iter().map(|n| n.to_string()).collect());
    row(
        &mut out,
        "time",
        p.versions
            .iter()
            .map(|v| format!("{:.1} us", v.nanoseconds / 1e3))
            .collect(),
    );
    if p.versions.iter().any(|v| v.kernel_ns.is_some()) {
        row(
            &mut out,
            "kernels (ncu)",
            p.versions
                .iter()
                .map(|v| {
                    v.kernel_ns
                        .map_or("-".into(), |k| format!("{:.1} us", k / 1e3))
                })
                .collect(),
        );
    }
    row(
        &mut out,
        &format!("speedup (target {:.2}x)", p.target_speedup),
        p.versions
            .iter()
            .map(|v| format!("{:.2}x", v.speedup))
            .collect(),
    );
    for &m in &p.shown {
        row(
            &mut out,
            m.label(),
            p.versions
                .iter()
                .map(|v| {
                    if v.metrics.is_empty() {
                        "-".into()
                    } else {
                        m.show(v.metric(m))
                    }
                })
                .collect(),
        );
    }
    let _ = writeln!(
        out,
        "\n  Roofline of this GPU (measured: memcpy {:.0} GB/s, fp32 FMA {:.1} TFLOP/s at ncu's clocks; ridge at {:.1} FLOP/byte):",
        peak.memcpy_gbps,
        peak.fma_ncu_gflops / 1e3,
        peak.ridge()
    );
    for (v, name) in p.versions.iter().zip(&names) {
        if let Some(r) = &v.roofline {
            let bound = if r.intensity < peak.ridge() {
                "memory-bound side"
            } else {
                "compute-bound side"
            };
            let _ = writeln!(out, "    {name:<10} {:>8.3} FLOP/byte {:>10.1} GFLOP/s = {:>5.1}% of the roof ({bound})", r.intensity, r.gflops, 100.0 * r.gflops / r.roof_gflops);
        }
    }
    let _ = writeln!(out, "\n  What the metrics count:");
    for &m in &p.shown {
        let _ = writeln!(out, "    {}: {}.", m.label(), m.plain());
    }
    out
}

/// `peak`: what this GPU measured.
pub fn peak_text(p: &crate::tools::peak::Peak) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({} SMs; driver {}), measured {}",
        p.device,
        p.sms,
        p.driver.as_deref().unwrap_or("?"),
        p.measured
    );
    let _ = writeln!(
        out,
        "  memory bandwidth, read + write (CUDA events, the GPU's own clocks):"
    );
    let _ = writeln!(
        out,
        "    cudaMemcpy device to device  {:>8.1} GB/s   <- 100% of `dram-share`",
        p.memcpy_gbps
    );
    let _ = writeln!(
        out,
        "    float4 copy kernel           {:>8.1} GB/s   ({:.1}% of memcpy)",
        p.copy_kernel_gbps,
        100.0 * p.copy_kernel_gbps / p.memcpy_gbps
    );
    let _ = writeln!(
        out,
        "    the copy kernel under ncu    {:>8.1} GB/s   (base clocks, as every timing)",
        p.copy_kernel_ncu_gbps
    );
    let _ = writeln!(out, "  fp32 FMA throughput:");
    let _ = writeln!(
        out,
        "    CUDA events                  {:>8.1} TFLOP/s",
        p.fma_gflops / 1e3
    );
    let _ = writeln!(out, "    under ncu                    {:>8.1} TFLOP/s <- 100% of `fp32-share` (ncu times at base clocks)", p.fma_ncu_gflops / 1e3);
    let _ = writeln!(out, "  ridge point: {:.1} FLOP per DRAM byte", p.ridge());
    if let Some(c) = &p.pcie {
        let _ = writeln!(out, "  host-device copies, 256 MiB (cudaMemcpy):");
        let _ = writeln!(
            out,
            "    pinned   host to device      {:>8.1} GB/s   device to host {:>6.1} GB/s",
            c.h2d_pinned_gbps, c.d2h_pinned_gbps
        );
        let _ = writeln!(
            out,
            "    pageable host to device      {:>8.1} GB/s   device to host {:>6.1} GB/s",
            c.h2d_pageable_gbps, c.d2h_pageable_gbps
        );
        let _ = writeln!(
            out,
            "    pinned, both ways at once    {:>8.1} GB/s   (the two directions together)",
            c.both_pinned_gbps
        );
    }
    out
}

/// A unified diff, its lines coloured.
pub fn diff_text(diff: &str) -> String {
    if diff.trim().is_empty() {
        return "    (identical)\n".into();
    }
    diff.lines()
        .map(|l| {
            let styled = match l.as_bytes().first() {
                Some(b'+') if !l.starts_with("+++") => paint(GOOD, l),
                Some(b'-') if !l.starts_with("---") => paint(AnsiColor::Red.on_default(), l),
                Some(b'@') => paint(DIM, l),
                _ => l.to_string(),
            };
            format!("    {styled}\n")
        })
        .collect()
}

pub fn verdict(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => paint(GOOD.bold(), "PASS"),
        Outcome::Fail { step } => format!("{} at step `{step}`", paint(BAD, "FAIL")),
        Outcome::ToolError { step, message } => format!(
            "{} at step `{step}`: {message}",
            paint(WARN.bold(), "TOOL ERROR")
        ),
        Outcome::Timeout { step } => format!(
            "{} at step `{step}`: the process group was killed",
            paint(BAD, "TIMEOUT")
        ),
        Outcome::Hung { step, message } => {
            format!("{} at step `{step}`: {message}", paint(BAD, "HUNG"))
        }
        Outcome::NotGradable { reason } => {
            format!("{}: {reason}", paint(WARN.bold(), "NOT GRADABLE"))
        }
        Outcome::Skipped { reason } => format!(
            "{} (exit {}): {reason}",
            paint(WARN.bold(), "SKIPPED"),
            outcome.exit().code()
        ),
    }
}

/// `list`: every exercise, its status, bug class and tool; the next one to do marked.
pub fn list_text(entries: &[crate::learner::ListEntry]) -> String {
    let mut out = String::new();
    let done = entries
        .iter()
        .filter(|e| e.status == Progress::Done)
        .count();
    let _ = writeln!(
        out,
        "{}",
        paint(BOLD, format!("{done} of {} exercises done", entries.len()))
    );
    // Columns as wide as their longest entry.
    let id_w = entries.iter().map(|e| e.id.len()).max().unwrap_or(0).max(2);
    let class_w = entries
        .iter()
        .map(|e| e.bug_class.len())
        .max()
        .unwrap_or(0)
        .max(9);
    let _ = writeln!(
        out,
        "\n     {:<id_w$} {:<8} {:<5} {:<class_w$} {:<10} {:<6} title",
        "id", "status", "track", "what is wrong", "shown by", "hints"
    );
    for (i, e) in entries.iter().enumerate() {
        // A chapter's heading, with how much of it is done, before its first exercise.
        if i == 0 || entries[i - 1].chapter != e.chapter {
            let chapter: Vec<&crate::learner::ListEntry> =
                entries.iter().filter(|x| x.chapter == e.chapter).collect();
            let done = chapter
                .iter()
                .filter(|x| x.status == Progress::Done)
                .count();
            let _ = writeln!(
                out,
                "\n  {} {}",
                paint(BOLD, &e.chapter),
                paint(
                    if done == chapter.len() { GOOD } else { DIM },
                    format!("({done} of {} done)", chapter.len())
                )
            );
        }
        let pointer = if e.next {
            paint(WARN.bold(), "->")
        } else {
            "  ".into()
        };
        let status = if e.status == Progress::Done {
            paint(GOOD, format!("{:<8}", "done"))
        } else {
            format!("{:<8}", if e.edited { "started" } else { "pending" })
        };
        let id = if e.next {
            paint(WARN.bold(), format!("{:<id_w$}", e.id))
        } else {
            format!("{:<id_w$}", e.id)
        };
        let tool = crate::exercise::manifest::shown_by(e.tool, e.detector);
        // An exercise for a newer GPU says which: "sm_90+" after its title.
        let gated = e
            .requires
            .map(|c| format!(" {}", paint(WARN, format!("[{}]", c.tag()))))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {pointer} {id} {status} {:<5} {:<class_w$} {tool:<10} {:<6} {}{gated}",
            e.track.name(),
            e.bug_class,
            format!("{}/{}", e.hints_shown, e.hints_total),
            e.title
        );
    }
    match entries.iter().find(|e| e.next) {
        Some(e) => {
            let _ = writeln!(out, "\nNext: {} (`cargo xtask check {}`, or `cargo xtask watch` to re-check on every save)", paint(BOLD, &e.id), e.id);
        }
        None => {
            let _ = writeln!(out, "\n{}", paint(GOOD.bold(), "Every exercise is done."));
        }
    }
    out
}

/// `hint`: the hints revealed so far, the newest marked.
pub fn hints_text(h: &crate::learner::Hints) -> String {
    let mut out = String::new();
    for (i, text) in h.hints.iter().enumerate() {
        let newest = i + 1 == h.shown && h.revealed_new;
        let label = format!("Hint {} of {}", i + 1, h.total);
        let label = if newest {
            paint(WARN.bold(), label)
        } else {
            paint(DIM, label)
        };
        let _ = writeln!(out, "{label}: {text}\n");
    }
    let _ = match (h.remaining, h.revealed_new) {
        (0, true) => writeln!(out, "That was the last hint for {}.", h.exercise),
        (0, false) => writeln!(
            out,
            "Every hint for {} is shown above; there are no more.",
            h.exercise
        ),
        (1, _) => writeln!(
            out,
            "1 more hint remains: `cargo xtask hint {}`.",
            h.exercise
        ),
        (n, _) => writeln!(
            out,
            "{n} more hints remain: `cargo xtask hint {}`.",
            h.exercise
        ),
    };
    out
}

/// `reset`: what was restored and where the learner's version went.
pub fn reset_text(r: &crate::learner::Reset) -> String {
    match (&r.backup, r.restored) {
        (_, false) => format!("{} is already the original; nothing to do.\n", r.path),
        (Some(b), true) => format!(
            "Saved your version as {b}\nRestored the original {}.\n",
            r.path
        ),
        (None, true) => format!("Restored the original {} (it was missing).\n", r.path),
    }
}

fn indent(text: &str, by: usize, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines
        .iter()
        .take(max_lines)
        .map(|l| format!("{}{l}\n", " ".repeat(by)))
        .collect();
    if lines.len() > max_lines {
        let _ = writeln!(
            out,
            "{}[... {} more lines]",
            " ".repeat(by),
            lines.len() - max_lines
        );
    }
    out
}

pub fn verify_text(record: &VerificationRecord) -> String {
    let mut out = String::new();
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
    for e in &record.exercises {
        let _ = writeln!(out, "\n{} - {} [{}]", e.id, e.title, e.label());
        if let Some(why) = &e.not_applicable {
            let _ = writeln!(out, "  [n/a ] not applicable on this GPU: {why}");
        }
        for s in &e.checks {
            step_line(&mut out, s);
        }
        if let Some(p) = &e.plain_run {
            let _ = writeln!(out, "  [info] plain run of the exercise:    {p}");
        }
        for s in e.checks.iter().filter(|s| {
            s.status != Status::Passed && s.status != Status::Skipped && s.detail.is_some()
        }) {
            let _ = writeln!(
                out,
                "    {}:\n{}",
                s.name,
                indent(s.detail.as_deref().unwrap_or(""), 6, 20)
            );
        }
    }
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
        let found = e.evidence();
        let us = |v: Option<f64>| {
            v.map(|v| format!("{:.1} us", v / 1e3))
                .unwrap_or_else(|| "-".into())
        };
        // Right in how many of the plain runs.
        let plain = match (e.plain_runs, e.plain_run_correct) {
            (Some(p), _) => format!("{}/{} right", p.correct, p.runs),
            (None, Some(true)) => "correct".into(),
            (None, Some(false)) => "wrong".into(),
            (None, None) => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:<id_w$} {:<10} {:<36} {:<9} {:>11} {:>11} {:>7}  {}",
            e.id,
            crate::exercise::manifest::shown_by(e.tool, e.detector),
            found,
            plain,
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
    // Exercises this GPU cannot run are neither passes nor failures: said once, with the count.
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

/// Where a plan's time went, a line per kind of stage: "  sanitize:racecheck  66 runs  154.2 s
/// (longest 6.1 s: 30-mbarrier-count original)". Nothing where no stage was clocked.
pub fn time_by_kind_text(by_kind: &[crate::judge::verify::KindTime]) -> String {
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
pub fn phases_text(p: &crate::judge::verify::Phases) -> String {
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

/// A path as the user would type it: relative to `cwd` where it lies below it.
pub(crate) fn shown_path(path: &str, cwd: &Path) -> String {
    Path::new(path)
        .strip_prefix(cwd)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.to_string())
}

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
    if let Some(g) = &r.gpu {
        let _ = writeln!(
            out,
            "  GPU: {} (sm_{}{}, CUDA {})",
            g.name, g.compute_capability.0, g.compute_capability.1, g.driver_cuda_version
        );
    }
    let _ = writeln!(out, "  Sandbox: {}", r.isolation.describe());
    for s in &r.steps {
        step_line(&mut out, s);
    }
    for t in r.tools.iter().filter(|t| t.status != ToolStatus::NotRun) {
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
    let mut texts: std::collections::BTreeMap<String, Option<String>> =
        std::collections::BTreeMap::new();
    let mut explained = std::collections::BTreeSet::new();
    for (i, m) in r.findings.iter().enumerate() {
        let f = &m.finding;
        let mut one = String::new();
        match f.locations.first() {
            Some(first) => {
                let text = texts
                    .entry(first.path.clone())
                    .or_insert_with(|| std::fs::read_to_string(&first.path).ok())
                    .clone();
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
    for s in r
        .steps
        .iter()
        .filter(|s| s.status != Status::Passed && s.detail.is_some())
    {
        let _ = writeln!(
            out,
            "\n  {}:\n{}",
            s.name,
            indent(s.detail.as_deref().unwrap_or(""), 4, 40)
        );
    }
    if let Some(c) = &r.caveat {
        let _ = writeln!(out, "\n  Note: {c}");
    }
    if let Some(p) = &r.profile {
        let _ = writeln!(out, "\n  {} ({})", paint(BOLD, "Profile"), p.note);
        if let Some(e) = &p.error {
            let _ = writeln!(out, "    {}: {e}", paint(WARN, "no profile"));
        }
        let pct = |v: Option<f64>| v.map(|v| format!("{v:.0}%")).unwrap_or_else(|| "-".into());
        if !p.kernels.is_empty() {
            let _ = writeln!(
                out,
                "    {:<24} {:>8} {:>11} {:>9} {:>9} {:>8} {:>9} {:>7}",
                "kernel",
                "launches",
                "time",
                "sect/req",
                "conflicts",
                "thr/inst",
                "occupancy",
                "dram"
            );
        }
        for k in &p.kernels {
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
        for k in &p.kernels {
            for h in &k.hints {
                let _ = writeln!(out, "    {}: {h}", k.kernel);
            }
        }
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

/// The class at a glance: a row per student, the points of each exercise, the flags.
pub fn gradebook_text(book: &gradebook::Gradebook) -> String {
    use crate::judge::grade::PairState;
    let mut out = String::new();
    let exercises = &book.info.exercises;
    let _ = write!(out, "{:<20}", "student");
    for e in exercises {
        let _ = write!(out, " {:>14}", e);
    }
    let _ = writeln!(out, " {:>9}", "total");
    for s in &book.info.roster.students {
        let _ = write!(out, "{:<20}", s.id);
        let mut notes = Vec::new();
        for e in exercises {
            let cell = match book.results.get(&(s.id.as_str(), e.as_str())) {
                None => "-".to_string(),
                Some(r) => {
                    notes.extend(r.flags.iter().map(|f| format!("{e}: {}", f.rule.key())));
                    match &r.state {
                        PairState::NotSubmitted => "missing".into(),
                        PairState::NotGradable { .. } => "not gradable".into(),
                        PairState::Skipped { .. } => format!("{:.0} (no GPU)", r.points),
                        PairState::ToolError { .. } => "tool error".into(),
                        PairState::Unsupported { .. } => "n/a (GPU)".into(),
                        PairState::Graded => format!("{:.1}/{:.0}", r.points, r.max),
                    }
                }
            };
            let _ = write!(out, " {:>14}", cell);
        }
        let (total, max) = book.total(&s.id);
        let _ = write!(out, " {:>9}", format!("{total:.1}/{max:.0}"));
        if !notes.is_empty() {
            let _ = write!(out, "  {}", paint(WARN, notes.join(", ")));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text without its colours (anstream strips them on the way to a terminal that has none).
    fn plain(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                // CSI: ESC [ ... final byte in @..~
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) && d != '[' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn an_excerpt_marks_its_line_between_its_neighbours_and_refuses_lines_outside_the_file() {
        let source = "a\nb\nc\nd\ne\n";
        let shown = plain(&excerpt(source, 3, 1).unwrap());
        assert_eq!(
            shown.lines().collect::<Vec<_>>(),
            ["         2 | b", "    >    3 | c", "         4 | d"]
        );
        // At the file's ends the context shrinks; past them there is no excerpt.
        assert_eq!(plain(&excerpt(source, 1, 2).unwrap()).lines().count(), 3);
        assert!(excerpt(source, 0, 1).is_none());
        assert!(excerpt(source, 6, 1).is_none());
    }

    #[test]
    fn a_column_is_the_first_non_blank_character_of_its_line() {
        let source = "int a;\n    a = 1;\n\tb;\n";
        assert_eq!(first_column(source, 1), 1);
        assert_eq!(first_column(source, 2), 5);
        assert_eq!(first_column(source, 3), 2);
        // A line the file does not have: column 1, as editors accept.
        assert_eq!(first_column(source, 0), 1);
        assert_eq!(first_column(source, 9), 1);
    }

    #[test]
    fn each_outcome_reads_as_its_word_with_the_step_or_reason() {
        let said = |o: Outcome| plain(&verdict(&o));
        assert_eq!(said(Outcome::Pass), "PASS");
        assert_eq!(
            said(Outcome::Fail {
                step: "racecheck".into()
            }),
            "FAIL at step `racecheck`"
        );
        assert_eq!(
            said(Outcome::Skipped {
                reason: "no GPU".into()
            }),
            "SKIPPED (exit 6): no GPU"
        );
        assert!(said(Outcome::Timeout {
            step: "correctness".into()
        })
        .contains("the process group was killed"));
    }

    #[test]
    fn indented_text_says_how_many_lines_it_left_out() {
        let text = "one\ntwo\nthree\nfour\n";
        assert_eq!(indent(text, 2, 10), "  one\n  two\n  three\n  four\n");
        assert_eq!(indent(text, 2, 2), "  one\n  two\n  [... 2 more lines]\n");
    }
}
