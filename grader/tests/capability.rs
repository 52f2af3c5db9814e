//! The capability gate on a fixture workbook: 07-leak declared to need compute capability 9.0, on a
//! GPU faked through the CUDABUGS_FAKE_GPU seam as an A100 (8.0). `check` skips it before building
//! (exit 6, saying why), `list` tags it, `verify` reports it n/a and counts it neither way. No GPU,
//! nvcc or compute-sanitizer is needed: nothing of the gated exercise may run. (The xtask CLI is
//! tested on the catalog's own gated exercises in tests/cli.rs.)

use std::path::{Path, PathBuf};

use grader::engine::config::Config;
use grader::engine::context::Context;
use grader::exercise::catalog::{self, Embedded};
use grader::exercise::workbook::Workbook;
use grader::judge::verdict::{Outcome, Status};
use grader::tools::gpu::{self, GpuStatus};

const ID: &str = "07-leak";
const WHY: &str = "needs compute capability 9.0 (Hopper); this GPU, NVIDIA A100, is 8.0";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A workbook of one exercise, 07-leak with `requires = "9.0"`, embedded as the binary would be.
fn gated_workbook(root: &Path) -> Workbook {
    for dir in ["exercises", "solutions"] {
        grader::exercise::workbook::copy_tree(&repo().join(dir).join(ID), &root.join(dir).join(ID))
            .unwrap();
    }
    let manifest = root.join("exercises").join(ID).join(catalog::MANIFEST_FILE);
    let text = format!(
        "requires = \"9.0\"\n{}",
        std::fs::read_to_string(&manifest).unwrap()
    );
    std::fs::write(&manifest, &text).unwrap();
    let embedded: &'static [Embedded] = Box::leak(Box::new([Embedded::read(root, ID)]));
    assert_eq!(
        embedded[0].manifest, text,
        "the manifest with its requirement"
    );
    Workbook::new(root.to_path_buf(), embedded, &[]).unwrap()
}

/// A context on the faked GPU, with tools that do not exist: anything that tried to build or run
/// would fail, so a pass shows that nothing did.
fn context_on_fake_a100(wb: &Workbook) -> Context {
    // Every test of this file sets the same value: the seam is read by `gpu::probe`, as the CLI reads it.
    std::env::set_var(grader::environment::FAKE_GPU, "NVIDIA A100;8.0");
    let gpu = gpu::probe();
    assert!(
        matches!(&gpu, GpuStatus::Present(info) if info.compute_capability == (8, 0)),
        "{gpu:?}"
    );
    let config = Config {
        install_toolkit: false,
        ..Config::default()
    };
    let ctx = Context::builder(wb, config)
        .no_compiler()
        .gpu(gpu)
        .build(|_| {})
        .unwrap();
    assert_eq!(ctx.arch, "sm_80", "the -arch of the GPU given");
    ctx
}

#[test]
fn check_skips_a_gated_exercise_before_building_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let wb = gated_workbook(dir.path());
    let ctx = context_on_fake_a100(&wb);
    let ex = wb.resolve(ID).unwrap();
    let report = grader::plans::check::check(&ctx, &wb, ex, |_| {});
    assert_eq!(report.outcome, Outcome::Skipped { reason: WHY.into() });
    assert_eq!(report.outcome.exit().code(), 6);
    assert_eq!(
        (report.steps.len(), report.steps[0].status),
        (1, Status::Skipped),
        "{:#?}",
        report.steps
    );
    assert!(
        !wb.work_dir().join("work").exists(),
        "nothing was built or run"
    );
    let text = grader::report::check_text(&report, ex, &wb.learner_path(ex));
    assert!(
        text.contains("SKIPPED") && text.contains(&format!("(exit 6): {WHY}")),
        "{text}"
    );
}

#[test]
fn list_tags_a_gated_exercise() {
    let dir = tempfile::tempdir().unwrap();
    let wb = gated_workbook(dir.path());
    let entries = grader::learner::list(&wb, &Default::default());
    assert_eq!(
        entries[0].requires.map(|c| c.to_string()),
        Some("9.0".to_string())
    );
    assert_eq!(
        serde_json::to_value(&entries[0]).unwrap()["requires"],
        "9.0"
    );
    let text = grader::report::list_text(&entries);
    assert!(
        text.lines()
            .any(|l| l.contains(ID) && l.contains("[sm_90+]")),
        "{text}"
    );
}

#[test]
fn verify_reports_a_gated_exercise_as_not_applicable_never_as_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let wb = gated_workbook(dir.path());
    let ctx = context_on_fake_a100(&wb);
    let ex = wb.resolve(ID).unwrap();
    let record = grader::plans::verify::verify(&ctx, &wb, &[ex], &Default::default(), |_| {});
    let e = &record.exercises[0];
    assert_eq!((e.not_applicable.as_deref(), e.label()), (Some(WHY), "n/a"));
    // Its manifest was still checked; nothing was built.
    assert!(
        e.checks.iter().all(|s| s.status == Status::Passed)
            && e.checks.iter().all(|s| !s.name.contains("build")),
        "{:#?}",
        e.checks
    );
    // Nothing applicable ran: skipped (exit 6), not failed.
    assert_eq!(record.outcome.exit().code(), 6, "{:?}", record.outcome);
    let text = grader::report::verify_text(&record);
    assert!(
        text.contains("[n/a ] not applicable on this GPU: needs compute capability 9.0")
            && text.contains(
                "0 of 0 applicable exercise(s) passed; n/a on this GPU (not counted): 07-leak"
            ),
        "{text}"
    );
    // A broken manifest is a failure on any GPU.
    std::fs::write(
        dir.path()
            .join("solutions")
            .join(ID)
            .join(catalog::ORIGINAL_REGIONS),
        "no regions",
    )
    .unwrap();
    let record = grader::plans::verify::verify(&ctx, &wb, &[ex], &Default::default(), |_| {});
    assert_eq!(
        (
            record.exercises[0].not_applicable.as_deref(),
            record.outcome.exit().code()
        ),
        (None, 1),
        "{:#?}",
        record.exercises[0].checks
    );
}
