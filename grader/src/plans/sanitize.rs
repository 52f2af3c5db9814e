//! `sanitize`, a plan without a reference: any CUDA program (or an exercise's file, with its harness
//! and seeded cases) built with `-G` and run under all four compute-sanitizer tools, as many at once
//! as the GPU stages allow, each sandboxed and time-limited; one merged report. Exit codes like a
//! linter: 0 clean, 1 findings (or a crash), 3 a tool error, 4 a run that did not finish.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::engine::context::Context;
use crate::engine::plan::{Stage, StageKind, Submission, Target};
use crate::engine::scheduler::Results;
use crate::engine::stages::Output;
use crate::exercise::manifest::{FindingKind, Tool};
use crate::exercise::workbook::Workbook;
use crate::judge::verdict::{self, Finding, Outcome, Status, Step, StepName};
use crate::plans::session::{Phase, Session};
use crate::tools::gpu::GpuInfo;
use crate::tools::nvcc::Flavor;
use crate::tools::sandbox::Level;

/// What one tool made of the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolStatus {
    Clean,
    Findings,
    /// The program failed (or left a process running) with no record of the tool's. (The first
    /// verify records with a survey wrote "program-failed".)
    #[serde(alias = "program-failed")]
    Crashed,
    TimedOut,
    ToolError,
    /// Not run: the build failed, or there is no GPU.
    NotRun,
}

impl ToolStatus {
    /// What a tool's step and its findings say of the program.
    pub fn of(step: &Step, found: &[Finding]) -> ToolStatus {
        match step.status {
            Status::Passed => ToolStatus::Clean,
            Status::Failed if !found.is_empty() => ToolStatus::Findings,
            Status::Failed => ToolStatus::Crashed,
            Status::TimedOut | Status::Hung => ToolStatus::TimedOut,
            Status::ToolError => ToolStatus::ToolError,
            Status::Skipped => ToolStatus::NotRun,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolSummary {
    pub tool: Tool,
    pub status: ToolStatus,
    pub summary: String,
    pub findings: usize,
    pub records: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub wall_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct MergedFinding {
    #[serde(flatten)]
    pub finding: Finding,
    /// For an API error or leak that followed a kernel error in the same run: the index of that
    /// finding. It is the consequence (the context is broken after a faulting kernel, and the frees
    /// fail), not a second bug.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follow_on_of: Option<usize>,
    /// What this kind of record means, in plain words.
    pub explanation: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct SanitizeReport {
    /// The program as given: its sources, or the binary.
    pub program: String,
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuInfo>,
    pub arch: String,
    pub isolation: Level,
    /// The -G build (and, without a GPU, why nothing else ran).
    pub steps: Vec<Step>,
    pub tools: Vec<ToolSummary>,
    pub findings: Vec<MergedFinding>,
    /// Without -G (a binary built elsewhere): what the report cannot say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// `--profile`: the release build's kernels under ncu.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileReport>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// One kernel of the profiled program: its launches together.
#[derive(Debug, Clone, Serialize)]
pub struct KernelProfile {
    pub kernel: String,
    pub launches: usize,
    /// gpu__time_duration.sum over its launches, base clocks.
    pub time_ns: f64,
    pub grid: String,
    pub block: String,
    /// Global-load sectors per request: 4 for a warp's coalesced 4-byte loads, up to 32.
    pub sectors_per_request: Option<f64>,
    /// Shared-memory bank conflicts (loads and stores).
    pub bank_conflicts: Option<f64>,
    /// Threads active per executed warp instruction: 32 when no warp diverges (or runs partly empty).
    pub threads_per_instruction: Option<f64>,
    /// Achieved occupancy: active warps against the SM's maximum, in percent.
    pub occupancy_pct: Option<f64>,
    /// DRAM throughput as a share of ncu's peak for this GPU (not a measured peak), in percent.
    pub dram_pct_of_peak: Option<f64>,
    /// What the numbers suggest, in plain words.
    pub hints: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileReport {
    pub command: String,
    pub kernels: Vec<KernelProfile>,
    /// Why there is no profile (ncu failed, the program failed), where there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub note: &'static str,
}

const PROFILE_NOTE: &str = "ncu at base clocks on the -O3 -lineinfo build, every kernel; \"% of peak\" is ncu's own peak for this GPU, not one measured on it";

/// Fold the launches of each kernel into one profile, with its hints.
pub fn kernel_profiles(launches: &[crate::tools::ncu::LaunchMetrics]) -> Vec<KernelProfile> {
    let mut names: Vec<&str> = Vec::new();
    for l in launches {
        if !names.contains(&l.kernel.as_str()) {
            names.push(&l.kernel);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let mine: Vec<_> = launches.iter().filter(|l| l.kernel == name).collect();
            let sum = |m: &str| -> Option<f64> { mine.iter().map(|l| l.metrics.get(m).copied()).sum::<Option<f64>>() };
            let time = |l: &&crate::tools::ncu::LaunchMetrics| l.metrics.get(crate::tools::ncu::METRIC).copied().unwrap_or(0.0);
            let total = mine.iter().map(time).sum::<f64>();
            // Percentages, weighted by each launch's time.
            let weighted = |m: &str| -> Option<f64> {
                let parts: Option<Vec<(f64, f64)>> = mine.iter().map(|l| l.metrics.get(m).map(|v| (*v, time(l)))).collect();
                let parts = parts?;
                let w: f64 = parts.iter().map(|(_, t)| t).sum();
                Some(if w > 0.0 { parts.iter().map(|(v, t)| v * t).sum::<f64>() / w } else { parts.iter().map(|(v, _)| v).sum::<f64>() / parts.len() as f64 })
            };
            let sectors = match (sum("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), sum("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")) {
                (Some(s), Some(r)) if r > 0.0 => Some(s / r),
                _ => None,
            };
            let conflicts = match (sum("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"), sum("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            let threads = weighted("smsp__thread_inst_executed_per_inst_executed.ratio");
            let occupancy = weighted("sm__warps_active.avg.pct_of_peak_sustained_active");
            let dram = weighted("dram__throughput.avg.pct_of_peak_sustained_elapsed");
            let mut hints = Vec::new();
            if let Some(s) = sectors.filter(|s| *s > 8.0) {
                hints.push(format!("uncoalesced global loads: {s:.1} sectors per request (4 for a warp's 4-byte loads side by side, 32 the worst). Neighbouring threads read addresses far apart: let threadIdx.x walk the contiguous dimension, or stage the tile through shared memory."));
            }
            if let Some(c) = conflicts.filter(|c| *c >= 1000.0) {
                hints.push(format!("{c:.0} shared-memory bank conflicts: threads of one warp hit the same bank and wait in turn. Pad the array (float tile[32][33]) or change the index."));
            }
            if let Some(t) = threads.filter(|t| *t < 28.0) {
                hints.push(format!("divergence: on average {t:.1} of a warp's 32 threads take part in each instruction. Threads that branch apart run one side after the other (and a block that is not a multiple of 32 leaves lanes idle): make conditions uniform per warp where you can."));
            }
            if let Some(o) = occupancy.filter(|o| *o < 25.0) {
                hints.push(format!("low achieved occupancy ({o:.0}%): few warps are there to hide memory latency. Check the launch (enough blocks for every SM, enough threads per block), registers per thread and shared memory per block."));
            }
            if let Some(d) = dram.filter(|d| *d >= 70.0) {
                hints.push(format!("memory-bound: DRAM throughput at {d:.0}% of ncu's peak. Only moving fewer bytes (reuse, smaller types, fusing passes) makes it much faster."));
            }
            KernelProfile {
                kernel: name.to_string(),
                launches: mine.len(),
                time_ns: total,
                grid: mine[0].grid.clone(),
                block: mine[0].block.clone(),
                sectors_per_request: sectors,
                bank_conflicts: conflicts,
                threads_per_instruction: threads,
                occupancy_pct: occupancy,
                dram_pct_of_peak: dram,
                hints,
            }
        })
        .collect()
}

/// What each kind of record means, for someone who has not read the sanitizer's manual.
pub fn explain(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::OutOfBounds => "A thread read or wrote memory outside every allocation. Past the end of a buffer the access often lands in memory the driver mapped anyway, so a plain run can look right; the values are someone else's.",
        FindingKind::Misaligned => "An access whose address is not a multiple of its size (a float4 load from an address not divisible by 16, say). The hardware cannot do it and the kernel faults.",
        FindingKind::Leak => "Device memory allocated and never freed before the program ended. Harmless once, a crash after enough iterations of a loop or requests of a server.",
        FindingKind::ApiError => "A CUDA API call returned an error. After a kernel faults, every later call reports the fault again: fix the first error, and these follow-on ones go with it.",
        FindingKind::SharedRace => "Two threads touched one shared-memory address, at least one writing, with nothing ordering them: a missing __syncthreads() between warps, or lanes of a warp relying on lockstep (use __syncwarp() or shuffles).",
        FindingKind::UninitializedRead => "A device read of global memory that nothing wrote: the value is whatever was there, often zero, so a plain run can look right. (initcheck does not check shared memory: racecheck and a careful read do.)",
        FindingKind::UninitializedCopy => "A cudaMemcpy copied memory that nothing had written: part of an output the kernel never produced, or a memset sized in elements instead of bytes.",
        FindingKind::DivergentBarrier => "Threads of one block waited at different barriers (a __syncthreads() inside a branch they did not all take). The result is undefined; some GPUs hang.",
        FindingKind::InvalidBarrier => "A barrier with invalid arguments, such as a __syncwarp() mask naming lanes that never arrive.",
        FindingKind::DeviceException => "The GPU raised an exception in the kernel (an illegal instruction, say) and stopped it. In a -G build a __syncwarp() whose mask leaves out a lane that calls it traps this way.",
        FindingKind::HeapError => "A free() in device code of memory the device heap never gave out, or gave out and already took back (a double free). The heap's bookkeeping is corrupted; later mallocs can hand out memory still in use.",
        FindingKind::HeapLeak => "Memory a kernel took with malloc() on the device heap and never freed. The heap is small (8 MB by default): enough launches and malloc() returns NULL.",
        FindingKind::StreamOrderedRace => "Memory from cudaMallocAsync used in a stream before its allocation was ordered there, or after cudaFreeAsync freed it: the streams are not ordered with each other, so the kernel may touch memory the pool has already given to someone else.",
        FindingKind::AsyncCopyRace => "An asynchronous copy into shared memory (cp.async, memcpy_async) was read, or its destination written, before the copy was waited for: the read sees old or half-copied data.",
        FindingKind::BulkCopy => "A bulk (TMA) copy, cp.async.bulk, with an invalid address, size or alignment, or outside its buffer: the copy engine faults or reads memory it should not.",
        FindingKind::Deadlock => "Threads waited at a synchronization (a barrier, an mbarrier, a spin on a flag) longer than the deadlock timeout: the arrivals they wait for never come, and the kernel never ends.",
        FindingKind::StackOverflow => "A thread used more stack than it has (deep or unbounded recursion in device code, or large local arrays): the kernel is stopped. The stack size per thread is cudaLimitStackSize.",
        FindingKind::UnusedMemory => "An allocation, or most of it, that no kernel or copy ever used: a buffer sized too large, or work that was meant to happen and did not.",
        FindingKind::Other => "A record the grader does not classify; the tool's own words are above.",
    }
}

fn tool_summary(tool: Tool, step: Option<&Step>, found: &[Finding], records: usize) -> ToolSummary {
    let (status, summary) = match step {
        None => (ToolStatus::NotRun, "not run".to_string()),
        Some(s) => (ToolStatus::of(s, found), s.summary.clone()),
    };
    ToolSummary {
        tool,
        status,
        summary,
        findings: found.len(),
        records,
        command: step.and_then(|s| s.command.clone()),
        wall_ms: step.map(|s| s.wall_ms).unwrap_or(0),
    }
}

/// Fold each tool's findings into one list; an API error or a leak after a kernel error of the same
/// run is tied to it.
fn merge(per_tool: Vec<Vec<Finding>>) -> Vec<MergedFinding> {
    let mut out: Vec<MergedFinding> = Vec::new();
    for found in per_tool {
        let base = out.len();
        let first_kernel_error = found
            .iter()
            .position(|f| !matches!(f.kind, FindingKind::ApiError | FindingKind::Leak))
            .map(|p| base + p);
        for f in found {
            let index = out.len();
            // After a faulting kernel the context is gone: every later API call fails, and so do the
            // frees, which memcheck then reports as leaks (seen on an H100).
            let follow_on_of = first_kernel_error.filter(|&k| {
                matches!(f.kind, FindingKind::ApiError | FindingKind::Leak) && index > k
            });
            out.push(MergedFinding {
                explanation: explain(f.kind),
                finding: f,
                follow_on_of,
            });
        }
    }
    out
}

/// Sanitize one submission (a program, or an exercise's file). `say` receives progress lines.
pub fn sanitize(
    ctx: &Context,
    wb: &Workbook,
    mut sub: Submission,
    mut say: impl FnMut(&str),
) -> SanitizeReport {
    let started = Instant::now();
    let staged = hand_over_sources(ctx, &mut sub, &mut say);
    let (program, args, caveat) = described(&sub);
    let mut stages = vec![Stage::new(0, StageKind::Build(Flavor::Sanitize))];
    stages.extend(Tool::ALL.map(|t| Stage::new(0, StageKind::Sanitize(t))));
    let profile = matches!(&sub.target, Target::Program(p) if p.profile);
    if profile {
        stages.push(Stage::new(0, StageKind::Profile));
    }
    say(&format!("building {program} with -G, then memcheck, racecheck, initcheck and synccheck ({} at a time; {})", ctx.config.gpu_jobs, ctx.isolation().describe()));
    let subs = [sub];
    let mut session = Session::new(ctx, (wb, &subs), started);
    session.run_phase(&Phase::of(stages));
    let results = session.into_results();

    let mut steps: Vec<Step> = Vec::new();
    if let Some(o) = results.get(0, StageKind::Build(Flavor::Sanitize)) {
        steps.extend(verdict::build(
            StepName::Build(Flavor::Sanitize),
            o,
            Flavor::Sanitize,
            &ctx.arch,
        ));
    }
    let runs = tool_runs(&results, &mut steps);
    let findings = merge(runs.findings);
    if let Some(staged) = &staged {
        for s in &mut steps {
            s.detail = s.detail.as_deref().map(|d| staged.unstaged(d));
            s.command = s.command.as_deref().map(|c| staged.unstaged(c));
        }
    }
    let profile = profile.then(|| {
        let build = results.get(0, StageKind::Build(Flavor::Timing));
        if let Some(step) = build.and_then(|o| {
            verdict::build(
                StepName::Build(Flavor::Timing),
                o,
                Flavor::Timing,
                &ctx.arch,
            )
        }) {
            steps.push(step);
        }
        profile_report(results.get(0, StageKind::Profile))
    });
    let outcome = linter_outcome(&steps, &runs.steps, profile.as_ref());
    SanitizeReport {
        program,
        args,
        gpu: ctx.gpu_info().cloned(),
        arch: ctx.arch.clone(),
        isolation: ctx.isolation(),
        steps,
        tools: runs.summaries,
        findings,
        caveat,
        profile,
        outcome,
    }
}

/// A program's sources copied where the sandbox's compiler can read them (`staged`); where they
/// cannot be copied, nvcc is given them as they are (and says why it cannot read them). Where the
/// sandbox's user cannot enter the folder the program was started in (a private one), nvcc and the
/// program run in the copies' folder instead.
fn hand_over_sources(
    ctx: &Context,
    sub: &mut Submission,
    say: &mut impl FnMut(&str),
) -> Option<crate::plans::staged::Staged> {
    let into = sub.work.join("sources");
    let Target::Program(p) = &mut sub.target else {
        return None;
    };
    if p.prebuilt.is_some() || p.sources.is_empty() {
        return None;
    }
    match crate::plans::staged::stage(&p.sources, &into) {
        Ok(staged) => {
            p.staged = staged.sources.clone();
            // SAFETY: geteuid cannot fail.
            let another_user =
                ctx.isolation() > Level::ProcessGroup && unsafe { libc::geteuid() } == 0;
            if another_user && !crate::tools::sandbox::enterable(&p.cwd, ctx.config.sandbox_user) {
                say(&format!(
                    "{} is private to you: the program runs in {}, where its copies are (and cannot write there)",
                    p.cwd.display(),
                    staged.into.display()
                ));
                p.cwd = staged.into.clone();
            }
            Some(staged)
        }
        Err(e) => {
            say(&format!("{e}; nvcc reads the files themselves"));
            None
        }
    }
}

/// The program as the report names it (its binary, or its sources), its arguments, and the caveat
/// of a binary built elsewhere.
fn described(sub: &Submission) -> (String, Vec<String>, Option<String>) {
    match &sub.target {
        Target::Program(p) => (
            match &p.prebuilt {
                Some(b) => b.display().to_string(),
                None => p.sources.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(" "),
            },
            p.args.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
            p.prebuilt.as_ref().map(|_| {
                "built elsewhere: without -G the tools see no device line numbers unless it was built with -lineinfo, and racecheck and synccheck may miss what optimisation moved or removed".to_string()
            }),
        ),
        Target::Exercise { .. } => (sub.origin.display().to_string(), vec!["(the exercise's sanitize cases)".to_string()], None),
    }
}

/// What the four tools made of the program: each tool's summary, findings and step.
struct ToolRuns {
    summaries: Vec<ToolSummary>,
    findings: Vec<Vec<Finding>>,
    steps: Vec<Step>,
}

/// The four tools' runs from `results`; a step that says the GPU stages were skipped goes once
/// into `steps`, beside the build's.
fn tool_runs(results: &Results, steps: &mut Vec<Step>) -> ToolRuns {
    let mut runs = ToolRuns {
        summaries: Vec::new(),
        findings: Vec::new(),
        steps: Vec::new(),
    };
    for t in Tool::ALL {
        let stage = Stage::new(0, StageKind::Sanitize(t));
        let (step, found, records) = match results.get_run(&stage) {
            Some(o @ Output::Sanitized { findings, run, .. }) => (
                verdict::tool(StepName::Tool(t), &stage, o),
                findings.clone(),
                run.as_ref().map(|r| r.records.len()).unwrap_or(0),
            ),
            Some(Output::NotRun(b)) => (
                verdict::not_run(StepName::Tool(t), &stage, b),
                Vec::new(),
                0,
            ),
            _ => (None, Vec::new(), 0),
        };
        runs.summaries.push(tool_summary(
            t,
            step.as_ref().filter(|s| !s.is(StepName::GpuSkipped)),
            &found,
            records,
        ));
        if let Some(s) = step {
            if s.is(StepName::GpuSkipped) {
                if !steps.iter().any(|x| x.is(StepName::GpuSkipped)) {
                    steps.push(s);
                }
            } else {
                runs.steps.push(s);
            }
        }
        runs.findings.push(found);
    }
    runs
}

/// `--profile`: the release build's kernels under ncu (`output`), or why there are none.
fn profile_report(output: Option<&Output>) -> ProfileReport {
    let failed = |why: String| ProfileReport {
        command: String::new(),
        kernels: Vec::new(),
        error: Some(why),
        note: PROFILE_NOTE,
    };
    match output {
        Some(Output::Profiled {
            command,
            run,
            launches,
        }) => {
            let error = match (run, launches) {
                (Err(e), _) => Some(e.to_string()),
                (Ok(f), _) if !f.success() && !matches!(launches, Ok(l) if !l.is_empty()) => Some(
                    format!("the program failed under ncu ({})", f.describe_exit()),
                ),
                (_, Err(e)) => Some(e.to_string()),
                (_, Ok(l)) if l.is_empty() => Some("ncu saw no kernel launch".into()),
                _ => None,
            };
            ProfileReport {
                command: command.clone(),
                kernels: launches.as_deref().map(kernel_profiles).unwrap_or_default(),
                error,
                note: PROFILE_NOTE,
            }
        }
        Some(Output::NotRun(b)) => failed(b.to_string()),
        _ => failed("not run".into()),
    }
}

/// Like a linter: any tool's findings fail the run, whatever another tool did; a profile that
/// failed is a tool error.
fn linter_outcome(steps: &[Step], tool_steps: &[Step], profile: Option<&ProfileReport>) -> Outcome {
    let mut outcomes: Vec<Outcome> = steps
        .iter()
        .chain(tool_steps)
        .map(|s| Outcome::from_steps(std::slice::from_ref(s)))
        .collect();
    outcomes.retain(|o| *o != Outcome::Pass);
    if let Some(e) = profile.and_then(|p| p.error.as_ref()) {
        outcomes.push(Outcome::ToolError {
            step: "profile".into(),
            message: e.clone(),
        });
    }
    Outcome::worst(&outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::sanitizer::SourceLocation;

    fn finding(kind: FindingKind, line: u32) -> Finding {
        Finding {
            tool: Tool::Memcheck,
            kind,
            text: format!("{kind}"),
            level: None,
            records: 1,
            hazards: None,
            thread: None,
            block: None,
            locations: vec![SourceLocation {
                path: "p.cu".into(),
                line,
                function: None,
                role: "access".into(),
            }],
            region: None,
            threads: 1,
            blocks: 1,
        }
    }

    #[test]
    fn api_errors_after_a_kernel_error_are_tied_to_it_and_not_across_tools() {
        let merged = merge(vec![
            vec![
                finding(FindingKind::OutOfBounds, 10),
                finding(FindingKind::ApiError, 20),
                finding(FindingKind::Leak, 30),
            ],
            vec![finding(FindingKind::ApiError, 40)],
        ]);
        let tied: Vec<Option<usize>> = merged.iter().map(|m| m.follow_on_of).collect();
        assert_eq!(tied, [None, Some(0), Some(0), None]);
        // A leak with no kernel error before it is a leak.
        assert_eq!(
            merge(vec![vec![finding(FindingKind::Leak, 1)]])[0].follow_on_of,
            None
        );
        assert!(merged[0].explanation.contains("outside every allocation"));
    }
}
