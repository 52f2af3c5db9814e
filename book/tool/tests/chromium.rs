//! Build the book and load a lesson in headless Chromium: the page must have its title, the
//! exercise's code (from the include) and the record's ncu table, as the browser sees them (DOM).
//! Needs Debian's chromium; CI installs it and sets CUDABUGS_REQUIRE_CHROMIUM=1 so that this test
//! cannot skip there.

use std::path::Path;
use std::time::Duration;

use grader::judge::verify::VerificationRecord;
use grader::tools::runner::{self, Job};

fn chromium() -> Option<std::path::PathBuf> {
    std::env::var_os("CHROMIUM").map(Into::into).or_else(|| {
        ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .find_map(|n| which(n))
    })
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

#[test]
fn a_lesson_renders_with_its_title_code_and_record_table() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("CUDABUGS_REQUIRE_CHROMIUM").is_none(),
            "CUDABUGS_REQUIRE_CHROMIUM is set but no chromium was found"
        );
        eprintln!("SKIPPED a_lesson_renders_with_its_title_code_and_record_table: no chromium (apt-get install chromium)");
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let html = cudabugs_book::build(&repo.join("book"), &repo, Some(out.path())).unwrap();
    let page = html.join("lessons/03-race.html");
    let profile = tempfile::tempdir().unwrap();
    let job = Job::new(browser, Duration::from_secs(120))
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=3000", "--dump-dom"])
        .arg(format!("file://{}", page.display()));
    let done = runner::run(&job).unwrap();
    assert!(done.success(), "chromium failed: {}", done.output());
    let dom = done.stdout.text();
    assert!(
        dom.contains("<title>03-race: the warp that was never synchronised"),
        "title missing:\n{}",
        &dom[..dom.len().min(2000)]
    );
    // The bug region, included from exercises/03-race/reduce.cu and highlighted by the page's script.
    assert!(
        dom.contains("language-cpp") && dom.contains("hljs"),
        "no highlighted C++ block"
    );
    assert!(dom.contains("warp_sum"), "the included code is missing");
    // The record's ncu table, with the times of the committed record.
    let record: VerificationRecord = serde_json::from_str(
        &std::fs::read_to_string(repo.join("book/verification.json")).unwrap(),
    )
    .unwrap();
    let t = record
        .exercises
        .iter()
        .find(|e| e.id == "03-race")
        .and_then(|e| e.timing.clone())
        .unwrap();
    let fix = format!("{:.1} µs", t.reference_ns / 1e3);
    assert!(
        dom.contains("<table>") && dom.contains("the fix, second process") && dom.contains(&fix),
        "no record table with {fix}"
    );
}
