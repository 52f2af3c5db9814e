//! One file: every grade of a class, replayed or on the CPU, shares the class fixtures, the secret and the gradebook readers.
//!
//! `grade` end to end through the CLI: the fixture class (tests/fixtures/class) replayed from its
//! H200 recording must get the grades of that GPU run (book/gpu-runs/2026-11-29-plain-50/); on the
//! CPU alone the builds, the tamper check and the journal are real (resume after SIGKILL, shards
//! and merge, the Gradescope and GitHub Classroom layouts). Each test needs nvcc and says SKIPPED
//! without one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{compilers, nvcc_or_skip, repo, Compiler, Copy};
use grader::environment::TestDepth;

const CLASS: &str = "tests/fixtures/class";
const BOTH: &str = "03-race,57-reduction";

/// The fixture secret, copied outside the workbook (grade refuses one inside it).
fn secret() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.toml");
    std::fs::copy(repo().join("tests/fixtures/class-secret.toml"), &path).unwrap();
    (dir, path)
}

/// grades.csv as student -> column -> cell.
fn grades(path: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|row| {
            let row = row.unwrap();
            (
                row[0].to_string(),
                header
                    .iter()
                    .cloned()
                    .zip(row.iter().map(String::from))
                    .collect(),
            )
        })
        .collect()
}

fn journal(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn pair<'a>(
    lines: &'a [serde_json::Value],
    student: &str,
    exercise: &str,
) -> &'a serde_json::Value {
    lines
        .iter()
        .find(|l| l["student"] == student && l["exercise"] == exercise)
        .unwrap_or_else(|| panic!("{student}/{exercise} not in the journal"))
}

fn stage(result: &serde_json::Value, key: &str) -> (f64, f64, Option<String>) {
    let s = result["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == key)
        .unwrap_or_else(|| panic!("no stage {key}"));
    (
        s["points"].as_f64().unwrap(),
        s["max"].as_f64().unwrap(),
        s["withheld_by"].as_str().map(String::from),
    )
}

fn rules(result: &serde_json::Value) -> Vec<String> {
    result["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

/// Built by nvcc where there is one, and by the stub compiler everywhere: the stub's placeholders
/// never run, and the grades are the GPU run's all the same.
#[test]
fn the_fixture_class_replayed_gets_the_grades_of_its_gpu_run() {
    for compiler in compilers("the_fixture_class_replayed_gets_the_grades_of_its_gpu_run") {
        the_fixture_class_replayed_by(compiler);
    }
}

fn the_fixture_class_replayed_by(compiler: Compiler) {
    let copy = Copy::new();
    let (_keep, secret) = secret();
    let out = copy.path("grades");
    replay_the_fixture_class(&copy, &secret, &out, compiler);
    // The whole gradebook of the GPU run (an H200, the grader serving the timed calls and the
    // sandbox's programs running as nobody), reproduced from its tool runs.
    let mut committed = grades(&repo().join(FIXTURE_RECORD).join("grades.csv"));
    if compiler == Compiler::Stub {
        // kim's 03 does not compile (a `;` is missing): nvcc refuses it, where the stub, which
        // reads no C++, builds a placeholder and gives the builds' points; its runs are not in the
        // recording. Every other grade is the GPU run's.
        let kim = committed.get_mut("kim").unwrap();
        assert_eq!(
            (kim["03-race"].as_str(), kim["Total"].as_str()),
            ("0", "100")
        );
        kim.insert("03-race".into(), "10".into());
        kim.insert("Total".into(), "110".into());
    }
    assert_eq!(grades(&out.join("grades.csv")), committed);
    let lines = journal(&out.join("journal.jsonl"));
    assert_eq!(lines.len(), 22, "11 students x 2 exercises, each once");
    // The reference fix and a different correct fix get everything.
    for who in ["alice", "bob"] {
        for ex in ["03-race", "57-reduction"] {
            assert_eq!(pair(&lines, who, ex)["points"], 100.0, "{who} {ex}");
        }
    }
    each_pair_of_the_fixture_class_is_judged_for_its_reason(&lines);
    the_gradebook_s_files_say_it(&out);
}

/// `grade` of the fixture class on 03 and 57 into `out`, served from its GPU recording: every pair
/// graded (exit 0).
fn replay_the_fixture_class(copy: &Copy, secret: &Path, out: &Path, compiler: Compiler) {
    replay_class(copy, &repo().join(CLASS), secret, out, compiler);
}

/// `grade` of `class` (the fixture class or some of its students) on 03 and 57 into `out`, served
/// from the fixture class's GPU recording: every pair graded (exit 0).
fn replay_class(copy: &Copy, class: &Path, secret: &Path, out: &Path, compiler: Compiler) {
    copy.xtask_built_by(compiler)
        .arg("--replay-tools")
        .arg(repo().join("grader/tests/recordings/grade-fixture"))
        .arg("grade")
        .arg(class)
        .args(["--exercises", BOTH, "--secret"])
        .arg(secret)
        .arg("--out")
        .arg(out)
        .assert()
        .code(0);
}

/// Each student of the fixture class (tests/fixtures/class/README.md) got the points their file earns.
fn each_pair_of_the_fixture_class_is_judged_for_its_reason(lines: &[serde_json::Value]) {
    // The untouched race: builds, runs right, racecheck reports it: no named-tool or speed points.
    let carol = pair(lines, "carol", "03-race");
    assert_eq!(stage(carol, "named-tool").0, 0.0);
    assert_eq!(stage(carol, "public").0, stage(carol, "public").1);
    assert_eq!(stage(carol, "speed").0, 0.0);
    assert!(carol["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "shared-race"));
    // The host-compute cheat and the kernel-less version: no correctness or speed credit, the rule named.
    let frank = pair(lines, "frank", "57-reduction");
    assert!(
        rules(frank).contains(&"proof-of-work".to_string()),
        "{:?}",
        rules(frank)
    );
    for key in ["public", "hidden", "speed"] {
        assert_eq!(stage(frank, key).0, 0.0, "frank {key}");
        assert_eq!(
            stage(frank, key).2.as_deref(),
            Some("proof-of-work"),
            "frank {key}"
        );
    }
    let grace = pair(lines, "grace", "57-reduction");
    // Its host sum shows in the CPU time the grader reads from outside too.
    assert_eq!(rules(grace), ["no-kernel", "host-cpu"]);
    for key in ["public", "hidden", "speed"] {
        assert_eq!(stage(grace, key).0, 0.0, "grace {key}");
    }
    // A fix that adds a leak loses the other tools' share for memcheck only.
    let ivan = pair(lines, "ivan", "57-reduction");
    assert!(
        ivan["points"].as_f64().unwrap() < 100.0 && ivan["points"].as_f64().unwrap() > 90.0,
        "{}",
        ivan["points"]
    );
    assert!(ivan["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["tool"] == "memcheck"));
    // Hostile: a daemon left running and an endless loop. Where it runs alone (cases, timed runs)
    // the system-call filter refuses its fork, so 03's right outputs earn the cases; each tool run,
    // where the daemon starts, fails for it, and with the tool not clean it is not timed. 57's
    // endless loop earns the build's points only.
    let heidi = pair(lines, "heidi", "03-race");
    assert_eq!(
        (stage(heidi, "named-tool").0, heidi["points"].as_f64()),
        (0.0, Some(35.0))
    );
    assert_eq!(pair(lines, "heidi", "57-reduction")["points"], 10.0);
    assert_eq!(pair(lines, "erin", "03-race")["state"], "not-gradable");
    assert_eq!(pair(lines, "judy", "03-race")["state"], "not-submitted");
}

/// The student's feedback, Gradescope's results and the class summary with its plot.
fn the_gradebook_s_files_say_it(out: &Path) {
    // The student's feedback names the rule and withholds the hidden cases' details.
    let md = std::fs::read_to_string(out.join("feedback/frank.md")).unwrap();
    assert!(
        md.contains("rule `proof-of-work` failed") && md.contains("dram__bytes_read.sum"),
        "{md}"
    );
    assert!(
        !md.contains("hidden 1") && md.contains("hidden cases match the reference"),
        "{md}"
    );
    // Gradescope's results.json and the class summary with its plot.
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("gradescope/alice/results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(results["score"], 200.0);
    assert!(results["tests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["max_score"].as_f64().is_some() && t["visibility"] == "visible"));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("| 57-reduction |") && summary.contains("proof-of-work (1)"),
        "{summary}"
    );
    assert!(std::fs::read_to_string(out.join("speed.svg"))
        .unwrap()
        .contains("<svg"));
}

#[test]
fn on_the_cpu_the_class_builds_tamper_is_refused_and_a_killed_batch_resumes_with_each_pair_once() {
    if !nvcc_or_skip("on_the_cpu_the_class_builds_tamper_is_refused_and_a_killed_batch_resumes_with_each_pair_once") {
        return;
    }
    let copy = Copy::new();
    let (_keep, secret) = secret();
    let out = copy.path("grades");
    // At quick depth four students in chunks of one, killed after two pairs (a real nvcc, kim's
    // failing one at least, is still to come: the batch cannot end first); at full depth the
    // class's 11 in chunks of two, killed after four.
    let class = sampled_class(
        &copy,
        "on_the_cpu_the_class_builds_tamper_is_refused_and_a_killed_batch_resumes_with_each_pair_once",
    );
    let students = std::fs::read_dir(&class).unwrap().count();
    let (chunk, killed_after) = match TestDepth::from_env() {
        TestDepth::Full => ("2", 4),
        TestDepth::Quick => ("1", 2),
    };
    let grade = || {
        let mut cmd = copy.xtask();
        cmd.arg("grade")
            .arg(&class)
            .args(["--exercises", "03-race", "--chunk", chunk, "--secret"])
            .arg(&secret)
            .arg("--out")
            .arg(&out);
        cmd
    };
    let own_cache = tempfile::tempdir().unwrap();
    let mut child = spawn_json_grade(&copy, (&class, chunk), &secret, &out, own_cache.path());
    let journal_file = out.join("journal.jsonl");
    // Each `graded` event comes after its pair's journal line: wait for the fourth (reading the
    // events, not polling the file: a busy loop took one of CI's two cores from the builds).
    let events = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let graded = events
        .map_while(Result::ok)
        .filter(|l| l.contains(r#""event":"graded""#))
        .take(killed_after)
        .count();
    assert_eq!(graded, killed_after, "grade ended before it was killed");
    // SAFETY: a plain signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let before = journal(&journal_file).len();
    assert!(
        (killed_after..students).contains(&before),
        "{before} pairs journaled before the kill"
    );
    // The same command again: exit 6 (no GPU), every pair exactly once.
    grade().assert().code(6);
    let lines = journal(&journal_file);
    let mut keys: Vec<String> = lines
        .iter()
        .map(|l| l["student"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    let mut unique = keys.clone();
    unique.dedup();
    assert_eq!(keys, unique, "a pair twice in the journal");
    assert_eq!(keys.len(), students);
    // A third run grades nothing again.
    let again = grade().args(["--format", "json"]).output().unwrap();
    let started: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&again.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(started["already_graded"], students);
    the_cpu_tier_s_verdicts(&journal(&journal_file));
    // --regrade grades everything again, and the journal still holds each pair once.
    grade().arg("--regrade").assert().code(6);
    assert_eq!(journal(&journal_file).len(), students);
}

/// `grade --format json` of `class` (the fixture class or some of it) on 03-race in chunks of `chunk`,
/// its events piped: a batch to kill.
/// Killed once the first pairs are journaled, as a node lost mid-batch would be. Its builds are
/// real (a cache of its own, empty): served from the shared cache, the batch could end first.
fn spawn_json_grade(
    copy: &Copy,
    (class, chunk): (&Path, &str),
    secret: &Path,
    out: &Path,
    cache: &Path,
) -> std::process::Child {
    let mut child = copy.spawnable();
    child
        .env(grader::environment::BUILD_CACHE, cache)
        .arg("grade")
        .arg(class);
    child
        .args([
            "--exercises",
            "03-race",
            "--chunk",
            chunk,
            "--format",
            "json",
            "--secret",
        ])
        .arg(secret)
        .arg("--out")
        .arg(out);
    child
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The CPU tier's verdicts: builds real, the tamper check, the missing file, the broken build.
fn the_cpu_tier_s_verdicts(lines: &[serde_json::Value]) {
    assert_eq!(pair(lines, "alice", "03-race")["state"], "skipped");
    assert_eq!(stage(pair(lines, "alice", "03-race"), "builds").0, 10.0);
    let erin = pair(lines, "erin", "03-race");
    assert_eq!(erin["state"], "not-gradable");
    assert!(
        erin["reason"]
            .as_str()
            .unwrap()
            .contains("outside the marked regions"),
        "{}",
        erin["reason"]
    );
    assert!(erin["diff"].as_str().unwrap().contains("// fixed"));
    assert_eq!(pair(lines, "judy", "03-race")["state"], "not-submitted");
    let kim = pair(lines, "kim", "03-race");
    assert_eq!(kim["points"], 0.0);
    assert_eq!(stage(kim, "builds").0, 0.0);
}

#[test]
fn shards_merge_into_the_gradebook_of_one_run_and_a_missing_shard_is_named() {
    if !nvcc_or_skip("shards_merge_into_the_gradebook_of_one_run_and_a_missing_shard_is_named") {
        return;
    }
    let copy = Copy::new();
    let (_keep, secret) = secret();
    // A small class: three students, whose builds other tests share (the reference fix, the
    // untouched file, a file not submitted), one pending pair in each shard.
    let class = copy.path("class");
    for who in ["alice", "carol", "judy"] {
        grader::exercise::workbook::copy_tree(&repo().join(CLASS).join(who), &class.join(who))
            .unwrap();
    }
    let run = |out: &Path, shard: Option<&str>| {
        let mut cmd = copy.xtask();
        cmd.arg("grade")
            .arg(&class)
            .args(["--exercises", "03-race", "--secret"])
            .arg(&secret)
            .arg("--out")
            .arg(out);
        if let Some(s) = shard {
            cmd.args(["--shard", s]);
        }
        cmd.assert().code(6);
    };
    let (whole, sharded) = (copy.path("whole"), copy.path("sharded"));
    run(&whole, None);
    run(&sharded, Some("2/2"));
    let merge = copy
        .xtask()
        .args(["grade", "merge"])
        .arg(&sharded)
        .output()
        .unwrap();
    assert_eq!(merge.status.code(), Some(1), "a shard is missing");
    assert!(String::from_utf8_lossy(&merge.stdout).contains("not graded yet"));
    run(&sharded, Some("1/2"));
    copy.xtask()
        .args(["grade", "merge"])
        .arg(&sharded)
        .assert()
        .code(6);
    assert_eq!(
        grades(&sharded.join("grades.csv")),
        grades(&whole.join("grades.csv"))
    );
    copy.xtask()
        .args(["grade", "x", "--shard", "3/2"])
        .assert()
        .code(2);
}

/// On the no-GPU tier nothing the GPU decides is a grade yet: every submitted pair is `pending` in
/// grades.csv (and its total), results.json scores none of it, and the output says what grades
/// them; the same grade (same --out) where a GPU is (a recording of one here) turns exactly those
/// pairs into the GPU run's grades. Without --exercises, only what the class submitted is a column.
#[test]
fn a_class_graded_without_a_gpu_is_pending_until_a_gpu_grades_it() {
    if !nvcc_or_skip("a_class_graded_without_a_gpu_is_pending_until_a_gpu_grades_it") {
        return;
    }
    let copy = Copy::new();
    let (_keep, secret) = secret();
    let out = copy.path("grades");
    let class = sampled_class(
        &copy,
        "a_class_graded_without_a_gpu_is_pending_until_a_gpu_grades_it",
    );
    let first = copy
        .xtask()
        .arg("grade")
        .arg(&class)
        .arg("--secret")
        .arg(&secret)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(6), "skipped: no GPU here");
    let said = String::from_utf8_lossy(&first.stdout);
    assert!(
        said.contains("pending") && said.contains("on a machine with a GPU"),
        "{said}"
    );
    let g = grades(&out.join("grades.csv"));
    let columns: Vec<&String> = g["alice"].keys().filter(|k| k.contains('-')).collect();
    assert_eq!(
        columns,
        ["03-race", "57-reduction"],
        "what the class submitted"
    );
    // A pair the GPU still decides is pending; one decided here (a build that failed, a file that
    // is not gradable) keeps its grade.
    let lines = journal(&out.join("journal.jsonl"));
    let skipped: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["state"] == "skipped").collect();
    assert!(skipped.len() >= 3, "{} skipped", skipped.len());
    for l in &skipped {
        let (who, ex) = (
            l["student"].as_str().unwrap(),
            l["exercise"].as_str().unwrap(),
        );
        assert_eq!(g[who][ex], "pending", "{who} {ex}");
        assert_eq!(g[who]["Total"], "pending", "{who}");
    }
    for l in lines.iter().filter(|l| l["state"] != "skipped") {
        let (who, ex) = (
            l["student"].as_str().unwrap(),
            l["exercise"].as_str().unwrap(),
        );
        assert_ne!(g[who][ex], "pending", "{who} {ex}: {}", l["state"]);
    }
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("gradescope/alice/results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        results["score"], 0.0,
        "nothing pending is scored: {results}"
    );
    assert!(results["output"].as_str().unwrap().contains("2 pending"));
    // Where the GPU is: the pending pairs are graded, as the recorded H200 run graded them.
    replay_class(&copy, &class, &secret, &out, Compiler::Nvcc);
    let mut recorded = grades(&repo().join(FIXTURE_RECORD).join("grades.csv"));
    recorded.retain(|who, _| g.contains_key(who));
    assert_eq!(grades(&out.join("grades.csv")), recorded);
}

/// The fixture class, or at quick depth (each student is up to four real nvcc builds) the students
/// whose pairs the no-GPU tier decides each way, copied into `copy`: alice's on the GPU (pending),
/// erin's here (not gradable), judy's 03 is not submitted and kim's 03 does not compile.
fn sampled_class(copy: &Copy, test: &str) -> PathBuf {
    let all = repo().join(CLASS);
    if TestDepth::from_env() == TestDepth::Full {
        return all;
    }
    let some = ["alice", "erin", "judy", "kim"];
    eprintln!(
        "SAMPLED {test}: {} of the class's 11 students (CUDABUGS_TESTS=full grades all)",
        some.len()
    );
    let class = copy.path("sampled-class");
    for who in some {
        grader::exercise::workbook::copy_tree(&all.join(who), &class.join(who)).unwrap();
    }
    class
}

#[test]
fn gradescope_exports_and_classroom_clones_name_their_students() {
    if !nvcc_or_skip("gradescope_exports_and_classroom_clones_name_their_students") {
        return;
    }
    let copy = Copy::new();
    let (_keep, secret) = secret();
    let export = repo().join("tests/fixtures/gradescope-export");
    let out = copy.path("gs");
    copy.xtask()
        .arg("grade")
        .arg(&export)
        .args(["--exercises", "03-race", "--secret"])
        .arg(&secret)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(6);
    let g = grades(&out.join("grades.csv"));
    assert_eq!(g["submission_1001"]["Name"], "Ada Lovelace");
    assert_eq!(g["submission_1001"]["SID"], "1815");
    assert_eq!(g["submission_1002"]["Name"], "Grace Hopper & Alan Turing");
    // GitHub Classroom: `<assignment>-<username>` clones.
    let clones = copy.path("lab3-submissions");
    for (user, from) in [("lab3-octocat", "alice"), ("lab3-hubot", "carol")] {
        grader::exercise::workbook::copy_tree(&repo().join(CLASS).join(from), &clones.join(user))
            .unwrap();
        std::fs::create_dir_all(clones.join(user).join(".git")).unwrap();
    }
    let out = copy.path("cl");
    let run = copy
        .xtask()
        .arg("grade")
        .arg(&clones)
        .args(["--exercises", "03-race", "--secret"])
        .arg(&secret)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("GitHub Classroom"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let g = grades(&out.join("grades.csv"));
    assert_eq!(g.keys().cloned().collect::<Vec<_>>(), ["hubot", "octocat"]);
    // A secret file inside the workbook is refused.
    let inside = copy.path("secret.toml");
    std::fs::copy(&secret, &inside).unwrap();
    let refused = copy
        .xtask()
        .arg("grade")
        .arg(&clones)
        .args(["--exercises", "03-race", "--secret"])
        .arg(&inside)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("keep it outside"));
}

/// The fixture class as graded on an H200 (the grade the recording was made by).
const FIXTURE_RECORD: &str = "book/gpu-runs/2026-11-29-plain-50/2-record/grades-fixture";

/// The class's 03 and 57 as graded on an H200 (the grade the recording was made by): the students
/// of the class first graded on 2026-11-25 (book/gpu-runs/2026-11-25-trust/class/).
const CLASS_RECORD: &str = "book/gpu-runs/2026-11-29-plain-50/2-record/grades-adversarial";

/// The adversarial students a quick `cargo test` grades: an honest fix, host work, a program that
/// tells it is profiled, a stalled sanitizer (a process storm, `storm`, and the rest are graded at
/// full depth: each student is up to four real nvcc builds).
const QUICK_ADVERSARIAL: [&str; 4] = [
    "honest-ref",
    "decoy-host",
    "profiler-aware",
    "sanitizer-stall",
];

/// The adversarial class (tests/fixtures/adversarial) replayed from its H200 recording
/// (book/gpu-runs/2026-11-29-plain-50/2-record/): every cheat loses the points of what it faked, the rule
/// named; the honest students get what they got graded alone; threaded-host, written to beat the
/// host-work rule, is caught by its CPU time.
#[test]
fn the_adversarial_class_replayed_loses_the_faked_points_and_the_honest_keep_theirs() {
    if !nvcc_or_skip(
        "the_adversarial_class_replayed_loses_the_faked_points_and_the_honest_keep_theirs",
    ) {
        return;
    }
    let rec = repo().join("grader/tests/recordings/grade-adversarial");
    let copy = Copy::new();
    let (_keep, secret) = secret();
    let out = copy.path("grades");
    // The class as it was recorded: students added to the folder since have no recorded runs
    // (tests/reach.rs and the GPU records judge them), and more students on one exercise than
    // then make a second chunk, whose runs the recording does not hold either.
    let class = copy.path("recorded-class");
    let recorded = grades(&repo().join(CLASS_RECORD).join("grades.csv"));
    // Each student is four real nvcc builds: a quick pass grades one student for each way of
    // faking that the assertions below follow (absent students' assertions are passed over).
    let students: Vec<&String> = match TestDepth::from_env() {
        TestDepth::Full => recorded.keys().collect(),
        TestDepth::Quick => {
            eprintln!(
                "SAMPLED the_adversarial_class_replayed_loses_the_faked_points_and_the_honest_keep_theirs: {} of {} students (CUDABUGS_TESTS=full grades all)",
                QUICK_ADVERSARIAL.len(),
                recorded.len()
            );
            recorded
                .keys()
                .filter(|who| QUICK_ADVERSARIAL.contains(&who.as_str()))
                .collect()
        }
    };
    for who in &students {
        grader::exercise::workbook::copy_tree(
            &repo().join("tests/fixtures/adversarial").join(who),
            &class.join(who),
        )
        .unwrap();
    }
    copy.xtask()
        .arg("--replay-tools")
        .arg(&rec)
        .arg("grade")
        .arg(&class)
        .args(["--exercises", BOTH, "--secret"])
        .arg(&secret)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(0);
    // Every student of the recorded class keeps the grades of its H200 run.
    let got = grades(&out.join("grades.csv"));
    assert_eq!(got.len(), students.len());
    for who in students {
        assert_eq!(got.get(who), recorded.get(who), "{who}");
    }
    // The honest students graded alone on the same GPU got the same points.
    let alone =
        grades(&repo().join("book/gpu-runs/2026-11-25-trust/alone/grades-honest-alone/grades.csv"));
    let class = grades(&out.join("grades.csv"));
    for who in ["honest-ref", "honest-alt", "half-fix"] {
        for ex in ["03-race", "57-reduction"]
            .into_iter()
            .filter(|_| class.contains_key(who))
        {
            assert_eq!(class[who][ex], alone[who][ex], "{who} {ex}");
        }
    }
    let lines = journal(&out.join("journal.jsonl"));
    the_host_work_and_faked_answers_lose_their_points(&lines);
    the_cpu_it_hid_and_the_tool_it_stalled_count_against_it(&lines);
}

/// Host work, forged call times, faked or kept answers, leftover processes: the points of what they
/// faked are withheld, and no file outlives its pair.
fn the_host_work_and_faked_answers_lose_their_points(lines: &[serde_json::Value]) {
    speed_withheld_by(lines, "decoy-host", "03-race", "host-work");
    speed_withheld_by(lines, "decoy-host", "57-reduction", "host-work");
    // Its exit handler appended forged lines to the call-times file: the file is refused.
    speed_withheld_by(lines, "forge-times", "57-reduction", "host-work");
    speed_withheld_by(lines, "hog", "03-race", "unaccounted-time");
    // Faked answers under the profiler, or a guess at the bench: no correctness credit either.
    for (who, ex) in [
        ("profiler-aware", "57-reduction"),
        ("hardcode", "57-reduction"),
    ]
    .into_iter()
    .filter(|(who, _)| graded(lines, who))
    {
        let p = pair(lines, who, ex);
        assert!(
            rules(p).contains(&"timed-outputs".to_string()),
            "{who} {ex}: {:?}",
            rules(p)
        );
        for key in ["public", "hidden", "speed"] {
            assert_eq!(stage(p, key).0, 0.0, "{who} {ex} {key}");
        }
    }
    // On 03 no run is profiled (grade times the bug track's kernels in the plain calls): what it
    // does when profiled is never what is judged, and what is judged is the honest fix. It reaches
    // what neither the exercise nor the reference fix does, so its speed is left to a person.
    if graded(lines, "profiler-aware") {
        let aware = pair(lines, "profiler-aware", "03-race");
        assert!(!rules(aware).contains(&"timed-outputs".to_string()));
        speed_withheld_by(lines, "profiler-aware", "03-race", "tool-aware");
        // Its first call timing looked like host work (host-work in the recording without its
        // confirming runs); timed again beside the reference, it was not: judged on its quickest run,
        // it loses its speed points to what it did, not to a busy host.
        let aware = rules(pair(lines, "profiler-aware", "57-reduction"));
        assert!(!aware.contains(&"host-work".to_string()), "{aware:?}");
    }
    // Answers kept across processes are wrong on the hidden cases.
    if graded(lines, "cache") {
        let hidden = stage(pair(lines, "cache", "57-reduction"), "hidden");
        assert!(hidden.0 < hidden.1);
    }
    // A daemon or a process storm: the system-call filter refuses its forks where the program runs
    // alone (cases and timed runs: the reference fix's outputs, the cases' points); under the
    // tools the forks run, each tool run fails with the process left behind, and the file gets no
    // tool points. Its code reaches fork: its speed is left to a person.
    for who in ["leftover", "storm"]
        .into_iter()
        .filter(|w| graded(lines, w))
    {
        let p = pair(lines, who, "03-race");
        assert_eq!(
            (stage(p, "named-tool").0, stage(p, "other-tools").0),
            (0.0, 0.0),
            "{who}"
        );
        assert_eq!(stage(p, "public").0, stage(p, "public").1, "{who}");
        speed_withheld_by(lines, who, "03-race", "tool-aware");
    }
    // No file outlives its pair: the work folders are gone, their size is in the journal.
    assert!(lines
        .iter()
        .filter(|l| l["state"] == "graded")
        .all(|l| l["disk_bytes"].as_u64().is_some()));
}

/// Host work on other threads or in a clone, and a sanitizer stalled on purpose: each counts against
/// the program.
fn the_cpu_it_hid_and_the_tool_it_stalled_count_against_it(lines: &[serde_json::Value]) {
    // Host work on 16 threads, hidden under the input's copy: the wall clock misses it, the CPU
    // time does not.
    speed_withheld_by(lines, "threaded-host", "03-race", "host-cpu");
    speed_withheld_by(lines, "decoy-host", "03-race", "host-cpu");
    // The same sum in a second process sharing the memory (clone): the system-call filter refuses
    // the clone, so the GPU's own too-small total stands: the cases fail and nothing is timed.
    // (Before the filter, the 2026-11-25 H100 run withheld its speed by host-work and host-cpu.)
    if graded(lines, "clone-host") {
        let clone = pair(lines, "clone-host", "03-race");
        assert!(stage(clone, "public").0 < stage(clone, "public").1);
        assert_eq!(stage(clone, "speed").0, 0.0);
    }
    // Spinning only under compute-sanitizer: no tool credit, and one stalled tool waited for again
    // alone (within a limit the other students' runs set), not all four.
    if !graded(lines, "sanitizer-stall") {
        return;
    }
    let stall = pair(lines, "sanitizer-stall", "03-race");
    assert_eq!(
        (
            stage(stall, "named-tool").0,
            stage(stall, "other-tools").0,
            stall["points"].as_f64()
        ),
        (0.0, 0.0, Some(35.0))
    );
    let other = stall["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "other-tools")
        .unwrap()["summary"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(other.matches("nor alone within").count(), 1, "{other}");
}

/// Whether `who` was graded at all: a quick pass grades a sample of the adversarial class, and its
/// assertions pass over the others (at full depth every recorded student is checked present).
fn graded(lines: &[serde_json::Value], who: &str) -> bool {
    lines.iter().any(|l| l["student"] == who)
}

/// The pair lost its speed points to `rule`.
fn speed_withheld_by(lines: &[serde_json::Value], who: &str, ex: &str, rule: &str) {
    if !graded(lines, who) {
        return;
    }
    let p = pair(lines, who, ex);
    assert!(
        rules(p).contains(&rule.to_string()),
        "{who} {ex}: {:?}",
        rules(p)
    );
    assert_eq!(stage(p, "speed").0, 0.0, "{who} {ex}");
}

/// A student's files are read without following a link (a cloned repository can hold one): a
/// submission that links to the instructor's secret, a workbook copy whose harness does, or one
/// whose `exercises/` links to the workbook's `solutions/` is not gradable, and nothing the grader
/// writes quotes what the link points at.
#[test]
fn a_link_in_a_submission_is_never_followed() {
    if !nvcc_or_skip("a_link_in_a_submission_is_never_followed") {
        return;
    }
    let copy = Copy::new();
    let (_keep, secret) = secret();
    let class = tempfile::tempdir().unwrap();
    let marker = "cudabugs-linked-secret-4f1c";
    let target = class.path().join("instructor-only.txt");
    std::fs::write(&target, format!("// {marker}\n")).unwrap();
    let students = class.path().join("class");
    // The submission itself is a link.
    std::fs::create_dir_all(students.join("linked-file")).unwrap();
    std::os::unix::fs::symlink(&target, students.join("linked-file/reduce.cu")).unwrap();
    // A workbook copy: an untouched exercise, and its harness header a link.
    let copy_root = students.join("linked-harness");
    std::fs::create_dir_all(copy_root.join("exercises/03-race")).unwrap();
    std::fs::create_dir_all(copy_root.join("harness")).unwrap();
    std::fs::copy(
        repo().join("exercises/03-race/reduce.cu"),
        copy_root.join("exercises/03-race/reduce.cu"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&target, copy_root.join("harness/cudabugs.cuh")).unwrap();
    // A workbook copy whose exercises are the reference fixes.
    std::fs::create_dir_all(students.join("linked-solutions")).unwrap();
    std::os::unix::fs::symlink(
        copy.path("solutions"),
        students.join("linked-solutions/exercises"),
    )
    .unwrap();
    let out = copy.path("grades");
    let done = copy
        .xtask()
        .arg("grade")
        .arg(&students)
        .args(["--exercises", "03-race", "--secret"])
        .arg(&secret)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        [Some(0), Some(6)].contains(&done.status.code()),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let lines = journal(&out.join("journal.jsonl"));
    for (who, why) in [
        ("linked-file", "cannot read"),
        ("linked-harness", "cannot be read as a plain file"),
        ("linked-solutions", "is a link"),
    ] {
        let p = pair(&lines, who, "03-race");
        assert_eq!(p["state"], "not-gradable", "{who}: {p}");
        assert!(p["reason"].as_str().unwrap().contains(why), "{who}: {p}");
    }
    let mut leaked = Vec::new();
    for entry in walk(&out) {
        if std::fs::read(&entry).is_ok_and(|b| String::from_utf8_lossy(&b).contains(marker)) {
            leaked.push(entry);
        }
    }
    assert!(leaked.is_empty(), "the linked file's text is in {leaked:?}");
    assert!(!String::from_utf8_lossy(&done.stdout).contains(marker));
    assert!(!String::from_utf8_lossy(&done.stderr).contains(marker));
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
