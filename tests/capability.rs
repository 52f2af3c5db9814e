//! The capability gate through the CLI, on the catalog's own gated exercises (`requires` in their
//! manifests) and a GPU faked by the CUDABUGS_FAKE_GPU seam as an A100 (8.0): `check` says SKIPPED
//! with why and exits 6 before building, `list` tags them, `verify` reports them n/a and counts them
//! neither way, `grade` refuses their pairs (exit 5) instead of scoring zeros. The engine's side is
//! tested on a fixture workbook in grader/tests/capability.rs, whatever the catalog holds.

use crate::common::{nvcc_or_skip, repo, xtask, Copy};

const A100: &str = "NVIDIA A100;8.0";

/// The catalog's exercises that need more than an A100, with what they need ("9.0").
fn gated() -> Vec<(String, String)> {
    let found: Vec<(String, String)> = grader::exercise::catalog::discover_each(repo())
        .unwrap()
        .into_iter()
        .filter_map(|(id, loaded)| Some((id, loaded.ok()?.manifest.requires()?)))
        .filter(|(_, cap)| cap.major > 8)
        .map(|(id, cap)| (id, cap.to_string()))
        .collect();
    assert!(
        !found.is_empty(),
        "the catalog has Hopper exercises (requires = \"9.0\"): the gate has something to gate"
    );
    found
}

#[test]
fn list_tags_the_gated_exercises() {
    let out = xtask()
        .env("CUDABUGS_FAKE_GPU", A100)
        .args(["--color", "never", "list"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for (id, cap) in gated() {
        let tag = format!("[sm_{}+]", cap.replace('.', ""));
        assert!(
            text.lines().any(|l| l.contains(&id) && l.ends_with(&tag)),
            "{id} is not tagged {tag}:\n{text}"
        );
    }
    let json = xtask()
        .args(["--format", "json", "list"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let entries: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let (id, cap) = &gated()[0];
    let entry = entries
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id.as_str())
        .unwrap();
    assert_eq!(entry["requires"], cap.as_str());
}

#[test]
fn check_of_a_gated_exercise_on_an_older_gpu_is_skipped_before_building() {
    if !nvcc_or_skip("check_of_a_gated_exercise_on_an_older_gpu_is_skipped_before_building") {
        return;
    }
    let copy = Copy::new();
    let (id, cap) = gated().remove(0);
    let out = copy
        .xtask()
        .env("CUDABUGS_FAKE_GPU", A100)
        .args(["--color", "never", "check", &id])
        .assert()
        .code(6)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let why = format!("needs compute capability {cap} (Hopper); this GPU, NVIDIA A100, is 8.0");
    assert!(text.contains(&format!("SKIPPED (exit 6): {why}")), "{text}");
    assert!(!text.contains("build"), "nothing was built: {text}");
    assert!(
        !copy.path(".cudabugs/work/check").join(&id).exists(),
        "no work folder: nothing ran"
    );
}

#[test]
fn verify_reports_a_gated_exercise_as_not_applicable() {
    if !nvcc_or_skip("verify_reports_a_gated_exercise_as_not_applicable") {
        return;
    }
    let copy = Copy::new();
    let (id, _) = gated().remove(0);
    let out = copy
        .xtask()
        .env("CUDABUGS_FAKE_GPU", A100)
        .args(["--format", "json", "verify", &id])
        .assert()
        .code(6)
        .get_output()
        .stdout
        .clone();
    let record: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let e = &record["exercises"][0];
    assert!(
        e["not_applicable"]
            .as_str()
            .unwrap()
            .starts_with("needs compute capability 9.0"),
        "{e}"
    );
    assert_eq!(
        (&e["outcome"], &record["outcome"]),
        (&serde_json::json!("skipped"), &serde_json::json!("skipped"))
    );
    let names: Vec<&str> = e["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["manifest", "regions", "tool-aware code"],
        "its manifest and texts are checked, nothing built"
    );
    let text = copy
        .xtask()
        .env("CUDABUGS_FAKE_GPU", A100)
        .args(["--color", "never", "verify", &id])
        .assert()
        .code(6)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(&format!(
            "0 of 0 applicable exercise(s) passed; n/a on this GPU (not counted): {id}"
        )),
        "{text}"
    );
}

#[test]
fn grade_refuses_a_gated_exercise_on_an_older_gpu_instead_of_scoring_zeros() {
    if !nvcc_or_skip("grade_refuses_a_gated_exercise_on_an_older_gpu_instead_of_scoring_zeros") {
        return;
    }
    let copy = Copy::new();
    let (id, _) = gated().remove(0);
    // One student who handed in the untouched file.
    let class = tempfile::tempdir().unwrap();
    let source = std::fs::read_dir(repo().join("exercises").join(&id))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "cu"))
        .unwrap();
    let dest = class.path().join("ann/exercises").join(&id);
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::copy(&source, dest.join(source.file_name().unwrap())).unwrap();
    let out = copy.path("grades");
    copy.xtask()
        .env("CUDABUGS_FAKE_GPU", A100)
        .arg("grade")
        .arg(class.path())
        .args(["--exercises", &id, "--secret-seed", "7", "--out"])
        .arg(&out)
        .assert()
        .code(5);
    let journal = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    assert_eq!(line["state"], "unsupported", "{line}");
    assert!(
        line["reason"]
            .as_str()
            .unwrap()
            .contains("this GPU, NVIDIA A100, is 8.0"),
        "{line}"
    );
    assert_eq!(
        (line["points"].as_f64(), line["max"].as_f64()),
        (Some(0.0), Some(0.0)),
        "worth nothing either way here: {line}"
    );
    assert!(
        line["stages"].as_array().unwrap().is_empty(),
        "no stage was scored: {line}"
    );
    let csv = std::fs::read_to_string(out.join("grades.csv")).unwrap();
    assert!(
        csv.lines().nth(1).unwrap().contains(",n/a,0,0"),
        "the cell says n/a, not 0: {csv}"
    );
}
