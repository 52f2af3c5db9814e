//! `verify`: the workbook's self-check. Every exercise must fail for its intended reason (its named
//! tool reports the expected kind of record inside the marked region, or, where no tool sees the
//! bug class, its plain run gives wrong outputs; a performance exercise is clean, correct and misses
//! its speedup target) and every solution must pass all four tools, the correctness check and its
//! speed target (and, for the performance track, its metric goals). Produces a verification record; `--survey` adds what
//! every tool and plain runs said of each untouched exercise, and its time, for the book.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::engine::context::{self, Context};
use crate::engine::plan::{Stage, StageKind, Submission};
use crate::engine::scheduler::{self, Results};
use crate::exercise::cases::{self, Cases};
use crate::exercise::catalog;
use crate::exercise::manifest::{Detector, Tool, Track};
use crate::exercise::regions;
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::verdict::{self, Outcome, Status, Step, StepName};
use crate::plans::session::{Phase, Session};
use crate::tools::nvcc::Flavor;
use crate::tools::toolchain;

mod record;
mod runs;
mod timing;

pub use record::*;
use runs::record_runs;
use timing::time_exercises;

#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Copy the raw tool outputs (XML, CSV) here: the material for test fixtures.
    pub keep: Option<PathBuf>,
    /// Survey the untouched exercises too: all four tools, PLAIN_RUNS plain runs and ncu, and the
    /// solution under ncu in a second process, for the book. Without it, verify runs what proving
    /// the workbook needs: the exercise under its own tool (or, where the cases are the detector,
    /// once plainly), the solution under all four tools, on the cases and once under ncu.
    pub survey: bool,
}

/// One exercise on its way through the plan: its record, and where its two submissions are.
struct Work<'a> {
    ex: &'a Exercise,
    record: ExerciseRecord,
    texts: Option<(String, String)>,
}

/// Phase 1 of `verify` for one exercise: its manifest, regions and texts checked, its cases
/// written where it will run, and its record begun.
fn prepare<'a>(
    ctx: &Context,
    wb: &Workbook,
    ex: &'a Exercise,
    gpu_stages: bool,
) -> (Work<'a>, Option<Cases>) {
    let m = &ex.manifest.manifest;
    let (checks, texts) = disk_checks(wb, ex);
    // A sound exercise this GPU is too old for is not applicable: no builds, no runs.
    let not_applicable = texts.as_ref().and_then(|_| ctx.unsupported(&ex.manifest));
    let cases = match (&texts, gpu_stages) {
        _ if not_applicable.is_some() => None,
        (None, _) => None,
        (Some(_), true) => cases::prepare(ex, &cases::dir(wb, ex)).ok(),
        (Some(_), false) => Some(Cases::default()),
    };
    let w = Work {
        ex,
        record: ExerciseRecord {
            id: ex.id().to_string(),
            title: m.title.clone(),
            bug_class: m.bug_class.clone(),
            tool: ex.manifest.expected_finding().map(|(t, _)| t),
            expected_kind: ex.manifest.expected_finding().map(|(_, k)| k),
            detector: ex.manifest.detector(),
            region: ex.manifest.region().get_ref().clone(),
            checks,
            finding: None,
            tool_output: None,
            plain_run: None,
            plain_run_correct: None,
            plain_runs: None,
            original_under_tools: Vec::new(),
            timing: None,
            track: ex.manifest.track(),
            perf: None,
            not_applicable,
            outcome: Outcome::Pass,
        },
        texts,
    };
    (w, cases)
}

/// How many plain runs of an untouched exercise: `PLAIN_RUNS` for the survey, else one.
fn plain_runs(opts: &VerifyOptions) -> u32 {
    if opts.survey {
        PLAIN_RUNS
    } else {
        1
    }
}

/// Each exercise's two subjects, the untouched exercise then its solution (`pair`), on its cases.
fn subjects<'a>(
    wb: &Workbook,
    work: &[Work<'a>],
    case_sets: &'a [Option<Cases>],
    empty: &'a Cases,
) -> Vec<Submission<'a>> {
    work.iter()
        .zip(case_sets)
        .flat_map(|(w, cases)| {
            let (exercise, solution) = w.texts.clone().unwrap_or_default();
            let cases = cases.as_ref().unwrap_or(empty);
            [
                Submission::new(
                    wb,
                    "verify",
                    w.ex,
                    "original",
                    wb.learner_path(w.ex),
                    exercise,
                    cases,
                ),
                Submission::new(
                    wb,
                    "verify",
                    w.ex,
                    "reference",
                    wb.solution_path(w.ex),
                    solution,
                    cases,
                ),
            ]
        })
        .collect()
}

/// Phase 2's stages, as data: the builds on the CPU cores and, as each binary is ready, its GPU
/// runs: the exercise under the tool that must flag it (with --survey under all four, for the
/// record of which tool sees what) or plainly where the cases are its detector; the solution
/// under all four tools and on the cases. The exercises under their tools go first: the longest
/// runs (every bad access costs the tool time).
fn first_stages(
    work: &[Work],
    with_cases: &[usize],
    gpu_stages: bool,
    opts: &VerifyOptions,
) -> Vec<Stage> {
    let plain_runs = plain_runs(opts);
    let mut stages = Vec::new();
    for &k in with_cases {
        let (ex, sol) = pair(k);
        stages.extend(
            [
                StageKind::Build(Flavor::Sanitize),
                StageKind::Build(Flavor::Timing),
            ]
            .into_iter()
            .flat_map(|b| [Stage::new(ex, b), Stage::new(sol, b)]),
        );
    }
    if gpu_stages {
        for &k in with_cases {
            // A performance exercise's original must be clean under every tool: it is correct, only slow.
            let all = opts.survey || work[k].record.track == Track::Perf;
            let tools: Vec<Tool> = if all {
                work[k].ex.manifest.tools()
            } else {
                work[k].record.tool.into_iter().collect()
            };
            stages.extend(
                tools
                    .into_iter()
                    .map(|t| Stage::new(pair(k).0, StageKind::Sanitize(t))),
            );
        }
        for &k in with_cases {
            let (ex, sol) = pair(k);
            stages.extend(
                work[k]
                    .ex
                    .manifest
                    .tools()
                    .into_iter()
                    .map(|t| Stage::new(sol, StageKind::Sanitize(t))),
            );
            // A plain run of the untouched exercise proves something only where the cases are the
            // detector; elsewhere it tells the book whether the bug is silent (--survey).
            if opts.survey || work[k].record.detector != Detector::Sanitizer {
                stages.extend((0..plain_runs).map(|r| Stage::again(ex, StageKind::Correctness, r)));
            }
            stages.push(Stage::new(sol, StageKind::Correctness));
        }
    }
    stages
}

/// The exercise's and the solution's build steps.
fn build_steps(ctx: &Context, results: &Results, (ex, sol): (usize, usize)) -> Vec<Step> {
    let mut steps = Vec::new();
    for (i, who) in [(ex, "exercise"), (sol, "solution")] {
        for flavor in Flavor::BOTH {
            let output = results
                .get(i, StageKind::Build(flavor))
                .expect("every build ran");
            steps.extend(verdict::build(
                format!("{who} build {}", flavor.flags()[0]),
                output,
                flavor,
                &ctx.arch,
            ));
        }
    }
    steps
}

/// Its two submissions' indices: the untouched exercise and the solution.
fn pair(k: usize) -> (usize, usize) {
    (2 * k, 2 * k + 1)
}

/// The manifest, the pristine exercise (the solution with `exercise-regions.cu` put back) and the
/// solution, read from disk; the texts come back where all are sound. The learner's working copy
/// must be the pristine exercise too: that is the file a new learner starts from.
fn disk_checks(wb: &Workbook, ex: &Exercise) -> (Vec<Step>, Option<(String, String)>) {
    let mut checks = Vec::new();
    let t = Instant::now();
    let loaded = match catalog::load(&wb.root, ex.id()) {
        Ok(d) => d,
        Err(e) => {
            return (
                vec![Step::new(StepName::Manifest, Status::Failed, e.to_string())],
                None,
            )
        }
    };
    checks.push(
        Step::new(
            StepName::Manifest,
            Status::Passed,
            format!("{} is valid", loaded.manifest.path.display()),
        )
        .wall(t.elapsed()),
    );
    let (exercise, solution) = (loaded.original, loaded.solution);
    let expected = ex.manifest.region().get_ref();
    let regions_file = format!("solutions/{}/{}", ex.id(), catalog::ORIGINAL_REGIONS);
    let working_copy = std::fs::read_to_string(&loaded.exercise_path).ok();
    let step = match regions::parse(&exercise) {
        Err(e) => Step::new(StepName::Regions, Status::Failed, format!("{regions_file}:{}: {}", e.line, e.message)),
        Ok(er) if !er.iter().any(|r| &r.name == expected) => Step::new(StepName::Regions, Status::Failed, format!("the exercise has no region `{expected}`")),
        Ok(_) if exercise != ex.original || solution != ex.solution => Step::new(
            StepName::Regions,
            Status::Failed,
            "the exercise or solution on disk differs from the copy embedded in this binary: rebuild it (cargo build)",
        ),
        Ok(_) if working_copy.as_deref() != Some(exercise.as_str()) => Step::new(
            StepName::Regions,
            Status::Failed,
            format!(
                "{} is not the pristine exercise ({regions_file} put into the solution): keep the two in step, or `cargo xtask reset {}`",
                wb.display_path(&loaded.exercise_path),
                ex.id()
            ),
        ),
        Ok(er) => Step::new(StepName::Regions, Status::Passed, format!("{} region(s); the exercise is the solution with {regions_file} put back", er.len())),
    };
    let sound = step.status == Status::Passed;
    checks.push(step);
    // The workbook's own fix must never look like a program that watches for the tools.
    checks.push(match crate::judge::tool_aware::workbook_clean(ex) {
        Ok(()) => Step::new(
            StepName::ToolAwareCode,
            Status::Passed,
            "the solution's regions read no clock, environment or file and hook nothing",
        ),
        Err(why) => Step::new(StepName::ToolAwareCode, Status::Failed, why.to_string()),
    });
    (checks, sound.then_some((exercise, solution)))
}

/// Verify `exercises`. `say` gets progress lines.
pub fn verify(
    ctx: &Context,
    wb: &Workbook,
    exercises: &[&Exercise],
    opts: &VerifyOptions,
    mut say: impl FnMut(&str) + Send,
) -> VerificationRecord {
    let started = Instant::now();
    let cores = ctx.config.cpu_jobs;
    let gpu_stages = ctx.gpu_stages() && ctx.tools.sanitizer.is_some();
    let plain_runs = plain_runs(opts);

    // Phase 1 (CPU): manifests, regions and inputs of every exercise, in parallel.
    say(&format!(
        "checking {} manifest(s) and writing the inputs",
        exercises.len()
    ));
    let (mut work, case_sets): (Vec<Work>, Vec<Option<Cases>>) =
        scheduler::parallel(exercises, cores, |ex| prepare(ctx, wb, ex, gpu_stages))
            .into_iter()
            .unzip();
    let with_cases: Vec<usize> = (0..work.len())
        .filter(|&k| case_sets[k].is_some())
        .collect();
    let empty = Cases::default();
    let subs = subjects(wb, &work, &case_sets, &empty);

    // Phase 2: the builds and, as each binary is ready, its GPU runs (`first_stages`).
    let stages = first_stages(&work, &with_cases, gpu_stages, opts);
    if gpu_stages {
        say(&format!(
            "building {} exercise(s) x 4 on {cores} cores; each binary goes under compute-sanitizer as soon as it is built ({} runs at a time; {})",
            with_cases.len(),
            ctx.config.gpu_jobs,
            ctx.isolation().describe()
        ));
    } else {
        say(&format!(
            "building {} exercise(s) x 4 on {cores} cores",
            with_cases.len()
        ));
    }
    let mut session = Session::new(ctx, (wb, &subs), started);
    let timeline = session.run_phase(&Phase::of(stages)).times;
    let mut phases = Phases {
        builds_done_at: timeline.builds_done_at,
        runs_done_at: timeline.runs_done_at,
        ..Phases::default()
    };

    for &k in &with_cases {
        let steps = build_steps(ctx, &session.results, pair(k));
        work[k].record.checks.extend(steps);
    }
    for &k in &with_cases {
        record_runs(
            ctx,
            opts,
            &mut work[k],
            &subs,
            &session.results,
            pair(k),
            gpu_stages,
            plain_runs,
        );
    }
    phases.judged_at = Some(started.elapsed().as_secs_f64());

    // Phase 3 (GPU): ncu times what `timing_stages` names of each exercise whose other checks all
    // passed, kernels one at a time, with nothing else on the GPU.
    if gpu_stages {
        let timed = time_exercises(
            ctx,
            wb,
            opts,
            &mut work,
            &with_cases,
            &mut session,
            &mut say,
        );
        phases.timing = timed.profiler;
        phases.calls = timed.exclusive;
        phases.judging_timed = timed.judging;
    }

    finished_record(ctx, work, &session.results, phases, started)
}

/// The record of a verify: each exercise's outcome from its checks, the machine, the tools and
/// where the time went.
fn finished_record(
    ctx: &Context,
    work: Vec<Work>,
    results: &Results,
    phases: Phases,
    started: Instant,
) -> VerificationRecord {
    let exercises: Vec<ExerciseRecord> = work
        .into_iter()
        .map(|mut w| {
            w.record.outcome = match &w.record.not_applicable {
                Some(why) => Outcome::Skipped {
                    reason: why.clone(),
                },
                None => Outcome::from_steps(&w.record.checks),
            };
            w.record
        })
        .collect();
    let outcome = overall(&exercises);
    VerificationRecord {
        schema: RECORD_SCHEMA,
        created: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        command: std::env::args().skip(1).collect::<Vec<_>>().join(" "),
        gpu: ctx.gpu_info().cloned(),
        arch: ctx.arch.clone(),
        isolation: Some(ctx.isolation()),
        driver_version: context::driver_version(),
        tools: ToolVersions {
            nvcc: toolchain::version(&ctx.nvcc.path),
            compute_sanitizer: ctx.tools.sanitizer.as_deref().and_then(toolchain::version),
            ncu: ctx.tools.ncu.as_deref().and_then(toolchain::version),
        },
        wall_seconds: started.elapsed().as_secs_f64(),
        phases: Some(Phases {
            by_kind: time_by_kind(&results.spent),
            ..phases
        }),
        exercises,
        outcome,
    }
}

fn keep(opts: &VerifyOptions, from: &Path, name: &str) {
    if let Some(dir) = &opts.keep {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::copy(from, dir.join(name));
    }
}
