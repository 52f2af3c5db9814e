//! The grader's integration tests, one binary (the workbook's tests/main.rs says why), but for two
//! that act on the whole process and have one of their own: `capability` sets the fake-GPU
//! variable, `runner_cancel` ends every job the process runs.

mod fake_harness;
mod procs;

/// The workbook's root, above the grader's folder.
fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

mod hostile;
mod manifest_fuzz;
mod no_spawn;
mod parsers;
mod reach;
mod report;
mod served;
mod student_ids;
mod tool_aware;
