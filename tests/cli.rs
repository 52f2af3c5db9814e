//! One file: the CLI's tests share the no-nvcc workbook and the CPU-only skip rule.
//!
//! The xtask CLI, driven as a learner drives it (assert_cmd + predicates).

use crate::common::{nvcc_or_skip, xtask};
use predicates::prelude::*;

#[test]
fn an_unknown_id_says_where_the_ids_are_and_a_near_miss_gets_the_closest() {
    xtask().args(["check", "nope"]).assert().code(2).stderr(
        predicate::str::contains("no exercise matches `nope`")
            .and(predicate::str::contains("`list` shows all")),
    );
    xtask()
        .args(["check", "03-rase"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean 03-race?"));
}

#[test]
fn json_is_format_json_on_every_command() {
    for args in [&["--json", "list"][..], &["list", "--json"]] {
        let out = xtask()
            .args(args)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let list: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(list.as_array().is_some_and(|l| !l.is_empty()), "{args:?}");
    }
    let out = xtask()
        .args(["hint", "--json", "nope"])
        .assert()
        .code(2)
        .get_output()
        .stdout
        .clone();
    let error: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(error["exit_code"], 2);
    xtask()
        .args(["--json", "--format", "text", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "'--json' cannot be used with '--format",
        ));
}

#[test]
fn in_json_an_error_is_a_json_object_too() {
    let out = xtask()
        .args(["--format", "json", "hint", "0"])
        .assert()
        .code(2)
        .get_output()
        .stdout
        .clone();
    let error: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(error["exit_code"], 2);
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("`0` matches several exercises"),
        "{error}"
    );
}

#[test]
fn learner_code_is_never_set_to_run_as_root_or_in_group_root() {
    for (var, why) in [
        ("CUDABUGS_SANDBOX_UID", "never runs as root"),
        ("CUDABUGS_SANDBOX_GID", "never runs in group root"),
    ] {
        xtask()
            .env(var, "0")
            .args(["check", "03-race"])
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains(format!("{var}=0")).and(predicate::str::contains(why)),
            );
    }
}

#[test]
fn bundle_makes_a_folder_that_runs_without_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b");
    xtask()
        .args(["bundle", "--out"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("bundle ready"));
    for file in [
        "cudabugs",
        "exercises/03-race/reduce.cu",
        "exercises/03-race/exercise.toml",
        "solutions/03-race/reduce.cu",
    ] {
        assert!(out.join(file).is_file(), "{file} missing from the bundle");
    }
    // The bundled binary finds its workbook from inside the bundle.
    assert_cmd::Command::new(out.join("cudabugs"))
        .current_dir(out.join("exercises"))
        .env_remove("CUDABUGS_ROOT")
        .args(["--format", "json", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"03-race\""));
}

#[test]
fn outside_a_workbook_says_so() {
    let dir = tempfile::tempdir().unwrap();
    xtask()
        .current_dir(dir.path())
        .args(["check", "3"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not inside a cudabugs workbook"));
}

/// An empty workbook folder (the catalog is the binary's) where no nvcc can be found: empty PATH,
/// no CUDA_HOME, no local toolkit; None, said as SKIPPED, where this machine has a system nvcc.
fn without_nvcc(test: &str) -> Option<(tempfile::TempDir, impl Fn() -> assert_cmd::Command)> {
    if std::path::Path::new("/usr/local/cuda/bin/nvcc").exists() {
        eprintln!("SKIPPED {test}: this machine has /usr/local/cuda/bin/nvcc");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    for sub in ["exercises", "solutions"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    let root = dir.path().to_path_buf();
    let command = move || {
        let mut c = xtask();
        c.env("CUDABUGS_ROOT", &root)
            .env("PATH", "")
            .env_remove("CUDA_HOME")
            .env_remove("CUDA_PATH")
            .env_remove("CUDABUGS_NVCC");
        c
    };
    Some((dir, command))
}

#[test]
fn without_nvcc_check_says_how_to_get_one() {
    let Some((_dir, xtask)) = without_nvcc("without_nvcc_check_says_how_to_get_one") else {
        return;
    };
    xtask()
        .args(["check", "race"])
        .assert()
        // A missing toolkit is a tool error (3), not a usage error (2).
        .code(3)
        .stderr(
            predicate::str::contains("no nvcc found")
                .and(predicate::str::contains("cargo xtask toolkit install")),
        );
}

#[test]
fn check_without_an_id_checks_the_next_pending_exercise() {
    // A fresh workbook (no progress file): the next pending exercise is the first `list` names. No
    // nvcc, so that the check stops right after choosing (a tool error, 3).
    let Some((_dir, xtask)) = without_nvcc("check_without_an_id_checks_the_next_pending_exercise")
    else {
        return;
    };
    let listed = xtask().args(["--format", "json", "list"]).output().unwrap();
    let entries: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let first = entries[0]["id"].as_str().unwrap().to_string();
    xtask()
        .arg("check")
        .assert()
        .code(3)
        .stderr(predicate::str::contains(format!(
            "checking {first}, the next pending exercise"
        )));
}

#[test]
fn check_without_an_id_inside_an_exercises_folder_checks_that_exercise() {
    let Some((dir, xtask)) =
        without_nvcc("check_without_an_id_inside_an_exercises_folder_checks_that_exercise")
    else {
        return;
    };
    let folder = dir.path().join("exercises/04-sync");
    std::fs::create_dir_all(&folder).unwrap();
    xtask()
        .current_dir(&folder)
        .arg("check")
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "checking 04-sync, the exercise of this folder",
        ));
}

/// Whether this machine has nvcc and no GPU, as the CPU-only tests need; if not, the test says so.
fn cpu_only_or_skip(test: &str) -> bool {
    if !nvcc_or_skip(test) {
        return false;
    }
    if grader::tools::gpu::probe().is_present() {
        eprintln!("SKIPPED {test}: this machine has a GPU");
        return false;
    }
    true
}

#[test]
fn peak_on_a_cpu_only_machine_is_skipped_with_exit_6() {
    if !cpu_only_or_skip("peak_on_a_cpu_only_machine_is_skipped_with_exit_6") {
        return;
    }
    let out = xtask()
        .args(["peak"])
        .assert()
        .code(6)
        .get_output()
        .stderr
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.starts_with("SKIPPED: the peak is measured on a GPU")
            && text.contains("no NVIDIA driver"),
        "{text}"
    );
}

/// (name, status) of each step in a JSON array of steps.
fn statuses(steps: &serde_json::Value) -> Vec<(&str, &str)> {
    steps
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect()
}

#[test]
fn check_on_a_cpu_only_machine_builds_both_variants_and_skips_with_exit_6() {
    if !cpu_only_or_skip("check_on_a_cpu_only_machine_builds_both_variants_and_skips_with_exit_6") {
        return;
    }
    let out = xtask()
        .args(["--format", "json", "check", "3"])
        .assert()
        .code(6)
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["outcome"], "skipped");
    let steps = statuses(&report["steps"]);
    assert_eq!(
        steps,
        vec![
            ("build -G", "passed"),
            ("build -O3", "passed"),
            ("gpu", "skipped")
        ]
    );
}

#[test]
fn a_learner_file_that_does_not_compile_fails_at_the_build_step() {
    if !nvcc_or_skip("a_learner_file_that_does_not_compile_fails_at_the_build_step") {
        return;
    }
    // A workbook copy whose 03-race file has a syntax error inside its region (one outside it is
    // not gradable: `grade` would refuse it, and so does `check`).
    let copy = crate::common::Copy::new();
    let file = copy.path("exercises/03-race/reduce.cu");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replacen("// ANCHOR: bug\n", "// ANCHOR: bug\nthis is not CUDA\n", 1),
    )
    .unwrap();
    copy.xtask()
        .args(["check", "race"])
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("does not compile")
                .and(predicate::str::contains("FAIL at step `build -G`")),
        );
}

/// An include `grade` would give 0 is refused by `check` too, before anything is built, in
/// `grade`'s sentence: outside the region the line is called inserted, not changed; inside it, the
/// include is named as reaching past the region. Exit 5, not gradable.
#[test]
fn an_include_grade_would_refuse_is_refused_by_check_in_grade_s_words() {
    if !nvcc_or_skip("an_include_grade_would_refuse_is_refused_by_check_in_grade_s_words") {
        return;
    }
    let copy = crate::common::Copy::new();
    let file = copy.path("exercises/03-race/reduce.cu");
    let original = std::fs::read_to_string(&file).unwrap();
    for (from, to, says) in [
        (
            "#include <algorithm>\n",
            "#include <algorithm>\n#include <cstdio>\n",
            "a line was inserted outside the marked regions",
        ),
        (
            "// ANCHOR: bug\n",
            "// ANCHOR: bug\n#include <cstdio>\n",
            "inside a marked region",
        ),
    ] {
        assert!(original.contains(from), "03-race has no `{from}`");
        std::fs::write(&file, original.replacen(from, to, 1)).unwrap();
        copy.xtask()
            .args(["check", "race"])
            .assert()
            .code(5)
            .stdout(
                predicate::str::contains("`grade` would refuse this file, because")
                    .and(predicate::str::contains(says))
                    .and(predicate::str::contains("#include <cstdio>"))
                    .and(predicate::str::contains("build -G").not()),
            );
    }
}

#[test]
fn nvcc_errors_name_the_file_from_where_the_learner_stands_once() {
    if !nvcc_or_skip("nvcc_errors_name_the_file_from_where_the_learner_stands_once") {
        return;
    }
    let copy = crate::common::Copy::new();
    let file = copy.path("exercises/03-race/reduce.cu");
    let mut lines: Vec<String> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines[20] = "  int x = undefined_thing;".into();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = copy
        .xtask()
        .current_dir(copy.root())
        .args(["check", "race"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(
            "\n    exercises/03-race/reduce.cu(21): error: identifier \"undefined_thing\""
        ),
        "{text}"
    );
    // Both builds failed on it; it is said once.
    assert_eq!(
        text.matches("undefined_thing\" is undefined").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("build -O3: the same as build -G above"),
        "{text}"
    );
}

#[test]
fn without_a_gpu_skipped_says_what_to_do_next_and_the_jargon_waits_for_verbose() {
    if !cpu_only_or_skip(
        "without_a_gpu_skipped_says_what_to_do_next_and_the_jargon_waits_for_verbose",
    ) {
        return;
    }
    let text = |args: &[&str]| {
        let out = xtask()
            .args(args)
            .assert()
            .code(6)
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let plain = text(&["check", "3"]);
    for next in [
        "cargo xtask hint 03-race",
        "book/src/lessons/03-race.md",
        "cargo xtask --replay-tools grader/tests/recordings/check-untouched check 03-race",
    ] {
        assert!(plain.contains(next), "{next}: {plain}");
    }
    assert!(!plain.contains("Trust:"), "{plain}");
    let verbose = text(&["--verbose", "check", "3"]);
    assert!(
        verbose.contains("Trust:") && verbose.contains("Sandbox:"),
        "{verbose}"
    );
}

#[test]
fn verify_without_a_gpu_checks_what_it_can_and_exits_6() {
    if !cpu_only_or_skip("verify_without_a_gpu_checks_what_it_can_and_exits_6") {
        return;
    }
    let out = xtask()
        .args(["--format", "json", "verify", "sync"])
        .assert()
        .code(6)
        .get_output()
        .stdout
        .clone();
    let record: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let steps = statuses(&record["exercises"][0]["checks"]);
    assert_eq!(
        steps,
        vec![
            ("manifest", "passed"),
            ("regions", "passed"),
            ("tool-aware code", "passed"),
            ("exercise build -G", "passed"),
            ("exercise build -O3", "passed"),
            ("solution build -G", "passed"),
            ("solution build -O3", "passed"),
            ("gpu", "skipped"),
        ]
    );
    assert_eq!(record["outcome"], "skipped");
    // Several exercises by name, in the order named; a name that matches none stops it.
    let out = xtask()
        .args(["--format", "json", "verify", "race", "sync"])
        .assert()
        .code(6)
        .get_output()
        .stdout
        .clone();
    let record: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let ids: Vec<&str> = record["exercises"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["03-race", "04-sync"]);
    xtask()
        .args(["verify", "race", "no-such-exercise"])
        .assert()
        .code(2);
}

/// `book --out DIR` (the build the book's tests read: one whole build of the book for all of them).
#[test]
fn book_builds_into_the_folder_it_is_given() {
    let (_, html) = crate::repo_book::built();
    assert!(
        html.starts_with(crate::repo_book::out()) && html.join("lessons/03-race.html").is_file(),
        "{}",
        html.display()
    );
}

/// `cargo xtask check` builds the cudabugs package alone, `cargo xtask book` the book tool beside it,
/// `cargo test` the workspace with its dev-dependencies: they must resolve the same features in
/// every crate grader uses (Cargo.toml's workspace-hack dependencies), or each compiles grader
/// again. `cargo test` built everything already, so the other two find every library fresh.
#[test]
fn check_and_book_reuse_every_library_cargo_test_compiled() {
    for (selection, bin) in [
        (&["--package", "cudabugs"][..], "xtask"),
        (
            &["--package", "cudabugs", "--package", "cudabugs-book"][..],
            "cudabugs-book",
        ),
    ] {
        let mut cargo = std::process::Command::new(env!("CARGO"));
        cargo
            .current_dir(crate::common::repo())
            .arg("build")
            .args(selection)
            .args(["--bin", bin, "--message-format", "json"]);
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        let out = cargo.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let compiled: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| {
                m["reason"] == "compiler-artifact"
                    && m["fresh"] == false
                    && m["target"]["kind"][0] != "bin"
            })
            .map(|m| m["package_id"].as_str().unwrap_or_default().to_string())
            .collect();
        assert!(compiled.is_empty(), "building {bin} as `cargo xtask` does compiled again what `cargo test` had built (a feature differs; see the workspace-hack dependencies in Cargo.toml): {compiled:?}");
    }
}

#[test]
fn toolkit_show_names_every_tool_and_the_gpu() {
    let out = xtask()
        .args(["--format", "json", "toolkit", "show"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let shown: serde_json::Value = serde_json::from_slice(&out).unwrap();
    for key in ["nvcc", "compute_sanitizer", "ncu", "gpu"] {
        assert!(shown.get(key).is_some(), "`{key}` missing from {shown}");
    }
    assert!(shown["gpu"].as_str().is_some());
}

/// A file whose region times a shared-memory access with `clock64()` (the racecheck cheat) fails
/// `check` for the tool-aware rule, named at its line and in its compiled kernels, before any GPU
/// step: the text and the device code are read on the CPU.
#[test]
fn check_names_tool_aware_code_by_its_line_and_its_compiled_clock_reads() {
    if !cpu_only_or_skip("check_names_tool_aware_code_by_its_line_and_its_compiled_clock_reads") {
        return;
    }
    let copy = crate::common::Copy::new();
    std::fs::copy(
        crate::common::repo().join("tests/fixtures/adversarial/tool-aware/reduce.cu"),
        copy.path("exercises/03-race/reduce.cu"),
    )
    .unwrap();
    let out = copy
        .xtask()
        .args(["--format", "json", "check", "race"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let flag = report["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "tool-aware")
        .unwrap_or_else(|| panic!("{report}"));
    let message = flag["message"].as_str().unwrap();
    assert!(
        message.contains("reads a clock or timer (`clock64`)"),
        "{message}"
    );
    if grader::tools::toolchain::find(grader::tools::toolchain::ToolName::Cuobjdump, copy.root())
        .is_some()
    {
        assert!(
            message.contains("its compiled kernel") && message.contains("SR_CLOCKLO"),
            "{message}"
        );
    }
    assert!(
        report["trust"].as_str().unwrap().contains("no capability"),
        "{report}"
    );
}

#[test]
fn usage_lines_name_the_command_as_it_is_typed() {
    // Run through cargo the binary is `xtask`: its usage says `cargo xtask`, a command one can type.
    xtask()
        .arg("frob")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "Usage: cargo xtask [OPTIONS] <COMMAND>",
        ));
    xtask()
        .args(["check", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Usage: cargo xtask check [OPTIONS] [ID]",
        ));
}
