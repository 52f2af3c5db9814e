//! The harness's side of the served calls in C (`fixtures/fake-harness.c`): built with the
//! machine's C compiler and run in the sandbox with the grader serving its calls. Shared by
//! `tests/served.rs` (what the grader sees of a process it cannot trust) and
//! `benches/served_calls.rs` (what the grader's side costs); each uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use grader::exercise::dtype::DType;
use grader::exercise::manifest::Dist;
use grader::exercise::reference::{Buffer, Data};
use grader::tools::launcher::{Launcher, Sandboxed};
use grader::tools::runner::{Finished, Job};
use grader::tools::sandbox::{Confinement, Isolation};
use grader::tools::served::{CallTimes, Calls, Margins, Served, SharedLayout};

/// The fake harness built in `dir`; None where the machine has no C compiler.
pub fn build(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("fake.c");
    let bin = dir.join("fake");
    std::fs::write(&src, include_str!("../fixtures/fake-harness.c")).unwrap();
    let cc = ["cc", "gcc", "clang"].into_iter().find(|c| {
        std::process::Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })?;
    let ok = std::process::Command::new(cc)
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap()
        .success();
    assert!(ok, "the fake harness builds");
    Some(bin)
}

/// `count` calls of one f32 input `x` (the bench's values `base`, drawn from `dist`) and one f32
/// output `y` of as many elements.
pub fn calls(base: Vec<f32>, dist: Dist, count: u32, secret: u64) -> Calls {
    let n = base.len();
    Calls {
        layout: SharedLayout::new(
            &[("x".into(), DType::F32, n, Some(dist))],
            &[("y".into(), DType::F32, n)],
        ),
        base: Arc::new(vec![Buffer {
            name: "x".into(),
            data: Data::F32(base),
        }]),
        count,
        recorded: false,
        secret,
    }
}

/// One served run of the fake harness.
pub struct Run {
    pub finished: Finished,
    /// The grader's record of the calls.
    pub times: CallTimes,
    /// Each call's outputs the grader kept (none where it kept none).
    pub call_files: Vec<PathBuf>,
    /// From the making of the shared memory to the run's end: the grader's side included.
    pub wall: Duration,
    _dir: tempfile::TempDir,
}

/// Run `bin` in `mode` at `isolation` with the grader serving `calls` (keeping each call's outputs
/// where `keep`), its work folder its only writable one.
pub fn serve(
    bin: &Path,
    calls: Calls,
    mode: &str,
    isolation: Isolation,
    keep: bool,
    timeout: Duration,
) -> Run {
    serve_within(
        bin,
        calls,
        mode,
        (isolation, keep),
        timeout,
        Margins::default(),
    )
}

/// `serve`, the program held to `margins` before its first call and after its last.
pub fn serve_within(
    bin: &Path,
    calls: Calls,
    mode: &str,
    (isolation, keep): (Isolation, bool),
    timeout: Duration,
    margins: Margins,
) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (clock, work) = (dir.path().join("clock"), dir.path().join("work"));
    std::fs::create_dir_all(&clock).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let (input, output) = (
        calls.layout.inputs[0].offset,
        calls.layout.outputs[0].offset,
    );
    let bytes = calls.layout.inputs[0].bytes();
    let started = Instant::now();
    let served = Served::new(calls, true, &clock, keep)
        .unwrap()
        .within(margins);
    let files = served.files();
    let mut job = Job::new(bin, timeout)
        .args([
            served.fd().to_string(),
            input.to_string(),
            output.to_string(),
            bytes.to_string(),
            mode.to_string(),
        ])
        .cwd(&work);
    job.confine = Some(Confinement {
        writable: vec![work.clone()],
        handed_over: vec![work.clone()],
        readable: vec![dir.path().to_path_buf()],
        ..Confinement::default()
    });
    job.pass_fds = vec![served.fd()];
    job.driver = Some(Arc::new(served));
    let finished = Sandboxed::for_isolation(isolation)
        .unwrap()
        .launch(&job)
        .unwrap();
    let wall = started.elapsed();
    let times = CallTimes::parse(&std::fs::read_to_string(&files[0]).unwrap())
        .expect("the grader's record");
    Run {
        finished,
        times,
        call_files: files[1..].iter().filter(|p| p.is_file()).cloned().collect(),
        wall,
        _dir: dir,
    }
}
