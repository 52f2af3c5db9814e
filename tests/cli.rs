//! The xtask CLI, driven as a learner drives it (assert_cmd + predicates).

mod common;

use common::{nvcc_or_skip, xtask};
use predicates::prelude::*;

#[test]
fn an_unknown_id_lists_the_exercises() {
    xtask()
        .args(["check", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no exercise matches `nope`").and(predicate::str::contains("03-race")));
}

#[test]
fn outside_a_workbook_says_so() {
    let dir = tempfile::tempdir().unwrap();
    xtask().current_dir(dir.path()).args(["check", "3"]).assert().code(2).stderr(predicate::str::contains("not inside a cudabugs workbook"));
}

#[test]
fn without_nvcc_check_says_how_to_get_one() {
    // A copy of the workbook where no nvcc can be found: empty PATH, no CUDA_HOME, no local toolkit.
    let dir = tempfile::tempdir().unwrap();
    for sub in ["exercises", "solutions"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    if std::path::Path::new("/usr/local/cuda/bin/nvcc").exists() {
        eprintln!("SKIPPED without_nvcc_check_says_how_to_get_one: this machine has /usr/local/cuda/bin/nvcc");
        return;
    }
    xtask()
        .env("CUDABUGS_ROOT", dir.path())
        .env("PATH", "")
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .env_remove("CUDABUGS_NVCC")
        .args(["check", "race"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no nvcc found").and(predicate::str::contains("cargo xtask toolkit install")));
}

#[test]
fn check_on_a_cpu_only_machine_builds_both_variants_and_skips_with_exit_6() {
    if !nvcc_or_skip("check_on_a_cpu_only_machine_builds_both_variants_and_skips_with_exit_6") {
        return;
    }
    if grader::gpu::probe().is_present() {
        eprintln!("SKIPPED check_on_a_cpu_only_machine...: this machine has a GPU");
        return;
    }
    let out = xtask().args(["--format", "json", "check", "3"]).assert().code(6).get_output().stdout.clone();
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["outcome"], "skipped");
    let steps: Vec<(&str, &str)> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(steps, vec![("build -G", "passed"), ("build -O3", "passed"), ("gpu", "skipped")]);
}

#[test]
fn a_learner_file_that_does_not_compile_fails_at_the_build_step() {
    if !nvcc_or_skip("a_learner_file_that_does_not_compile_fails_at_the_build_step") {
        return;
    }
    // A workbook copy whose 03-race file has a syntax error.
    let copy = common::Copy::new();
    std::fs::write(copy.path("exercises/03-race/reduce.cu"), "this is not CUDA\n").unwrap();
    copy.xtask()
        .args(["check", "race"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("does not compile").and(predicate::str::contains("FAIL at step `build -G`")));
}
