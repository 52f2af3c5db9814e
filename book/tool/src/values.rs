//! Numbers in a lesson's prose, filled from the record: `{{#cudabugs-value ...}}` anywhere in a
//! line is replaced by the figure, formatted as the lesson's record table formats it, so that the
//! text and the table cannot disagree after the next GPU run. Forms (`[FILE:]ID`: an exercise of
//! the book's record, or of `book/FILE`, another GPU's):
//! - `[FILE:]ID VERSION WHAT`: one version's (`original`, `reference`, `cublas`) `time`, `speedup`,
//!   `kernel-time` (ncu's time of the kernels of a call-clocked exercise), `timeline-call` (the
//!   call the timeline recorded), `timeline-KIND` (how long that call had an operation of a kind
//!   on the GPU, by the call's own clock: `timeline-h2d`, `timeline-kernel`, `timeline-d2h`,
//!   `timeline-memset`, ...; operations that overlap count once), `intensity`, `roof-share`,
//!   `flops`, `dram-bytes`, or a metric by its manifest key (`kernel-share`, `load-efficiency`,
//!   ...);
//! - `[FILE:]ID ratio WHAT A B`: version A's WHAT over version B's, as `1.12x`;
//! - `[FILE:]ID ridge`: the ridge of the GPU's roofline, FLOP/B; `[FILE:]ID target`: the speedup
//!   a learner's version needs; `[FILE:]ID gpu`: the GPU's name; `[FILE:]ID pcie-both`: the
//!   measured rate of pinned copies both ways at once; `[FILE:]ID bandwidth` and `fma-peak`: the
//!   roofline's two roofs.
//!
//! `copy-rate` (a version's bytes copied per call over its call's time) is a figure too.
//! `[FILE:]ID pcie KIND` is a measured PCIe rate (`h2d-pinned`, `d2h-pinned`, `h2d-pageable`,
//! `d2h-pageable`; `both`: one direction's share while both run), and `[FILE:]ID copy-time KIND`
//! how long half the original's copied bytes (one direction's) take at that rate.
//!
//! Where FILE is one `check --format json` report (a bug-track version's), the forms are
//! `FILE:ID timing learner|reference|ratio|limit` (ID is the exercise's, for the reader).
//!
//! Where FILE is a record of other fixes (`book/fixes-*.json`, see `fixes.rs`), the id is a
//! version of `scripts/alt-fixes/` and the forms are `FILE:VERSION verdict` ("pass", or "fail"
//! and what failed), `FILE:VERSION gpu`, `FILE:VERSION report` (where its report is),
//! `FILE:VERSION WHAT` (that version's figure) and the forms above, in which its own run's
//! versions are `original`, `reference` and `learner`.

use anyhow::{bail, Context as _, Result};
use grader::exercise::metric::Metric;
use grader::judge::perf::{PerfSummary, VersionPerf};
use grader::plans::verify::VerificationRecord;

use crate::fixes::FixRecord;

/// A record a value may come from: a verification record, a record of other fixes, or one
/// `check --format json` report.
// One per record file, read once and held in an `Rc`: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Source {
    Verified(VerificationRecord),
    Fixes(FixRecord),
    Check(serde_json::Value),
}

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
    record_of: &mut dyn FnMut(Option<&str>) -> Result<std::rc::Rc<Source>>,
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
            match &*record_of(file)? {
                Source::Verified(record) => {
                    let perf = record
                        .exercises
                        .iter()
                        .find(|e| e.id == id)
                        .with_context(|| format!("the record has no {id}"))?
                        .perf
                        .as_ref()
                        .with_context(|| format!("{id} has no performance record"))?;
                    value(perf, &words[1..])
                }
                Source::Check(report) => check_value(report, &words[1..]),
                Source::Fixes(record) => {
                    let fix = record.fix(id)?;
                    match &words[1..] {
                        ["verdict"] => fix.verdict(),
                        ["gpu"] => Ok(record.gpu.clone()),
                        ["report"] => Ok(format!("`{}`", fix.report)),
                        // One word is the version's own figure; longer forms are `value`'s.
                        [what] => value(fix.perf()?, &["learner", what]),
                        rest => value(fix.perf()?, rest),
                    }
                }
            }
        })()
        // One message: the book's problem list shows each error's first line.
        .map_err(|e| anyhow::anyhow!("`{OPEN}{}}}}}`: {e:#}", &after[..end]))?;
        out.push_str(&value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A bug-track check report's timing: `timing learner` and `timing reference` (the kernels' times
/// under ncu), `timing ratio` (the learner's over the reference's) and `timing limit` (the most the
/// check allows).
fn check_value(report: &serde_json::Value, words: &[&str]) -> Result<String> {
    let timing = &report["timing"];
    let number = |key: &str| {
        timing[key]
            .as_f64()
            .with_context(|| format!("the report has no timing `{key}`"))
    };
    Ok(match words {
        ["timing", "learner"] => time(number("learner_ns")?),
        ["timing", "reference"] => time(number("reference_ns")?),
        ["timing", "ratio"] => format!("{:.2}x", number("ratio_to_reference")?),
        ["timing", "limit"] => format!("{:.1}x", number("max_ratio_to_reference")?),
        _ => {
            bail!("expected `timing learner`, `timing reference`, `timing ratio` or `timing limit`")
        }
    })
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
        kind if kind.starts_with("timeline-") => {
            let ns = timeline_ns(v, &kind["timeline-".len()..])?;
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

/// How long the recorded call had an operation of `kind` (`h2d`, `kernel`, ...) on the GPU: the
/// union of their GPU intervals, so that operations running at once count once.
fn timeline_ns(v: &VersionPerf, kind: &str) -> Result<f64> {
    let call = v
        .timeline
        .as_ref()
        .context("no recorded call (not call-clocked)")?;
    let mut spans: Vec<(f64, f64)> = call
        .ops
        .iter()
        .filter(|op| op.kind.key() == kind)
        .filter_map(|op| op.gpu)
        .collect();
    if spans.is_empty() {
        bail!("the recorded call has no `{kind}` on the GPU");
    }
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut ns, mut end) = (0.0, f64::MIN);
    for (a, b) in spans {
        let a = a.max(end);
        if b > a {
            ns += b - a;
        }
        end = end.max(b);
    }
    Ok(ns)
}

/// A measured PCIe rate in GB/s: `h2d-pinned`, `d2h-pinned`, `h2d-pageable`, `d2h-pageable`, or
/// `both` (each direction's share of the pinned rate both ways at once).
fn pcie_rate(perf: &PerfSummary, kind: &str) -> Result<f64> {
    let p = perf.peak.pcie.as_ref().context("no PCIe rates measured")?;
    Ok(match kind {
        "h2d-pinned" => p.h2d_pinned_gbps,
        "d2h-pinned" => p.d2h_pinned_gbps,
        "h2d-pageable" => p.h2d_pageable_gbps,
        "d2h-pageable" => p.d2h_pageable_gbps,
        "both" => p.both_pinned_gbps / 2.0,
        _ => bail!(
            "no PCIe rate `{kind}` (h2d-pinned, d2h-pinned, h2d-pageable, d2h-pageable, both)"
        ),
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
        ["pcie", kind] => format!("{:.1} GB/s", pcie_rate(perf, kind)?),
        // One direction's half of the original's copied bytes at a measured rate: how long the
        // copy in (or out) takes alone; with `both`, while the other direction runs too.
        ["copy-time", kind] => {
            let bytes = version(perf, "original")?
                .metric(Metric::CopyBytes)
                .context("no `copy-bytes` recorded")?;
            time(bytes / 2.0 / pcie_rate(perf, kind)?)
        }
        ["ratio", what, a, b] => {
            let (_, x) = figure(version(perf, a)?, what)?;
            let (_, y) = figure(version(perf, b)?, what)?;
            format!("{:.2}x", x / y)
        }
        [name, what] => figure(version(perf, name)?, what)?.0,
        _ => bail!(
            "expected `ID VERSION WHAT`, `ID ratio WHAT A B`, `ID pcie KIND`, `ID copy-time KIND`, \
             `ID ridge`, `ID target` or `ID gpu`"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind's time on the recorded call counts operations that overlap once: two copies in at
    /// once, 0-4 µs and 2-6 µs, are 6 µs of copying, and a kernel the call did not run is an error.
    #[test]
    fn a_timeline_figure_is_the_union_of_its_operations() {
        let v: VersionPerf = serde_json::from_value(serde_json::json!({
            "version": "reference", "nanoseconds": 10.0, "speedup": 1.0, "metrics": [],
            "timeline": { "index": 0, "wall_ns": 10.0, "ops": [
                { "kind": "h2d", "stream": 1, "host": [0.0, 1.0], "gpu": [0.0, 4e3] },
                { "kind": "h2d", "stream": 2, "host": [1.0, 2.0], "gpu": [2e3, 6e3] },
                { "kind": "d2h", "stream": 1, "host": [2.0, 3.0], "gpu": [7e3, 9e3] },
                { "kind": "alloc", "stream": 0, "host": [0.0, 1.0] }
            ] }
        }))
        .unwrap();
        assert_eq!(timeline_ns(&v, "h2d").unwrap(), 6e3);
        assert_eq!(figure(&v, "timeline-d2h").unwrap().0, "2.0 µs");
        assert!(timeline_ns(&v, "kernel").is_err());
        assert!(timeline_ns(&v, "alloc").is_err(), "the host's alone");
    }
}
