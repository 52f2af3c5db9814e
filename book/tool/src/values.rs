//! Numbers in a lesson's prose, filled from the record: `{{#cudabugs-value ...}}` anywhere in a
//! line is replaced by the figure, formatted as the lesson's record table formats it, so that the
//! text and the table cannot disagree after the next GPU run. Forms (`[FILE:]ID`: an exercise of
//! the book's record, or of `book/FILE`, another GPU's):
//! - `[FILE:]ID VERSION WHAT`: one version's (`original`, `reference`, `cublas`) `time`, `speedup`,
//!   `kernel-time` (ncu's time of the kernels of a call-clocked exercise), `timeline-call` (the
//!   call the timeline recorded), `intensity`, `roof-share`, `flops`, `dram-bytes`, or a metric by
//!   its manifest key (`kernel-share`, `load-efficiency`, ...);
//! - `[FILE:]ID ratio WHAT A B`: version A's WHAT over version B's, as `1.12x`;
//! - `[FILE:]ID ridge`: the ridge of the GPU's roofline, FLOP/B; `[FILE:]ID target`: the speedup
//!   a learner's version needs; `[FILE:]ID gpu`: the GPU's name; `[FILE:]ID pcie-both`: the
//!   measured rate of pinned copies both ways at once; `[FILE:]ID bandwidth` and `fma-peak`: the
//!   roofline's two roofs.
//!
//! `copy-rate` (a version's bytes copied per call over its call's time) is a figure too.

use anyhow::{bail, Context as _, Result};
use grader::exercise::metric::Metric;
use grader::judge::perf::{PerfSummary, VersionPerf};
use grader::plans::verify::VerificationRecord;

/// A time as prose reads it: the table's µs below a millisecond, ms above.
fn time(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        crate::record::us(ns)
    }
}

const OPEN: &str = "{{#cudabugs-value ";

/// `line` with each of its values filled in. `record_of(None)` is the book's record,
/// `record_of(Some(FILE))` the one in `book/FILE`.
pub(crate) fn fill(
    line: &str,
    record_of: &mut dyn FnMut(Option<&str>) -> Result<VerificationRecord>,
) -> Result<String> {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len()..];
        let end = after
            .find("}}")
            .context("a `{{#cudabugs-value` is not closed with `}}`")?;
        let words: Vec<&str> = after[..end].split_whitespace().collect();
        let value = (|| {
            let (file, id) = match words.first().map(|w| w.split_once(':')) {
                Some(Some((file, id))) => (Some(file), id),
                Some(None) => (None, words[0]),
                None => bail!("no exercise named"),
            };
            let record = record_of(file)?;
            let perf = record
                .exercises
                .iter()
                .find(|e| e.id == id)
                .with_context(|| format!("the record has no {id}"))?
                .perf
                .as_ref()
                .with_context(|| format!("{id} has no performance record"))?;
            value(perf, &words[1..])
        })()
        // One message: the book's problem list shows each error's first line.
        .map_err(|e| anyhow::anyhow!("`{OPEN}{}}}}}`: {e:#}", &after[..end]))?;
        out.push_str(&value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn version<'a>(perf: &'a PerfSummary, name: &str) -> Result<&'a VersionPerf> {
    perf.versions
        .iter()
        .find(|v| v.version == name)
        .with_context(|| format!("no version `{name}`"))
}

/// One figure of a version: its text, and the bare number (for ratios).
fn figure(v: &VersionPerf, what: &str) -> Result<(String, f64)> {
    let roof = || v.roofline.as_ref().context("no roofline point");
    let raw = |key: &str| {
        v.counters
            .as_ref()
            .and_then(|c| c.raw.get(key).copied())
            .with_context(|| format!("no counter `{key}`"))
    };
    Ok(match what {
        "time" => (time(v.nanoseconds), v.nanoseconds),
        "speedup" => (format!("{:.2}x", v.speedup), v.speedup),
        "kernel-time" => {
            let ns = v.kernel_ns.context("no kernel time (not call-clocked)")?;
            (time(ns), ns)
        }
        "timeline-call" => {
            let ns = raw("timeline:call-ns")?;
            (time(ns), ns)
        }
        "intensity" => {
            let i = roof()?.intensity;
            (format!("{i:.2} FLOP/B"), i)
        }
        "roof-share" => {
            let r = roof()?;
            let share = 100.0 * r.gflops / r.roof_gflops;
            (format!("{share:.0}%"), share)
        }
        "copy-rate" => {
            let bytes = v
                .metric(Metric::CopyBytes)
                .context("no `copy-bytes` recorded")?;
            let rate = bytes / v.nanoseconds;
            (format!("{rate:.1} GB/s"), rate)
        }
        "flops" => (format!("{:.3e}", roof()?.flops), roof()?.flops),
        "dram-bytes" => (format!("{:.3e}", roof()?.dram_bytes), roof()?.dram_bytes),
        key => {
            let metric = Metric::ALL
                .into_iter()
                .find(|m| m.key() == key)
                .with_context(|| format!("no figure or metric `{key}`"))?;
            let value = v
                .metric(metric)
                .with_context(|| format!("no `{key}` recorded"))?;
            (metric.show(Some(value)), value)
        }
    })
}

fn value(perf: &PerfSummary, words: &[&str]) -> Result<String> {
    Ok(match words {
        ["ridge"] => format!(
            "{:.1} FLOP/B",
            perf.peak.fma_ncu_gflops / perf.peak.memcpy_gbps
        ),
        ["target"] => format!("{:.2}x", perf.target_speedup),
        ["gpu"] => perf.peak.device.clone(),
        ["bandwidth"] => format!("{:.0} GB/s", perf.peak.memcpy_gbps),
        ["fma-peak"] => format!("{:.1} TFLOP/s", perf.peak.fma_ncu_gflops / 1e3),
        ["pcie-both"] => format!(
            "{:.1} GB/s",
            perf.peak
                .pcie
                .as_ref()
                .context("no PCIe rates measured")?
                .both_pinned_gbps
        ),
        ["ratio", what, a, b] => {
            let (_, x) = figure(version(perf, a)?, what)?;
            let (_, y) = figure(version(perf, b)?, what)?;
            format!("{:.2}x", x / y)
        }
        [name, what] => figure(version(perf, name)?, what)?.0,
        _ => bail!(
            "expected `ID VERSION WHAT`, `ID ratio WHAT A B`, `ID ridge`, `ID target` or `ID gpu`"
        ),
    })
}
