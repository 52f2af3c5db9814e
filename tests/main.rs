//! The workspace's integration tests, one binary: this package's (`tests/`), the grader's
//! (`grader/tests/`) and the book tool's (`book/tool/tests/`), each file a module of it where it
//! lives. `cargo test` runs test binaries one after another, each until its slowest test ends, so
//! with a binary per file, then per package, a 2-core machine sat idle at each one's tail and
//! linked one binary more; in one, both cores stay busy from the first test to the last (README,
//! "Tests and house rules"). The grader's `capability` and `runner_cancel` keep binaries of their
//! own: they act on the whole process (the fake-GPU variable; every job the process runs ended).

/// The workbook's root, which every test file names its fixtures from.
fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

mod common;

mod build_cache;
mod capability;
mod cli;
mod events;
mod grade;
mod learner;
mod replay;
mod sanitize;

#[path = "../grader/tests/fake_harness/mod.rs"]
mod fake_harness;
#[path = "../grader/tests/hostile.rs"]
mod hostile;
#[path = "../grader/tests/manifest_fuzz.rs"]
mod manifest_fuzz;
#[path = "../grader/tests/no_spawn.rs"]
mod no_spawn;
#[path = "../grader/tests/parsers.rs"]
mod parsers;
#[path = "../grader/tests/procs/mod.rs"]
mod procs;
#[path = "../grader/tests/reach.rs"]
mod reach;
#[path = "../grader/tests/report.rs"]
mod report;
#[path = "../grader/tests/served.rs"]
mod served;
#[path = "../grader/tests/student_ids.rs"]
mod student_ids;
#[path = "../grader/tests/tool_aware.rs"]
mod tool_aware;

#[path = "../book/tool/tests/checks.rs"]
mod checks;
#[path = "../book/tool/tests/chromium.rs"]
mod chromium;
#[path = "../book/tool/tests/numbers.rs"]
mod numbers;
#[path = "../book/tool/tests/repo_book.rs"]
mod repo_book;
#[path = "../book/tool/tests/spoilers.rs"]
mod spoilers;
