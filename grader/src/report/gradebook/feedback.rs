//! `feedback/<student>.md` and `.json`: a student's every stage, rule and finding, in the words of
//! `check`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::class::roster::Student;
use crate::judge::verdict::Status;
use crate::plans::grade::{PairResult, PairState};

use super::{points, write, Exporter, Gradebook};

/// A student's feedback, as JSON: their results as graded (hidden cases already reduced to counts).
#[derive(Serialize)]
struct Feedback<'a> {
    student: &'a Student,
    total: f64,
    max: f64,
    exercises: Vec<&'a PairResult>,
}

/// `feedback/<student>.md` and `.json`.
pub struct StudentFeedback;

impl Exporter for StudentFeedback {
    fn export(&self, book: &Gradebook, out: &Path) -> std::io::Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        for s in &book.roster().students {
            let results: Vec<&PairResult> = book
                .info
                .exercises
                .iter()
                .filter_map(|e| book.get(&s.id, e))
                .collect();
            let (total, max) = book.total(&s.id);
            let json = serde_json::to_string_pretty(&Feedback {
                student: s,
                total,
                max,
                exercises: results.clone(),
            })
            .expect("serialisable");
            written.push(write(
                out.join("feedback").join(format!("{}.json", s.id)),
                &(json + "\n"),
            )?);
            written.push(write(
                out.join("feedback").join(format!("{}.md", s.id)),
                &feedback_markdown(s, &results, total, max),
            )?);
        }
        Ok(written)
    }
}

pub fn feedback_markdown(s: &Student, results: &[&PairResult], total: f64, max: f64) -> String {
    let mut md = format!(
        "# {}: {} / {} points\n\n",
        s.name,
        points(total),
        points(max)
    );
    for r in results {
        let _ = writeln!(
            md,
            "## {}: {} / {} ({})\n",
            r.exercise,
            points(r.points),
            points(r.max),
            r.state.kind()
        );
        state_note(&mut md, &r.state);
        stages_table(&mut md, r);
        rule_flags(&mut md, r);
        tool_findings(&mut md, r);
        step_details(&mut md, r);
    }
    md
}

/// Why a submission was not graded in full, where it was not.
fn state_note(md: &mut String, state: &PairState) {
    match state {
        PairState::NotGradable { reason, diff } => {
            let _ = writeln!(md, "Not gradable: {reason}\n");
            if !diff.is_empty() {
                let _ = writeln!(md, "```diff\n{}```\n", diff);
            }
        }
        PairState::ToolError { message } => {
            let _ = writeln!(md, "The grader's tools failed (not your file's fault; it will be graded again): {message}\n");
        }
        PairState::Skipped { reason } => {
            let _ = writeln!(md, "Built; the GPU stages did not run: {reason}\n");
        }
        PairState::Unsupported { reason } => {
            let _ = writeln!(md, "Not graded on this GPU (not your file's fault; it will be graded on one that can run it): {reason}\n");
        }
        PairState::NotSubmitted | PairState::Graded => {}
    }
}

/// A row per stage: its points and summary, and the rule that withheld them.
fn stages_table(md: &mut String, r: &PairResult) {
    if r.stages.is_empty() {
        return;
    }
    md.push_str("| stage | points | |\n| --- | --- | --- |\n");
    for st in &r.stages {
        let why = st
            .withheld_by
            .map(|rule| format!(" (withheld: rule `{}`)", rule.key()))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "| {} | {} / {} | {}{} |",
            st.stage.label(),
            points(st.points),
            points(st.max),
            st.summary.replace('|', "\\|"),
            why
        );
    }
    md.push('\n');
}

/// The rules the submission failed or was flagged by, and why each rule exists.
fn rule_flags(md: &mut String, r: &PairResult) {
    for f in &r.flags {
        let kind = if f.review {
            "flagged for review"
        } else {
            "failed"
        };
        let _ = writeln!(
            md,
            "- **rule `{}` {kind}**: {}. Why this rule: {}.",
            f.rule.key(),
            f.message,
            f.rule.why()
        );
    }
    if !r.flags.is_empty() {
        md.push('\n');
    }
}

/// What the tools reported, each at its file's name and line.
fn tool_findings(md: &mut String, r: &PairResult) {
    if r.findings.is_empty() {
        return;
    }
    md.push_str("What the tools reported:\n\n");
    for f in &r.findings {
        let at = f
            .locations
            .first()
            .map(|l| {
                format!(
                    " at {}:{}",
                    Path::new(&l.path)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    l.line
                )
            })
            .unwrap_or_default();
        let _ = writeln!(md, "- {} `{}`{at}: {}", f.tool, f.kind.name(), f.text);
    }
    md.push('\n');
}

/// The most of one step's output the feedback quotes: its first lines, as far as they fit.
const QUOTED_LINES: usize = 40;
const QUOTED_BYTES: usize = 4000;

/// The output of the steps that did not pass, the rules' own steps left out, each cut to
/// [`QUOTED_LINES`] and [`QUOTED_BYTES`]. A step of the hidden cases or the fresh inputs is never
/// quoted: what a program printed there may hold the inputs the student must not see (its summary
/// says how many cases failed).
fn step_details(md: &mut String, r: &PairResult) {
    use crate::engine::plan::StageKind;
    let secret = [StageKind::Hidden.id(), StageKind::Fresh.id()];
    let details = r.steps.iter().filter(|s| {
        s.status != Status::Passed
            && s.detail.is_some()
            && !s.is_rule()
            && !s.stage.as_ref().is_some_and(|st| secret.contains(st))
    });
    for s in details {
        let _ = writeln!(
            md,
            "<details><summary>{}: {}</summary>\n\n```\n{}\n```\n</details>\n",
            s.name,
            s.summary,
            quoted(s.detail.as_deref().unwrap_or_default())
        );
    }
}

/// `text` cut to what the feedback quotes, saying how much was left out; a fence inside it cannot
/// close the quote.
fn quoted(text: &str) -> String {
    let text = text.trim_end();
    let mut out = String::new();
    let mut lines = 0;
    for line in text.lines() {
        if lines == QUOTED_LINES || out.len() + line.len() > QUOTED_BYTES {
            break;
        }
        out.push_str(line);
        out.push('\n');
        lines += 1;
    }
    let left = text.lines().count() - lines;
    if left > 0 {
        let _ = write!(out, "... ({left} more lines not shown)");
    }
    out.trim_end().replace("```", "'''")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::plan::StageKind;
    use crate::judge::verdict::{Step, StepName};

    #[test]
    fn feedback_quotes_no_hidden_or_fresh_output_and_cuts_the_rest() {
        let mut r = crate::plans::grade::graded_pair_for_tests();
        r.steps.push(
            Step::new(
                StepName::HiddenCases,
                Status::Failed,
                "1 of 2 hidden cases match",
            )
            .stage(StageKind::Hidden)
            .detail("SECRET-INPUT 0.25 0.5"),
        );
        let long: String = (0..500).map(|i| format!("line {i}\n")).collect();
        r.steps.push(
            Step::new(
                StepName::Correctness,
                Status::Failed,
                "0 of 1 public cases match",
            )
            .stage(StageKind::Correctness)
            .detail(format!("```\n{long}")),
        );
        let mut md = String::new();
        step_details(&mut md, &r);
        assert!(!md.contains("SECRET-INPUT"), "{md}");
        assert!(
            md.contains("line 38\n") && !md.contains("line 39\n"),
            "{md}"
        );
        assert!(md.contains("(461 more lines not shown)"), "{md}");
        assert_eq!(md.matches("```").count(), 2, "one fence pair: {md}");
    }
}
