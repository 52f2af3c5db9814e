//! What the grader's side of the timed calls costs (`tools::served`): a process that speaks the
//! harness's protocol (the C stand-in of `tests/fixtures/fake-harness.c`, which copies each call's
//! input to its output) is served `CALLS` calls of a bench-sized input, and the time the whole
//! process took is split into its start, the calls on the grader's clock, and the grader's work
//! between them (each call's inputs written before the clock, its outputs kept after it). No GPU:
//! this is the grader's own cost, which every served run (whole calls and ncu's runs) pays.
//!
//! `cargo bench -p grader --bench served_calls` (SERVED_MIB=128,4 picks the sizes; SERVED_ISOLATION
//! =none|auto the sandbox).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use grader::exercise::dtype::DType;
use grader::exercise::manifest::Dist;
use grader::exercise::reference::{Buffer, Data};
use grader::tools::launcher::{Launcher, Sandboxed};
use grader::tools::runner::Job;
use grader::tools::sandbox::{Confinement, Isolation};
use grader::tools::served::{CallTimes, Calls, Layout, Served};

const CALLS: u32 = 3;

fn build(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("fake.c");
    let bin = dir.join("fake");
    std::fs::write(&src, include_str!("../tests/fixtures/fake-harness.c")).ok()?;
    let ok = std::process::Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .ok()?
        .success();
    ok.then_some(bin)
}

fn one(bin: &Path, mib: usize, isolation: Isolation, keep: bool) -> (f64, CallTimes) {
    let n = mib << 18; // f32 elements
    let dir = tempfile::tempdir().unwrap();
    let (clock, work) = (dir.path().join("clock"), dir.path().join("work"));
    std::fs::create_dir_all(&clock).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let dist = Some(Dist::Uniform { lo: -1.0, hi: 1.0 });
    let layout = Layout::new(
        &[("x".into(), DType::F32, n, dist)],
        &[("y".into(), DType::F32, n)],
    );
    let (input, output) = (layout.inputs[0].offset, layout.outputs[0].offset);
    let base: Vec<f32> = (0..n).map(|i| (i % 2000) as f32 / 1000.0 - 1.0).collect();
    let calls = Calls {
        base: Arc::new(vec![Buffer {
            name: "x".into(),
            data: Data::F32(base),
        }]),
        layout,
        count: CALLS,
        secret: 7,
    };
    // The shared memory is the grader's cost too: counted from here.
    let t = Instant::now();
    let served = Served::new(calls, true, &clock, keep).unwrap();
    let files = served.files();
    let mut job = Job::new(bin, Duration::from_secs(120))
        .args([
            served.fd().to_string(),
            input.to_string(),
            output.to_string(),
            (n * 4).to_string(),
            "honest".to_string(),
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
    let launcher = Sandboxed::for_isolation(isolation).unwrap();
    let finished = launcher.launch(&job).unwrap();
    let whole = t.elapsed().as_secs_f64();
    assert!(finished.success(), "{:?}", finished.exit);
    let times = CallTimes::parse(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(times.calls_ns.len(), CALLS as usize, "{:?}", times.failure);
    (whole, times)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        eprintln!("SKIPPED: no C compiler (cc) on this machine");
        return;
    };
    let isolation = match std::env::var("SERVED_ISOLATION").as_deref() {
        Ok("none") => Isolation::None,
        _ => Isolation::Auto,
    };
    let sizes: Vec<usize> = std::env::var("SERVED_MIB")
        .unwrap_or_else(|_| "128,4".into())
        .split(',')
        .map(|s| s.trim().parse().expect("SERVED_MIB: sizes in MiB"))
        .collect();
    println!("{CALLS} served calls of an f32 input and output, {isolation:?} isolation");
    println!("size      keep  process  start    calls(clock)  grader between calls");
    for mib in sizes {
        for keep in [true, false] {
            // The median of five processes.
            let mut runs: Vec<(f64, CallTimes)> =
                (0..5).map(|_| one(&bin, mib, isolation, keep)).collect();
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (whole, times) = &runs[2];
            let start = times.ready_ns.unwrap_or(0.0) / 1e9;
            let clock: f64 = times.calls_ns.iter().sum::<f64>() / 1e9;
            println!(
                "{mib:>4} MiB  {keep:<5} {whole:>6.3} s {start:>5.3} s {clock:>9.3} s {:>12.3} s",
                whole - start - clock
            );
        }
    }
}
