//! One file: the learner's commands share one throwaway workbook helper and one set of snapshot filters.
//!
//! The learner's commands (list, hint, reset, watch) and their error paths, on throwaway copies of
//! the workbook. Terminal output is snapshot-tested with paths and times redacted.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{nvcc_or_skip, Copy};
use predicates::prelude::*;

fn stdout_of(cmd: &mut assert_cmd::Command) -> String {
    String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
}

fn json_of(cmd: &mut assert_cmd::Command) -> serde_json::Value {
    serde_json::from_str(&stdout_of(cmd)).unwrap()
}

/// Snapshot settings: the copy's folder and backup time stamps are not part of the output's shape.
fn redacted(copy: &Copy) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(
        &regex_escape(&copy.root().display().to_string()),
        "[WORKBOOK]",
    );
    s.add_filter(r"\.\d{8}-\d{6}(-\d+)?", ".[TIME]");
    s.add_filter(r"\(\d+\.\ds\)", "([SECS])");
    s
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

#[test]
fn list_on_a_fresh_workbook_points_at_the_first_exercise() {
    let copy = Copy::new();
    let out = stdout_of(copy.xtask().args(["list"]));
    // Every exercise has its line, pending, however many the catalog holds.
    let ids = exercise_ids();
    assert_eq!(
        out.lines().next(),
        Some(format!("0 of {} exercises done", ids.len()).as_str()),
        "{out}"
    );
    for id in &ids {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().any(|w| w == id) && l.contains("pending")),
            "{id} has no pending line:\n{out}"
        );
    }
    // The shape, on the exercises the first catalog had (01-17, 51-57): an exercise added since
    // changes the count and the column widths, not what a line says.
    let first_catalog = |l: &str| {
        let id = l
            .split_whitespace()
            .find(|w| *w != "->")
            .unwrap_or_default();
        !(ids.iter().any(|i| i == id)
            && id
                .get(..2)
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| (18..51).contains(&n)))
    };
    // Each chapter of the learning path heads its exercises, in the path's order, with how many
    // of them are done; the snapshot keeps the headings without their counts, which grow.
    use grader::exercise::path;
    let catalog = grader::exercise::catalog::discover(crate::common::repo()).unwrap();
    let stops: Vec<path::Stop> = catalog
        .iter()
        .map(|d| path::Stop {
            id: &d.manifest.id,
            level: d.manifest.level(),
        })
        .collect();
    let text = std::fs::read_to_string(crate::common::repo().join(path::PATH_FILE)).unwrap();
    let chapters: Vec<(String, usize)> =
        path::parse(std::path::Path::new(path::PATH_FILE), &text, &stops)
            .unwrap()
            .chapters
            .into_iter()
            .map(|c| (c.title, c.exercises.len()))
            .collect();
    let headings: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_end().ends_with("done)"))
        .map(str::trim)
        .collect();
    let expected: Vec<String> = chapters
        .iter()
        .map(|(title, n)| format!("{title} (0 of {n} done)"))
        .collect();
    assert_eq!(headings, expected, "{out}");
    let shape: Vec<String> = out
        .lines()
        .skip(1)
        .filter(|l| first_catalog(l))
        .map(|l| match l.trim_end().strip_suffix("done)") {
            Some(heading) => heading
                .rsplit_once(" (")
                .map_or(heading, |(t, _)| t)
                .trim()
                .to_string(),
            None => l.split_whitespace().collect::<Vec<_>>().join(" "),
        })
        .collect();
    redacted(&copy).bind(|| insta::assert_snapshot!("list_fresh", shape.join("\n")));
}

/// The ids of the exercises in the repository.
fn exercise_ids() -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(crate::common::repo().join("exercises"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("exercise.toml").is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

#[test]
fn list_json_has_the_documented_fields() {
    let copy = Copy::new();
    let list = json_of(copy.xtask().args(["--format", "json", "list"]));
    let entries = list.as_array().unwrap();
    assert_eq!(entries.len(), exercise_count());
    let first = entries[0].as_object().unwrap();
    for key in [
        "id",
        "title",
        "bug_class",
        "tool",
        "status",
        "next",
        "edited",
        "hints_shown",
        "hints_total",
    ] {
        assert!(first.contains_key(key), "missing `{key}` in {first:?}");
    }
    assert_eq!(
        (
            first["id"].as_str(),
            first["status"].as_str(),
            first["next"].as_bool()
        ),
        (Some("01-index"), Some("pending"), Some(true))
    );
    assert!(entries[1..].iter().all(|e| e["next"] == false));
    // A bug class no sanitizer sees names no tool: its detector is the cases.
    let race = entries
        .iter()
        .find(|e| e["id"] == "15-global-race")
        .expect("15-global-race");
    assert_eq!(
        (race["tool"].is_null(), race["detector"].as_str()),
        (true, Some("wrong-output"))
    );
    assert_eq!(
        (first["tool"].as_str(), first["detector"].as_str()),
        (Some("memcheck"), Some("sanitizer"))
    );
    // Every exercise has its level on the path, 1 to 3.
    assert!(
        entries
            .iter()
            .all(|e| e["level"].as_u64().is_some_and(|l| (1..=3).contains(&l))),
        "{entries:?}"
    );
}

/// The exercises in the repository, however many there are.
fn exercise_count() -> usize {
    std::fs::read_dir(crate::common::repo().join("exercises"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("exercise.toml").is_file())
        .count()
}

#[test]
fn progress_from_the_state_file_moves_the_pointer_and_an_edit_shows_as_started() {
    let copy = Copy::new();
    std::fs::write(
        copy.path(".cudabugs-state.json"),
        r#"{"format": 1, "done": {"01-index": {"at": "2026-11-21T10:00:00Z"}}}"#,
    )
    .unwrap();
    std::fs::write(
        copy.path("exercises/02-bounds/scale_bias_relu.cu"),
        "// my attempt\n",
    )
    .unwrap();
    let list = json_of(copy.xtask().args(["--format", "json", "list"]));
    let status: Vec<(&str, &str, bool, bool)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap(),
                e["status"].as_str().unwrap(),
                e["next"].as_bool().unwrap(),
                e["edited"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(status[0], ("01-index", "done", false, false));
    assert_eq!(status[1], ("02-bounds", "pending", true, true));
    let text = stdout_of(copy.xtask().args(["list"]));
    let started = text
        .lines()
        .find(|l| l.contains("-> 02-bounds"))
        .unwrap_or_default();
    assert!(
        text.contains(&format!("1 of {} exercises done", exercise_count()))
            && started.split_whitespace().nth(2) == Some("started"),
        "{text}"
    );
}

#[test]
fn hints_are_revealed_one_per_call_and_say_how_many_remain() {
    let copy = Copy::new();
    let first = stdout_of(copy.xtask().args(["hint", "race"]));
    let second = stdout_of(copy.xtask().args(["hint", "3"]));
    let third = stdout_of(copy.xtask().args(["hint", "03-race"]));
    let again = stdout_of(copy.xtask().args(["hint", "race"]));
    assert!(
        first.contains("Hint 1 of 3")
            && !first.contains("Hint 2 of 3")
            && first.contains("2 more hints remain"),
        "{first}"
    );
    assert!(
        second.contains("Hint 2 of 3") && second.contains("1 more hint remains"),
        "{second}"
    );
    assert!(
        third.contains("Hint 3 of 3") && third.contains("That was the last hint"),
        "{third}"
    );
    redacted(&copy).bind(|| {
        insta::assert_snapshot!("hint_first", first);
        insta::assert_snapshot!("hint_after_the_last", again);
    });
    let json = json_of(copy.xtask().args(["--format", "json", "hint", "race"]));
    assert_eq!(
        (
            json["shown"].as_u64(),
            json["total"].as_u64(),
            json["remaining"].as_u64(),
            json["revealed_new"].as_bool()
        ),
        (Some(3), Some(3), Some(0), Some(false))
    );
    // Another exercise's hints are counted on their own.
    let other = json_of(copy.xtask().args(["--format", "json", "hint", "sync"]));
    assert_eq!(other["shown"].as_u64(), Some(1));
}

#[test]
fn reset_saves_the_learners_version_under_a_name_it_gives_then_restores_the_original() {
    let copy = Copy::new();
    let file = copy.path("exercises/03-race/reduce.cu");
    let original = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, "// half-way through my fix\n").unwrap();
    let out = stdout_of(copy.xtask().args(["reset", "race"]));
    redacted(&copy).bind(|| insta::assert_snapshot!("reset_edited", out));
    let backup = out
        .lines()
        .find_map(|l| l.strip_prefix("Saved your version as "))
        .expect("names the backup");
    assert_eq!(
        std::fs::read_to_string(copy.path(backup)).unwrap(),
        "// half-way through my fix\n"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    // Nothing to do the second time, and no second backup.
    let again = json_of(copy.xtask().args(["--format", "json", "reset", "race"]));
    assert_eq!(
        (again["restored"].as_bool(), again.get("backup")),
        (Some(false), None)
    );
    assert_eq!(
        std::fs::read_dir(copy.path(".cudabugs-backups/03-race"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn reset_restores_a_deleted_file_and_marks_a_done_exercise_pending() {
    let copy = Copy::new();
    std::fs::write(
        copy.path(".cudabugs-state.json"),
        r#"{"format": 1, "done": {"04-sync": {"at": "2026-11-21T10:00:00Z"}}}"#,
    )
    .unwrap();
    std::fs::remove_file(copy.path("exercises/04-sync/smooth.cu")).unwrap();
    copy.xtask()
        .args(["reset", "sync"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("(it was missing)")
                .and(predicate::str::contains("04-sync is pending again")),
        );
    assert!(copy.path("exercises/04-sync/smooth.cu").is_file());
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(copy.path(".cudabugs-state.json")).unwrap())
            .unwrap();
    assert!(state["done"].as_object().unwrap().is_empty(), "{state}");
}

#[test]
fn a_damaged_state_file_is_reported_with_its_line_and_kept() {
    let copy = Copy::new();
    std::fs::write(
        copy.path(".cudabugs-state.json"),
        "{\n  \"format\": 1,\n  \"hints\": {\"03-race\": two}\n}\n",
    )
    .unwrap();
    copy.xtask().args(["list"]).assert().success().stderr(
        predicate::str::contains(".cudabugs-state.json:3:")
            .and(predicate::str::contains("damaged")),
    );
    // A command that saves moves the damaged file aside rather than overwriting it.
    copy.xtask()
        .args(["hint", "race"])
        .assert()
        .success()
        .stderr(predicate::str::contains("moved to"));
    assert!(
        std::fs::read_to_string(copy.path(".cudabugs-state.json.damaged"))
            .unwrap()
            .contains("two")
    );
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(copy.path(".cudabugs-state.json")).unwrap())
            .unwrap();
    assert_eq!(state["hints"]["03-race"], 1);
}

#[test]
fn ids_resolve_by_number_and_name_and_bad_ones_say_why() {
    let copy = Copy::new();
    copy.xtask()
        .args(["hint", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`0` matches several exercises: 01-index, 02-bounds, 03-race, 04-sync, 05-memset",
        ));
    copy.xtask()
        .args(["reset", "warp"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("no exercise matches `warp`")
                .and(predicate::str::contains("01-index, 02-bounds").not()),
        );
    copy.xtask()
        .args(["hint", "mem"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Hint 1 of 3"));
    let outside = tempfile::tempdir().unwrap();
    crate::common::xtask()
        .current_dir(outside.path())
        .args(["list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not inside a cudabugs workbook"));
}

#[test]
fn a_near_miss_gets_the_closest_id_and_a_path_or_a_file_name_is_an_id() {
    let copy = Copy::new();
    let refused = |q: &str| {
        let out = copy.xtask().args(["hint", q]).assert().code(2);
        String::from_utf8(out.get_output().stderr.clone()).unwrap()
    };
    let near = refused("03-rase");
    assert!(
        near.contains("no exercise matches `03-rase`; did you mean 03-race?"),
        "{near}"
    );
    assert!(!near.contains("01-index"), "not every id: {near}");
    let far = refused("nope");
    assert!(
        far.contains(&format!("`list` shows all {} exercises", exercise_count())),
        "{far}"
    );
    let shared = refused("center.cu");
    assert!(
        shared.contains("`center.cu` matches several exercises"),
        "{shared}"
    );
    let named = |from: &std::path::Path, q: &str| {
        let hints = json_of(copy.xtask().current_dir(from).args(["--json", "hint", q]));
        hints["exercise"].as_str().unwrap().to_string()
    };
    for q in [
        "exercises/03-race/reduce.cu",
        "reduce.cu",
        "exercises/03-race",
        "exercises/03-race/",
    ] {
        assert_eq!(named(copy.root(), q), "03-race", "{q}");
    }
    // Inside an exercise's folder its file's name is enough, though other exercises share it.
    let id = exercise_ids()
        .into_iter()
        .find(|id| {
            std::fs::read_to_string(copy.path(&format!("exercises/{id}/exercise.toml")))
                .unwrap()
                .contains("source = \"center.cu\"")
        })
        .unwrap();
    let folder = copy.path(&format!("exercises/{id}"));
    assert_eq!(named(&folder, "center.cu"), id);
    assert_eq!(named(&folder, "."), id);
}

#[test]
fn reset_gives_gits_mode_and_an_unwritable_file_exit_7_naming_the_backup() {
    use std::os::unix::fs::PermissionsExt as _;
    let copy = Copy::new();
    let file = copy.path("exercises/03-race/reduce.cu");
    std::fs::write(&file, "// mine\n").unwrap();
    stdout_of(copy.xtask().args(["reset", "race"]));
    // The mode a new file gets here (git's 0644 under the usual umask), not a temporary file's 0600.
    let fresh = copy.path("fresh");
    std::fs::write(&fresh, "").unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), mode(&fresh));

    std::fs::write(&file, "// mine again\n").unwrap();
    let folder = copy.path("exercises/03-race");
    let open = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
    };
    // SAFETY: geteuid cannot fail.
    let mut reset = if unsafe { libc::geteuid() } == 0 {
        // A folder's mode stops no root: reset runs as nobody, who may write the backup and read
        // the workbook, not write the exercise's folder.
        let setpriv = ["--reuid=65534", "--regid=65534", "--clear-groups"];
        if !std::process::Command::new("setpriv")
            .args(setpriv)
            .arg("true")
            .status()
            .is_ok_and(|s| s.success())
        {
            eprintln!("SKIPPED the unwritable half of reset_gives_gits_mode_and_an_unwritable_file_exit_7_naming_the_backup: running as root, without setpriv to run as nobody");
            return;
        }
        open(copy.root(), 0o755);
        let backups = copy.path(".cudabugs-backups/03-race");
        std::fs::create_dir_all(&backups).unwrap();
        open(&backups, 0o777);
        let mut c = assert_cmd::Command::new("setpriv");
        c.args(setpriv)
            .arg(assert_cmd::cargo::cargo_bin("xtask"))
            .current_dir(copy.root())
            .env("CUDABUGS_ROOT", copy.root());
        c
    } else {
        open(&folder, 0o555);
        copy.xtask()
    };
    let out = reset.args(["reset", "race"]).assert().code(7);
    open(&folder, 0o755);
    let said = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let backup = said
        .split("Your version is safe in ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("names no backup: {said}"));
    assert_eq!(
        std::fs::read_to_string(copy.path(backup)).unwrap(),
        "// mine again\n"
    );
    for advice in [
        "cannot write exercises/03-race/reduce.cu",
        "chmod u+w exercises/03-race",
        "`cargo xtask reset 03-race` again",
    ] {
        assert!(said.contains(advice), "{advice}: {said}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "// mine again\n");
}

#[test]
fn colours_follow_the_flag_the_terminal_and_no_color() {
    let copy = Copy::new();
    let esc = predicate::str::contains("\u{1b}[");
    copy.xtask()
        .args(["list"])
        .assert()
        .stdout(esc.clone().not());
    copy.xtask()
        .args(["--color", "always", "list"])
        .assert()
        .stdout(esc.clone());
    copy.xtask()
        .env("CLICOLOR_FORCE", "1")
        .args(["list"])
        .assert()
        .stdout(esc.clone());
    copy.xtask()
        .env("NO_COLOR", "1")
        .args(["list"])
        .assert()
        .stdout(esc.clone().not());
    copy.xtask()
        .env("CLICOLOR_FORCE", "1")
        .args(["--color", "never", "list"])
        .assert()
        .stdout(esc.not());
}

/// The lines a child prints, as they come.
fn lines_of(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_for(rx: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) {
    let limit = Duration::from_secs(300);
    loop {
        match rx.recv_timeout(limit) {
            Ok(line) => {
                let hit = line.contains(needle);
                seen.push(line);
                if hit {
                    return;
                }
            }
            Err(e) => panic!(
                "waiting for `{needle}`: {e}; output so far:\n{}",
                seen.join("\n")
            ),
        }
    }
}

/// Processes whose command line mentions `needle` (the copy's folder): what watch left behind.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
                && e.file_name().to_string_lossy() != me
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|cmd| cmd.contains(needle))
        .collect()
}

#[test]
fn watch_rechecks_on_save_and_quits_on_ctrl_c_leaving_no_child() {
    if !nvcc_or_skip("watch_rechecks_on_save_and_quits_on_ctrl_c_leaving_no_child") {
        return;
    }
    for poll in [false, true] {
        let copy = Copy::new();
        let bin = assert_cmd::cargo::cargo_bin("xtask");
        let mut cmd = std::process::Command::new(bin);
        cmd.args(["watch", "race"])
            .env("CUDABUGS_ROOT", copy.root())
            .envs(crate::common::env())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if poll {
            cmd.arg("--poll");
        }
        let mut child = cmd.spawn().unwrap();
        let rx = lines_of(&mut child);
        let mut seen = Vec::new();
        wait_for(&rx, "watching exercises/03-race/reduce.cu", &mut seen);
        let checks_before = seen.iter().filter(|l| l.starts_with("03-race - ")).count();
        let file = copy.path("exercises/03-race/reduce.cu");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text + "// saved\n").unwrap();
        wait_for(&rx, "watching exercises/03-race/reduce.cu", &mut seen);
        let checks_after = seen.iter().filter(|l| l.starts_with("03-race - ")).count();
        assert_eq!(
            (checks_before, checks_after),
            (1, 2),
            "poll={poll}: one check at the start, one after the save:\n{}",
            seen.join("\n")
        );
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "poll={poll}");
        let left = processes_mentioning(&copy.root().display().to_string());
        assert!(left.is_empty(), "poll={poll}: left behind: {left:?}");
    }
}

#[test]
fn the_pristine_original_never_depends_on_the_learners_copy() {
    // What build.rs embeds and `reset` restores comes from solutions/: an edit before the first
    // build, a deleted file, or a rebuild after a change anywhere else cannot make the learner's
    // version "the original".
    let copy = Copy::new();
    let pristine = |id: &str, file: &str| {
        std::fs::read_to_string(crate::common::repo().join("exercises").join(id).join(file))
            .unwrap()
    };
    std::fs::write(
        copy.path("exercises/03-race/reduce.cu"),
        "// my half-finished fix\n",
    )
    .unwrap();
    std::fs::remove_file(copy.path("exercises/01-index/transpose.cu")).unwrap();
    let found = grader::exercise::catalog::discover(copy.root()).unwrap();
    let original = |id: &str| {
        found
            .iter()
            .find(|e| e.manifest.id == id)
            .unwrap()
            .original
            .clone()
    };
    assert_eq!(original("03-race"), pristine("03-race", "reduce.cu"));
    assert_eq!(original("01-index"), pristine("01-index", "transpose.cu"));
    // And the binary's embedded copy (made the same way) is what reset puts back.
    copy.xtask().args(["reset", "race"]).assert().success();
    assert_eq!(
        std::fs::read_to_string(copy.path("exercises/03-race/reduce.cu")).unwrap(),
        pristine("03-race", "reduce.cu")
    );
}

#[test]
fn a_broken_manifest_is_named_with_its_line_and_the_others_still_load() {
    let copy = Copy::new();
    let bounds = copy.path("exercises/02-bounds/exercise.toml");
    std::fs::write(
        &bounds,
        std::fs::read_to_string(&bounds)
            .unwrap()
            .replacen("[[case]]", "[[case]\n", 1),
    )
    .unwrap();
    let race = copy.path("exercises/03-race/exercise.toml");
    std::fs::write(
        &race,
        std::fs::read_to_string(&race)
            .unwrap()
            .replace("params = { n = 200 }", "params = { n = -200 }"),
    )
    .unwrap();
    let each = grader::exercise::catalog::discover_each(copy.root()).unwrap();
    let errors: Vec<String> = each
        .iter()
        .filter_map(|(_, r)| r.as_ref().err().map(|e| e.to_string()))
        .collect();
    assert_eq!(
        each.iter().filter(|(_, r)| r.is_ok()).count(),
        exercise_count() - 2,
        "{errors:?}"
    );
    assert!(
        errors[0].starts_with("exercises/02-bounds/exercise.toml:"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].starts_with("exercises/03-race/exercise.toml:")
            && errors[1].contains("`n` = -200"),
        "{}",
        errors[1]
    );

    // Embedded as build.rs embeds it: the others resolve, the broken one is not gradable (exit 5).
    let embedded: &'static [grader::exercise::catalog::Embedded] = Box::leak(
        each.iter()
            .map(|(id, _)| grader::exercise::catalog::Embedded::read(copy.root(), id))
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    let wb = grader::exercise::workbook::Workbook::new(copy.root().to_path_buf(), embedded, &[])
        .unwrap();
    assert_eq!(wb.resolve("index").unwrap().id(), "01-index");
    let err = wb.resolve("race").unwrap_err();
    assert_eq!(err.exit().code(), 5);
    assert!(
        err.to_string().contains("exercises/03-race/exercise.toml:"),
        "{err}"
    );
    assert_eq!(wb.resolve("2").unwrap_err().exit().code(), 5);
    // Said once per command: a command about 03 says its error, and warns only of 02.
    let warned = |about| {
        wb.broken_besides(about)
            .iter()
            .map(|b| b.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(warned(Some("race")), ["02-bounds"]);
    assert_eq!(warned(Some("index")), ["02-bounds", "03-race"]);
    assert_eq!(warned(None), ["02-bounds", "03-race"]);
}

#[test]
fn ctrl_c_during_a_build_is_an_interruption_not_a_failure() {
    if !nvcc_or_skip("ctrl_c_during_a_build_is_an_interruption_not_a_failure") {
        return;
    }
    let copy = Copy::new();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("xtask"))
        .args(["watch", "race"])
        .env("CUDABUGS_ROOT", copy.root())
        .envs(crate::common::env())
        // The copy's own cache: the shared one may hold this build, and nvcc must be running.
        .env_remove(grader::environment::BUILD_CACHE)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut err_lines = Vec::new();
    wait_for(&rx, ".. building", &mut err_lines);
    // nvcc is running (a fresh copy has no binaries to keep): interrupt it.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    err_lines.extend(rx.try_iter());
    assert_eq!(status.code(), Some(130));
    assert!(
        !out.contains("FAIL"),
        "an interrupted build was reported as a failure:\n{out}"
    );
    assert!(
        err_lines.iter().any(|l| l.contains("interrupted")),
        "{err_lines:?}"
    );
}
