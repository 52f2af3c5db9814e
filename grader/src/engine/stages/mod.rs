//! What each kind of stage does to a submission: build it, run it under a sanitizer tool, run it on
//! the cases, time it with ncu. Every job that runs the submission's code (nvcc on its text, the
//! program, the tool around it) goes through the launcher with the submission's confinement. A
//! stage only runs and collects; the verdicts are `verdict.rs`'s.

use std::path::{Path, PathBuf};

use crate::engine::context::Context;
use crate::engine::findings::{findings_in, Finding};
use crate::engine::plan::{Stage, StageKind, Submission, Target};
use crate::exercise::cases;
use crate::exercise::manifest::{Detector, Tool};
use crate::exercise::workbook::Workbook;
use crate::tools::ncu::{self, Measured};
use crate::tools::nvcc::{self, BuildError, Built, Flavor};
use crate::tools::runner::{Finished, Job, SpawnError};
use crate::tools::sanitizer::{self, ToolRun};
use crate::tools::served::CallTimes;

mod blocked;
mod reach;
mod sandbox;
mod sass;
mod terms;
mod timed;

pub use blocked::Blocked;
pub use reach::{analyse_reach, workbook_version, ReachError};
use sandbox::{confined, sandboxed};
pub use sandbox::{confinement, ncu_lock_dir, ncu_sections, ncu_turn, run_dir, sandbox_env};
pub use sass::sass;
pub use terms::RunTerms;
pub use timed::{call, forget_calls, time};

/// What a run was held to, and what the exercise says a run that stopped means: its time limit,
/// and for an exercise whose bug hangs or crashes, the detector and the region that says where.
#[derive(Debug, Clone)]
pub struct Bounds {
    pub limit: std::time::Duration,
    pub detector: Detector,
    /// "region `wait` (sum.cu:12-30)"; none for a program.
    pub region: Option<String>,
    /// A tool run again alone because it timed out beside other runs while the program's own
    /// plain run finished (the scheduler's stall rule).
    pub after_stall: bool,
}

impl Bounds {
    /// A run with nothing expected of it but to finish within `limit`.
    pub fn plain(limit: std::time::Duration) -> Bounds {
        Bounds {
            limit,
            detector: Detector::Sanitizer,
            region: None,
            after_stall: false,
        }
    }

    /// A submission's run: the general `limit`, or the hang's own where the text is the untouched
    /// hang exercise.
    pub fn of(sub: &Submission, limit: std::time::Duration) -> Bounds {
        Bounds {
            limit: sub.hang_limit().map_or(limit, |h| h.min(limit)),
            detector: sub
                .exercise()
                .map(|e| e.manifest.detector())
                .unwrap_or_default(),
            region: sub.region_text(),
            after_stall: false,
        }
    }
}

/// What one stage produced, before any verdict.
#[derive(Debug)]
pub enum Output {
    Built(Result<Built, BuildError>),
    Sanitized {
        tool: Tool,
        run: Result<ToolRun, sanitizer::SanitizerError>,
        findings: Vec<Finding>,
        bounds: Bounds,
    },
    Ran {
        command: String,
        run: Result<Finished, SpawnError>,
        outputs: Vec<PathBuf>,
        bounds: Bounds,
    },
    /// ncu's measurement of the served calls, what the grader saw of them (`calls`) and each
    /// call's outputs as the grader took them (compared with the reference fix's, call by call).
    Timed {
        target: ncu::ProfileTarget,
        measured: Result<Measured, ncu::ProfileError>,
        calls: Option<CallTimes>,
        outputs: Vec<PathBuf>,
        /// Served from the measurements kept between checks (`engine::kept`), not run now.
        kept: bool,
    },
    /// The call timing: each whole call on the grader's clock (None, with `failure`, where the run
    /// failed or the grader recorded nothing) and each call's outputs.
    /// Where the clock is the call, the operations of the call recorded after them.
    Called {
        command: String,
        run: Result<Finished, SpawnError>,
        times: Option<CallTimes>,
        timeline: Option<crate::tools::timeline::Timeline>,
        /// What the GPU ran in each traced call (CUPTI's records), or why there are none; None
        /// where the calls were not traced (no CUPTI in the toolkit).
        driver: Option<Result<crate::tools::driver::Driver, crate::tools::driver::DriverError>>,
        outputs: Vec<PathBuf>,
        failure: Option<String>,
        /// Served from the measurements kept between checks (`engine::kept`), not run now.
        kept: bool,
    },
    /// `sanitize --profile`: every launch's metrics, or why there are none.
    Profiled {
        command: String,
        run: Result<Finished, SpawnError>,
        launches: Result<Vec<ncu::LaunchMetrics>, ncu::CsvError>,
    },
    /// The release build's clock reads, or why they could not be read; and for an exercise, what
    /// its file's host object reaches (`judge::reach`), or why that is not known.
    Sass {
        reads: Result<Vec<crate::tools::sass::SassClockRead>, SassError>,
        host: Option<Result<crate::tools::reach::Reach, ReachError>>,
    },
    NotRun(Blocked),
}

impl Output {
    /// A copy of a timed stage's run that was made now (not served from what was kept, which keeps
    /// no call's outputs) and ran: what another subject with the very same binary would have got
    /// from the same served calls. None for anything else.
    pub fn copy_of_fresh_run(&self) -> Option<Output> {
        match self {
            Output::Timed {
                target,
                measured: Ok(m),
                calls,
                outputs,
                kept: false,
            } => Some(Output::Timed {
                target: target.clone(),
                measured: Ok(m.clone()),
                calls: calls.clone(),
                outputs: outputs.clone(),
                kept: false,
            }),
            Output::Called {
                command,
                run: Ok(f),
                times,
                timeline,
                driver,
                outputs,
                failure,
                kept: false,
            } => Some(Output::Called {
                command: command.clone(),
                run: Ok(f.clone()),
                times: times.clone(),
                timeline: timeline.clone(),
                driver: driver.clone(),
                outputs: outputs.clone(),
                failure: failure.clone(),
                kept: false,
            }),
            _ => None,
        }
    }

    /// Whether a timed stage's run was served from the measurements kept between checks.
    pub fn was_kept(&self) -> bool {
        matches!(
            self,
            Output::Timed { kept: true, .. } | Output::Called { kept: true, .. }
        )
    }

    /// What ncu measured, where the timing ran (whether or not it timed anything).
    pub fn measured(&self) -> Option<&Measured> {
        match self {
            Output::Timed {
                measured: Ok(m), ..
            } => Some(m),
            _ => None,
        }
    }
}

/// A stage's name in the files it writes: "timing-1", "sanitize-racecheck".
fn file_tag(stage: &Stage) -> String {
    stage.id().replace(['#', ':'], "-")
}

impl Output {
    /// How long the stage's process ran (a build's nvcc, a tool with the program under it); None
    /// where nothing ran.
    pub fn wall(&self) -> Option<std::time::Duration> {
        match self {
            Output::Built(Ok(b)) => Some(b.wall),
            _ => self.finished().map(|f| f.wall),
        }
    }

    /// How the stage's process ended, where one ran (a build's nvcc excepted: see `built`).
    pub fn finished(&self) -> Option<&Finished> {
        match self {
            Output::Sanitized { run: Ok(r), .. } => Some(&r.finished),
            Output::Ran { run: Ok(f), .. }
            | Output::Called { run: Ok(f), .. }
            | Output::Profiled { run: Ok(f), .. } => Some(f),
            Output::Timed {
                measured: Ok(m), ..
            } => Some(&m.finished),
            _ => None,
        }
    }

    pub fn built(&self) -> Option<&Built> {
        match self {
            Output::Built(Ok(b)) => Some(b),
            _ => None,
        }
    }
}

/// Write the submission's text (an exercise's) in its folder, which no run of it can write.
pub fn materialise(sub: &Submission) -> std::io::Result<()> {
    std::fs::create_dir_all(&sub.work)?;
    if let Target::Program(_) = sub.target {
        return Ok(());
    }
    let path = sub.source();
    if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
        std::fs::remove_file(&path)?;
    }
    if std::fs::read_to_string(&path).ok().as_deref() != Some(sub.text.as_str()) {
        std::fs::write(&path, &sub.text)?;
    }
    Ok(())
}

pub fn build(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    flavor: Flavor,
) -> Output {
    let recipe = ctx.recipe();
    let source = sub.source();
    let exercise_arch;
    let inputs = match &sub.target {
        Target::Exercise { exercise, .. } => {
            let options = exercise.manifest.manifest.build;
            exercise_arch = options.arch(recipe.arch);
            nvcc::Inputs::Exercise {
                source: &source,
                flags: options.flags(),
                arch: &exercise_arch,
            }
        }
        Target::Program(p) => {
            if let Some(bin) = &p.prebuilt {
                let command = format!("(built elsewhere: {})", bin.display());
                return Output::Built(Ok(Built::new(
                    bin.clone(),
                    bin.clone(),
                    flavor,
                    command,
                    std::time::Duration::ZERO,
                    true,
                )));
            }
            nvcc::Inputs::Program {
                sources: p.build_sources(),
                flags: &p.nvcc_flags,
            }
        }
    };
    let sandbox = |job| sandboxed(ctx, wb, sub, stage, job);
    Output::Built(nvcc::build(
        ctx.launcher.as_ref(),
        &recipe,
        flavor,
        inputs,
        &sub.binary(flavor),
        sub.reuse,
        &sandbox,
    ))
}

pub fn sanitize(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
    tool: Tool,
    terms: &RunTerms,
) -> Output {
    let after_stall = terms.after_stall;
    let Some(path) = ctx.tools.sanitizer.as_deref() else {
        return Output::NotRun(Blocked::Missing("compute-sanitizer"));
    };
    let tag = stage.id().replace(':', "-");
    let xml = run_dir(sub, stage).join(format!("{tag}.xml"));
    let args = match &sub.target {
        Target::Exercise { cases, exercise } => {
            cases::harness_args(
                cases,
                |c| c.sanitize,
                false,
                &exercise.manifest.manifest.harness_flags(),
                &run_dir(sub, stage),
                &tag,
            )
            .0
        }
        Target::Program(p) => p.args.clone(),
    };
    let bounds = Bounds {
        after_stall: after_stall.is_some(),
        ..Bounds::of(sub, after_stall.unwrap_or(ctx.config.timeouts.tool))
    };
    // The manifest's options for its tool, on every version of the exercise (the solution must be
    // clean under them too).
    let options = sub
        .exercise()
        .map(|e| e.manifest.tool_options(tool))
        .unwrap_or_default();
    let job = sanitizer::job(
        path,
        tool,
        &xml,
        &built.binary,
        &args,
        options,
        bounds.limit,
    )
    .output(&xml);
    let mut job = confined(ctx, wb, sub, stage, job);
    job.gpu_memory = terms.gpu_memory.clone();
    job.driver = terms
        .pace
        .as_ref()
        .and_then(|p| p.keeper(sub, stage, bounds.limit));
    let run = sanitizer::run(ctx.launcher.as_ref(), tool, &job, &xml);
    let sources = sub.sources();
    let mut found = run
        .as_ref()
        .map(|r| findings_in(&r.records, &sources, &sub.regions))
        .unwrap_or_default();
    // Findings point at the files as this machine has them: an exercise's at the file it came from
    // (not the copy that was built), a program's at its sources, matched as `findings` matches (by
    // path, or by file name where the tool ran elsewhere, as in a replayed recording).
    for l in found.iter_mut().flat_map(|f| f.locations.iter_mut()) {
        let here = Path::new(&l.path);
        if let Some(s) = sources
            .iter()
            .find(|s| here == s.as_path() || here.file_name() == s.file_name())
        {
            l.path = match sub.target {
                Target::Exercise { .. } => sub.origin.display().to_string(),
                Target::Program(_) => s.display().to_string(),
            };
        }
    }
    Output::Sanitized {
        tool,
        run,
        findings: found,
        bounds,
    }
}

pub fn correctness(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
    cases: &cases::Cases,
    terms: &RunTerms,
) -> Output {
    let tag = file_tag(stage);
    let flags = sub
        .exercise()
        .map(|e| e.manifest.manifest.harness_flags())
        .unwrap_or_default();
    let (args, outputs) =
        cases::harness_args(cases, |_| true, true, &flags, &run_dir(sub, stage), &tag);
    let bounds = Bounds::of(sub, ctx.config.timeouts.run);
    let mut job = Job::new(&built.binary, bounds.limit).args(args);
    job.outputs = outputs.clone();
    let mut job = confined(ctx, wb, sub, stage, job);
    job.gpu_memory = terms.gpu_memory.clone();
    let command = job.display();
    Output::Ran {
        command,
        run: ctx.launcher.launch(&job),
        outputs,
        bounds,
    }
}

/// A program's release build under ncu with the performance metrics, every kernel.
pub fn profile(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
) -> Output {
    let Some(path) = ctx.tools.ncu.as_deref() else {
        return Output::NotRun(Blocked::Missing("ncu"));
    };
    let Target::Program(p) = &sub.target else {
        return Output::NotRun(Blocked::NotApplicable(
            "an exercise is timed on its bench, not profiled",
        ));
    };
    if let Some(why) = ctx.counters_refused() {
        return Output::NotRun(Blocked::Setup(why));
    }
    let csv = run_dir(sub, stage).join("profile.csv");
    let job = ncu::profile_job(
        path,
        (&built.binary, &p.args),
        (&csv, &ncu_sections(wb)),
        ctx.config.timeouts.ncu,
    )
    .output(&csv);
    let job = confined(ctx, wb, sub, stage, job);
    let run = {
        let _turn = ncu_turn(ctx, wb);
        ctx.launcher.launch(&job)
    };
    let text = crate::untrusted::read_text(&csv).unwrap_or_default();
    let launches = ncu::parse_metrics(&text);
    Output::Profiled {
        command: job.display(),
        run,
        launches,
    }
}

/// Why the release build's device code could not be read for clock reads.
#[derive(Debug, thiserror::Error)]
pub enum SassError {
    /// cuobjdump ran and failed: how it ended.
    #[error("cuobjdump failed: {0}")]
    Failed(String),
    #[error(transparent)]
    Spawn(#[from] SpawnError),
}

/// Run one stage whose build (if it needs one) is `built`.
pub fn run(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: Option<&Built>,
) -> Output {
    run_within(ctx, wb, sub, stage, built, &RunTerms::alone(None))
}

/// `run`, with a sanitizer tool held to `tool_limit` instead of the configured one (a stalled tool
/// run again alone: see the scheduler).
pub fn run_within(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: Option<&Built>,
    terms: &RunTerms,
) -> Output {
    match (stage.kind, built) {
        (StageKind::Build(Flavor::Sanitize), _) => build(ctx, wb, sub, stage, Flavor::Sanitize),
        (StageKind::Build(Flavor::Timing), _) => build(ctx, wb, sub, stage, Flavor::Timing),
        (_, None) => Output::NotRun(Blocked::BuildFailed),
        (StageKind::Sanitize(tool), Some(b)) => sanitize(ctx, wb, sub, stage, b, tool, terms),
        (StageKind::Correctness, Some(b)) => {
            correctness(ctx, wb, sub, stage, b, sub.cases(), terms)
        }
        (StageKind::Hidden | StageKind::Fresh, Some(b)) => match sub.secret {
            Some(secret) => correctness(
                ctx,
                wb,
                sub,
                stage,
                b,
                if stage.kind == StageKind::Hidden {
                    &secret.hidden
                } else {
                    &secret.fresh
                },
                terms,
            ),
            None => Output::NotRun(Blocked::NotApplicable(
                "hidden and fresh cases belong to `grade`, which has the instructor's secret",
            )),
        },
        (StageKind::Timing, Some(b)) => time(ctx, wb, sub, stage, b),
        (StageKind::Call, Some(b)) => call(ctx, wb, sub, stage, b),
        (StageKind::Profile, Some(b)) => profile(ctx, wb, sub, stage, b),
        (StageKind::Sass, Some(b)) => sass(ctx, wb, sub, stage, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_fresh_timed_run_that_ran_is_copied_for_an_untouched_file() {
        use crate::tools::runner::{Exit, Finished};
        let called = |kept: bool, ok: bool| Output::Called {
            command: "63-original --serve 3".into(),
            run: if ok {
                Ok(Finished::ended(
                    Exit::Code(0),
                    std::time::Duration::from_millis(700),
                ))
            } else {
                Err(SpawnError {
                    program: "63-original".into(),
                    source: std::io::Error::other("no such file"),
                })
            },
            times: None,
            timeline: None,
            driver: None,
            outputs: vec!["clock/call/out1".into()],
            failure: None,
            kept,
        };
        match called(false, true).copy_of_fresh_run() {
            Some(Output::Called {
                command,
                outputs,
                kept: false,
                ..
            }) => assert_eq!(
                (command.as_str(), outputs),
                ("63-original --serve 3", vec!["clock/call/out1".into()])
            ),
            other => panic!("{other:?}"),
        }
        // Served from what was kept: no call's outputs to judge, so the learner runs its own.
        assert!(called(true, true).copy_of_fresh_run().is_none());
        assert!(called(false, false).copy_of_fresh_run().is_none());
        assert!(Output::NotRun(Blocked::BuildFailed)
            .copy_of_fresh_run()
            .is_none());
    }
}
