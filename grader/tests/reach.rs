//! Issue 47's gate on real files, compiled by the real nvcc and read by the real objdump: what each
//! fixture's host object reaches beyond its exercise's untouched file and reference fix
//! (`judge::reach`), and what the compiler-faithful directive reading refuses (`class::tamper`).
//! Honest fixes written in many styles reach nothing new; every attack is named by what it reaches,
//! however its text spells it. Without nvcc this prints SKIPPED (CI sets CUDABUGS_REQUIRE_NVCC).

use std::path::Path;

use grader::engine::config::Config;
use grader::engine::context::Context;
use grader::environment::TestDepth;
use grader::exercise::catalog::Embedded;
use grader::exercise::workbook::Workbook;
use grader::judge::tool_aware::{self, Host};
use grader::tools::gpu::GpuStatus;
use grader::tools::nvcc::Harness;
use grader::tools::toolchain::{self, Nvcc, ToolName};

use crate::repo;

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The real exercises `ids`, in a workbook rooted in `root` (where the kept analyses go).
fn workbook(root: &Path, ids: &[&'static str]) -> Workbook {
    let embedded: Vec<Embedded> = ids.iter().map(|&id| Embedded::read(&repo(), id)).collect();
    Workbook::new(
        root.to_path_buf(),
        Box::leak(embedded.into_boxed_slice()),
        &[],
    )
    .unwrap()
}

/// A context with the real nvcc (no GPU, no harness object: nothing is linked), or None: SKIPPED.
fn context(wb: &Workbook) -> Option<Context> {
    let Some(nvcc) = toolchain::find(ToolName::Nvcc, &repo()) else {
        assert!(
            std::env::var_os("CUDABUGS_REQUIRE_NVCC").is_none(),
            "CUDABUGS_REQUIRE_NVCC is set and no nvcc was found"
        );
        println!("SKIPPED: no nvcc (run `cargo xtask toolkit install`)");
        return None;
    };
    let harness = Harness {
        include_dir: repo().join("harness"),
        object: repo().join("harness/not-linked.o"),
    };
    let config = Config {
        install_toolkit: false,
        ..Config::default()
    };
    let nvcc = Nvcc {
        path: nvcc,
        extra_flags: Vec::new(),
        cupti: None,
    };
    let mut ctx = Context::builder(wb, config)
        .compiler(nvcc, harness)
        .gpu(GpuStatus::NoDriver)
        .build(|_| {})
        .unwrap();
    // The analyses the workspace's tests share (tests/common's build cache): the same texts, built
    // by the same nvcc against the same harness headers, are analysed once for all of them.
    ctx.reach_cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("build-cache/reach");
    assert!(ctx.tools.objdump.is_some(), "objdump (binutils) is needed");
    Some(ctx)
}

/// What `file` (a fixture of exercise `id`) reaches beyond the exercise's versions.
fn judged(ctx: &Context, wb: &Workbook, id: &str, file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    let ex = wb.resolve(id).unwrap();
    let reach = grader::engine::stages::workbook_version(ctx, ex, &text)
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    match tool_aware::host_beyond(ctx, ex, &text, &Ok(reach)) {
        Host::Beyond(found) => found.iter().map(|b| b.to_string()).collect(),
        other => panic!("{file}: {other:?}"),
    }
}

const IDS: &[&str] = &[
    "03-race",
    "05-memset",
    "07-leak",
    "57-reduction",
    "37-shfl-width",
];

#[test]
fn the_compiled_program_is_judged_not_its_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let wb = workbook(dir.path(), IDS);
    let Some(ctx) = context(&wb) else { return };
    // Each file is two real nvcc compiles and objdumps, with its exercise's versions: at quick
    // depth a sample of each list.
    let depth = TestDepth::from_env();
    // Honest fixes in other styles: an overload the exercise's code calls, cooperative groups,
    // a std::vector, the reference itself. Nothing new is reached.
    let honest = vec![
        ("03-race", "tests/fixtures/honest-variety/cg-tile/reduce.cu"),
        ("03-race", "tests/fixtures/adversarial/honest-alt/reduce.cu"),
        (
            "37-shfl-width",
            "tests/fixtures/honest-variety/cg-reduce/dots.cu",
        ),
        (
            "05-memset",
            "tests/fixtures/honest-variety/host-vector/histogram.cu",
        ),
        (
            "57-reduction",
            "tests/fixtures/adversarial/honest-ref/sum.cu",
        ),
    ];
    for (id, file) in depth.sample("the_compiled_program_is_judged_not_its_spelling", honest, 1) {
        assert_eq!(judged(&ctx, &wb, id, file), Vec::<String>::new(), "{file}");
    }
    // Attacks: each named by what its object reaches, whatever the text hides.
    let attacks = vec![
        // An operator that CB_CHECK, outside the region, now calls.
        (
            "03-race",
            "tests/fixtures/adversarial/operator-hook/reduce.cu",
            "operator!=",
        ),
        // A cudaMemcpy overload that cb_run's copies select, and environ.
        (
            "03-race",
            "tests/fixtures/adversarial/profiler-aware/reduce.cu",
            "cudaMemcpy(float*",
        ),
        (
            "03-race",
            "tests/fixtures/adversarial/profiler-aware/reduce.cu",
            "`environ`",
        ),
        // getenv through a struct field, never called by its name.
        (
            "05-memset",
            "tests/fixtures/adversarial/pointer-libc/histogram.cu",
            "`getenv`",
        ),
        // A helper that frees only when /proc/self/maps shows a tool.
        (
            "07-leak",
            "tests/fixtures/adversarial/tool-free/center.cu",
            "`fopen`",
        ),
        // fork and exec in a constructor.
        (
            "03-race",
            "tests/fixtures/adversarial/exec-child/reduce.cu",
            "`fork`",
        ),
        // A libc function declared in the region and called.
        (
            "03-race",
            "tests/fixtures/adversarial/hog/reduce.cu",
            "`sleep`",
        ),
        // Listing the cases folder.
        (
            "57-reduction",
            "tests/fixtures/adversarial/case-lister/sum.cu",
            "`opendir`",
        ),
    ];
    for (id, file, reaches) in depth.sample(
        "the_compiled_program_is_judged_not_its_spelling",
        attacks,
        2,
    ) {
        let found = judged(&ctx, &wb, id, file);
        assert!(
            found.iter().any(|f| f.contains(reaches)),
            "{file} should reach {reaches}: {found:?}"
        );
    }
}

#[test]
fn every_directive_attack_is_refused_and_every_reference_fix_is_gradable() {
    let all: Vec<String> = std::fs::read_dir(repo().join("exercises"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("exercise.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let ids: Vec<&'static str> = all.into_iter().map(leak).collect();
    assert!(ids.len() >= 66, "{}", ids.len());
    let dir = tempfile::tempdir().unwrap();
    let wb = workbook(dir.path(), &ids);
    for id in &ids {
        let ex = wb.resolve(id).unwrap();
        if let Err(t) = grader::class::tamper::check(ex, ex.solution) {
            panic!("the reference fix of {id} is not gradable: {}", t.reason);
        }
    }
    let ex = wb.resolve("03-race").unwrap();
    for (student, spelled) in [
        ("digraph-include", "%:"),
        ("splice-directive", "#define"),
        ("comment-directive", "#include <link.h>"),
    ] {
        let text = std::fs::read_to_string(
            repo().join(format!("tests/fixtures/adversarial/{student}/reduce.cu")),
        )
        .unwrap();
        let reason = grader::class::tamper::check(ex, &text).unwrap_err().reason;
        assert!(
            reason.contains("inside a marked region") && reason.contains(spelled),
            "{student}: {reason}"
        );
    }
}
