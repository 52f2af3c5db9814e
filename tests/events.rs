//! `--format events`: every command's run as JSON Lines with one envelope (book/src/events.schema.json),
//! checked on `check`, `verify`, `sanitize` and `grade` end to end, served from their recordings and
//! built by the stub compiler (no nvcc, no GPU), and on a usage error. Each line is checked here, and
//! against the schema file with Python's jsonschema where it is installed (.ci/run installs it).

use std::path::PathBuf;
use std::process::Command;

use crate::common::{repo, Compiler, Copy};
use grader::exit::ExitStatus;

fn recording(name: &str) -> PathBuf {
    repo().join("grader/tests/recordings").join(name)
}

fn schema() -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(repo().join("book/src/events.schema.json")).unwrap(),
    )
    .unwrap()
}

/// The run's events, after checking what every run's stream holds: each line an object with the
/// envelope and a known event, `finished` once and last, with the command and the exit code.
fn events(copy: &Copy, args: &[&str], command: &str, code: i32) -> Vec<serde_json::Value> {
    let out = copy
        .xtask_built_by(Compiler::Stub)
        .args(["--format", "events"])
        .args(args)
        .assert()
        .code(code)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let known = schema()["properties"]["event"]["enum"].clone();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l}")))
        .collect();
    for line in &lines {
        assert_eq!(line["schema"], 1, "{line}");
        assert!(known.as_array().unwrap().contains(&line["event"]), "{line}");
    }
    let finished: Vec<_> = lines.iter().filter(|l| l["event"] == "finished").collect();
    assert_eq!(finished.len(), 1, "{text}");
    let last = lines.last().unwrap();
    assert_eq!(
        (&last["event"], &last["command"], &last["exit_code"]),
        (
            &serde_json::json!("finished"),
            &serde_json::json!(command),
            &serde_json::json!(code)
        ),
        "{text}"
    );
    validate(&text, command);
    lines
}

fn results(lines: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    lines
        .iter()
        .filter(|l| l["event"] == "result")
        .map(|l| &l["result"])
        .collect()
}

/// Every line against the schema file, or SKIPPED where Python's jsonschema is missing.
fn validate(text: &str, command: &str) {
    let probe = Command::new("python3")
        .args(["-c", "import jsonschema"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED the schema validation of {command}'s events: python3 with jsonschema is not installed (.ci/run installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("events.jsonl");
    std::fs::write(&file, text).unwrap();
    // The schema checked once and one validator for every line (`jsonschema.validate` checks the
    // schema again for each line: seconds per stream).
    let script = "import json, sys, jsonschema\n\
                  schema = json.load(open(sys.argv[1]))\n\
                  kind = jsonschema.validators.validator_for(schema)\n\
                  kind.check_schema(schema)\n\
                  validator = kind(schema)\n\
                  for line in open(sys.argv[2]):\n    validator.validate(json.loads(line))\n\
                  print('valid')";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(repo().join("book/src/events.schema.json"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{command}'s events do not validate:\n{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn check_verify_sanitize_and_grade_stream_one_schema_and_end_with_their_exit_code() {
    let copy = Copy::new();
    let rec = |name: &str| recording(name).display().to_string();

    let check = events(
        &copy,
        &["--replay-tools", &rec("check-untouched"), "check", "race"],
        "check",
        1,
    );
    assert!(check.iter().any(|l| l["event"] == "progress"));
    // The engine's own events: each stage's end, typed, in every plan.
    let ended = |lines: &[serde_json::Value], stage: &str| {
        lines
            .iter()
            .filter(|l| l["event"] == "stage_done" && l["stage"] == stage)
            .count()
    };
    assert_eq!(ended(&check, "sanitize:racecheck"), 1);
    assert!(check
        .iter()
        .any(|l| l["event"] == "phase_started" && l["phase"] == "shared"));
    let report = results(&check);
    assert_eq!(report.len(), 1);
    assert_eq!(
        (&report[0]["outcome"], &report[0]["step"]),
        (&serde_json::json!("fail"), &serde_json::json!("racecheck"))
    );

    let verify = events(
        &copy,
        &[
            "--replay-tools",
            &rec("verify-03-race"),
            "verify",
            "03-race",
        ],
        "verify",
        0,
    );
    assert_eq!(results(&verify)[0]["exercises"][0]["outcome"], "pass");
    assert!(
        ended(&verify, "build-debug") >= 2,
        "the original's and the solution's"
    );

    let program = repo().join("scripts/sanitize/two-bugs.cu");
    let sanitize = events(
        &copy,
        &[
            "--replay-tools",
            &rec("sanitize-two-bugs"),
            "sanitize",
            program.to_str().unwrap(),
        ],
        "sanitize",
        1,
    );
    let to_fix = results(&sanitize)[0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["follow_on_of"].is_null())
        .count();
    assert_eq!(to_fix, 2, "two bugs, two findings to fix");
    assert_eq!(ended(&sanitize, "sanitize:memcheck"), 1);

    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret.toml");
    std::fs::copy(repo().join("tests/fixtures/class-secret.toml"), &secret).unwrap();
    let out = copy.path("grades");
    let class = repo().join("tests/fixtures/class");
    let grade = events(
        &copy,
        &[
            "--replay-tools",
            &rec("grade-fixture"),
            "grade",
            class.to_str().unwrap(),
            "--exercises",
            "03-race,57-reduction",
            "--secret",
            secret.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        "grade",
        0,
    );
    let started: Vec<_> = grade.iter().filter(|l| l["event"] == "started").collect();
    assert_eq!(started.len(), 1);
    let graded = grade.iter().filter(|l| l["event"] == "graded").count();
    assert_eq!(graded as u64, started[0]["pairs"].as_u64().unwrap());
    assert!(
        ended(&grade, "call") > 0 && ended(&grade, "sanitize:initcheck") > 0,
        "the timed and the shared stages of a class"
    );
    assert_eq!(results(&grade).len(), 1, "the gradebook's summary");
    the_doubted_calls_are_the_confirmed_ones(&grade);
}

/// The students whose whole calls ran again beside the reference fix's (confirming rounds) are
/// the ones their chunk says it doubted, each with why.
fn the_doubted_calls_are_the_confirmed_ones(grade: &[serde_json::Value]) {
    let confirmed: std::collections::BTreeSet<(&str, &str)> = grade
        .iter()
        .filter(|l| l["event"] == "stage_done" && l["stage"] == "call")
        .filter(|l| l["run"].as_u64() >= Some(1 << 20) && l["variant"] != "reference")
        .map(|l| {
            let (ex, who) = (&l["submission"], &l["variant"]);
            (ex.as_str().unwrap(), who.as_str().unwrap())
        })
        .collect();
    let doubted: std::collections::BTreeSet<(&str, &str)> = grade
        .iter()
        .filter(|l| l["event"] == "chunk")
        .flat_map(|l| {
            let why = l["phases"]["doubted"].as_object().unwrap();
            assert!(why.values().all(|w| !w.as_array().unwrap().is_empty()));
            why.keys()
                .map(|who| (l["exercise"].as_str().unwrap(), who.as_str()))
        })
        .collect();
    assert!(!doubted.is_empty(), "the recording holds confirming rounds");
    assert_eq!(confirmed, doubted);
}

#[test]
fn a_usage_error_is_an_error_event_then_finished_with_exit_2() {
    let copy = Copy::new();
    let lines = events(&copy, &["hint", "99-nothing"], "hint", 2);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["event"], "error");
    assert!(lines[0]["message"]
        .as_str()
        .unwrap()
        .contains("no exercise matches"));
}

/// The schema's exit codes are the ones grader/src/exit.rs decides.
#[test]
fn the_schema_names_every_exit_code() {
    let codes: Vec<u64> = ExitStatus::ALL
        .iter()
        .map(|s| u64::from(s.code()))
        .collect();
    let listed: Vec<u64> = schema()["$defs"]["exit_code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(listed, codes);
}
