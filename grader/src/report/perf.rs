//! A performance exercise's timing (`perf_text`) and what this GPU measured (`peak_text`).

use std::fmt::Write as _;

use crate::exercise::manifest::Clock;
use crate::judge::perf::{PerfSummary, VersionPerf};

/// A performance exercise's versions side by side: time, speedup, the exercise's metrics, the place
/// on this GPU's roofline, and what each metric means.
pub fn perf_text(p: &PerfSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n  {}, on {}:", clock_text(p), p.peak.device);
    let names = version_names(p);
    versions_table(&mut out, p, &names);
    roofline_text(&mut out, p, &names);
    let _ = writeln!(out, "\n  What the metrics count:");
    for &m in &p.shown {
        let _ = writeln!(out, "    {}: {}.", m.label(), m.plain());
    }
    out
}

/// What the times are measured with.
fn clock_text(p: &PerfSummary) -> String {
    match p.clock {
        Clock::Kernel => format!(
            "ncu over {} (base clocks, caches flushed; the median of the bench's repeats)",
            p.kernels.join(", ")
        ),
        Clock::Call => {
            format!("the whole call of cb_run (the harness's clock, the fastest call after the first, alone on the GPU), with ncu's time of {} beside it", p.kernels.join(", "))
        }
    }
}

/// The versions' names as the learner reads them: theirs is "yours".
fn version_names(p: &PerfSummary) -> Vec<&str> {
    p.versions
        .iter()
        .map(|v| {
            if v.version == "learner" {
                "yours"
            } else {
                v.version.as_str()
            }
        })
        .collect()
}

/// A row per measure, a column per version.
fn versions_table(out: &mut String, p: &PerfSummary, names: &[&str]) {
    let label_w = p
        .shown
        .iter()
        .map(|m| m.label().len())
        .max()
        .unwrap_or(0)
        .max(20);
    let row = |out: &mut String, label: &str, cells: Vec<String>| {
        let _ = writeln!(
            out,
            "    {label:<label_w$} {}",
            cells.iter().map(|c| format!("{c:>12}")).collect::<String>()
        );
    };
    row(out, "", names.iter().map(|n| n.to_string()).collect());
    row(
        out,
        "time",
        per_version(p, |v| format!("{:.1} us", v.nanoseconds / 1e3)),
    );
    if p.versions.iter().any(|v| v.kernel_ns.is_some()) {
        row(
            out,
            "kernels (ncu)",
            per_version(p, |v| {
                v.kernel_ns
                    .map_or("-".into(), |k| format!("{:.1} us", k / 1e3))
            }),
        );
    }
    row(
        out,
        &format!("speedup (target {:.2}x)", p.target_speedup),
        per_version(p, |v| format!("{:.2}x", v.speedup)),
    );
    for &m in &p.shown {
        row(
            out,
            m.label(),
            per_version(p, |v| {
                if v.metrics.is_empty() {
                    "-".into()
                } else {
                    m.show(v.metric(m))
                }
            }),
        );
    }
}

/// A cell per version.
fn per_version(p: &PerfSummary, cell: impl Fn(&VersionPerf) -> String) -> Vec<String> {
    p.versions.iter().map(cell).collect()
}

/// Where each version stands on this GPU's roofline.
fn roofline_text(out: &mut String, p: &PerfSummary, names: &[&str]) {
    let peak = &p.peak;
    let _ = writeln!(
        out,
        "\n  Roofline of this GPU (measured: memcpy {:.0} GB/s, fp32 FMA {:.1} TFLOP/s at ncu's clocks; ridge at {:.1} FLOP/byte):",
        peak.memcpy_gbps,
        peak.fma_ncu_gflops / 1e3,
        peak.ridge()
    );
    for (v, name) in p.versions.iter().zip(names) {
        if let Some(r) = &v.roofline {
            let bound = if r.intensity < peak.ridge() {
                "memory-bound side"
            } else {
                "compute-bound side"
            };
            let _ = writeln!(out, "    {name:<10} {:>8.3} FLOP/byte {:>10.1} GFLOP/s = {:>5.1}% of the roof ({bound})", r.intensity, r.gflops, 100.0 * r.gflops / r.roof_gflops);
        }
    }
}

/// `peak`: what this GPU measured.
pub fn peak_text(p: &crate::tools::peak::Peak) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({} SMs; driver {}), measured {}",
        p.device,
        p.sms,
        p.driver.as_deref().unwrap_or("?"),
        p.measured
    );
    let _ = writeln!(
        out,
        "  memory bandwidth, read + write (CUDA events, the GPU's own clocks):"
    );
    let _ = writeln!(
        out,
        "    cudaMemcpy device to device  {:>8.1} GB/s   <- 100% of `dram-share`",
        p.memcpy_gbps
    );
    let _ = writeln!(
        out,
        "    float4 copy kernel           {:>8.1} GB/s   ({:.1}% of memcpy)",
        p.copy_kernel_gbps,
        100.0 * p.copy_kernel_gbps / p.memcpy_gbps
    );
    let _ = writeln!(
        out,
        "    the copy kernel under ncu    {:>8.1} GB/s   (base clocks, as every timing)",
        p.copy_kernel_ncu_gbps
    );
    let _ = writeln!(out, "  fp32 FMA throughput:");
    let _ = writeln!(
        out,
        "    CUDA events                  {:>8.1} TFLOP/s",
        p.fma_gflops / 1e3
    );
    let _ = writeln!(out, "    under ncu                    {:>8.1} TFLOP/s <- 100% of `fp32-share` (ncu times at base clocks)", p.fma_ncu_gflops / 1e3);
    let _ = writeln!(out, "  ridge point: {:.1} FLOP per DRAM byte", p.ridge());
    if let Some(c) = &p.pcie {
        let _ = writeln!(out, "  host-device copies, 256 MiB (cudaMemcpy):");
        let _ = writeln!(
            out,
            "    pinned   host to device      {:>8.1} GB/s   device to host {:>6.1} GB/s",
            c.h2d_pinned_gbps, c.d2h_pinned_gbps
        );
        let _ = writeln!(
            out,
            "    pageable host to device      {:>8.1} GB/s   device to host {:>6.1} GB/s",
            c.h2d_pageable_gbps, c.d2h_pageable_gbps
        );
        let _ = writeln!(
            out,
            "    pinned, both ways at once    {:>8.1} GB/s   (the two directions together)",
            c.both_pinned_gbps
        );
    }
    out
}
