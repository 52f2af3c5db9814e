//! `verify`: the workbook's self-check. Every exercise must fail for its intended reason (its named
//! tool reports the expected kind of record inside the marked region) and every solution must pass
//! all four tools, the correctness check and its speed target. Produces a verification record.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::check::{binary_path, build_step};
use crate::context::{self, Context};
use crate::gpu::GpuInfo;
use crate::manifest::{FindingKind, Tool};
use crate::ncu;
use crate::nvcc::{Built, Flavor, Reuse};
use crate::outcome::{Finding, Outcome, Status, Step};
use crate::regions::{self, Region};
use crate::steps::{self, Cases};
use crate::toolchain;
use crate::workbook::{Exercise, Workbook};

pub const RECORD_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolVersions {
    pub nvcc: Option<String>,
    pub compute_sanitizer: Option<String>,
    pub ncu: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyTiming {
    pub kernels: Vec<String>,
    /// The untouched exercise (None where it crashed or ncu saw no launch).
    pub original_ns: Option<f64>,
    /// The solution.
    pub reference_ns: f64,
    /// The solution again, in a second process: the noise floor of the ratio.
    pub rerun_ns: f64,
    pub rerun_ratio: f64,
    pub speedup_over_original: Option<f64>,
    pub max_ratio_to_reference: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExerciseRecord {
    pub id: String,
    pub title: String,
    pub bug_class: String,
    pub tool: Tool,
    pub expected_kind: FindingKind,
    pub region: String,
    pub checks: Vec<Step>,
    /// The finding that shows the exercise fails for its intended reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<Finding>,
    /// What the named tool printed on the untouched exercise (the text a learner sees).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_output: Option<String>,
    /// Whether a plain run of the untouched exercise (-O3) gave right answers: the bug is silent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plain_run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plain_run_correct: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<VerifyTiming>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerificationRecord {
    pub schema: u32,
    pub created: String,
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuInfo>,
    pub arch: String,
    pub driver_version: Option<String>,
    pub tools: ToolVersions,
    pub wall_seconds: f64,
    /// Where the wall time went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<Phases>,
    pub exercises: Vec<ExerciseRecord>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Where the wall time of `verify` went, in seconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Phases {
    /// From the start until every build had finished.
    pub builds_done_at: f64,
    /// From the start until every sanitizer and program run had finished (each starts as soon as
    /// its binary is built, so they overlap the builds); none without a GPU.
    pub runs_done_at: Option<f64>,
    /// The ncu phase after them.
    pub timing: Option<f64>,
}

/// The four builds of an exercise, by index: exercise -G, exercise -O3, solution -G, solution -O3.
const BUILDS: [(&str, Flavor); 4] = [("original", Flavor::Sanitize), ("original", Flavor::Timing), ("reference", Flavor::Sanitize), ("reference", Flavor::Timing)];

/// A run on the GPU, before ncu.
#[derive(Debug, Clone, Copy)]
enum GpuJob {
    ExerciseTool,
    ExercisePlain,
    SolutionTool(Tool),
    SolutionCorrectness,
}

impl GpuJob {
    /// Which of `BUILDS` it runs.
    fn build(self) -> usize {
        match self {
            GpuJob::ExerciseTool => 0,
            GpuJob::ExercisePlain => 1,
            GpuJob::SolutionTool(_) => 2,
            GpuJob::SolutionCorrectness => 3,
        }
    }
}

enum Ran {
    Step(Step),
    Tool(steps::ToolResult),
}

/// How many sanitizer and program runs `verify` keeps going at once (`CUDABUGS_SANITIZER_JOBS`
/// overrides): they share the GPU and the CPU cores, which their start-up mostly uses.
pub fn sanitizer_jobs(cores: usize) -> usize {
    std::env::var("CUDABUGS_SANITIZER_JOBS").ok().and_then(|v| v.parse().ok()).unwrap_or(cores.min(8)).clamp(1, 64)
}

#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Copy the raw tool outputs (XML, CSV) here: the material for test fixtures.
    pub keep: Option<PathBuf>,
}

struct Work<'a> {
    ex: &'a Exercise,
    record: ExerciseRecord,
    exercise_path: PathBuf,
    solution_path: PathBuf,
    exercise_regions: Vec<Region>,
    solution_regions: Vec<Region>,
    cases: Option<Cases>,
    builds: Vec<Option<Built>>, // [exercise -G, exercise -O3, solution -G, solution -O3]
}

fn disk_checks(wb: &Workbook, ex: &Exercise) -> (Vec<Step>, Vec<Region>, Vec<Region>) {
    let mut checks = Vec::new();
    let t = Instant::now();
    let loaded = match catalog::load(&wb.root, ex.id()) {
        Ok(d) => d,
        Err(e) => return (vec![Step::new("manifest", Status::Failed, e.to_string())], Vec::new(), Vec::new()),
    };
    checks.push(Step::new("manifest", Status::Passed, format!("{} is valid", loaded.manifest.path.display())).wall(t.elapsed()));
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", wb.display_path(p)));
    let (exercise, solution) = match (read(&loaded.exercise_path), read(&loaded.solution_path)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            checks.push(Step::new("regions", Status::Failed, e));
            return (checks, Vec::new(), Vec::new());
        }
    };
    let expected = ex.manifest.manifest.expect.region.get_ref();
    let regions_step = match (regions::parse(&exercise), regions::parse(&solution)) {
        (Err(e), _) => Step::new("regions", Status::Failed, format!("{}:{}: {}", wb.display_path(&loaded.exercise_path), e.line, e.message)),
        (_, Err(e)) => Step::new("regions", Status::Failed, format!("{}:{}: {}", wb.display_path(&loaded.solution_path), e.line, e.message)),
        (Ok(er), Ok(sr)) => {
            let diff = regions::differ_only_inside(&exercise, &solution).unwrap_or(None);
            let step = if !er.iter().any(|r| &r.name == expected) {
                Step::new("regions", Status::Failed, format!("the exercise has no region `{expected}`"))
            } else if let Some(d) = diff {
                Step::new(
                    "regions",
                    Status::Failed,
                    format!("{}:{}: exercise and solution differ outside the marked regions: `{}` vs `{}`", wb.display_path(&loaded.exercise_path), d.line_in_a, d.a, d.b),
                )
            } else if exercise != ex.original || solution != ex.solution {
                Step::new("regions", Status::Failed, "the files on disk differ from the copies embedded in this binary: rebuild it (touch the exercise's exercise.toml) or `cargo xtask reset` the exercise")
            } else {
                Step::new("regions", Status::Passed, format!("{} region(s); exercise and solution differ only inside them", er.len()))
            };
            checks.push(step);
            return (checks, er, sr);
        }
    };
    checks.push(regions_step);
    (checks, Vec::new(), Vec::new())
}

/// Verify `exercises`. `say` gets progress lines.
pub fn verify(ctx: &Context, wb: &Workbook, exercises: &[&Exercise], opts: &VerifyOptions, mut say: impl FnMut(&str) + Send) -> VerificationRecord {
    let started = Instant::now();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);

    // Phase 1 (CPU): manifests, regions and inputs of every exercise, in parallel.
    say(&format!("checking {} manifest(s) and writing the inputs", exercises.len()));
    let mut work: Vec<Work> = steps::parallel(exercises, cores, |ex| {
        let m = &ex.manifest.manifest;
        let (checks, exercise_regions, solution_regions) = disk_checks(wb, ex);
        let ok = checks.iter().all(|s| s.status == Status::Passed);
        let cases = ok.then(|| steps::prepare_cases(ex, &wb.work_dir().join("cases").join(ex.id())).ok()).flatten();
        Work {
            ex,
            record: ExerciseRecord {
                id: ex.id().to_string(),
                title: m.title.clone(),
                bug_class: m.bug_class.clone(),
                tool: m.expect.tool,
                expected_kind: m.expect.kind,
                region: m.expect.region.get_ref().clone(),
                checks,
                finding: None,
                tool_output: None,
                plain_run: None,
                plain_run_correct: None,
                timing: None,
                outcome: Outcome::Pass,
            },
            exercise_path: wb.learner_path(ex),
            solution_path: wb.solution_path(ex),
            exercise_regions,
            solution_regions,
            cases,
            builds: Vec::new(),
        }
    });
    // Phase 2: the builds on the CPU cores and, as each -G or -O3 binary is ready, its GPU runs: the
    // exercise under its tool and plainly, the solution under all four tools and checked.
    let gpu_runs = match (ctx.no_gpu_reason(), ctx.tools.sanitizer.as_deref()) {
        (None, Some(sanitizer)) => Some(sanitizer),
        _ => None,
    };
    let with_cases: Vec<usize> = (0..work.len()).filter(|&i| work[i].cases.is_some()).collect();
    // -G builds first: the sanitizer runs wait for them, and the -O3 builds overlap those runs.
    let build_jobs: Vec<(usize, usize)> = [0, 2, 1, 3].iter().flat_map(|&k| with_cases.iter().map(move |&i| (i, k))).collect();
    // The exercises under their tools first: the longest runs (every bad access costs the tool time).
    let mut gpu_jobs: Vec<(usize, GpuJob)> = Vec::new();
    if gpu_runs.is_some() {
        gpu_jobs.extend(with_cases.iter().map(|&i| (i, GpuJob::ExerciseTool)));
        for &i in &with_cases {
            gpu_jobs.extend(Tool::ALL.map(|t| (i, GpuJob::SolutionTool(t))));
            gpu_jobs.extend([(i, GpuJob::ExercisePlain), (i, GpuJob::SolutionCorrectness)]);
        }
        say(&format!(
            "building {} exercise(s) x 4 on {cores} cores; each binary goes under compute-sanitizer as soon as it is built ({} runs at a time)",
            with_cases.len(),
            sanitizer_jobs(cores)
        ));
    } else {
        say(&format!("building {} exercise(s) x 4 on {cores} cores", with_cases.len()));
    }
    let binaries: steps::Slots<Option<Built>> = steps::Slots::new(work.len() * BUILDS.len());
    let mut phases = Phases::default();
    let (built, ran) = std::thread::scope(|scope| {
        let (work, binaries, gpu_jobs) = (&work, &binaries, &gpu_jobs);
        let runs = scope.spawn(move || {
            let Some(sanitizer) = gpu_runs else { return Vec::new() };
            steps::parallel(gpu_jobs, sanitizer_jobs(cores), |&(i, job)| {
                let built = binaries.wait(i * BUILDS.len() + job.build())?;
                let (w, m) = (&work[i], &work[i].ex.manifest.manifest);
                let cases = w.cases.as_ref().expect("only exercises with cases are built");
                Some(match job {
                    GpuJob::ExerciseTool => Ran::Tool(steps::run_tool(sanitizer, m.expect.tool, &built, cases, &w.exercise_regions, "exercise", "ex")),
                    GpuJob::ExercisePlain => Ran::Step(steps::run_correctness(&built, cases, m.tolerance, "exercise plain run", "explain")),
                    GpuJob::SolutionTool(t) => Ran::Step(steps::run_tool(sanitizer, t, &built, cases, &w.solution_regions, &format!("solution {t}"), &format!("sol-{t}")).step),
                    GpuJob::SolutionCorrectness => Ran::Step(steps::run_correctness(&built, cases, m.tolerance, "solution correctness", "sol")),
                })
            })
        });
        let built = steps::parallel(&build_jobs, cores, |&(i, k)| {
            let w = &work[i];
            let (variant, flavor) = BUILDS[k];
            let (source, who) = if variant == "original" { (&w.exercise_path, "exercise") } else { (&w.solution_path, "solution") };
            // A build that panicked must still release the runs waiting for it.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                build_step(ctx, wb, w.ex, variant, source, flavor, Reuse::Never, &format!("{who} build {}", flavor.flags()[0]))
            }));
            binaries.put(i * BUILDS.len() + k, result.as_ref().ok().and_then(|(_, b)| b.clone()));
            result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        phases.builds_done_at = started.elapsed().as_secs_f64();
        let ran = runs.join().expect("a sanitizer run panicked");
        phases.runs_done_at = gpu_runs.map(|_| started.elapsed().as_secs_f64());
        (built, ran)
    });
    let mut by_build: Vec<_> = build_jobs.iter().zip(built).collect();
    by_build.sort_by_key(|(&(i, k), _)| (i, k));
    for (&(i, _), (step, b)) in by_build {
        work[i].record.checks.push(step);
        work[i].builds.push(b);
    }
    let all_built = |w: &Work| w.builds.len() == BUILDS.len() && w.builds.iter().all(Option::is_some);
    for (&(i, job), ran) in gpu_jobs.iter().zip(ran) {
        let w = &mut work[i];
        match (job, ran) {
            (_, None) => {} // its build failed, and says so
            (GpuJob::ExerciseTool, Some(Ran::Tool(t))) => {
                keep(opts, &t.xml_path, &format!("{}-exercise-{}.xml", w.ex.id(), w.record.tool));
                let (step, finding) = intended_reason(&w.record, t.step, &t.findings);
                w.record.checks.push(step);
                w.record.finding = finding;
                w.record.tool_output = Some(t.text_output);
            }
            (GpuJob::ExercisePlain, Some(Ran::Step(s))) => {
                w.record.plain_run_correct = Some(s.status == Status::Passed);
                w.record.plain_run = Some(s.summary);
            }
            (_, Some(Ran::Step(s))) => w.record.checks.push(s),
            (_, Some(Ran::Tool(t))) => w.record.checks.push(t.step),
        }
    }
    match (ctx.no_gpu_reason(), gpu_runs) {
        (Some(reason), _) => {
            for w in work.iter_mut().filter(|w| all_built(w)) {
                w.record.checks.push(Step::new("gpu", Status::Skipped, reason.clone()));
            }
        }
        (None, None) => {
            for w in work.iter_mut().filter(|w| all_built(w)) {
                w.record.checks.push(Step::new("tools", Status::ToolError, "compute-sanitizer not found"));
            }
        }
        (None, Some(_)) => {
            // Phase 3 (GPU): ncu times every original and solution, kernels one at a time.
            let phase = Instant::now();
            let timed: Vec<usize> = (0..work.len()).filter(|&i| all_built(&work[i]) && work[i].record.checks.iter().all(|s| s.status == Status::Passed)).collect();
            if !timed.is_empty() {
                say(&format!("timing {} exercise(s) with ncu (original, solution, solution again; {} ncu processes at a time)", timed.len(), ncu::default_jobs()));
                time_all(ctx, wb, &mut work, &timed, opts);
            }
            phases.timing = Some(phase.elapsed().as_secs_f64());
        }
    }

    let exercises: Vec<ExerciseRecord> = work
        .into_iter()
        .map(|mut w| {
            w.record.outcome = Outcome::from_steps(&w.record.checks);
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
        driver_version: context::driver_version(),
        tools: ToolVersions {
            nvcc: toolchain::version(&ctx.nvcc.path),
            compute_sanitizer: ctx.tools.sanitizer.as_deref().and_then(toolchain::version),
            ncu: ctx.tools.ncu.as_deref().and_then(toolchain::version),
        },
        wall_seconds: started.elapsed().as_secs_f64(),
        phases: Some(phases),
        exercises,
        outcome,
    }
}

/// The exercise step passes when its tool reported the expected kind inside the expected region;
/// that finding comes back with it.
fn intended_reason(record: &ExerciseRecord, tool_step: Step, found: &[Finding]) -> (Step, Option<Finding>) {
    let name = format!("exercise fails under {}", record.tool);
    let hit = found.iter().find(|f| f.kind == record.expected_kind && f.region.as_deref() == Some(record.region.as_str()));
    let mut step = match (hit, tool_step.status) {
        (Some(f), _) => {
            let at = f.locations.first().map(|l| l.short()).unwrap_or_default();
            Step::new(name, Status::Passed, format!("{} {} at {at}, in region `{}` ({})", record.tool, f.kind, record.region, crate::sanitizer::records_text(f.records)))
        }
        (None, Status::TimedOut | Status::ToolError) => Step { name, ..tool_step.clone() },
        (None, _) => {
            let seen: Vec<String> = found.iter().map(|f| format!("{} {:?}", f.kind, f.region)).collect();
            Step::new(
                name,
                Status::Failed,
                format!("expected {} {} in region `{}`, the tool reported: [{}]", record.tool, record.expected_kind, record.region, seen.join(", ")),
            )
        }
    };
    step.command = tool_step.command;
    step.wall_ms = tool_step.wall_ms;
    (step, hit.cloned())
}

fn keep(opts: &VerifyOptions, from: &Path, name: &str) {
    if let Some(dir) = &opts.keep {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::copy(from, dir.join(name));
    }
}

fn time_all(ctx: &Context, wb: &Workbook, work: &mut [Work], timed: &[usize], opts: &VerifyOptions) {
    let started = Instant::now();
    let Some(ncu_path) = ctx.tools.ncu.clone() else {
        for &i in timed {
            work[i].record.checks.push(Step::new("solution timing", Status::ToolError, "ncu not found"));
        }
        return;
    };
    let mut targets = Vec::new();
    for &i in timed {
        let w = &work[i];
        let m = &w.ex.manifest.manifest;
        let cases = w.cases.as_ref().unwrap();
        let n = w.ex.number();
        let solution = w.builds[3].as_ref().unwrap();
        targets.push(steps::bench_target(&format!("{n}-original"), w.builds[1].as_ref().unwrap(), cases, m, "original"));
        targets.push(steps::bench_target(&format!("{n}-reference"), solution, cases, m, "reference"));
        // The same binary under another name, in a process of its own: the noise of the ratio.
        let mut rerun = steps::bench_target(&format!("{n}-rerun"), solution, cases, m, "rerun");
        rerun.program = binary_path(wb, w.ex, "reference", Flavor::Timing).with_file_name(format!("{n}-rerun"));
        let _ = std::fs::copy(&solution.binary, &rerun.program);
        targets.push(rerun);
    }
    let csv_dir = wb.work_dir().join("verify-ncu");
    let result = ncu::run(&ncu_path, &targets, &csv_dir, ncu::default_jobs(), steps::NCU_TIMEOUT);
    if let Ok(t) = &result {
        for name in t.per_target.keys() {
            keep(opts, &csv_dir.join(format!("{name}.csv")), &format!("ncu-{name}.csv"));
        }
    }
    let wall = started.elapsed();
    for &i in timed {
        let w = &mut work[i];
        let m = &w.ex.manifest.manifest;
        let n = w.ex.number().to_string();
        let step = match &result {
            Err(e) => Step::new("solution timing", Status::ToolError, e.to_string()),
            Ok(t) => {
                let get = |v: &str| t.nanoseconds(&format!("{n}-{v}"));
                match (get("reference"), get("rerun")) {
                    (Some(reference_ns), Some(rerun_ns)) => {
                        let original_ns = get("original");
                        let max = *m.timing.max_ratio_to_reference.get_ref();
                        let timing = VerifyTiming {
                            kernels: m.timing.kernels.clone(),
                            original_ns,
                            reference_ns,
                            rerun_ns,
                            rerun_ratio: rerun_ns / reference_ns,
                            speedup_over_original: original_ns.map(|o| o / reference_ns),
                            max_ratio_to_reference: max,
                        };
                        let ratio = timing.rerun_ratio;
                        w.record.timing = Some(timing);
                        let status = if ratio <= max { Status::Passed } else { Status::Failed };
                        let retried = ["original", "reference", "rerun"]
                            .iter()
                            .filter(|v| t.per_target.get(&format!("{n}-{v}")).is_some_and(|m| m.attempts > 1))
                            .count();
                        let retried = if retried > 0 { format!("; {retried} ncu run(s) repeated: the profiler was busy") } else { String::new() };
                        Step::new(
                            "solution timing",
                            status,
                            format!(
                                "{:.1} us; a second run {ratio:.3}x (target {max:.2}x); original {}{retried}",
                                reference_ns / 1e3,
                                original_ns.map(|o| format!("{:.1} us", o / 1e3)).unwrap_or_else(|| {
                                    let why = t.per_target.get(&format!("{n}-original")).map(|m| m.why_untimed()).unwrap_or_default();
                                    format!("not timed ({why})")
                                })
                            ),
                        )
                        .command(t.per_target.get(&format!("{n}-reference")).map(|m| m.command.clone()).unwrap_or_default())
                    }
                    _ => Step::new("solution timing", Status::ToolError, "ncu timed no launch of the solution's timed kernels")
                        .detail(t.per_target.get(&format!("{n}-reference")).map(|m| m.finished.output()).unwrap_or_default()),
                }
            }
        };
        w.record.checks.push(step.wall(wall));
    }
}

/// Failures beat skips: a CPU-only run that built everything is "skipped", one that found a broken
/// manifest is "fail".
fn overall(exercises: &[ExerciseRecord]) -> Outcome {
    let worst = |o: &Outcome| match o {
        Outcome::Fail { .. } => 0,
        Outcome::Timeout { .. } => 1,
        Outcome::ToolError { .. } => 2,
        Outcome::NotGradable { .. } => 3,
        Outcome::Skipped { .. } => 4,
        Outcome::Pass => 5,
    };
    exercises
        .iter()
        .map(|e| &e.outcome)
        .min_by_key(|o| worst(o))
        .cloned()
        .unwrap_or(Outcome::Pass)
}
