//! The gradebook: what `grade` (and `grade merge`) writes from the journal's results. One exporter
//! per output: `grades.csv` (a row per student; Canvas and Gradescope "upload scores" read it),
//! `feedback/<student>.md` and `.json` (every stage's points and the same explanations as `check`,
//! hidden cases reduced to a count), `gradescope/<student>/results.json` (the autograder format,
//! with a speed leaderboard), and the class summary (`summary.md`, `summary.json`, `speed.svg`).
//! `write_similarity` adds the similarity report (`similarity.md`, `.csv`, `.svg`) and its section
//! of `summary.md`: it reads the students' files again, so it needs the workbook.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::class::roster::{Roster, Student};
use crate::exercise::rubric::GradeStage;
use crate::exercise::workbook::Workbook;
use crate::judge::grade::{state_label, ClassInfo, PairResult, PairState, Rule};
use crate::judge::verdict::Status;
use crate::report::similarity;

/// The results of a class, by student and exercise.
pub struct Gradebook<'a> {
    pub info: &'a ClassInfo,
    pub results: BTreeMap<(&'a str, &'a str), &'a PairResult>,
}

impl<'a> Gradebook<'a> {
    pub fn new(info: &'a ClassInfo, results: &'a [PairResult]) -> Gradebook<'a> {
        Gradebook {
            info,
            results: results
                .iter()
                .map(|r| ((r.student.as_str(), r.exercise.as_str()), r))
                .collect(),
        }
    }

    fn get(&self, student: &str, exercise: &str) -> Option<&'a PairResult> {
        self.results.get(&(student, exercise)).copied()
    }

    fn roster(&self) -> &Roster {
        &self.info.roster
    }

    /// A student's total and the most they could have had (exercises not yet graded count 0 of 0).
    pub fn total(&self, student: &str) -> (f64, f64) {
        self.info
            .exercises
            .iter()
            .filter_map(|e| self.get(student, e))
            .fold((0.0, 0.0), |(p, m), r| (p + r.points, m + r.max))
    }
}

/// One output format of the gradebook.
pub trait Exporter {
    /// Write into `out`; the files written, for the summary line.
    fn export(&self, book: &Gradebook, out: &Path) -> std::io::Result<Vec<PathBuf>>;
}

fn write(path: PathBuf, text: &str) -> std::io::Result<PathBuf> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::exercise::workbook::write_atomically(&path, text)?;
    Ok(path)
}

fn points(p: f64) -> String {
    let s = format!("{p:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `grades.csv`: Name, SID, Email (Gradescope's "upload scores" columns), a column per exercise and
/// the total. An exercise not graded yet is empty, not 0.
///
/// `Student` is the id (`roster::student_id`: unique, plain ASCII, the journal's key, and the
/// name of the student's feedback files), so no two rows merge whatever the names; `Name` is the
/// name exactly as it was given (the submitters' names, or the folder name with any Unicode),
/// quoted by the CSV writer where it holds a comma or a quote. An LMS matches on the columns it
/// knows (Gradescope: `Name`, `SID`, `Email`), so the exact name, never a lossy spelling of it,
/// is what it sees, and the id beside it tells the rows apart for the instructor.
pub struct Csv;

impl Exporter for Csv {
    fn export(&self, book: &Gradebook, out: &Path) -> std::io::Result<Vec<PathBuf>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec![
            "Student".to_string(),
            "Name".into(),
            "SID".into(),
            "Email".into(),
        ];
        header.extend(book.info.exercises.iter().cloned());
        header.extend(["Total".to_string(), "Max".into()]);
        w.write_record(&header)?;
        for s in &book.roster().students {
            let mut row = vec![
                s.id.clone(),
                s.name.clone(),
                s.sid.clone().unwrap_or_default(),
                s.email.clone().unwrap_or_default(),
            ];
            row.extend(
                book.info
                    .exercises
                    .iter()
                    .map(|e| match book.get(&s.id, e) {
                        // Not gradable on the grading GPU: no score, rather than a zero.
                        Some(r) if matches!(r.state, PairState::Unsupported { .. }) => {
                            "n/a".to_string()
                        }
                        Some(r) => points(r.points),
                        None => String::new(),
                    }),
            );
            let (total, max) = book.total(&s.id);
            row.extend([points(total), points(max)]);
            w.write_record(&row)?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(vec![write(
            out.join("grades.csv"),
            &String::from_utf8_lossy(&bytes),
        )?])
    }
}

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
            state_label(&r.state)
        );
        match &r.state {
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
        if !r.stages.is_empty() {
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
        let mut findings = r.findings.iter().peekable();
        if findings.peek().is_some() {
            md.push_str("What the tools reported:\n\n");
            for f in findings {
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
        let details: Vec<_> = r
            .steps
            .iter()
            .filter(|s| {
                s.status != Status::Passed && s.detail.is_some() && !s.name.starts_with("rule ")
            })
            .collect();
        for s in details {
            let _ = writeln!(
                md,
                "<details><summary>{}: {}</summary>\n\n```\n{}\n```\n</details>\n",
                s.name,
                s.summary,
                s.detail.as_deref().unwrap_or_default().trim_end()
            );
        }
    }
    md
}

/// Gradescope's autograder `results.json`, one per student: a test per exercise and stage, the
/// hidden cases' test showing only its score, and a leaderboard of speed.
pub struct GradescopeResults;

impl Exporter for GradescopeResults {
    fn export(&self, book: &Gradebook, out: &Path) -> std::io::Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        for s in &book.roster().students {
            let mut tests = Vec::new();
            let mut leaderboard = Vec::new();
            let graded: Vec<&PairResult> = book
                .info
                .exercises
                .iter()
                .filter_map(|e| book.get(&s.id, e))
                .collect();
            for r in &graded {
                for st in &r.stages {
                    let mut output = st.summary.clone();
                    if let Some(rule) = st.withheld_by {
                        output.push_str(&format!(
                            " (withheld by rule `{}`: {})",
                            rule.key(),
                            rule.why()
                        ));
                    }
                    if st.stage == GradeStage::Builds {
                        if let PairState::NotGradable { reason, .. } = &r.state {
                            output = format!("not gradable: {reason}");
                        }
                    }
                    tests.push(serde_json::json!({
                        "name": format!("{} / {}", r.exercise, st.stage.label()),
                        "score": (st.points * 100.0).round() / 100.0,
                        "max_score": st.max,
                        "output": output,
                        "visibility": "visible",
                    }));
                }
                if let Some(speed) = &r.speed {
                    leaderboard.push(serde_json::json!({ "name": format!("{} time (us)", r.exercise), "value": (speed.learner_ns / 10.0).round() / 100.0, "order": "asc" }));
                }
            }
            let (total, _) = book.total(&s.id);
            let results = serde_json::json!({
                "score": (total * 100.0).round() / 100.0,
                "output": format!("Graded by cudabugs: {} exercise(s); the feedback file explains every stage.", graded.len()),
                "tests": tests,
                "leaderboard": leaderboard,
            });
            written.push(write(
                out.join("gradescope").join(&s.id).join("results.json"),
                &(serde_json::to_string_pretty(&results).expect("serialisable") + "\n"),
            )?);
        }
        Ok(written)
    }
}

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
        .map(|e| {
            let rs: Vec<&PairResult> = book
                .roster()
                .students
                .iter()
                .filter_map(|s| book.get(&s.id, e))
                .collect();
            let graded: Vec<&&PairResult> =
                rs.iter().filter(|r| r.state == PairState::Graded).collect();
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
            let mut failures: BTreeMap<String, usize> = BTreeMap::new();
            let mut flags: BTreeMap<String, usize> = BTreeMap::new();
            for r in &graded {
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
                for reason in reasons {
                    *failures.entry(reason).or_default() += 1;
                }
                for f in &r.flags {
                    *flags.entry(f.rule.key().to_string()).or_default() += 1;
                }
            }
            let most_common_failure = failures
                .into_iter()
                .max_by_key(|(reason, n)| (*n, std::cmp::Reverse(reason.clone())));
            let max = rs.first().map(|r| r.max).unwrap_or(0.0);
            ExerciseSummary {
                exercise: e.clone(),
                graded: graded.len(),
                not_submitted: rs
                    .iter()
                    .filter(|r| r.state == PairState::NotSubmitted)
                    .count(),
                not_gradable: rs
                    .iter()
                    .filter(|r| matches!(r.state, PairState::NotGradable { .. }))
                    .count(),
                pending: book.roster().students.len()
                    - rs.iter()
                        .filter(|r| {
                            matches!(
                                r.state,
                                PairState::Graded
                                    | PairState::NotSubmitted
                                    | PairState::NotGradable { .. }
                            )
                        })
                        .count(),
                full_points,
                mean_points: if graded.is_empty() {
                    0.0
                } else {
                    graded.iter().map(|r| r.points).sum::<f64>() / graded.len() as f64
                },
                max,
                most_common_failure,
                flags,
                ratios: graded
                    .iter()
                    .filter_map(|r| r.speed.as_ref().map(|s| s.ratio_to_reference))
                    .collect(),
            }
        })
        .collect()
}

/// `summary.md`, `summary.json` and `speed.svg`.
pub struct ClassSummary;

impl Exporter for ClassSummary {
    fn export(&self, book: &Gradebook, out: &Path) -> std::io::Result<Vec<PathBuf>> {
        let summary = summarize(book);
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
        for s in &summary {
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
        let other: usize = summary
            .iter()
            .map(|s| s.not_submitted + s.not_gradable + s.pending)
            .sum();
        if other > 0 {
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
        md.push_str("\nThe rules that can withhold points:\n\n");
        for rule in Rule::ALL {
            let _ = writeln!(md, "- `{}`: {}.", rule.key(), rule.why());
        }
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

/// Each graded submission's time against the reference fix, one column per exercise, on a log
/// scale: 1 is the reference's speed, below it faster.
pub fn speed_svg(summary: &[ExerciseSummary]) -> Result<String, String> {
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
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let names: Vec<String> = summary.iter().map(|s| s.exercise.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Time of each graded submission / the reference fix's",
                ("sans-serif", 16),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo..hi).log_scale())
            .map_err(|e| e.to_string())?;
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
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(LineSeries::new(
                [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
                BLUE.stroke_width(1),
            ))
            .map_err(|e| e.to_string())?;
        for (i, s) in summary.iter().enumerate() {
            let count = s.ratios.len().max(1) as f64;
            chart
                .draw_series(s.ratios.iter().enumerate().map(|(k, r)| {
                    // Spread the points of a column a little so that equal times stay visible.
                    let x = i as f64 + 0.3 * ((k as f64 + 0.5) / count - 0.5);
                    Circle::new((x, *r), 4, BLACK.mix(0.7).filled())
                }))
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Every exporter, in the order they are written.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(Csv),
        Box::new(StudentFeedback),
        Box::new(GradescopeResults),
        Box::new(ClassSummary),
    ]
}

/// Write the whole gradebook into `out`.
pub fn write_all(
    info: &ClassInfo,
    results: &[PairResult],
    out: &Path,
) -> std::io::Result<Vec<PathBuf>> {
    let book = Gradebook::new(info, results);
    let mut written = Vec::new();
    for e in exporters() {
        written.extend(e.export(&book, out)?);
    }
    Ok(written)
}

/// Where `write_similarity` puts its section of `summary.md`, so that writing it again replaces it.
const SIMILARITY_BEGIN: &str = "<!-- similarity: written by write_similarity -->";
const SIMILARITY_END: &str = "<!-- /similarity -->";

/// `summary` with its similarity section replaced by `section` (appended where it has none).
pub fn with_similarity_section(summary: &str, section: &str) -> String {
    let kept = match (summary.find(SIMILARITY_BEGIN), summary.find(SIMILARITY_END)) {
        (Some(b), Some(e)) if e > b => format!(
            "{}{}",
            &summary[..b],
            summary[e + SIMILARITY_END.len()..].trim_start_matches('\n')
        ),
        _ => summary.to_string(),
    };
    let kept = kept.trim_end();
    let gap = if kept.is_empty() { "" } else { "\n\n" };
    format!(
        "{kept}{gap}{SIMILARITY_BEGIN}\n{}{SIMILARITY_END}\n",
        section.trim_end().to_string() + "\n"
    )
}

/// The similarity report of the class: `similarity.csv` (every compared pair, most similar first),
/// `similarity.md` (the flagged pairs and the method), `similarity.svg` (a heat map per exercise)
/// and a section of `summary.md` linking them with the number of flagged pairs. It reads each
/// student's file for each exercise again (`roster::find_file`), so call it after `write_all`,
/// which writes `summary.md`. Flags for a person; no grade changes.
pub fn write_similarity(
    out: &Path,
    info: &ClassInfo,
    wb: &Workbook,
) -> std::io::Result<Vec<PathBuf>> {
    let report = similarity::class_report(
        &info.roster,
        &info.exercises,
        wb,
        &similarity::Config::default(),
    );
    let mut written = vec![
        write(out.join("similarity.md"), &similarity::to_markdown(&report))?,
        write(out.join("similarity.csv"), &similarity::to_csv(&report))?,
        write(
            out.join("similarity.svg"),
            &similarity::heatmap_svg(&report).map_err(std::io::Error::other)?,
        )?,
    ];
    let summary_path = out.join("summary.md");
    let summary = match std::fs::read_to_string(&summary_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    written.push(write(
        summary_path,
        &with_similarity_section(&summary, &similarity::summary_section(&report)),
    )?);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_written_without_trailing_zeros() {
        assert_eq!(points(100.0), "100");
        assert_eq!(points(26.666_666), "26.67");
        assert_eq!(points(70.85), "70.85");
        assert_eq!(points(97.5), "97.5");
        assert_eq!(points(0.0), "0");
    }

    #[test]
    fn the_similarity_section_is_appended_once_and_replaced_when_written_again() {
        let summary = "# Class summary\n\nsome table\n";
        let once = with_similarity_section(summary, "3 pairs flagged");
        assert!(
            once.starts_with("# Class summary\n\nsome table\n\n"),
            "{once}"
        );
        assert_eq!(once.matches(SIMILARITY_BEGIN).count(), 1);
        let twice = with_similarity_section(&once, "1 pair flagged");
        assert_eq!(twice.matches(SIMILARITY_BEGIN).count(), 1, "{twice}");
        assert!(twice.contains("1 pair flagged") && !twice.contains("3 pairs flagged"));
        assert!(twice.starts_with("# Class summary\n\nsome table\n\n"));
        // An empty summary gets the section alone.
        assert!(with_similarity_section("", "x").starts_with(SIMILARITY_BEGIN));
    }
}
