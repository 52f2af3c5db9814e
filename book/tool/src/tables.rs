//! The tables over the whole record: every exercise's verdict, which tool flagged which bug, and
//! a second GPU's record beside the book's.

use std::fmt::Write as _;

use anyhow::{bail, Result};
use grader::exercise::manifest::Tool;
use grader::plans::sanitize::ToolStatus;
use grader::plans::verify::{ExerciseRecord, VerificationRecord};

use crate::record::{machine, plain_runs_text, stopped, us};
use crate::Exercise;

/// The exercises of the catalog the record does not cover, said under a table drawn from it.
pub(crate) fn unrecorded(record: &VerificationRecord, exercises: &[Exercise], up: &str) -> String {
    let missing: Vec<String> = exercises
        .iter()
        .filter(|e| !record.exercises.iter().any(|r| r.id == e.id))
        .map(|e| format!("[{}]({up}{})", e.id, e.chapter))
        .collect();
    if missing.is_empty() {
        return String::new();
    }
    format!(
        "\nNot yet run on a GPU (newer than this record, so not in the table): {}.\n",
        missing.join(", ")
    )
}

/// Which tool flagged each untouched exercise, from the record: a "which tool catches what, on
/// this GPU" table that nobody writes by hand.
pub(crate) fn render_tool_matrix(record: &VerificationRecord, up: &str) -> Result<String> {
    if record
        .exercises
        .iter()
        .all(|e| e.original_under_tools.is_empty())
    {
        bail!("the verification record has no survey of the untouched exercises: make it with `cargo xtask verify --survey --record book/verification.json` on a GPU");
    }
    let mut out = String::new();
    let tools = Tool::ALL;
    let _ = write!(out, "| exercise | bug class |");
    for t in tools {
        let _ = write!(out, " {t} |");
    }
    let _ = writeln!(
        out,
        " plain runs right |\n| --- | --- |{}",
        " --- |".repeat(tools.len() + 1)
    );
    let mut unseen = Vec::new();
    // The performance track has no bug to catch: its originals are clean by design.
    for e in record
        .exercises
        .iter()
        .filter(|e| e.track == grader::exercise::manifest::Track::Bug)
    {
        let _ = write!(
            out,
            "| [{}]({up}lessons/{}.md) | {} |",
            e.id, e.id, e.bug_class
        );
        let mut any = false;
        for t in tools {
            let (cell, flagged) = tool_cell(e, t);
            any |= flagged;
            let _ = write!(out, " {cell} |");
        }
        let plain = e
            .plain_runs
            .map(|p| format!("{} of {}", p.correct, p.runs))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(out, " {plain} |");
        if !any && !e.original_under_tools.is_empty() {
            unseen.push(format!(
                "[{}]({up}lessons/{}.md) ({})",
                e.id, e.id, e.bug_class
            ));
        }
    }
    if unseen.is_empty() {
        let _ = writeln!(
            out,
            "\nEvery bug class here was flagged by at least one tool."
        );
    } else {
        let _ = writeln!(
            out,
            "\nNo tool flagged: {}. The cases, run plainly, are what catches these.",
            unseen.join(", ")
        );
    }
    Ok(out)
}

/// What tool `t` made of the untouched exercise `e`, as the matrix shows it, and whether it flagged
/// the bug (in the marked region).
fn tool_cell(e: &ExerciseRecord, t: Tool) -> (String, bool) {
    let cell = match e.original_under_tools.iter().find(|s| s.tool == t) {
        None => "not run".to_string(),
        Some(s) if s.in_bug_region => {
            // The kind it reported in that region ("out-of-bounds in bug").
            // A kind whose records name no line (a device-heap leak) is "in -".
            let kind = s
                .kinds
                .iter()
                .find_map(|k| k.strip_suffix(&format!(" in {}", e.region)))
                .or_else(|| s.kinds.iter().find_map(|k| k.strip_suffix(" in -")))
                .unwrap_or_default();
            return (format!("**flags it** ({kind})"), true);
        }
        Some(s) => match s.status {
            ToolStatus::Clean => "silent".to_string(),
            ToolStatus::Findings => format!(
                "elsewhere: {}",
                s.kinds
                    .iter()
                    .map(|k| k
                        .strip_suffix(" in -")
                        .map_or(k.clone(), |kind| format!("{kind} (no line)")))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            ToolStatus::Crashed => "no record; the program failed".to_string(),
            ToolStatus::TimedOut => "did not finish".to_string(),
            ToolStatus::ToolError => "the tool failed".to_string(),
            ToolStatus::NotRun => "not run".to_string(),
        },
    };
    (cell, false)
}

pub(crate) fn render_summary(record: &VerificationRecord, up: &str, learners: bool) -> String {
    let mut out = String::new();
    let what = if learners { "bug" } else { "intended finding" };
    let _ = writeln!(out, "| exercise | tool | {what} | plain run | original | fix | outcome |\n| --- | --- | --- | --- | --- | --- | --- |");
    for e in &record.exercises {
        let found = match (learners, e.bug_class.is_empty()) {
            (true, false) => e.bug_class.clone(),
            (true, true) => "too slow".into(),
            (false, _) => e.evidence(),
        };
        let plain = match (e.plain_runs, e.plain_run_correct) {
            (Some(p), _) => plain_runs_text(&p, stopped(e)),
            (None, Some(true)) => "right (silent)".into(),
            (None, Some(false)) => "wrong".into(),
            (None, None) => "-".into(),
        };
        let _ = writeln!(
            out,
            "| [{}]({up}lessons/{}.md) | {} | {found} | {plain} | {} | {} | {} |",
            e.id,
            e.id,
            grader::exercise::manifest::shown_by(e.tool, e.detector),
            e.original_ns().map(us).unwrap_or_else(|| stopped(e).into()),
            e.reference_ns().map(us).unwrap_or_else(|| "-".into()),
            e.outcome.label()
        );
    }
    let phases = record
        .phases
        .as_ref()
        .map(|p| format!(" ({})", grader::report::phases_text(p)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\n`cargo xtask verify` took {:.1} s over these exercises{phases}.",
        record.wall_seconds
    );
    out
}

/// What a verdict is made of, to set two GPUs' records side by side: the outcome, the intended
/// finding (kind, tool, file and line; for the performance track only that the original is slow,
/// its speedup being a measurement), which tools saw the untouched file and how often its plain
/// runs were right.
fn verdict_key(e: &ExerciseRecord) -> String {
    let sightings: Vec<String> = e
        .original_under_tools
        .iter()
        .map(|s| format!("{}:{:?}:{}", s.tool, s.status, s.kinds.join("+")))
        .collect();
    let finding = if e.track == grader::exercise::manifest::Track::Perf {
        "slow".into()
    } else {
        e.evidence()
    };
    format!(
        "{} | {finding} | {} | {}",
        e.label(),
        sightings.join(","),
        e.plain_runs
            .map(|p| plain_runs_text(&p, stopped(e)))
            .unwrap_or_default()
    )
}

/// "H100" for "NVIDIA H100 80GB HBM3": the model, for table headings.
fn gpu_name(record: &VerificationRecord) -> String {
    let name = record
        .gpu
        .as_ref()
        .map(|g| g.name.as_str())
        .unwrap_or("no GPU");
    name.strip_prefix("NVIDIA ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or(name)
        .to_string()
}

/// `{{#cudabugs-second-gpu FILE}}`: another GPU's record of the catalog beside the book's: how many
/// verdicts are the same, every one that is not, and each exercise's times on both.
pub(crate) fn render_second_gpu(record: &VerificationRecord, other: &VerificationRecord) -> String {
    let (a, b) = (gpu_name(record), gpu_name(other));
    let mut out = machine(other);
    let both: Vec<(&ExerciseRecord, &ExerciseRecord)> = record
        .exercises
        .iter()
        .filter_map(|e| {
            other
                .exercises
                .iter()
                .find(|o| o.id == e.id)
                .map(|o| (e, o))
        })
        .collect();
    let same = both
        .iter()
        .filter(|(e, o)| verdict_key(e) == verdict_key(o))
        .count();
    let _ = writeln!(
        out,
        "
{same} of {} exercises got the same verdict on both GPUs: the same outcome, the same intended finding at the same line, the same tools seeing the untouched file and as many right plain runs.
",
        both.len()
    );
    for (e, o) in both
        .iter()
        .filter(|(e, o)| verdict_key(e) != verdict_key(o))
    {
        let _ = writeln!(
            out,
            "- **{}** differs: {a}: {}; {b}: {}",
            e.id,
            verdict_key(e),
            verdict_key(o)
        );
    }
    let _ = writeln!(out, "
| exercise | intended finding | fix on the {a} | fix on the {b} | {b} / {a} | speedup of the fix ({a} / {b}) |
| --- | --- | --- | --- | --- | --- |");
    for (e, o) in &both {
        let ratio = match (e.reference_ns(), o.reference_ns()) {
            (Some(x), Some(y)) => format!("{:.2}", y / x),
            _ => "-".into(),
        };
        let speedup = |r: &ExerciseRecord| {
            r.perf_version("reference")
                .map(|v| format!("{:.2}x", v.speedup))
        };
        let speedups = match (speedup(e), speedup(o)) {
            (Some(x), Some(y)) => format!("{x} / {y}"),
            _ => "-".into(),
        };
        let time = |r: &ExerciseRecord| r.reference_ns().map(us).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {ratio} | {speedups} |",
            e.id,
            e.evidence(),
            time(e),
            time(o)
        );
    }
    let missing: Vec<&str> = record
        .exercises
        .iter()
        .filter(|e| !other.exercises.iter().any(|o| o.id == e.id))
        .map(|e| e.id.as_str())
        .collect();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "
Not in the {b} record: {}.",
            missing.join(", ")
        );
    }
    out
}

/// The units a measured figure carries in a table cell ("31083.8 µs", "9.5 GB/s", "8.79 M").
const UNITS: [&str; 20] = [
    "µs", "us", "ns", "ms", "s", "GB/s", "TB/s", "MB/s", "GFLOP/s", "TFLOP/s", "FLOP/B", "B", "kB",
    "MB", "GB", "KiB", "MiB", "GiB", "k", "M",
];

/// `markdown` with the space between a number and its unit made unbreakable in every table row
/// (outside code blocks), so that a narrow screen wraps a cell between figures, never inside one.
pub(crate) fn bind_units(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut fenced = false;
    for line in markdown.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.trim_start().starts_with('|') {
            out.push_str(line);
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find(' ') {
            let (before, after) = (&rest[..at], &rest[at + 1..]);
            out.push_str(before);
            let unit = UNITS.iter().find(|u| {
                after.starts_with(*u)
                    && after[u.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| !c.is_alphanumeric())
            });
            let bound = before.ends_with(|c: char| c.is_ascii_digit()) && unit.is_some();
            out.push(if bound { '\u{a0}' } else { ' ' });
            rest = after;
        }
        out.push_str(rest);
    }
    out
}

#[cfg(test)]
mod unit_tests {
    use super::bind_units;

    #[test]
    fn a_figure_and_its_unit_are_bound_in_tables_only() {
        let md = "| a | 31083.8 µs (5.67x) | 9.5 GB/s | 8.79 M | 16 x 16 | 3 steps |\n\
                  prose 9.5 GB/s\n```\n| 9.5 GB/s\n```\n";
        let bound = bind_units(md);
        assert_eq!(
            bound.lines().next().unwrap(),
            "| a | 31083.8\u{a0}µs (5.67x) | 9.5\u{a0}GB/s | 8.79\u{a0}M | 16 x 16 | 3 steps |"
        );
        assert!(bound.contains("prose 9.5 GB/s\n"), "prose is left alone");
        assert!(bound.contains("| 9.5 GB/s\n```"), "code is left alone");
    }
}
