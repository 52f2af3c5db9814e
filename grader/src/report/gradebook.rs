//! The gradebook: what `grade` (and `grade merge`) writes from the journal's results. One exporter
//! per output: `grades.csv` (a row per student; Canvas and Gradescope "upload scores" read it),
//! `feedback/<student>.md` and `.json` (every stage's points and the same explanations as `check`,
//! hidden cases reduced to a count), `gradescope/<student>/results.json` (the autograder format,
//! with a speed leaderboard), and the class summary (`summary.md`, `summary.json`, `speed.svg`).
//! `write_similarity` adds the similarity report (`similarity.md`, `.csv`, `.svg`) and its section
//! of `summary.md`: it reads the students' files again, so it needs the workbook.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::class::roster::Roster;
use crate::exercise::rubric::GradeStage;
use crate::exercise::workbook::Workbook;
use crate::plans::grade::{ClassInfo, PairResult, PairState};
use crate::report::similarity;

mod feedback;
mod summary;

pub use feedback::{feedback_markdown, StudentFeedback};
pub use summary::{speed_svg, summarize, ClassSummary, ExerciseSummary};

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

    /// A student's exercises whose grade is still to come (`pending`).
    pub fn pending(&self, student: &str) -> Vec<&'a str> {
        self.info
            .exercises
            .iter()
            .filter_map(|e| self.get(student, e))
            .filter(|r| pending(&r.state))
            .map(|r| r.exercise.as_str())
            .collect()
    }

    /// Every pair whose grade is still to come, in the class.
    pub fn pending_pairs(&self) -> usize {
        self.results.values().filter(|r| pending(&r.state)).count()
    }
}

/// A pair whose grade is still to come: built, but its GPU stages could not run here (no GPU), or
/// the grader's own tools failed. Its points so far are not its grade: the gradebook says
/// `pending`, and the same `grade` (same `--out`) on a machine with a GPU grades it, and only it.
pub fn pending(state: &PairState) -> bool {
    matches!(
        state,
        PairState::Skipped { .. } | PairState::ToolError { .. }
    )
}

/// The one line that says what grades the pending pairs, where there are any.
pub fn pending_line(book: &Gradebook) -> Option<String> {
    let n = book.pending_pairs();
    (n > 0).then(|| {
        format!(
            "{n} pair(s) pending (no GPU here, or the grader's tools failed): run the same `grade` with the same --out on a machine with a GPU; the journal grades exactly those pairs there and keeps the rest\n"
        )
    })
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
                        // Not graded yet: a number here would be uploaded as the grade.
                        Some(r) if pending(&r.state) => "pending".to_string(),
                        Some(r) => points(r.points),
                        None => String::new(),
                    }),
            );
            let (total, max) = book.total(&s.id);
            let total = if book.pending(&s.id).is_empty() {
                points(total)
            } else {
                "pending".to_string()
            };
            row.extend([total, points(max)]);
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
            let waiting = book.pending(&s.id);
            for r in &graded {
                // Not graded yet: no test scores it; one says so, worth nothing either way.
                if pending(&r.state) {
                    tests.push(serde_json::json!({
                        "name": format!("{} / not graded yet", r.exercise),
                        "score": 0.0,
                        "max_score": 0.0,
                        "output": "pending: its GPU stages have not run yet; the same grade on a machine with a GPU grades it",
                        "visibility": "visible",
                    }));
                    continue;
                }
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
            let total: f64 = graded
                .iter()
                .filter(|r| !pending(&r.state))
                .map(|r| r.points)
                .sum();
            let output = if waiting.is_empty() {
                format!(
                    "Graded by cudabugs: {} exercise(s); the feedback file explains every stage.",
                    graded.len()
                )
            } else {
                format!("Graded by cudabugs: {} exercise(s); {} pending ({}), not in the score until a machine with a GPU grades them.", graded.len() - waiting.len(), waiting.len(), waiting.join(", "))
            };
            let results = serde_json::json!({
                "score": (total * 100.0).round() / 100.0,
                "output": output,
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
        &similarity::SimilarityConfig::default(),
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
