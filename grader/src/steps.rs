//! The steps `check` and `verify` share: writing seeded cases, running a build under a sanitizer,
//! checking its outputs against the Rust reference, and timing with ncu.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::compare::{self, Comparison};
use crate::data;
use crate::manifest::Tool;
use crate::nvcc::Built;
use crate::outcome::{findings, Finding, Status, Step};
use crate::reference::{self, Buffer};
use crate::regions::Region;
use crate::runner::{self, Exit, Job};
use crate::sanitizer;
use crate::workbook::Exercise;

/// Default limits; `CUDABUGS_TIMEOUT_SECS` overrides the per-run ones (a hung kernel waits this long).
const TOOL_TIMEOUT: Duration = Duration::from_secs(180);
const RUN_TIMEOUT: Duration = Duration::from_secs(60);
pub const NCU_TIMEOUT: Duration = Duration::from_secs(400);

fn timeout_override() -> Option<Duration> {
    std::env::var("CUDABUGS_TIMEOUT_SECS").ok()?.parse().ok().map(Duration::from_secs)
}

pub fn tool_timeout() -> Duration {
    timeout_override().unwrap_or(TOOL_TIMEOUT)
}

pub fn run_timeout() -> Duration {
    timeout_override().unwrap_or(RUN_TIMEOUT)
}

#[derive(Debug, Clone)]
pub struct PreparedCase {
    pub name: String,
    pub input: PathBuf,
    pub output: PathBuf,
    pub expected: Vec<Buffer>,
    pub sanitize: bool,
}

#[derive(Debug, Clone)]
pub struct Cases {
    pub cases: Vec<PreparedCase>,
    pub bench_input: PathBuf,
}

/// Generate every case's inputs, write them for the harness and compute the expected outputs.
pub fn prepare_cases(ex: &Exercise, dir: &Path) -> std::io::Result<Cases> {
    std::fs::create_dir_all(dir)?;
    let m = &ex.manifest.manifest;
    let reference = reference::lookup(m.reference.get_ref()).expect("validated manifest");
    let cases = m
        .cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let inputs = data::generate(&m.inputs, &c.params, c.seed);
            let input = dir.join(format!("case{i}.in"));
            data::write_case(&input, &c.params, &inputs, &m.outputs)?;
            Ok(PreparedCase {
                name: c.name.clone(),
                output: dir.join(format!("case{i}.out")),
                input,
                expected: reference(&c.params, &inputs),
                sanitize: c.sanitize,
            })
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let bench_input = dir.join("bench.in");
    let inputs = data::generate(&m.inputs, &m.bench.params, m.bench.seed);
    data::write_case(&bench_input, &m.bench.params, &inputs, &m.outputs)?;
    Ok(Cases { cases, bench_input })
}

/// Harness arguments for a list of cases, each output file suffixed so that runs do not collide.
pub fn harness_args<'a>(cases: impl IntoIterator<Item = &'a PreparedCase>, poison: bool, tag: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = if poison { vec!["--poison".into()] } else { Vec::new() };
    for c in cases {
        args.push(c.input.clone().into());
        args.push(output_for(c, tag).into());
    }
    args
}

fn output_for(c: &PreparedCase, tag: &str) -> PathBuf {
    c.output.with_extension(format!("{tag}.out"))
}

/// What a sanitizer step found.
#[derive(Debug, Clone)]
pub struct ToolResult {
    pub step: Step,
    pub findings: Vec<Finding>,
    /// The tool's own text output (stdout), as a person running it would see it.
    pub text_output: String,
    pub xml_path: PathBuf,
}

/// Run `built` (a `-G` build) under `tool` on the cases marked `sanitize`. The step passes when the
/// tool reports nothing and the program exits cleanly.
pub fn run_tool(sanitizer_path: &Path, tool: Tool, built: &Built, cases: &Cases, regions: &[Region], step_name: &str, tag: &str) -> ToolResult {
    let xml_path = built.binary.with_file_name(format!("{tag}-{}.xml", tool.name()));
    let args = harness_args(cases.cases.iter().filter(|c| c.sanitize), false, tag);
    let run = match sanitizer::run(sanitizer_path, tool, &xml_path, &built.binary, &args, tool_timeout()) {
        Ok(run) => run,
        Err(e) => {
            return ToolResult {
                step: Step::new(step_name, Status::ToolError, e.to_string()),
                findings: Vec::new(),
                text_output: String::new(),
                xml_path,
            }
        }
    };
    let found = findings(&run.records, &built.source, regions);
    let text_output = run.finished.stdout.text();
    let mut step = match (run.finished.exit, found.is_empty()) {
        (Exit::TimedOut, _) => Step::new(step_name, Status::TimedOut, format!("{tool} did not finish within {:?}: a barrier that never releases hangs the kernel", tool_timeout())),
        (_, false) => Step::new(
            step_name,
            Status::Failed,
            format!("{tool} reported {} of {} kind(s)", sanitizer::records_text(run.records.len()), found.len()),
        ),
        _ if run.tool_failed() => Step::new(step_name, Status::ToolError, format!("{tool} failed ({})", run.finished.describe_exit())).detail(run.finished.output()),
        (Exit::Code(0), true) => Step::new(step_name, Status::Passed, format!("{tool}: no errors")),
        (_, true) => Step::new(step_name, Status::Failed, format!("the program failed under {tool} ({}) with no {tool} record", run.finished.describe_exit()))
            .detail(run.finished.stderr.text()),
    };
    step = step.command(run.command.clone()).wall(run.finished.wall);
    ToolResult { step, findings: found, text_output, xml_path }
}

/// Run the timing build plainly on every case with poisoned outputs and compare with the reference.
pub fn run_correctness(built: &Built, cases: &Cases, tol: crate::manifest::Tolerance, step_name: &str, tag: &str) -> Step {
    let args = harness_args(&cases.cases, true, tag);
    let job = Job::new(&built.binary, run_timeout()).args(args);
    let finished = match runner::run(&job) {
        Ok(f) => f,
        Err(e) => return Step::new(step_name, Status::ToolError, e.to_string()),
    };
    let step = |status, summary: String| Step::new(step_name, status, summary).command(job.display()).wall(finished.wall);
    match finished.exit {
        Exit::TimedOut => return step(Status::TimedOut, format!("the program did not finish within {:?}", run_timeout())),
        Exit::Code(0) => {}
        _ => {
            return step(Status::Failed, format!("the program failed ({})", finished.describe_exit())).detail(finished.output())
        }
    }
    let mut worst = 0f64;
    for c in &cases.cases {
        let got = match data::read_outputs(&output_for(c, tag)) {
            Ok(g) => g,
            Err(e) => return step(Status::Failed, format!("case `{}`: cannot read the outputs: {e}", c.name)),
        };
        match compare::compare(&c.expected, &got, tol) {
            Comparison::Equal { max_abs_error } => worst = worst.max(max_abs_error),
            Comparison::Shape(msg) => return step(Status::Failed, format!("case `{}`: {msg}", c.name)),
            Comparison::Mismatch(m) => {
                let poisoned = got.iter().find(|b| b.name == m.buffer).is_some_and(|b| compare::is_poison(&b.data, m.index));
                let why = if poisoned { " (never written: still the poison pattern)" } else { "" };
                return step(
                    Status::Failed,
                    format!(
                        "case `{}`: {}[{}] = {} but the reference says {}{why}; {} of {} elements wrong, max error {:.3e}",
                        c.name, m.buffer, m.index, m.got, m.expected, m.bad_count, m.len, m.max_abs_error
                    ),
                );
            }
        }
    }
    step(Status::Passed, format!("{} cases match the reference (max abs error {worst:.2e})", cases.cases.len()))
}

/// ncu targets: the harness on the bench input, `repeat` times.
pub fn bench_target(name: &str, built: &Built, cases: &Cases, m: &crate::manifest::Manifest, tag: &str) -> crate::ncu::Target {
    let repeat = m.bench.repeat;
    crate::ncu::Target {
        kernels: m.timing.kernels.clone(),
        repeat,
        name: name.to_string(),
        program: built.binary.clone(),
        args: vec![
            "--repeat".into(),
            repeat.to_string(),
            cases.bench_input.display().to_string(),
            cases.bench_input.with_extension(format!("{tag}.out")).display().to_string(),
        ],
    }
}

/// Values that threads wait for by index: one thread puts each, any number wait for it.
pub struct Slots<T> {
    values: std::sync::Mutex<Vec<Option<T>>>,
    filled: std::sync::Condvar,
}

impl<T: Clone> Slots<T> {
    pub fn new(len: usize) -> Slots<T> {
        Slots { values: std::sync::Mutex::new((0..len).map(|_| None).collect()), filled: std::sync::Condvar::new() }
    }

    pub fn put(&self, index: usize, value: T) {
        self.values.lock().unwrap()[index] = Some(value);
        self.filled.notify_all();
    }

    /// Block until `index` has been put, then return a copy of it.
    pub fn wait(&self, index: usize) -> T {
        let mut values = self.values.lock().unwrap();
        loop {
            if let Some(v) = &values[index] {
                return v.clone();
            }
            values = self.filled.wait(values).unwrap();
        }
    }
}

/// Run a closure over items on `workers` threads, keeping the order of the results.
pub fn parallel<T: Sync, R: Send>(items: &[T], workers: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> = items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                *results[i].lock().unwrap() = Some(f(item));
            });
        }
    });
    results.into_iter().map(|m| m.into_inner().unwrap().expect("every item ran")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_gets_the_value_put_after_it_started_waiting() {
        let slots = Slots::new(2);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| slots.wait(1));
            slots.put(0, "exercise -G");
            slots.put(1, "solution -G");
            assert_eq!(waiter.join().unwrap(), "solution -G");
        });
        assert_eq!(slots.wait(0), "exercise -G");
    }

    #[test]
    fn parallel_keeps_the_order_of_the_items() {
        let items: Vec<u32> = (0..50).collect();
        assert_eq!(parallel(&items, 7, |&i| i * 2), items.iter().map(|i| i * 2).collect::<Vec<_>>());
    }
}
