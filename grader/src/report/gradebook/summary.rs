//! The class summary: `summary.md`, `summary.json` and `speed.svg`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::exercise::rubric::GradeStage;
use crate::judge::verdict::Status;
use crate::plans::grade::{PairResult, PairState, Rule};
use crate::report::SvgDrawError;

use super::{points, write, Exporter, Gradebook};

/// Per exercise: how many pairs got full points at each stage, the most common failure, the flags.
#[derive(Debug, Serialize)]
pub struct ExerciseSummary {
    pub exercise: String,
    pub graded: usize,
    pub not_submitted: usize,
    pub not_gradable: usize,
    pub pending: usize,
    /// Stage key -> share (0..1) of graded pairs with full points there.
    pub full_points: BTreeMap<String, f64>,
    pub mean_points: f64,
    pub max: f64,
    /// The most common reason for lost points ("racecheck shared-race", "rule proof-of-work").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub most_common_failure: Option<(String, usize)>,
    pub flags: BTreeMap<String, usize>,
    /// Each graded pair's time as a multiple of the reference fix's.
    pub ratios: Vec<f64>,
}

pub fn summarize(book: &Gradebook) -> Vec<ExerciseSummary> {
    book.info
        .exercises
        .iter()
        .map(|e| exercise_summary(book, e))
        .collect()
}

fn exercise_summary(book: &Gradebook, e: &str) -> ExerciseSummary {
    let rs: Vec<&PairResult> = book
        .roster()
        .students
        .iter()
        .filter_map(|s| book.get(&s.id, e))
        .collect();
    let graded: Vec<&PairResult> = rs
        .iter()
        .copied()
        .filter(|r| r.state == PairState::Graded)
        .collect();
    let count = |f: fn(&PairState) -> bool| rs.iter().filter(|r| f(&r.state)).count();
    let (most_common_failure, flags) = failures_and_flags(&graded);
    ExerciseSummary {
        exercise: e.to_string(),
        graded: graded.len(),
        not_submitted: count(|s| *s == PairState::NotSubmitted),
        not_gradable: count(|s| matches!(s, PairState::NotGradable { .. })),
        pending: book.roster().students.len()
            - count(|s| {
                matches!(
                    s,
                    PairState::Graded | PairState::NotSubmitted | PairState::NotGradable { .. }
                )
            }),
        full_points: full_points(&graded),
        mean_points: if graded.is_empty() {
            0.0
        } else {
            graded.iter().map(|r| r.points).sum::<f64>() / graded.len() as f64
        },
        max: rs.first().map(|r| r.max).unwrap_or(0.0),
        most_common_failure,
        flags,
        ratios: graded
            .iter()
            .filter_map(|r| r.speed.as_ref().map(|s| s.ratio_to_reference))
            .collect(),
    }
}

/// Stage key -> share of the graded pairs that have the stage with full points there.
fn full_points(graded: &[&PairResult]) -> BTreeMap<String, f64> {
    let mut full_points = BTreeMap::new();
    for stage in GradeStage::ALL {
        let with: Vec<_> = graded.iter().filter_map(|r| r.stage(stage)).collect();
        if !with.is_empty() {
            full_points.insert(
                stage.key().to_string(),
                with.iter()
                    .filter(|s| s.max > 0.0 && s.points >= s.max - 1e-9)
                    .count() as f64
                    / with.len() as f64,
            );
        }
    }
    full_points
}

/// The most common reason for lost points (each counted once per pair), and how often each rule
/// flagged a pair.
fn failures_and_flags(
    graded: &[&PairResult],
) -> (Option<(String, usize)>, BTreeMap<String, usize>) {
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    let mut flags: BTreeMap<String, usize> = BTreeMap::new();
    for r in graded {
        for reason in lost_points_reasons(r) {
            *failures.entry(reason).or_default() += 1;
        }
        for f in &r.flags {
            *flags.entry(f.rule.key().to_string()).or_default() += 1;
        }
    }
    let most_common_failure = failures
        .into_iter()
        .max_by_key(|(reason, n)| (*n, std::cmp::Reverse(reason.clone())));
    (most_common_failure, flags)
}

/// Why a pair lost points: its findings and rules, else the stages short of full points; sorted,
/// each once.
fn lost_points_reasons(r: &PairResult) -> Vec<String> {
    let mut reasons: Vec<String> = r
        .findings
        .iter()
        .map(|f| format!("{} {}", f.tool, f.kind.name()))
        .collect();
    reasons.extend(r.flags.iter().map(|f| format!("rule {}", f.rule.key())));
    if reasons.is_empty() {
        reasons.extend(
            r.stages
                .iter()
                .filter(|s| s.points < s.max - 1e-9 && s.status != Status::Skipped)
                .map(|s| format!("{} not full", s.stage.key())),
        );
    }
    reasons.sort();
    reasons.dedup();
    reasons
}

/// `summary.md`, `summary.json` and `speed.svg`.
pub struct ClassSummary;

impl Exporter for ClassSummary {
    fn export(&self, book: &Gradebook, out: &Path) -> std::io::Result<Vec<PathBuf>> {
        let summary = summarize(book);
        let mut md = summary_markdown(book, &summary);
        let mut written = vec![write(
            out.join("summary.json"),
            &(serde_json::to_string_pretty(&summary).expect("serialisable") + "\n"),
        )?];
        if summary.iter().any(|s| !s.ratios.is_empty()) {
            md.push_str("\n![time against the reference fix](speed.svg)\n");
            written.push(write(
                out.join("speed.svg"),
                &speed_svg(&summary).map_err(std::io::Error::other)?,
            )?);
        }
        written.insert(0, write(out.join("summary.md"), &md)?);
        Ok(written)
    }
}

/// `summary.md` (without its picture): the table of exercises, what was not graded, the rules.
fn summary_markdown(book: &Gradebook, summary: &[ExerciseSummary]) -> String {
    let mut md = format!(
        "# Class summary\n\n{} students ({}), {} exercises.\n\n",
        book.roster().students.len(),
        book.roster().layout.describe(),
        book.info.exercises.len()
    );
    md.push_str("Share of graded submissions with full points at each stage:\n\n| exercise | graded | mean | ");
    md.push_str(
        &GradeStage::ALL
            .iter()
            .map(|s| s.key())
            .collect::<Vec<_>>()
            .join(" | "),
    );
    md.push_str(" | most common failure | flags |\n|---|---|---|");
    md.push_str(&"---|".repeat(GradeStage::ALL.len() + 2));
    md.push('\n');
    for s in summary {
        exercise_row(&mut md, s);
    }
    not_graded_line(&mut md, summary);
    md.push_str("\nThe rules that can withhold points:\n\n");
    for rule in Rule::ALL {
        let _ = writeln!(md, "- `{}`: {}.", rule.key(), rule.why());
    }
    md
}

/// An exercise's row of the table.
fn exercise_row(md: &mut String, s: &ExerciseSummary) {
    let stages: Vec<String> = GradeStage::ALL
        .iter()
        .map(|g| {
            s.full_points
                .get(g.key())
                .map(|v| format!("{:.0}%", v * 100.0))
                .unwrap_or_else(|| "-".into())
        })
        .collect();
    let failure = s
        .most_common_failure
        .as_ref()
        .map(|(r, n)| format!("{r} ({n})"))
        .unwrap_or_else(|| "-".into());
    let flags = if s.flags.is_empty() {
        "-".into()
    } else {
        s.flags
            .iter()
            .map(|(k, n)| format!("{k} ({n})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        md,
        "| {} | {} | {} / {} | {} | {} | {} |",
        s.exercise,
        s.graded,
        points(s.mean_points),
        points(s.max),
        stages.join(" | "),
        failure,
        flags
    );
}

/// Per exercise, the submissions not graded and why; nothing where every one was.
fn not_graded_line(md: &mut String, summary: &[ExerciseSummary]) {
    let other: usize = summary
        .iter()
        .map(|s| s.not_submitted + s.not_gradable + s.pending)
        .sum();
    if other == 0 {
        return;
    }
    md.push_str("\nNot graded: ");
    md.push_str(
        &summary
            .iter()
            .map(|s| {
                format!(
                    "{} ({} not submitted, {} not gradable, {} pending)",
                    s.exercise, s.not_submitted, s.not_gradable, s.pending
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
    );
    md.push_str(".\n");
}

/// Each graded submission's time against the reference fix, one column per exercise, on a log
/// scale: 1 is the reference's speed, below it faster.
pub fn speed_svg(summary: &[ExerciseSummary]) -> Result<String, SvgDrawError> {
    use plotters::prelude::*;
    let all: Vec<f64> = summary
        .iter()
        .flat_map(|s| s.ratios.iter().copied())
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    let lo = all.iter().copied().fold(1.0f64, f64::min) / 1.5;
    let hi = all.iter().copied().fold(1.0f64, f64::max) * 1.5;
    let n = summary.len();
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (160 + 110 * n as u32, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let names: Vec<String> = summary.iter().map(|s| s.exercise.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Time of each graded submission / the reference fix's",
                ("sans-serif", 16),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo..hi).log_scale())?;
        chart
            .configure_mesh()
            .x_labels(n.max(1))
            .x_label_formatter(&|x| {
                names
                    .get(x.round() as usize)
                    .filter(|_| (x - x.round()).abs() < 0.01)
                    .cloned()
                    .unwrap_or_default()
            })
            .y_desc("time / reference (log)")
            .y_label_formatter(&|y| format!("{y:.2}"))
            .light_line_style(WHITE)
            .draw()?;
        chart.draw_series(LineSeries::new(
            [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
            BLUE.stroke_width(1),
        ))?;
        for (i, s) in summary.iter().enumerate() {
            let count = s.ratios.len().max(1) as f64;
            chart.draw_series(s.ratios.iter().enumerate().map(|(k, r)| {
                // Spread the points of a column a little so that equal times stay visible.
                let x = i as f64 + 0.3 * ((k as f64 + 0.5) / count - 0.5);
                Circle::new((x, *r), 4, BLACK.mix(0.7).filled())
            }))?;
        }
        root.present()?;
    }
    Ok(out)
}
