//! The performance track's judgement: from ncu's time and counters of the original, the reference
//! fix, the learner's version (and a library baseline) measured in one run, each version's speedup
//! over the original, its metrics, its place on this GPU's roofline, and whether it reached the
//! manifest's target and moved its metrics the right way. `check` and `verify` share it.

use serde::{Deserialize, Serialize};

use crate::engine::context::{self, Context};
use crate::engine::plan::StageKind;
use crate::engine::stages::{self, Output};
use crate::exercise::manifest::{Baseline, Clock, Goal, Metric, Perf};
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::recorded_call;
use crate::judge::verdict::{Status, Step, Untimed};
use crate::tools::counters::{self, Counters};
use crate::tools::ncu::{self, Measured};
use crate::tools::nvcc::{self, Flavor, Inputs, Reuse};
use crate::tools::peak::{self, Peak, PeakError};
use crate::tools::timeline;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    pub metric: Metric,
    pub value: Option<f64>,
}

/// A kernel on the roofline: FLOP and DRAM bytes per run of the bench, as ncu counted them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RooflinePoint {
    pub flops: f64,
    pub dram_bytes: f64,
    /// FLOP per DRAM byte.
    pub intensity: f64,
    pub gflops: f64,
    /// The roof above it: min(intensity x memcpy bandwidth, FMA peak).
    pub roof_gflops: f64,
}

/// One version as ncu saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionPerf {
    /// "original", "reference", "learner", "cublas".
    pub version: String,
    /// The time the exercise's clock judges: the timed kernels per run of the bench (the median of
    /// its repeats), or with `clock = "call"` the whole call (the fastest after the first).
    pub nanoseconds: f64,
    /// ncu's time of the timed kernels, where the clock is the call (shown beside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_ns: Option<f64>,
    /// The call the timeline recorded (`clock = "call"`): what the lessons draw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<timeline::Call>,
    /// Who counted the launches, copies and overlap of that call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<recorded_call::Counted>,
    /// The original's time over this one's.
    pub speedup: f64,
    pub metrics: Vec<MetricValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roofline: Option<RooflinePoint>,
    /// The slowest over the fastest repeat inside this version's ncu process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_spread: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
}

impl VersionPerf {
    pub fn metric(&self, m: Metric) -> Option<f64> {
        self.metrics
            .iter()
            .find(|v| v.metric == m)
            .and_then(|v| v.value)
    }
}

/// A goal as judged: the bound it came to (a multiple of the original's value, where it is one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalResult {
    pub goal: Goal,
    pub bound: Option<f64>,
    pub value: Option<f64>,
    pub met: bool,
}

/// What the learner (or verify) sees of a performance exercise's timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerfSummary {
    pub kernels: Vec<String>,
    /// What `nanoseconds` and the speedups are measured with.
    #[serde(default, skip_serializing_if = "is_kernel_clock")]
    pub clock: Clock,
    pub target_speedup: f64,
    /// The metrics this exercise shows, in order.
    pub shown: Vec<Metric>,
    pub peak: Peak,
    /// The original first, then the reference fix, the learner's version, a library baseline.
    pub versions: Vec<VersionPerf>,
    pub commands: Vec<String>,
}

fn is_kernel_clock(c: &Clock) -> bool {
    *c == Clock::Kernel
}

impl PerfSummary {
    pub fn version(&self, name: &str) -> Option<&VersionPerf> {
        self.versions.iter().find(|v| v.version == name)
    }
}

/// The roofline point of a version's counters.
pub fn roofline(c: &Counters, peak: &Peak) -> Option<RooflinePoint> {
    let (flops, bytes) = (counters::flops(c)?, counters::dram_bytes(c)?);
    if flops <= 0.0 || bytes <= 0.0 {
        return None;
    }
    let intensity = flops / bytes;
    Some(RooflinePoint {
        flops,
        dram_bytes: bytes,
        intensity,
        gflops: flops / c.nanoseconds,
        roof_gflops: peak.roof_gflops(intensity),
    })
}

/// One version from the counters of its ncu measurement.
fn version(
    name: &str,
    c: &Counters,
    repeat_spread: Option<f64>,
    shown: &[Metric],
    peak: &Peak,
    baseline_ns: Option<f64>,
) -> VersionPerf {
    VersionPerf {
        version: name.into(),
        nanoseconds: c.nanoseconds,
        kernel_ns: None,
        timeline: None,
        counted: None,
        speedup: 1.0,
        metrics: shown
            .iter()
            .map(|&m| MetricValue {
                metric: m,
                value: m.value(c, peak.peaks(), baseline_ns),
            })
            .collect(),
        roofline: roofline(c, peak),
        repeat_spread,
        counters: Some(c.clone()),
    }
}

/// A timing output's measurement and its counters, or why it has none.
fn measured(o: Option<&Output>) -> Result<(&Measured, &Counters), Untimed> {
    match o {
        Some(Output::Timed {
            measured: Ok(m), ..
        }) if m.counters.is_some() => Ok((m, m.counters.as_ref().expect("checked"))),
        Some(Output::Timed {
            measured: Ok(m), ..
        }) => Err(Untimed::unmeasured(m)),
        Some(Output::Timed {
            measured: Err(e), ..
        }) => Err(Untimed::Profile(e.to_string())),
        Some(Output::NotRun(b)) => Err(Untimed::NotRun(b.to_string())),
        _ => Err(Untimed::NotTimed),
    }
}

/// What one version's timed stages left (`plan::timed_kinds`): ncu's measurement and the whole
/// call (with its timeline, where the clock is the call), where they ran.
#[derive(Debug, Clone, Copy)]
pub struct Runs<'a> {
    pub name: &'a str,
    pub ncu: Option<&'a Output>,
    pub call: Option<&'a Output>,
}

impl<'a> Runs<'a> {
    /// A version's runs, read from a plan's results by stage kind.
    pub fn of(name: &'a str, get: impl Fn(StageKind) -> Option<&'a Output>) -> Runs<'a> {
        Runs {
            name,
            ncu: get(StageKind::Timing),
            call: get(StageKind::Call),
        }
    }
}

/// The whole call the judge holds a version to, or why there is none.
fn call_ns(o: Option<&Output>) -> Result<f64, Untimed> {
    match o {
        Some(Output::Called { times: Some(t), .. }) => t.judged_ns().ok_or(Untimed::NoCall),
        Some(Output::Called { failure, .. }) => Err(Untimed::CallFailed(failure.clone())),
        Some(Output::NotRun(b)) => Err(Untimed::NotRun(b.to_string())),
        _ => Err(Untimed::CallNotTimed),
    }
}

/// The versions' summary from their timed runs (the original first) and the baseline's
/// measurement. Err names the version that could not be timed.
pub fn summarize(
    ex: &Exercise,
    peak: &Peak,
    timed: &[Runs],
    baseline: Option<&Measured>,
) -> Result<PerfSummary, (String, Untimed)> {
    let m = &ex.manifest.manifest;
    let perf = m.perf.as_ref().expect("a performance exercise");
    let shown = perf.metrics.get_ref().clone();
    let baseline_ns = baseline
        .and_then(|b| b.counters.as_ref())
        .map(|c| c.nanoseconds);
    let mut versions = Vec::new();
    let mut commands = Vec::new();
    let needed = recorded_call::reference_copy_bytes(
        timed
            .iter()
            .find(|r| r.name == "reference")
            .and_then(|r| r.call),
    );
    for runs in timed {
        let name = runs.name;
        let (meas, c) = measured(runs.ncu).map_err(|why| (name.to_string(), why))?;
        commands.push(meas.command.clone());
        let spread = ncu::repeat_spread(
            &meas.launches,
            &m.timing.kernels,
            crate::engine::plan::profiled_calls(ex),
        );
        let mut counters = c.clone();
        let timeline = recorded_call::recorded(runs.call, &mut counters, needed);
        let mut v = version(name, &counters, spread, &shown, peak, baseline_ns);
        (v.timeline, v.counted) = timeline.unzip();
        if perf.clock == Clock::Call {
            v.nanoseconds = call_ns(runs.call)
                .map_err(|why| (name.to_string(), Untimed::NoWholeCall(Box::new(why))))?;
            v.kernel_ns = Some(c.nanoseconds);
            if let Some(Output::Called { command, .. }) = runs.call {
                commands.push(command.clone());
            }
        }
        versions.push(v);
    }
    if let Some((b, c)) = baseline.and_then(|b| Some((b, b.counters.as_ref()?))) {
        commands.push(b.command.clone());
        let spread = ncu::repeat_spread(&b.launches, &[], crate::engine::plan::profiled_calls(ex));
        versions.push(version(baseline_name(perf), c, spread, &[], peak, None));
    }
    let original_ns = versions.first().map(|v| v.nanoseconds).unwrap_or(f64::NAN);
    for v in &mut versions {
        v.speedup = original_ns / v.nanoseconds;
    }
    Ok(PerfSummary {
        kernels: m.timing.kernels.clone(),
        clock: perf.clock,
        target_speedup: *perf.speedup.get_ref(),
        shown,
        peak: peak.clone(),
        versions,
        commands,
    })
}

fn baseline_name(perf: &Perf) -> &'static str {
    match perf.baseline {
        Some(Baseline::CublasSgemm) | None => "cublas",
    }
}

/// Each goal of the exercise, judged on `who` (with the original for relative goals).
pub fn goals(perf: &Perf, who: &VersionPerf, original: &VersionPerf) -> Vec<GoalResult> {
    perf.goals
        .iter()
        .map(|g| {
            let scale = if g.of_original { original.metric(g.metric) } else { Some(1.0) };
            let value = who.metric(g.metric);
            let (bound, at_least) = match (g.at_least, g.at_most) {
                (Some(b), _) => (scale.map(|s| b * s), true),
                (_, b) => (b.and_then(|b| scale.map(|s| b * s)), false),
            };
            let met = matches!((value, bound), (Some(v), Some(b)) if if at_least { v >= b } else { v <= b });
            GoalResult { goal: *g, bound, value, met }
        })
        .collect()
}

/// "at least 80.0%", "at most 0.10 x the original's 31.6".
pub fn describe_goal(g: &GoalResult, original: &VersionPerf) -> String {
    let (word, b) = match (g.goal.at_least, g.goal.at_most) {
        (Some(b), _) => ("at least", b),
        (_, b) => ("at most", b.unwrap_or(0.0)),
    };
    if g.goal.of_original {
        format!(
            "{word} {b}x the original's {}",
            g.goal.metric.show(original.metric(g.goal.metric))
        )
    } else {
        format!("{word} {}", g.goal.metric.show(Some(b)))
    }
}

/// The steps of one version's performance verdict: its speed against the target, then each goal.
pub fn judge(label: &str, perf: &Perf, summary: &PerfSummary, who: &str) -> Vec<Step> {
    let (Some(v), Some(original)) = (summary.version(who), summary.versions.first()) else {
        return Vec::new();
    };
    let target = summary.target_speedup;
    let status = if v.speedup >= target {
        Status::Passed
    } else {
        Status::Failed
    };
    let roof = v
        .roofline
        .as_ref()
        .map(|r| {
            format!(
                "; {:.0}% of the roof at {:.2} FLOP/B",
                100.0 * r.gflops / r.roof_gflops,
                r.intensity
            )
        })
        .unwrap_or_default();
    let mut steps = vec![Step::new(
        format!("{label} speed"),
        status,
        format!(
            "{:.1} us, {:.2}x the original's {:.1} us (target >= {target:.2}x){roof}",
            v.nanoseconds / 1e3,
            v.speedup,
            original.nanoseconds / 1e3
        ),
    )
    .command(summary.commands.join("\n"))
    .stage(StageKind::Timing)];
    for g in goals(perf, v, original) {
        let status = if g.met {
            Status::Passed
        } else {
            Status::Failed
        };
        steps.push(
            Step::new(
                format!("{label} {}", g.goal.metric.key()),
                status,
                format!(
                    "{} {} (goal: {}){}",
                    g.goal.metric.label(),
                    g.goal.metric.show(g.value),
                    describe_goal(&g, original),
                    match (&v.counted, g.goal.metric.from_timeline()) {
                        (Some(recorded_call::Counted::Driver), true) => "; counted from CUPTI's records".to_string(),
                        (Some(recorded_call::Counted::Wrappers(why)), true) => format!(
                            "; counted by the harness's wrappers of runtime calls ({why}): launches they do not wrap are missed"
                        ),
                        _ => String::new(),
                    }
                ),
            )
            .stage(StageKind::Timing),
        );
    }
    steps
}

/// This GPU's peak: the cached measurement, or a new one (cached for next time). `again` measures
/// even where a cached one exists.
pub fn peak(ctx: &Context, wb: &Workbook, again: bool) -> Result<Peak, PeakError> {
    let device = ctx
        .gpu_info()
        .map(|g| g.name.clone())
        .unwrap_or_else(|| "gpu".into());
    let driver = context::driver_version();
    let path = peak::cache_path(&wb.peak_dir(), &device, driver.as_deref());
    if !again {
        if let Some(p) = peak::load(&path) {
            return Ok(p);
        }
    }
    let dir = wb.peak_dir();
    let setup = peak::Setup {
        launcher: ctx.launcher.as_ref(),
        recipe: ctx.recipe(),
        ncu: ctx.tools.ncu.as_deref(),
        dir,
        ncu_lock: stages::ncu_lock_dir(ctx, wb),
        driver,
        timeout: ctx.config.timeouts.ncu,
    };
    // The build of the peak program made `dir`, where the cache file goes too.
    let measured = peak::measure(&setup)?;
    let _ = crate::exercise::workbook::write_atomically(
        &path,
        &serde_json::to_string_pretty(&measured).unwrap_or_default(),
    );
    Ok(measured)
}

/// Time the exercise's library baseline under ncu at the bench's size, with the roofline's counters;
/// None for an exercise without one. The library is the grader's own code, not a submission: it
/// runs unconfined, after the versions.
pub fn time_baseline(
    ctx: &Context,
    wb: &Workbook,
    ex: &Exercise,
) -> Result<Option<Measured>, Untimed> {
    let m = &ex.manifest.manifest;
    let Some(Baseline::CublasSgemm) = m.perf.as_ref().and_then(|p| p.baseline) else {
        return Ok(None);
    };
    let ncu_path = ctx.tools.ncu.as_deref().ok_or(Untimed::NoNcu)?;
    let dir = wb.baseline_dir();
    // One baseline measurement at a time: they share one build, one CSV and what is kept. Two at
    // once (a verify that timed one beside the ncu phase while 64-register-blocking's judging
    // timed another) left ncu's CSV without the kernels on an H100
    // (book/gpu-runs/2026-11-26-perf-seconds/). verify now times each once; grade's workers, and
    // graders of one workbook in other processes (shards on one node), may still ask together:
    // the second waits for the folder's lock and finds the first's measurement kept.
    let _turn = crate::tools::lock::exclusive(&dir.join("turn"));
    let source = ctx.harness.include_dir.join("baseline-sgemm.cu");
    let flags = ["-lcublas".to_string()];
    let built = nvcc::build(
        ctx.launcher.as_ref(),
        &ctx.recipe(),
        Flavor::Timing,
        Inputs::Program {
            sources: std::slice::from_ref(&source),
            flags: &flags,
        },
        &dir.join("cublas-sgemm"),
        Reuse::IfUnchanged,
        &|j| j,
    )
    .map_err(|e| Untimed::BaselineBuild(e.to_string()))?;
    let p = |k: &str| m.bench.params.get(k).copied().unwrap_or(0).to_string();
    // As many calls as the exercise's versions make under ncu.
    let calls = crate::engine::plan::profiled_calls(ex);
    let target = ncu::ProfileTarget {
        name: "cublas-sgemm".into(),
        program: built.binary.clone(),
        args: vec![p("m"), p("n"), p("k"), calls.to_string()],
        kernels: Vec::new(),
        counters: counters::ROOFLINE_COUNTERS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        every_kernel: false,
        repeat: calls,
    };
    let csv = dir.join("cublas-sgemm.csv");
    let lock = stages::ncu_lock_dir(ctx, wb);
    let job = ncu::own_job(ncu_path, &target, (&csv, &lock), ctx.config.timeouts.ncu)
        .key("baseline/cublas-sgemm")
        .output(&csv);
    // The library does not change between runs: its measurement is kept per GPU and binary.
    let kept = crate::engine::kept::shelf(
        ctx,
        crate::engine::plan::work_root(wb)
            .join("kept")
            .join("baseline"),
        ex,
        "baseline-cublas-sgemm",
        &built,
        &[&format!("{target:?}")],
        Vec::new(),
    );
    let launcher = crate::tools::launcher::Kept::or(&kept, ctx.launcher.as_ref());
    // The grader's own ncu takes its turn on the GPU as the students' do (`stages::ncu_turn`).
    let turn = stages::ncu_turn(ctx, wb);
    let measured =
        ncu::measure(launcher, &job, &target, &csv).map_err(|e| Untimed::Profile(e.to_string()))?;
    drop(turn);
    if measured.counters.is_none() {
        if let Some(k) = &kept {
            k.forget();
        }
    }
    match measured.counters {
        Some(_) => Ok(Some(measured)),
        None => Err(Untimed::Baseline(Box::new(Untimed::unmeasured(&measured)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(name: &str, ns: f64, metrics: &[(Metric, f64)]) -> VersionPerf {
        VersionPerf {
            version: name.into(),
            nanoseconds: ns,
            kernel_ns: None,
            timeline: None,
            counted: None,
            speedup: 1.0,
            metrics: metrics
                .iter()
                .map(|&(metric, v)| MetricValue {
                    metric,
                    value: Some(v),
                })
                .collect(),
            roofline: None,
            repeat_spread: None,
            counters: None,
        }
    }

    fn perf(goals: Vec<Goal>) -> Perf {
        let text = "region = \"kernel\"\nspeedup = 1.3\nmetrics = [\"bank-conflicts\", \"dram-share\", \"occupancy\"]\n";
        let mut p: Perf = toml::from_str(text).unwrap();
        p.goals = goals;
        p
    }

    #[test]
    fn goals_hold_absolute_and_relative_bounds() {
        let original = version(
            "original",
            382.0,
            &[(Metric::BankConflicts, 31.6), (Metric::DramShare, 45.0)],
        );
        let fixed = version(
            "learner",
            202.0,
            &[(Metric::BankConflicts, 0.1), (Metric::DramShare, 88.0)],
        );
        let half = version(
            "learner",
            245.0,
            &[(Metric::BankConflicts, 15.4), (Metric::DramShare, 73.0)],
        );
        let relative = Goal {
            metric: Metric::BankConflicts,
            at_least: None,
            at_most: Some(0.1),
            of_original: true,
        };
        let absolute = Goal {
            metric: Metric::DramShare,
            at_least: Some(70.0),
            at_most: None,
            of_original: false,
        };
        let p = perf(vec![relative, absolute]);
        let ok = goals(&p, &fixed, &original);
        assert!(ok.iter().all(|g| g.met), "{ok:?}");
        assert!(
            (ok[0].bound.unwrap() - 3.16).abs() < 1e-9,
            "a tenth of the original's 31.6"
        );
        let half_goals = goals(&p, &half, &original);
        assert_eq!(
            half_goals.iter().map(|g| g.met).collect::<Vec<_>>(),
            vec![false, true],
            "16-way conflicts are not a tenth of 32-way"
        );
        assert_eq!(
            describe_goal(&half_goals[0], &original),
            "at most 0.1x the original's 31.60"
        );
        // A metric ncu could not measure never meets a goal.
        let unknown = VersionPerf {
            metrics: vec![MetricValue {
                metric: Metric::DramShare,
                value: None,
            }],
            ..fixed
        };
        assert!(!goals(&p, &unknown, &original)[1].met);
    }
}
