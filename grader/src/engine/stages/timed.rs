//! The timed stages: a submission's bench under ncu, and its whole calls served and clocked by
//! the grader.

use std::path::{Path, PathBuf};

use crate::engine::context::Context;
use crate::engine::plan::{Stage, Submission};
use crate::exercise::workbook::Workbook;
use crate::tools::driver::{Driver, DriverError};
use crate::tools::ncu;
use crate::tools::nvcc::Built;
use crate::tools::runner::{Finished, Job, SpawnError};
use crate::tools::served::{self, CallTimes, Served};

use super::{confined, file_tag, ncu_sections, ncu_turn, run_dir, Blocked, Bounds, Output};

/// The kernel timing: the bench under ncu, the exercise's timed kernels (and its metrics) over its
/// profiled calls, each call served by the grader and its outputs kept for the judge.
pub fn time(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
) -> Output {
    let Some(path) = ctx.tools.ncu.as_deref() else {
        return Output::NotRun(Blocked::Missing("ncu"));
    };
    let Some(exercise) = sub.exercise() else {
        return Output::NotRun(Blocked::NotApplicable(
            "a program has no bench to time: it is profiled with --profile",
        ));
    };
    if let Some(why) = ctx.counters_refused() {
        return Output::NotRun(Blocked::Setup(why));
    }
    let m = &exercise.manifest.manifest;
    let clock = fresh_clock_dir(sub, stage);
    let calls = crate::engine::plan::profiled_calls(exercise);
    // Under ncu only the kernels' times count: the grader polls instead of spinning. Its end is
    // ncu's writing its report, which is not held to a margin.
    let served = match serve(sub, &clock, calls, false, true, false) {
        Ok(s) => s.within(served::Margins {
            start: Some(ctx.config.timeouts.margin),
            end: None,
        }),
        Err(why) => return Output::NotRun(Blocked::Setup(why.to_string())),
    };
    let target = ncu::ProfileTarget {
        name: sub.label(),
        program: built.binary.clone(),
        args: served_args(sub, &served, None, None),
        kernels: m.timing.kernels.clone(),
        // A performance exercise's metrics come from the same ncu pass as its time.
        counters: ncu_counters(ctx, m),
        every_kernel: ctx.config.audit,
        repeat: calls,
    };
    let csv = run_dir(sub, stage).join(format!("{}.csv", file_tag(stage)));
    let mut job = ncu::job(
        path,
        &target,
        (&csv, &ncu_sections(wb)),
        Bounds::of(sub, ctx.config.timeouts.ncu).limit,
    )
    .output(&csv);
    let files = drive(&mut job, served);
    let job = confined(ctx, wb, sub, stage, job);
    let what = format!(
        "{:?} {:?} {:?} {} {:?}",
        target.kernels,
        target.counters,
        target.every_kernel,
        target.repeat,
        m.harness_flags()
    );
    let kept = crate::engine::kept::launcher(ctx, sub, stage, built, &what, call_outputs(&files));
    let served_kept = kept.as_ref().is_some_and(|k| k.holds());
    let launcher = crate::tools::launcher::Kept::or(&kept, ctx.launcher.as_ref());
    // A measurement served from what was kept runs nothing: no turn to wait for. The turn spans
    // the whole ncu process: held per profiled call only, the next process's ncu found the
    // profiler busy (every pair of a chunk a tool error on an H200, 2026-11-29).
    let measured = {
        let _turn = (!served_kept).then(|| ncu_turn(ctx, wb));
        ncu::measure(launcher, &job, &target, &csv)
    };
    // A kept run is only as good as what it measured: one that timed nothing is taken again.
    if let Some(k) = &kept {
        if !measured
            .as_ref()
            .is_ok_and(|m| m.nanoseconds.is_some() && !m.busy && m.tool_failure.is_none())
        {
            k.forget();
        }
    }
    let (calls, outputs) = clocked(&files);
    Output::Timed {
        target,
        measured,
        calls,
        outputs,
        kept: served_kept,
    }
}

/// The counters ncu reads beside the time: a performance exercise's metrics (from the same ncu
/// pass as its time), and with `audit` the anti-cheat audit's.
fn ncu_counters(ctx: &Context, m: &crate::exercise::manifest::Manifest) -> Vec<String> {
    let mut c = m
        .perf
        .as_ref()
        .map(|p| {
            crate::tools::counters::needed(
                p.metrics.get_ref(),
                p.clock == crate::exercise::manifest::Clock::Kernel,
            )
        })
        .unwrap_or_default();
    if ctx.config.audit {
        c.extend(
            ncu::AUDIT_COUNTERS
                .iter()
                .filter(|a| !c.iter().any(|n| n == *a))
                .map(|a| a.to_string())
                .collect::<Vec<_>>(),
        );
    }
    c
}

/// The grader's own folder for a timed stage's clock and each call's outputs: no run of the
/// submission can write there (it lies in the submission's folder, read-only to every run).
fn fresh_clock_dir(sub: &Submission, stage: &Stage) -> PathBuf {
    let dir = sub.work.join("clock").join(file_tag(stage));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Remove what the timed stages kept of a submission's calls, once they are judged: each call's
/// outputs (63-transfers' are 256 MiB a call, 4.6 GB for a `check`'s three versions).
pub fn forget_calls(sub: &Submission) {
    let _ = std::fs::remove_dir_all(sub.work.join("clock"));
}

/// The served calls of a submission's bench: its layout, the bench's inputs, the session's secret.
/// `spin`: the grader spins while a call runs (the judged clock); `keep`: each call's outputs kept.
fn serve(
    sub: &Submission,
    dir: &Path,
    count: u32,
    spin: bool,
    keep: bool,
    recorded: bool,
) -> Result<Served, ServeError> {
    let ex = sub.exercise().expect("an exercise");
    let m = &ex.manifest.manifest;
    let cases = sub.cases();
    let base = cases
        .bench_data()
        .ok_or_else(|| ServeError::BenchInputs(cases.bench_input.clone()))?;
    let len = |spec: &crate::exercise::manifest::BufferSpec| {
        crate::exercise::manifest::eval_len(spec.len.get_ref(), &m.bench.params).unwrap_or(0)
    };
    let layout = served::SharedLayout::new(
        &m.inputs
            .iter()
            .map(|s| (s.name.clone(), s.dtype, len(s), s.dist))
            .collect::<Vec<_>>(),
        &m.outputs
            .iter()
            .map(|s| (s.name.clone(), s.dtype, len(s)))
            .collect::<Vec<_>>(),
    );
    let calls = served::Calls {
        base,
        layout,
        count: count.max(1),
        recorded,
        secret: cases.call_secret,
    };
    Served::new(calls, spin, dir, keep).map_err(ServeError::Share)
}

/// Why the grader cannot serve a submission's timed calls: a timed stage that does not run, and why.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("the bench's inputs could not be read from {}", .0.display())]
    BenchInputs(PathBuf),
    #[error("the grader could not share memory for the timed calls: {0}")]
    Share(std::io::Error),
}

/// Why the harness's timeline of the recorded call cannot be read (`call_failure` says so).
#[derive(Debug, thiserror::Error)]
enum TimelineUnread {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Parse(#[from] crate::tools::timeline::TimelineError),
}

/// Where the harness writes CUPTI's records of the calls it traces (`--driver`), of which call (0:
/// of every call).
struct Traced<'a> {
    call: u32,
    library: &'a Path,
    file: &'a Path,
}

/// The harness's arguments for served calls: the shared memory's descriptor, the manifest's
/// options, the timeline where one is recorded (of the call after the judged ones, and every
/// call's launches), CUPTI's records where the calls are traced, the bench's input file (its layout).
fn served_args(
    sub: &Submission,
    served: &Served,
    timeline: Option<&Path>,
    traced: Option<&Traced>,
) -> Vec<String> {
    let m = &sub.exercise().expect("an exercise").manifest.manifest;
    let mut args = vec!["--serve".to_string(), served.fd().to_string()];
    args.extend(m.harness_flags().into_iter().map(String::from));
    if let Some((t, at)) = timeline.zip(served.recorded_call()) {
        args.extend([
            "--timeline".to_string(),
            at.to_string(),
            t.display().to_string(),
        ]);
    }
    if let Some(t) = traced {
        args.extend([
            "--driver".to_string(),
            t.call.to_string(),
            t.library.display().to_string(),
            t.file.display().to_string(),
        ]);
    }
    args.push(sub.cases().bench_input.display().to_string());
    args
}

/// `job` driven by `served`: the program keeps its shared memory, and what the driver writes is
/// among the job's outputs (a recording keeps it). Returns those files.
fn drive(job: &mut Job, served: Served) -> Vec<PathBuf> {
    let files = served.files();
    job.outputs.extend(files.iter().cloned());
    job.pass_fds = vec![served.fd()];
    job.driver = Some(std::sync::Arc::new(served));
    files
}

/// The calls' outputs among what the driver leaves (`Served::files`): all but the clock's record.
fn call_outputs(files: &[PathBuf]) -> Vec<PathBuf> {
    files.iter().skip(1).cloned().collect()
}

/// What the driver left in `files` (`Served::files`): the clock's record and the calls' outputs
/// it kept.
fn clocked(files: &[PathBuf]) -> (Option<CallTimes>, Vec<PathBuf>) {
    let times = files
        .first()
        .and_then(|f| crate::untrusted::read_text(f).ok())
        .and_then(|t| CallTimes::parse(&t));
    let outputs = files
        .iter()
        .skip(1)
        .filter(|f| f.is_file())
        .cloned()
        .collect();
    (times, outputs)
}

/// The call timing: the bench, alone on the GPU, each whole call started, clocked and checked by
/// the grader, the GPU memory in use sampled; where the clock is the call, one call more after
/// those, whose operations the harness records (the program's own account: the lessons' pictures)
/// and whose GPU work CUPTI records (the launch and copy metrics). Where the clock is the kernels,
/// CUPTI records every call: their kernel times, set beside ncu's. One process gives all of it: a
/// process costs 0.6-0.8 s on an H100, a call of 63-transfers 17 ms.
pub fn call(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
) -> Output {
    if sub.exercise().is_none() {
        return Output::NotRun(Blocked::NotApplicable("a program has no bench to time"));
    }
    let recording = sub
        .exercise()
        .is_some_and(|e| crate::engine::plan::Timer::of(ctx, e).by_call());
    let clock = fresh_clock_dir(sub, stage);
    let repeat = sub
        .exercise()
        .map_or(1, |e| e.manifest.manifest.bench.repeat.max(1));
    let served = match serve(sub, &clock, repeat, true, true, recording) {
        Ok(s) => s.within(served::Margins {
            start: Some(ctx.config.timeouts.margin),
            end: Some(ctx.config.timeouts.margin),
        }),
        Err(why) => return Output::NotRun(Blocked::Setup(why.to_string())),
    };
    let timeline_path = run_dir(sub, stage).join(format!("{}.timeline", file_tag(stage)));
    let driver_path = run_dir(sub, stage).join(format!("{}.driver", file_tag(stage)));
    let traced = tracing(ctx, &served, recording, &driver_path);
    let args = served_args(
        sub,
        &served,
        recording.then_some(timeline_path.as_path()),
        traced.as_ref(),
    );
    let mut job = Job::new(
        &built.binary,
        Bounds::of(sub, ctx.config.timeouts.run).limit,
    )
    .args(args);
    let files = drive(&mut job, served);
    if recording {
        job.outputs.push(timeline_path.clone());
    }
    if traced.is_some() {
        job.outputs.push(driver_path.clone());
    }
    let job = confined(ctx, wb, sub, stage, job);
    let command = job.display();
    let harness = sub
        .exercise()
        .map(|e| e.manifest.manifest.harness_flags())
        .unwrap_or_default();
    let kept = crate::engine::kept::launcher(
        ctx,
        sub,
        stage,
        built,
        &format!(
            "{repeat} {harness:?} recorded {recording} traced {}",
            traced.is_some()
        ),
        call_outputs(&files),
    );
    let served_kept = kept.as_ref().is_some_and(|k| k.holds());
    let run = crate::tools::launcher::Kept::or(&kept, ctx.launcher.as_ref()).launch(&job);
    let (times, outputs) = clocked(&files);
    let timeline = recording.then(|| -> Result<_, TimelineUnread> {
        let text = crate::untrusted::read_text(&timeline_path)?;
        Ok(crate::tools::timeline::Timeline::parse(&text)?)
    });
    let driver = traced.as_ref().and_then(|t| driver_records(ctx, t));
    let failure =
        call_failure(&run, times.as_ref(), timeline.as_ref(), repeat as usize).or_else(|| {
            match &driver {
                Some(Err(e @ DriverError::Unreadable { .. })) => Some(format!(
                    "the harness wrote no readable record of the GPU's work ({e})"
                )),
                _ => None,
            }
        });
    // A kept run that the judge could not use is taken again next time.
    if let (Some(k), Some(_)) = (&kept, &failure) {
        k.forget();
    }
    Output::Called {
        command,
        run,
        times,
        timeline: timeline.and_then(Result::ok),
        driver,
        outputs,
        failure,
        kept: served_kept,
    }
}

/// What the harness traces with CUPTI (`--driver`), where the toolkit has CUPTI: every call where
/// the kernels are the clock; where the call is the clock, only the recorded call after the judged
/// ones, so that CUPTI's work at each launch stays out of the judged calls.
fn tracing<'a>(
    ctx: &'a Context,
    served: &Served,
    recording: bool,
    file: &'a Path,
) -> Option<Traced<'a>> {
    ctx.nvcc.cupti.as_ref().map(|c| Traced {
        call: if recording {
            served.recorded_call().unwrap_or(0)
        } else {
            0
        },
        library: &c.library,
        file,
    })
}

/// The driver's records the harness wrote, or why there are none. Where the harness could not
/// subscribe, the file says why (the judge falls back to the timeline's wrappers and says so); a
/// file missing or unreadable after a run is the run's failure (`call`): the program removed or
/// wrote over the grader's record. A recording made before the calls were traced has no such
/// file: replayed, the run is untraced (None).
fn driver_records(ctx: &Context, traced: &Traced) -> Option<Result<Driver, DriverError>> {
    if ctx.launcher.replays() && !traced.file.exists() {
        return None;
    }
    Some(
        crate::untrusted::read_text(traced.file)
            .map_err(|e| DriverError::Unreadable {
                line: 0,
                text: e.to_string(),
            })
            .and_then(|text| Driver::parse(&text)),
    )
}

/// Why a call timing's run cannot be judged, where it cannot: the run failed (the grader's calls
/// stopped first, or the program), it left a process running, the clock recorded too few calls, or
/// the harness's timeline could not be read.
fn call_failure(
    run: &Result<Finished, SpawnError>,
    times: Option<&CallTimes>,
    timeline: Option<&Result<crate::tools::timeline::Timeline, TimelineUnread>>,
    repeat: usize,
) -> Option<String> {
    match run {
        Err(e) => Some(e.to_string()),
        // Where the grader's calls stopped first (and the grader ended the program for it), why
        // they stopped comes first.
        Ok(f) if !f.success() => Some(match times.and_then(|t| t.failure.as_ref()) {
            Some(why) => format!(
                "the calls stopped: {why} (the program: {})",
                f.describe_exit()
            ),
            None => format!("the program failed: {}", f.describe_exit()),
        }),
        Ok(f) => f
            .left_running()
            .or_else(|| match times {
                None => Some("the grader's clock recorded nothing".to_string()),
                Some(t) => t
                    .failure
                    .clone()
                    .map(|why| format!("the calls stopped: {why}"))
                    .or_else(|| {
                        (t.calls_ns.len() < repeat).then(|| {
                            format!(
                                "{} of the bench's {repeat} calls were made",
                                t.calls_ns.len()
                            )
                        })
                    }),
            })
            .or_else(|| match timeline {
                Some(Err(why)) => Some(format!("the harness wrote no readable timeline ({why})")),
                _ => None,
            }),
    }
}
