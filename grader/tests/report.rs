//! Snapshots of what a learner reads: a check report built from a real tool record (captured on an
//! H200 by `verify --keep`) and the committed verification record, rendered as text. Colours,
//! durations and machine paths are redacted.

use std::path::{Path, PathBuf};

use grader::judge::check::CheckReport;
use grader::exercise::manifest::Tool;
use grader::judge::verdict::{self, Outcome, Status, Step};
use grader::judge::sanitize::ToolStatus;
use grader::judge::verify::VerificationRecord;
use grader::exercise::workbook::Exercise;
use grader::exercise::{catalog, regions};
use grader::report;
use grader::tools::sanitizer;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn exercise(id: &str) -> Exercise {
    let on_disk = catalog::load(&repo(), id).unwrap();
    let leak = |p: &Path| -> &'static str { Box::leak(std::fs::read_to_string(p).unwrap().into_boxed_str()) };
    Exercise { original: leak(&on_disk.exercise_path), solution: leak(&on_disk.solution_path), manifest: on_disk.manifest }
}

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter("\u{1b}\\[[0-9;]*m", "");
    s.add_filter(r"\(\d+\.\ds\)", "([SECS])");
    s.add_filter(r"verify took \d+\.\d s", "verify took [SECS] s");
    s
}

#[test]
fn a_memcheck_finding_is_explained_with_the_marked_line_and_the_lesson() {
    let ex = exercise("01-index");
    let source = repo().join("exercises/01-index/transpose.cu");
    let xml = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/01-index-exercise-memcheck.xml")).unwrap();
    let records = sanitizer::parse(Tool::Memcheck, &xml).unwrap();
    let regions = regions::parse(ex.original).unwrap();
    let findings = verdict::findings(&records, Path::new("transpose.cu"), &regions);
    let steps = vec![
        Step::new("build -G", Status::Passed, "nvcc -G (sm_90)"),
        Step::new("build -O3", Status::Passed, "nvcc -O3 -lineinfo (sm_90)"),
        Step::new("memcheck", Status::Failed, "memcheck found 1 kind of error"),
        Step::new("correctness", Status::Failed, "case 0: exited with code 3"),
    ];
    let r = CheckReport {
        exercise: "01-index".into(),
        title: ex.manifest.manifest.title.clone(),
        source: "exercises/01-index/transpose.cu".into(),
        gpu: None,
        arch: "sm_90".into(),
        isolation: grader::tools::sandbox::Level::Namespaces,
        outcome: Outcome::from_steps(&steps),
        steps,
        findings,
        timing: None,
        solution_diff: None,
    };
    let text = report::check_text(&r, &ex, &source);
    assert!(text.contains("exercises/01-index/transpose.cu:30:"), "{text}");
    settings().bind(|| insta::assert_snapshot!("check_01_index_memcheck", text));
}

#[test]
fn wrong_outputs_of_a_bug_no_tool_sees_get_its_explanation_and_lesson() {
    let ex = exercise("15-global-race");
    let source = repo().join("exercises/15-global-race/degree.cu");
    // The summary check printed on the H100 (book/gpu-runs/2026-11-22-h100-catalog/check-15.txt).
    let wrong = "case `a million edges`: degree[0] = 6 but the reference says 993; 1024 of 1024 elements wrong, max error 1.067e3";
    let report_with = |correctness: Step| {
        let steps = vec![Step::new("build -G", Status::Passed, "nvcc -G -g (sm_90)"), Step::new("build -O3", Status::Passed, "nvcc -O3 -lineinfo (sm_90)"), correctness];
        CheckReport {
            exercise: "15-global-race".into(),
            title: ex.manifest.manifest.title.clone(),
            source: "exercises/15-global-race/degree.cu".into(),
            gpu: None,
            arch: "sm_90".into(),
            isolation: grader::tools::sandbox::Level::Namespaces,
            outcome: Outcome::from_steps(&steps),
            steps,
            findings: Vec::new(),
            timing: None,
            solution_diff: None,
        }
    };
    let text = report::check_text(&report_with(Step::new("correctness", Status::Failed, wrong)), &ex, &source);
    assert!(text.contains(&format!("What it means: {}", ex.manifest.manifest.explain.finding)), "{text}");
    assert!(text.contains("book/src/lessons/15-global-race.md"), "{text}");
    // A crash is not the bug this exercise teaches: no explanation of lost increments for it.
    let crashed = report::check_text(&report_with(Step::new("correctness", Status::Failed, "the program failed (exit status 3)")), &ex, &source);
    assert!(!crashed.contains("What it means"), "{crashed}");
}

#[test]
fn a_pass_shows_the_solution_as_a_diff_and_only_then() {
    let ex = exercise("03-race");
    let diff = similar::TextDiff::from_lines(ex.original, ex.solution).unified_diff().header("yours/reduce.cu", "reference/reduce.cu").to_string();
    let mut r = CheckReport {
        exercise: "03-race".into(),
        title: ex.manifest.manifest.title.clone(),
        source: "exercises/03-race/reduce.cu".into(),
        gpu: None,
        arch: "sm_90".into(),
        isolation: grader::tools::sandbox::Level::Namespaces,
        steps: vec![Step::new("racecheck", Status::Passed, "racecheck: no errors")],
        findings: Vec::new(),
        timing: None,
        solution_diff: Some(diff),
        outcome: Outcome::Pass,
    };
    let text = report::check_text(&r, &ex, &repo().join("exercises/03-race/reduce.cu"));
    assert!(text.contains("+  for (int offset = 16; offset > 0; offset >>= 1)"), "{text}");
    settings().bind(|| insta::assert_snapshot!("check_03_race_pass_with_diff", text));
    r.solution_diff = None;
    r.outcome = Outcome::Fail { step: "racecheck".into() };
    assert!(!report::check_text(&r, &ex, Path::new("reduce.cu")).contains("reference solution"));
}

#[test]
fn the_committed_verification_record_renders_as_the_verify_table() {
    let record: VerificationRecord = serde_json::from_str(&std::fs::read_to_string(repo().join("book/verification.json")).unwrap()).unwrap();
    let exercises = std::fs::read_dir(repo().join("exercises")).unwrap().filter(|e| e.as_ref().unwrap().path().join("exercise.toml").is_file()).count();
    assert_eq!(record.exercises.len(), exercises, "the record covers every exercise");
    assert!(record.exercises.iter().all(|e| e.outcome == Outcome::Pass), "the committed record is a passing one");
    // A survey (the book's tool table needs one): every tool on every untouched exercise, and for
    // the classes no tool sees, wrong outputs in every plain run.
    assert!(record.exercises.iter().all(|e| e.original_under_tools.len() == 4 && e.plain_runs.is_some()));
    for e in record.exercises.iter().filter(|e| e.tool.is_none()) {
        let runs = e.plain_runs.unwrap();
        assert_eq!((runs.correct, runs.failed), (0, 0), "{}", e.id);
        assert!(e.original_under_tools.iter().all(|s| s.status == ToolStatus::Clean), "{}: a tool saw it after all", e.id);
    }
    settings().bind(|| insta::assert_snapshot!("verify_committed_record", report::verify_text(&record)));
}
