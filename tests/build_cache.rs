//! The build cache end to end: `check` keeps what an unchanged file built, a second copy of the
//! workbook takes the binaries the first one built, and on a GPU its findings name its own file.
//! (The key's parts are unit-tested in nvcc.rs.) The learner's file carries a comment of the run's
//! own, so that its builds run nvcc while the rest comes from the tests' shared cache; the tests
//! are few, and each checks several things of the same builds.

use std::os::unix::fs::MetadataExt;

use crate::common::{nvcc_or_skip, Copy};

/// The summaries of `report`'s two build steps (`check`'s, in JSON).
fn build_summaries(report: &serde_json::Value) -> Vec<String> {
    let builds: Vec<String> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("build "))
        .map(|s| s["summary"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(builds.len(), 2, "{report}");
    builds
}

/// How many of those steps kept a binary (in place, or from the cache) instead of running nvcc.
fn kept(report: &serde_json::Value) -> usize {
    build_summaries(report)
        .iter()
        .filter(|s| s.contains("binary kept"))
        .count()
}

fn report_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// After `copy`'s first check of `mine` (its own text of 03-race): `check` keeps the binaries of
/// the unchanged file and rebuilds an edited one; an edit undone takes its first binaries back from
/// the workbook's build cache. The edit is a host function that reaches `getenv`: its compiled
/// reach is read from the objects its two builds compiled and linked, not from more compiles of
/// the file alone.
fn check_keeps_the_binaries_of_an_unchanged_file_and_reads_an_edited_one_from_its_builds(
    copy: &Copy,
    mine: &str,
) {
    let log = tempfile::tempdir().unwrap();
    let log = log.path().join("builds.log");
    let file = copy.path("exercises/03-race/reduce.cu");
    // The report and the build log's lines for the learner's builds (the exit code depends on
    // whether there is a GPU).
    let check = || {
        let _ = std::fs::remove_file(&log);
        let report = report_of(
            &copy
                .xtask()
                .env(grader::environment::BUILD_LOG, &log)
                .args(["--format", "json", "check", "race"])
                .output()
                .unwrap(),
        );
        let lines = std::fs::read_to_string(&log).unwrap_or_default();
        (report, lines)
    };
    let learner = |lines: &str, kind: &str| {
        lines
            .lines()
            .filter(|l| l.starts_with(kind) && l.contains("/learner/"))
            .count()
    };
    let (again, lines) = check();
    assert_eq!(
        kept(&again),
        2,
        "saved unchanged: {:?}",
        build_summaries(&again)
    );
    assert_eq!(learner(&lines, "build "), 0, "{lines}");
    // An edit inside the region (outside it, the file would not be gradable).
    std::fs::write(
        &file,
        mine.replacen(
            "// ANCHOR_END: bug",
            "int probe() { return getenv(\"X\") != nullptr; }\n// ANCHOR_END: bug",
            1,
        ),
    )
    .unwrap();
    let (edited, lines) = check();
    assert_eq!(kept(&edited), 0, "edited: {:?}", build_summaries(&edited));
    let rule = edited["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "rule tool-aware")
        .unwrap_or_else(|| panic!("no tool-aware rule: {edited}"));
    let summary = rule["summary"].as_str().unwrap();
    assert!(
        summary.contains("its compiled code") && summary.contains("`getenv`"),
        "{summary}"
    );
    assert_eq!(learner(&lines, "build "), 2, "{lines}");
    assert_eq!(
        learner(&lines, "alone "),
        0,
        "the learner's file compiled alone: {lines}"
    );
    // The edit undone: the binaries of the first build come back from the build cache.
    std::fs::write(&file, mine).unwrap();
    let (undone, lines) = check();
    assert_eq!(
        kept(&undone),
        2,
        "edit undone: {:?}",
        build_summaries(&undone)
    );
    assert_eq!(
        (learner(&lines, "build "), learner(&lines, "hit ")),
        (0, 2),
        "{lines}"
    );
}

/// `text` (an exercise) with a comment naming this moment in its region: a text no other run
/// built, so that its builds run nvcc, while everything else comes from the shared cache.
fn with_a_comment_of_this_run(text: &str) -> String {
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    text.replacen(
        "// ANCHOR: bug\n",
        &format!("// ANCHOR: bug\n// run {nonce}\n"),
        1,
    )
}

/// Two copies checked at once with one cache, new to their text: each build is compiled once, and the copy that
/// came second to a build waits for it and takes its binary (one build of a key at a time among
/// the graders sharing a cache). What it takes is the same bytes, copied out of the cache (what a
/// program does to its binary stays in its folder), whose debug information names the stage
/// folder nvcc ran in, not the other copy's; on a GPU each copy's findings name its own file.
/// Then the first copy checked again, edited and undone (one test, so that these builds are made
/// once: each is a real nvcc run).
#[test]
fn two_copies_checked_at_once_compile_each_build_once_and_take_it_as_their_own() {
    if !nvcc_or_skip("two_copies_checked_at_once_compile_each_build_once_and_take_it_as_their_own")
    {
        return;
    }
    let log = tempfile::tempdir().unwrap();
    let log = log.path().join("builds.log");
    let copies = [Copy::new(), Copy::new()];
    // One text of this run's own in both (see `with_a_comment_of_this_run`).
    let text = with_a_comment_of_this_run(
        &std::fs::read_to_string(copies[0].path("exercises/03-race/reduce.cu")).unwrap(),
    );
    for c in &copies {
        std::fs::write(c.path("exercises/03-race/reduce.cu"), &text).unwrap();
    }
    let entries = crate::common::build_cache();
    let children: Vec<std::process::Child> = copies
        .iter()
        .map(|c| {
            c.spawnable()
                .env(grader::environment::BUILD_LOG, &log)
                .args(["--format", "json", "check", "race"])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let reports: Vec<serde_json::Value> = children
        .into_iter()
        .map(|c| report_of(&c.wait_with_output().unwrap()))
        .collect();
    let lines = std::fs::read_to_string(&log).unwrap();
    let (built, hit): (Vec<&str>, Vec<&str>) = lines
        .lines()
        .filter(|l| l.contains("03-learner"))
        .partition(|l| l.starts_with("build "));
    assert_eq!((built.len(), hit.len()), (2, 2), "{lines}");
    assert_eq!(reports.iter().map(kept).sum::<usize>(), 2, "{lines}");
    // And the reference fix's timing build, whose device code the learner's clock reads are held to.
    assert!(lines.contains("/reference/timing/"), "{lines}");
    // (The shared cache: other tests may add entries beside, which no copy's binary may be either.)
    let cached: Vec<u64> = std::fs::read_dir(&entries)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().ino())
        .collect();
    for flavor in ["sanitize", "timing"] {
        let built = |c: &Copy| {
            c.path(".cudabugs/work/check/03-race/learner")
                .join(flavor)
                .join("03-learner")
        };
        // nvcc's output differs from run to run (its temporary files' names carry its process id):
        // the same bytes are the cached copy.
        let bytes = std::fs::read(built(&copies[0])).unwrap();
        assert_eq!(bytes, std::fs::read(built(&copies[1])).unwrap(), "{flavor}");
        // nvcc ran in a stage folder: the debug information names no submission's folder (a
        // student's, served to another), only the stage's.
        let names = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
        assert!(!names("/work/check/") && names("/stage/build."), "{flavor}");
        for c in &copies {
            let ino = std::fs::metadata(built(c)).unwrap().ino();
            assert!(!cached.contains(&ino), "{flavor}: a link to the cache");
        }
    }
    // On a GPU the untouched race fails at racecheck: each finding names the copy's own file,
    // found by its name in a binary whose debug information may name the other copy's folder.
    for (c, report) in copies.iter().zip(&reports) {
        let Some(findings) = report["findings"].as_array().filter(|f| !f.is_empty()) else {
            continue;
        };
        let mine = c.path("exercises/03-race/reduce.cu").display().to_string();
        let paths: Vec<&str> = findings
            .iter()
            .flat_map(|f| f["locations"].as_array().unwrap())
            .map(|l| l["path"].as_str().unwrap())
            .collect();
        assert!(paths.contains(&mine.as_str()), "{paths:?}");
        let other = copies.iter().find(|o| o.root() != c.root()).unwrap();
        let other_root = other.root().display().to_string();
        assert!(
            paths.iter().all(|p| !p.starts_with(&other_root)),
            "a path of the other copy: {paths:?}"
        );
        assert_eq!(report["step"], "racecheck", "{report}");
    }
    check_keeps_the_binaries_of_an_unchanged_file_and_reads_an_edited_one_from_its_builds(
        &copies[0], &text,
    );
}
