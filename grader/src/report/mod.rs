//! Presentation: check reports, verification records and the learner's progress as text for a
//! terminal. (JSON is the structs themselves, serialised by the CLI.) Colours are ANSI styles in the
//! text; the CLI prints through anstream, which strips them for pipes, NO_COLOR and `--color never`.

use std::fmt::{Display, Write as _};
use std::path::Path;

use anstyle::{AnsiColor, Style};

mod check;
mod diagnostics;
pub mod gradebook;
mod perf;
mod sanitize;
pub mod sarif;
pub mod similarity;
mod verify;

pub use check::{check_text, check_text_for, CheckView};
pub use perf::{peak_text, perf_text};
pub use sanitize::sanitize_text;
pub use verify::{phases_text, time_by_kind_text, verify_text};

/// Why a chart (`similarity.svg`, `speed.svg`) could not be drawn: plotters' own error, whose
/// message is shown as it is.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct SvgDrawError(#[from] plotters::drawing::DrawingAreaErrorKind<std::io::Error>);

use crate::judge::verdict::{Finding, Outcome, Status, Step};
use crate::learner::Progress;
use crate::tools::gpu::GpuInfo;
use crate::tools::sandbox::Level;

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

/// The GPU (where there is one) and the sandbox (where it is to be said): the head of `check`'s
/// and `sanitize`'s reports.
fn gpu_and_sandbox(out: &mut String, gpu: Option<&GpuInfo>, isolation: Option<&Level>) {
    if let Some(g) = gpu {
        let _ = writeln!(
            out,
            "  GPU: {} (sm_{}{}, CUDA {})",
            g.name, g.compute_capability.0, g.compute_capability.1, g.driver_cuda_version
        );
    }
    if let Some(isolation) = isolation {
        let _ = writeln!(out, "  Sandbox: {}", isolation.describe());
    }
}

/// The details (the tail of their output) of the steps that did not pass, each diagnostic once (a
/// step that says nothing new names the one that said it), with `rename`'s file (nvcc's name for
/// it, the name to show) as the learner would open it.
fn failed_step_details(out: &mut String, steps: &[Step], rename: Option<(&str, &str)>) {
    let mut seen = std::collections::HashSet::new();
    let mut first_said: Option<String> = None;
    for s in steps
        .iter()
        .filter(|s| s.status != Status::Passed && s.detail.is_some())
    {
        let detail = s.detail.as_deref().unwrap_or("");
        let detail = match rename {
            Some((name, shown)) => diagnostics::renamed(detail, name, shown),
            None => detail.to_string(),
        };
        match (diagnostics::unseen(&detail, &mut seen), &first_said) {
            (None, Some(said)) => {
                let _ = writeln!(out, "\n  {}: the same as {said} above", s.name);
            }
            (new, _) => {
                let _ = writeln!(
                    out,
                    "\n  {}:\n{}",
                    s.name,
                    indent(new.as_deref().unwrap_or(&detail), 4, 40)
                );
                first_said.get_or_insert_with(|| s.name.to_string());
            }
        }
    }
}

/// The files a report quotes, each read once (`None` where it cannot be read).
#[derive(Default)]
pub(crate) struct SourceTexts(std::collections::BTreeMap<String, Option<String>>);

impl SourceTexts {
    pub(crate) fn get(&mut self, path: &str) -> Option<String> {
        self.0
            .entry(path.to_string())
            .or_insert_with(|| std::fs::read_to_string(path).ok())
            .clone()
    }
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
            chapter_heading(&mut out, entries, &e.chapter);
        }
        entry_line(&mut out, e, id_w, class_w);
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

/// A chapter's name and how many of its exercises are done.
fn chapter_heading(out: &mut String, entries: &[crate::learner::ListEntry], name: &str) {
    let chapter: Vec<&crate::learner::ListEntry> =
        entries.iter().filter(|x| x.chapter == name).collect();
    let done = chapter
        .iter()
        .filter(|x| x.status == Progress::Done)
        .count();
    let _ = writeln!(
        out,
        "\n  {} {}",
        paint(BOLD, name),
        paint(
            if done == chapter.len() { GOOD } else { DIM },
            format!("({done} of {} done)", chapter.len())
        )
    );
}

/// An exercise's row of `list`, the next one to do pointed at.
fn entry_line(out: &mut String, e: &crate::learner::ListEntry, id_w: usize, class_w: usize) {
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

/// A path as the user would type it: relative to `cwd` where it lies below it.
pub(crate) fn shown_path(path: &str, cwd: &Path) -> String {
    Path::new(path)
        .strip_prefix(cwd)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.to_string())
}

/// The class at a glance: a row per student, the points of each exercise, the flags.
pub fn gradebook_text(book: &gradebook::Gradebook) -> String {
    use crate::plans::grade::PairState;
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
