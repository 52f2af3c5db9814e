//! Snapshots of what a learner reads: a check report built from a real tool record (captured on an
//! H200 by `verify --keep`) and the committed verification record, rendered as text. Colours,
//! durations and machine paths are redacted.

use std::path::Path;

use grader::exercise::manifest::{Detector, Metric, Tool, Track};
use grader::exercise::workbook::Exercise;
use grader::exercise::{catalog, regions};
use grader::judge::verdict::{self, Outcome, Status, Step};
use grader::plans::check::CheckReport;
use grader::plans::sanitize::ToolStatus;
use grader::plans::verify::VerificationRecord;
use grader::report;
use grader::tools::sanitizer;

use crate::repo;

fn exercise(id: &str) -> Exercise {
    let on_disk = catalog::load(&repo(), id).unwrap();
    let leak = |p: &Path| -> &'static str {
        Box::leak(std::fs::read_to_string(p).unwrap().into_boxed_str())
    };
    Exercise {
        original: leak(&on_disk.exercise_path),
        solution: leak(&on_disk.solution_path),
        manifest: on_disk.manifest,
    }
}

/// A check report of `ex` with these steps (its outcome theirs), as `check` would write it on a
/// machine without a GPU record: no findings, flags, timing or diff unless the test adds them.
fn check_report(ex: &Exercise, file: &str, steps: Vec<Step>) -> CheckReport {
    CheckReport {
        exercise: ex.id().to_string(),
        title: ex.manifest.manifest.title.clone(),
        source: format!("exercises/{}/{file}", ex.id()),
        gpu: None,
        arch: "sm_90".into(),
        isolation: grader::tools::sandbox::Level::Namespaces,
        outcome: Outcome::from_steps(&steps),
        steps,
        findings: Vec::new(),
        flags: Vec::new(),
        timing: None,
        perf: None,
        solution_diff: None,
        trust: String::new(),
        time_spent: Vec::new(),
    }
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
    let xml = std::fs::read_to_string(
        crate::repo().join("grader/tests/fixtures/01-index-exercise-memcheck.xml"),
    )
    .unwrap();
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
        findings,
        ..check_report(&ex, "transpose.cu", steps)
    };
    let text = report::check_text(&r, &ex, &source);
    assert!(
        text.contains("exercises/01-index/transpose.cu:30:"),
        "{text}"
    );
    settings().bind(|| insta::assert_snapshot!("check_01_index_memcheck", text));
}

#[test]
fn wrong_outputs_of_a_bug_no_tool_sees_get_its_explanation_and_lesson() {
    let ex = exercise("15-global-race");
    let source = repo().join("exercises/15-global-race/degree.cu");
    // The summary check printed on the H100 (book/gpu-runs/2026-11-22-h100-catalog/check-15.txt).
    let wrong = "case `a million edges`: degree[0] = 6 but the reference says 993; 1024 of 1024 elements wrong, max error 1.067e3";
    let report_with = |correctness: Step| {
        let steps = vec![
            Step::new("build -G", Status::Passed, "nvcc -G -g (sm_90)"),
            Step::new("build -O3", Status::Passed, "nvcc -O3 -lineinfo (sm_90)"),
            correctness,
        ];
        check_report(&ex, "degree.cu", steps)
    };
    let text = report::check_text(
        &report_with(Step::new("correctness", Status::Failed, wrong)),
        &ex,
        &source,
    );
    assert!(
        text.contains(&format!(
            "What it means: {}",
            ex.manifest.manifest.explain.finding
        )),
        "{text}"
    );
    assert!(
        text.contains("book/src/lessons/15-global-race.md"),
        "{text}"
    );
    // A crash is not the bug this exercise teaches: no explanation of lost increments for it.
    let crashed = report::check_text(
        &report_with(Step::new(
            "correctness",
            Status::Failed,
            "the program failed (exit status 3)",
        )),
        &ex,
        &source,
    );
    assert!(!crashed.contains("What it means"), "{crashed}");
}

#[test]
fn a_pass_shows_the_solution_as_a_diff_and_only_then() {
    let ex = exercise("03-race");
    let diff = similar::TextDiff::from_lines(ex.original, ex.solution)
        .unified_diff()
        .header("yours/reduce.cu", "reference/reduce.cu")
        .to_string();
    let mut r = CheckReport {
        solution_diff: Some(diff),
        ..check_report(
            &ex,
            "reduce.cu",
            vec![Step::new(
                "racecheck",
                Status::Passed,
                "racecheck: no errors",
            )],
        )
    };
    let text = report::check_text(&r, &ex, &repo().join("exercises/03-race/reduce.cu"));
    assert!(
        text.contains("+  for (int offset = 16; offset > 0; offset >>= 1)"),
        "{text}"
    );
    settings().bind(|| insta::assert_snapshot!("check_03_race_pass_with_diff", text));
    r.solution_diff = None;
    r.outcome = Outcome::Fail {
        step: "racecheck".into(),
    };
    assert!(!report::check_text(&r, &ex, Path::new("reduce.cu")).contains("reference solution"));
}

#[test]
fn the_committed_verification_record_renders_as_the_verify_table() {
    let record: VerificationRecord = serde_json::from_str(
        &std::fs::read_to_string(repo().join("book/verification.json")).unwrap(),
    )
    .unwrap();
    the_record_covers_the_catalog_and_passes(&record);
    every_untouched_exercise_was_surveyed(&record);
    the_performance_targets_hold(&record);
    settings()
        .bind(|| insta::assert_snapshot!("verify_committed_record", report::verify_text(&record)));
}

fn the_record_covers_the_catalog_and_passes(record: &VerificationRecord) {
    // Every exercise of the record is in the catalog; a newer exercise the GPU has not run yet is
    // simply absent (the book says "not yet run on a GPU" for it), never invented.
    let catalog: Vec<String> = std::fs::read_dir(repo().join("exercises"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("exercise.toml").is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        record.exercises.iter().all(|e| catalog.contains(&e.id)),
        "the record covers only exercises of the catalog"
    );
    assert!(
        record.exercises.len() >= 24,
        "the record covers the 17 bug and 7 performance exercises at least"
    );
    assert!(
        record.exercises.iter().all(|e| e.outcome == Outcome::Pass),
        "the committed record is a passing one"
    );
}

fn every_untouched_exercise_was_surveyed(record: &VerificationRecord) {
    // A survey (the book's tool table needs one): every tool that can check it on every untouched
    // exercise (memcheck alone where it launches kernels from the GPU), and for the classes no
    // tool sees, wrong outputs in every plain run.
    for e in &record.exercises {
        let tools = grader::exercise::catalog::load(&repo(), &e.id)
            .unwrap()
            .manifest
            .tools();
        assert!(
            e.original_under_tools.len() == tools.len() && e.plain_runs.is_some(),
            "{}: {} of {} tools, plain runs {:?}",
            e.id,
            e.original_under_tools.len(),
            tools.len(),
            e.plain_runs
        );
    }
    for e in record.exercises.iter().filter(|e| e.tool.is_none()) {
        let runs = e.plain_runs.unwrap();
        // A hang or a crash stops every plain run; no tool claims them, and the tools' runs of a
        // hang time out, so only the wrong-output and performance exercises must be clean.
        let (expected, clean) = match (e.track, e.detector) {
            (Track::Perf, _) => ((runs.runs, 0), true),
            (_, Detector::Hang | Detector::Crash) => ((0, runs.runs), false),
            _ => ((0, 0), true),
        };
        assert_eq!((runs.correct, runs.failed), expected, "{}: a bug no tool sees is wrong every time, a hang or crash stops every run, a slow original is right every time", e.id);
        assert!(
            !clean
                || e.original_under_tools
                    .iter()
                    .all(|s| s.status == ToolStatus::Clean),
            "{}: a tool saw it after all",
            e.id
        );
    }
}

fn the_performance_targets_hold(record: &VerificationRecord) {
    // The performance track's targets, as measured on the recorded GPU.
    let perf: Vec<_> = record
        .exercises
        .iter()
        .filter(|e| e.track == Track::Perf)
        .collect();
    assert!(perf.len() >= 7, "at least seven performance exercises");
    for e in &perf {
        let p = e
            .perf
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no performance record", e.id));
        let (original, fix) = (
            p.version("original").unwrap(),
            p.version("reference").unwrap(),
        );
        assert_eq!(original.speedup, 1.0);
        assert!(
            fix.speedup >= p.target_speedup,
            "{}: the fix reaches the target",
            e.id
        );
        assert!(
            p.target_speedup <= 0.7 * fix.speedup + 1e-9,
            "{}: the target leaves room for a different fix ({} vs {})",
            e.id,
            p.target_speedup,
            fix.speedup
        );
        // A fix that leaves the FP32 units for the tensor cores has no point under the fp32 roof.
        let on_tensor_cores = fix
            .metric(grader::exercise::metric::Metric::TensorShare)
            .is_some_and(|s| s > 0.0);
        assert!(
            original.roofline.is_some() && (fix.roofline.is_some() || on_tensor_cores),
            "{}: both on the roofline",
            e.id
        );
        // ncu profiles one call of a call-clocked exercise (its clock is the harness's), so only
        // the kernel-clocked ones have repeats to compare.
        assert!(
            fix.repeat_spread.is_some() || fix.kernel_ns.is_some(),
            "{}: the spread of the fix's repeats is recorded",
            e.id
        );
        assert!(p.peak.memcpy_gbps > 0.0 && p.peak.fma_ncu_gflops > 0.0);
    }
    let fix = |id: &str| {
        perf.iter()
            .find(|e| e.id == id)
            .and_then(|e| e.perf.as_ref())
            .and_then(|p| p.version("reference").cloned())
            .unwrap()
    };
    for id in [
        "51-coalesce",
        "52-bank-conflicts",
        "56-occupancy",
        "57-reduction",
    ] {
        let share = fix(id).metric(Metric::DramShare).unwrap();
        assert!(share >= 85.0, "{id}: a memory-bound reference reaches 85% of the measured memcpy bandwidth, not {share:.1}%");
    }
    let matmul = fix("54-matmul");
    assert!(
        matmul.metric(Metric::ShareOfBaseline).unwrap() >= 50.0 && matmul.speedup >= 4.0,
        "the matmul reference reaches half of cuBLAS and 4x the naive kernel"
    );
}

#[test]
fn a_performance_check_shows_every_version_its_metrics_and_the_roofline() {
    let record: VerificationRecord = serde_json::from_str(
        &std::fs::read_to_string(repo().join("book/verification.json")).unwrap(),
    )
    .unwrap();
    let mut summary = record
        .exercises
        .iter()
        .find(|e| e.id == "52-bank-conflicts")
        .and_then(|e| e.perf.clone())
        .expect("52's performance record");
    // The learner handed in the untouched file: the original's numbers under the learner's name.
    let mut mine = summary.versions[0].clone();
    mine.version = "learner".into();
    summary.versions.push(mine);
    let text = report::perf_text(&summary);
    let row = |label: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` row in\n{text}"))
            .to_string()
    };
    assert_eq!(
        row("original").split_whitespace().collect::<Vec<_>>(),
        ["original", "reference", "yours"],
        "the header comes first"
    );
    let fix = format!("{:.2}x", summary.versions[1].speedup);
    assert_eq!(
        row("speedup")
            .split_whitespace()
            .skip(3)
            .collect::<Vec<_>>(),
        ["1.00x", fix.as_str(), "1.00x"],
        "{text}"
    );
    assert!(
        row("bank conflicts per shared access")
            .split_whitespace()
            .count()
            == 8,
        "a value per version: {text}"
    );
    assert!(
        text.contains("memory-bound side")
            && text.contains(&format!("ridge at {:.1} FLOP/byte", summary.peak.ridge())),
        "{text}"
    );
    assert!(
        text.contains("extra passes shared memory needs"),
        "the metric in plain words"
    );
    settings().bind(|| insta::assert_snapshot!("perf_52_untouched", text));
}

#[test]
fn a_hang_is_its_own_outcome_and_gets_the_exercises_explanation() {
    // 07-leak's manifest made a hang exercise's: the report does not depend on which exercise.
    let mut ex = exercise("07-leak");
    let text = ex.manifest.text.clone();
    let start = text.find("[expect]").unwrap();
    let end = start + text[start..].find("\n\n").unwrap();
    let hang = format!(
        "{}[expect]\ndetector = \"hang\"\nregion = \"alloc\"\ntimeout_s = 3{}",
        &text[..start],
        &text[end..]
    );
    ex.manifest =
        grader::exercise::manifest::parse("07-leak", Path::new("exercise.toml"), &hang).unwrap();
    let hung = "hung: the threads wait in region `alloc` (center.cu:30-44); the program was killed after 3.0 s";
    let steps = vec![
        Step::new("build -G", Status::Passed, "nvcc -G (sm_90)"),
        Step::new("correctness", Status::Hung, hung),
    ];
    let r = check_report(&ex, "center.cu", steps);
    assert_eq!((r.outcome.label(), r.outcome.exit().code()), ("hung", 4));
    let text = report::check_text(&r, &ex, Path::new("center.cu"));
    // Without the colours' escape sequences.
    let plain: String = text
        .split('\u{1b}')
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part
            } else {
                part.split_once('m').map_or(part, |(_, rest)| rest)
            }
        })
        .collect();
    assert!(
        plain.contains(&format!("HUNG at step `correctness`: {hung}")),
        "{plain}"
    );
    assert!(
        text.contains(&format!(
            "What it means: {}",
            ex.manifest.manifest.explain.finding
        )) && text.contains("lessons/07-leak.md"),
        "{text}"
    );
}
