//! `check` and `verify` end to end through their plans on a machine without a GPU: the builds run
//! for real (sandboxed nvcc), and again through the stub compiler that needs no nvcc (each test
//! runs its plan both ways, with the same assertions), and every run of a tool or of the program is
//! served from a recording
//! that `--record-tools` made on an H100 (grader/tests/recordings; book/gpu-runs/2026-11-22-h100, and
//! for the performance track 2026-11-22-perf, with the peak program's runs).
//! What is tested is the orchestration and the verdicts: the same code a GPU run goes through.

use std::path::PathBuf;

use crate::common::{compilers, repo, Compiler, Copy};

fn recording(name: &str) -> PathBuf {
    repo().join("grader/tests/recordings").join(name)
}

fn json(cmd: &mut assert_cmd::Command, code: i32) -> serde_json::Value {
    let out = cmd.assert().code(code).get_output().stdout.clone();
    serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)))
}

fn steps(report: &serde_json::Value) -> Vec<(String, String, String)> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
                s["stage"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn the_untouched_race_fails_at_racecheck_with_the_recorded_finding_and_right_outputs() {
    for compiler in compilers(
        "the_untouched_race_fails_at_racecheck_with_the_recorded_finding_and_right_outputs",
    ) {
        let copy = Copy::new();
        let rec = recording("check-untouched");
        let report = json(
            copy.xtask_built_by(compiler)
                .args(["--format", "json", "--replay-tools"])
                .arg(&rec)
                .args(["check", "race"]),
            1,
        );
        let s = steps(&report);
        let names: Vec<(&str, &str)> = s
            .iter()
            .map(|(n, st, _)| (n.as_str(), st.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("build -G", "passed"),
                ("build -O3", "passed"),
                ("racecheck", "failed"),
                ("correctness", "passed")
            ]
        );
        assert_eq!(s[2].2, "sanitize:racecheck");
        assert_eq!(report["outcome"], "fail");
        assert_eq!(report["step"], "racecheck");
        let f = &report["findings"][0];
        assert_eq!(
            (f["kind"].as_str(), f["region"].as_str()),
            (Some("shared-race"), Some("bug"))
        );
        assert_eq!(f["locations"][0]["line"], 22);
        // The finding points at the learner's file, not at the copy that was built.
        assert!(
            f["locations"][0]["path"]
                .as_str()
                .unwrap()
                .ends_with("exercises/03-race/reduce.cu"),
            "{}",
            f["locations"][0]
        );
        assert!(report["timing"].is_null(), "a failed check is not timed");
    }
}

#[test]
fn the_fixed_race_passes_with_the_recorded_times_and_shows_the_diff() {
    for compiler in compilers("the_fixed_race_passes_with_the_recorded_times_and_shows_the_diff") {
        let copy = Copy::new();
        std::fs::copy(
            copy.path("solutions/03-race/reduce.cu"),
            copy.path("exercises/03-race/reduce.cu"),
        )
        .unwrap();
        let rec = recording("check-solution");
        let report = json(
            copy.xtask_built_by(compiler)
                .args(["--format", "json", "--replay-tools"])
                .arg(&rec)
                .args(["check", "race"]),
            0,
        );
        assert_eq!(report["outcome"], "pass");
        let t = &report["timing"];
        let (learner, reference) = (
            t["learner_ns"].as_f64().unwrap(),
            t["reference_ns"].as_f64().unwrap(),
        );
        assert!((t["ratio_to_reference"].as_f64().unwrap() - learner / reference).abs() < 1e-9);
        assert!(t["original_ns"].as_f64().unwrap() > 0.0);
        assert!(report["solution_diff"].is_string());
        // The pass is recorded in the progress file.
        let state = std::fs::read_to_string(copy.path(".cudabugs-state.json")).unwrap();
        assert!(state.contains("03-race"), "{state}");
        // In text, a pass says what comes next (the first pending exercise) and where its lesson is.
        let text = copy
            .xtask_built_by(compiler)
            .arg("--replay-tools")
            .arg(&rec)
            .args(["check", "race"])
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone();
        let text = String::from_utf8_lossy(&text);
        assert!(
            text.contains("Next: 01-index (") && text.contains("lessons/01-index.md"),
            "{text}"
        );
    }
}

#[test]
fn verify_of_the_race_passes_from_its_recording() {
    for compiler in compilers("verify_of_the_race_passes_from_its_recording") {
        let copy = Copy::new();
        let record = copy.path("record.json");
        let report = json(
            copy.xtask_built_by(compiler)
                .args(["--format", "json", "--replay-tools"])
                .arg(recording("verify-03-race"))
                .args(["verify", "03-race", "--record"])
                .arg(&record),
            0,
        );
        let ex = &report["exercises"][0];
        assert_eq!(ex["outcome"], "pass");
        assert_eq!(ex["finding"]["kind"], "shared-race");
        // racecheck is this exercise's detector: without --survey its plain run is not needed.
        assert!(
            ex["plain_run_correct"].is_null() && ex["plain_runs"].is_null(),
            "{ex}"
        );
        let checks: Vec<String> = ex["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        for expected in [
            "exercise fails under racecheck",
            "solution memcheck",
            "solution racecheck",
            "solution initcheck",
            "solution synccheck",
            "solution correctness",
        ] {
            assert!(
                checks.iter().any(|c| c == expected),
                "no `{expected}` in {checks:?}"
            );
        }
        // Without --survey a bug exercise is not timed: its timings are the survey's.
        assert!(
            !checks.iter().any(|c| c == "solution timing") && ex["timing"].is_null(),
            "{checks:?}"
        );
        assert!(
            ex["original_under_tools"].is_null(),
            "only --survey runs every tool on the original"
        );
        assert_eq!(report["gpu"]["name"], "NVIDIA H100 80GB HBM3");
        assert!(record.is_file());
    }
}

#[test]
fn a_recording_without_the_job_is_a_tool_error_that_names_it() {
    for compiler in compilers("a_recording_without_the_job_is_a_tool_error_that_names_it") {
        let copy = Copy::new();
        let report = json(
            copy.xtask_built_by(compiler)
                .args(["--format", "json", "--replay-tools"])
                .arg(recording("check-untouched"))
                .args(["check", "bounds"]),
            3,
        );
        assert_eq!(report["outcome"], "tool-error");
        assert!(
            report["message"]
                .as_str()
                .unwrap()
                .contains("no job `02-bounds/learner/sanitize:memcheck`"),
            "{report}"
        );
    }
}

/// What `check` of 57-reduction reported: the steps by name and status, and the performance summary.
fn perf_check(
    rec: &str,
    with_solution: bool,
    code: i32,
    compiler: Compiler,
) -> (Vec<(String, String)>, serde_json::Value) {
    let copy = Copy::new();
    if with_solution {
        std::fs::copy(
            copy.path("solutions/57-reduction/sum.cu"),
            copy.path("exercises/57-reduction/sum.cu"),
        )
        .unwrap();
    }
    // No cached peak in the fresh copy: the recording's peak runs (keyed like any tool run) are the peak.
    assert!(!copy.path(".cudabugs/peak").exists());
    let report = json(
        copy.xtask_built_by(compiler)
            .args(["--format", "json", "--replay-tools"])
            .arg(recording(rec))
            .args(["check", "57"]),
        code,
    );
    let steps = steps(&report).into_iter().map(|(n, s, _)| (n, s)).collect();
    (steps, report)
}

#[test]
fn the_untouched_reduction_is_clean_and_right_and_fails_its_speed_target() {
    for compiler in
        compilers("the_untouched_reduction_is_clean_and_right_and_fails_its_speed_target")
    {
        let (steps, report) = perf_check("check-57-untouched", false, 1, compiler);
        let want = [
            ("build -G", "passed"),
            ("build -O3", "passed"),
            ("memcheck", "passed"),
            ("racecheck", "passed"),
            ("initcheck", "passed"),
            ("synccheck", "passed"),
            ("correctness", "passed"),
            ("timing", "failed"),
            ("timing: dram-share", "failed"),
        ];
        assert_eq!(steps, want.map(|(a, b)| (a.to_string(), b.to_string())));
        assert_eq!(
            (report["outcome"].as_str(), report["step"].as_str()),
            (Some("fail"), Some("timing"))
        );
        let perf = &report["perf"];
        let versions: Vec<&str> = perf["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        assert_eq!(versions, ["original", "reference", "learner"]);
        let v = |i: usize| &perf["versions"][i];
        // Speedups are over the original timed in the same run; the learner's file is the original.
        let speedup = |i: usize| v(i)["speedup"].as_f64().unwrap();
        assert_eq!(speedup(0), 1.0);
        assert!(
            (speedup(2)
                - v(0)["nanoseconds"].as_f64().unwrap() / v(2)["nanoseconds"].as_f64().unwrap())
            .abs()
                < 1e-12
        );
        assert!(
            (0.9..1.1).contains(&speedup(2))
                && speedup(1) > perf["target_speedup"].as_f64().unwrap(),
            "{perf}"
        );
        // The untouched file is the original: it was profiled once, as the original, and that run is
        // the learner's (the same time exactly); its own whole call still ran.
        let ran: Vec<&str> = report["time_spent"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap())
            .collect();
        assert!(
            ran.contains(&"original timing")
                && !ran.contains(&"learner timing")
                && ran.contains(&"learner call"),
            "{ran:?}"
        );
        assert_eq!(v(2)["nanoseconds"], v(0)["nanoseconds"]);
        // The peak came from the recorded peak program, and the DRAM share is of its memcpy figure.
        let plain: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(recording("check-57-untouched").join("peak.plain.json"))
                .unwrap(),
        )
        .unwrap();
        let printed = plain["stdout"]
            .as_str()
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("memcpy_gbps "))
            .unwrap()
            .parse::<f64>()
            .unwrap();
        assert_eq!(perf["peak"]["memcpy_gbps"].as_f64(), Some(printed));
        let share = v(1)["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == "dram-share")
            .unwrap()["value"]
            .as_f64()
            .unwrap();
        let roof = &v(1)["roofline"];
        let gbps = roof["dram_bytes"].as_f64().unwrap() / v(1)["nanoseconds"].as_f64().unwrap();
        assert!((share - 100.0 * gbps / printed).abs() < 1e-9, "{share}");
        assert!(
            roof["intensity"].as_f64().unwrap() < 1.0,
            "a sum is memory-bound: {roof}"
        );
    }
}

#[test]
fn the_reduction_with_its_solution_passes_and_meets_its_goal() {
    for compiler in compilers("the_reduction_with_its_solution_passes_and_meets_its_goal") {
        let (steps, report) = perf_check("check-57-solution", true, 0, compiler);
        assert!(steps.iter().all(|(_, s)| s == "passed"), "{steps:?}");
        assert!(
            report["time_spent"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["stage"] == "learner timing"),
            "a changed file is profiled itself"
        );
        assert!(
            steps.iter().any(|(n, _)| n == "timing: dram-share"),
            "the goal is judged: {steps:?}"
        );
        assert_eq!(report["outcome"], "pass");
        let learner = &report["perf"]["versions"][2];
        assert!(learner["speedup"].as_f64().unwrap() >= 2.5, "{learner}");
        assert!(report["solution_diff"].is_string());
    }
}
