//! What the grader's side of the timed calls costs (`tools::served`): a process that speaks the
//! harness's protocol (the C stand-in of `tests/fixtures/fake-harness.c`, which copies each call's
//! input to its output) is served `CALLS` calls of a bench-sized input, and the time the whole
//! process took is split into its start, the calls on the grader's clock, and the grader's work
//! between them (each call's inputs written before the clock, its outputs kept after it). No GPU:
//! this is the grader's own cost, which every served run (whole calls and ncu's runs) pays.
//!
//! `cargo bench -p grader --bench served_calls` (SERVED_MIB=128,4 picks the sizes; SERVED_ISOLATION
//! =none|auto the sandbox).

#[path = "../tests/fake_harness/mod.rs"]
mod fake_harness;

use std::path::Path;
use std::time::Duration;

use grader::exercise::manifest::Dist;
use grader::tools::sandbox::Isolation;
use grader::tools::served::CallTimes;

const CALLS: u32 = 3;

fn one(bin: &Path, mib: usize, isolation: Isolation, keep: bool) -> (f64, CallTimes) {
    let n = mib << 18; // f32 elements
    let base: Vec<f32> = (0..n).map(|i| (i % 2000) as f32 / 1000.0 - 1.0).collect();
    let calls = fake_harness::calls(base, Dist::Uniform { lo: -1.0, hi: 1.0 }, CALLS, 7);
    let run = fake_harness::serve(
        bin,
        calls,
        "honest",
        isolation,
        keep,
        Duration::from_secs(120),
    );
    assert!(run.finished.success(), "{:?}", run.finished.exit);
    assert_eq!(
        run.times.calls_ns.len(),
        CALLS as usize,
        "{:?}",
        run.times.failure
    );
    let kept = if keep { CALLS as usize } else { 0 };
    assert_eq!(
        run.call_files.len(),
        kept,
        "each call's outputs, where kept"
    );
    (run.wall.as_secs_f64(), run.times)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = fake_harness::build(dir.path()) else {
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
