//! The build cache end to end: a second copy of the workbook takes the binaries the first one built,
//! and on a GPU its findings name its own file. (The key's parts are unit-tested in nvcc.rs.)

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{nvcc_or_skip, Copy};

/// `check race` in `copy` with its builds cached in `cache`: the report, and how many of its two
/// build steps kept a binary instead of running nvcc.
fn check(copy: &Copy, cache: &Path) -> (serde_json::Value, usize) {
    let out = copy
        .xtask()
        .env(grader::environment::BUILD_CACHE, cache)
        .args(["--format", "json", "check", "race"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let builds: Vec<&str> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("build "))
        .map(|s| s["summary"].as_str().unwrap())
        .collect();
    assert_eq!(builds.len(), 2, "{report}");
    let kept = builds.iter().filter(|s| s.contains("binary kept")).count();
    (report, kept)
}

#[test]
fn another_copy_takes_the_cached_builds_and_its_findings_name_its_own_file() {
    if !nvcc_or_skip("another_copy_takes_the_cached_builds_and_its_findings_name_its_own_file") {
        return;
    }
    // A cache of this test's own: the tests' shared one may hold these builds already.
    let cache = tempfile::tempdir().unwrap();
    let (a, b) = (Copy::new(), Copy::new());
    let (_, kept) = check(&a, cache.path());
    assert_eq!(kept, 0, "an empty cache: nvcc ran");
    let (report, kept) = check(&b, cache.path());
    assert_eq!(
        kept, 2,
        "the same file in the same place of another copy: both builds from the cache"
    );
    for flavor in ["sanitize", "timing"] {
        let built = |c: &Copy| {
            c.path(".cudabugs/work/check/03-race/learner")
                .join(flavor)
                .join("03-learner")
        };
        // nvcc's output differs from run to run (its temporary files' names carry its process id):
        // the same bytes are the cached copy.
        assert_eq!(
            std::fs::read(built(&a)).unwrap(),
            std::fs::read(built(&b)).unwrap(),
            "{flavor}"
        );
        // nvcc ran in a stage folder: the debug information names no submission's folder (a
        // student's, served to another), only the stage's.
        let bytes = std::fs::read(built(&a)).unwrap();
        let names = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
        assert!(!names("/work/check/") && names("/stage/build."), "{flavor}");
        // A copy of the entry, not a link to it: what a program does to its binary stays in its folder.
        let ino = std::fs::metadata(built(&b)).unwrap().ino();
        assert!(std::fs::read_dir(cache.path()).unwrap().all(|e| e
            .unwrap()
            .metadata()
            .unwrap()
            .ino()
            != ino));
    }
    // On a GPU the untouched race fails at racecheck: each finding names b's file, found by its
    // name in a binary whose debug information names a's folder (as a replayed recording's do).
    if let Some(findings) = report["findings"].as_array().filter(|f| !f.is_empty()) {
        let mine = b.path("exercises/03-race/reduce.cu").display().to_string();
        let paths: Vec<&str> = findings
            .iter()
            .flat_map(|f| f["locations"].as_array().unwrap())
            .map(|l| l["path"].as_str().unwrap())
            .collect();
        assert!(paths.contains(&mine.as_str()), "{paths:?}");
        let a_root = a.root().display().to_string();
        assert!(
            paths.iter().all(|p| !p.starts_with(&a_root)),
            "a path of the other copy: {paths:?}"
        );
        assert_eq!(report["step"], "racecheck", "{report}");
    }
}

/// Two copies checked at once with one empty cache: each text is compiled once, and the copy that
/// came second to a build waits for it and takes its binary (one build of a key at a time among
/// the graders sharing a cache).
#[test]
fn two_copies_checked_at_once_compile_each_build_once() {
    if !nvcc_or_skip("two_copies_checked_at_once_compile_each_build_once") {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let log = cache.path().join("builds.log");
    let (a, b) = (Copy::new(), Copy::new());
    let children: Vec<std::process::Child> = [&a, &b]
        .into_iter()
        .map(|c| {
            c.spawnable()
                .env(grader::environment::BUILD_CACHE, cache.path().join("cache"))
                .env(grader::environment::BUILD_LOG, &log)
                .args(["--format", "json", "check", "race"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        child.wait().unwrap();
    }
    let lines = std::fs::read_to_string(&log).unwrap();
    let (built, hit): (Vec<&str>, Vec<&str>) = lines
        .lines()
        .filter(|l| l.contains("03-learner"))
        .partition(|l| l.starts_with("build "));
    assert_eq!((built.len(), hit.len()), (2, 2), "{lines}");
}

/// An edited file's compiled reach is read from the objects its two builds compiled and linked,
/// not from two more compiles of the file alone: a host function added in the region that reaches
/// `getenv` is named from the compiled code, and no nvcc compiled the learner's file alone.
#[test]
fn an_edited_file_is_analysed_from_the_objects_its_builds_left() {
    if !nvcc_or_skip("an_edited_file_is_analysed_from_the_objects_its_builds_left") {
        return;
    }
    let copy = Copy::new();
    let file = copy.path("exercises/03-race/reduce.cu");
    // A text of this run's own, so that its builds run here rather than come from the shared cache.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let text = std::fs::read_to_string(&file).unwrap().replacen(
        "// ANCHOR_END: bug",
        &format!("int probe_{nonce}() {{ return getenv(\"X\") != nullptr; }}\n// ANCHOR_END: bug"),
        1,
    );
    std::fs::write(&file, text).unwrap();
    let log = tempfile::tempdir().unwrap();
    let log = log.path().join("builds.log");
    let out = copy
        .xtask()
        .env(grader::environment::BUILD_LOG, &log)
        .args(["--format", "json", "check", "race"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let rule = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "rule tool-aware")
        .unwrap_or_else(|| panic!("no tool-aware rule: {report}"));
    let summary = rule["summary"].as_str().unwrap();
    assert!(
        summary.contains("its compiled code") && summary.contains("`getenv`"),
        "{summary}"
    );
    let lines = std::fs::read_to_string(&log).unwrap();
    let learner: Vec<&str> = lines.lines().filter(|l| l.contains("/learner/")).collect();
    assert_eq!(
        learner.iter().filter(|l| l.starts_with("build ")).count(),
        2,
        "{lines}"
    );
    assert!(
        lines
            .lines()
            .all(|l| !l.starts_with("alone ") || !l.contains("/learner/")),
        "the learner's file compiled alone: {lines}"
    );
}
