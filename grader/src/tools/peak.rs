//! What this GPU can do, measured once and cached: device-to-device memcpy bandwidth, a copy
//! kernel's bandwidth, fp32 FMA throughput and host-device copies (`harness/peak.cu`), both plainly (CUDA events, the
//! GPU's own clocks) and under ncu with the flags every timing uses (base clocks). "% of peak" in the
//! performance track is always of these numbers, never of a datasheet.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tools::counters::Peaks;
use crate::tools::launcher::Launcher;
use crate::tools::ncu;
use crate::tools::nvcc::{self, Flavor, Inputs, Recipe, Reuse};
use crate::tools::runner::Job;

/// The kernels of `peak.cu` that ncu times.
const COPY_KERNEL: &str = "peak_copy";
const FMA_KERNEL: &str = "peak_fma";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    pub device: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    pub sms: u32,
    /// Device-to-device cudaMemcpy, bytes read plus written per second (GB/s), CUDA events: the
    /// practical DRAM ceiling and the 100% of `dram-share`.
    pub memcpy_gbps: f64,
    /// A float4 grid-stride copy kernel, CUDA events.
    pub copy_kernel_gbps: f64,
    /// fp32 FMA throughput (GFLOP/s, an FMA is two), CUDA events, at the GPU's own clocks.
    pub fma_gflops: f64,
    /// The copy kernel under ncu (base clocks, caches flushed): what the timed kernels run at.
    pub copy_kernel_ncu_gbps: f64,
    /// The FMA kernel under ncu: the 100% of `fp32-share` (ncu's base clocks lower it).
    pub fma_ncu_gflops: f64,
    /// Host-device copies over PCIe (None in a cache written before they were measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie: Option<Pcie>,
    /// When it was measured (RFC 3339).
    pub measured: String,
    pub commands: Vec<String>,
}

/// cudaMemcpy between host and device, 256 MiB, GB/s: from page-locked memory (cudaMallocHost) and
/// from pageable memory (malloc; the driver stages it through a pinned buffer of its own), and
/// both ways at once from pinned memory (two streams; the copy engines are full duplex).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pcie {
    pub h2d_pinned_gbps: f64,
    pub d2h_pinned_gbps: f64,
    pub h2d_pageable_gbps: f64,
    pub d2h_pageable_gbps: f64,
    /// Bytes moved both ways per second, copying both ways at once.
    pub both_pinned_gbps: f64,
}

impl Peak {
    pub fn peaks(&self) -> Peaks {
        Peaks {
            bandwidth_gbps: self.memcpy_gbps,
            fp32_gflops: self.fma_ncu_gflops,
        }
    }

    /// The roof at an arithmetic intensity (FLOP per DRAM byte), in GFLOP/s: the lower of the
    /// bandwidth slope and the FMA peak.
    pub fn roof_gflops(&self, intensity: f64) -> f64 {
        (intensity * self.memcpy_gbps).min(self.fma_ncu_gflops)
    }

    /// Where the two roofs meet (FLOP per byte).
    pub fn ridge(&self) -> f64 {
        self.fma_ncu_gflops / self.memcpy_gbps
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PeakError {
    #[error("cannot build harness/peak.cu: {0}")]
    Build(#[from] nvcc::BuildError),
    #[error("cannot start {0}")]
    Spawn(#[from] crate::tools::runner::SpawnError),
    #[error("the peak program failed ({exit}): {output}")]
    Failed { exit: String, output: String },
    #[error("the peak program printed no `{0}`: {1}")]
    Missing(&'static str, String),
    #[error("ncu could not time the peak kernels: {0}")]
    Ncu(String),
    #[error("ncu was not found: the peak is measured with it")]
    NoNcu,
}

/// The `key value` lines `peak.cu` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct Plain {
    pub device: String,
    pub sms: u32,
    pub copy_bytes: f64,
    pub fma_flops: f64,
    pub memcpy_gbps: f64,
    pub copy_kernel_gbps: f64,
    pub fma_gflops: f64,
    pub pcie: Option<Pcie>,
}

pub fn parse_plain(text: &str) -> Result<Plain, PeakError> {
    let get = |key: &'static str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(' ')))
            .map(str::trim)
            .ok_or_else(|| {
                PeakError::Missing(key, text.lines().take(3).collect::<Vec<_>>().join(" | "))
            })
    };
    let number = |key: &'static str| {
        get(key).and_then(|v| {
            v.parse::<f64>()
                .map_err(|_| PeakError::Missing(key, v.to_string()))
        })
    };
    Ok(Plain {
        device: get("device")?.to_string(),
        sms: number("sms")? as u32,
        copy_bytes: number("copy_bytes")?,
        fma_flops: number("fma_flops")?,
        memcpy_gbps: number("memcpy_gbps")?,
        copy_kernel_gbps: number("copy_kernel_gbps")?,
        fma_gflops: number("fma_gflops")?,
        pcie: (|| {
            Some(Pcie {
                h2d_pinned_gbps: number("h2d_pinned_gbps").ok()?,
                d2h_pinned_gbps: number("d2h_pinned_gbps").ok()?,
                h2d_pageable_gbps: number("h2d_pageable_gbps").ok()?,
                d2h_pageable_gbps: number("d2h_pageable_gbps").ok()?,
                both_pinned_gbps: number("both_pinned_gbps").ok()?,
            })
        })(),
    })
}

/// The median ncu time of each peak kernel's launches (ns).
fn median_ns(launches: &[ncu::Launch], kernel: &str) -> Option<f64> {
    let mut t: Vec<f64> = launches
        .iter()
        .filter(|l| l.kernel == kernel)
        .map(|l| l.nanoseconds)
        .collect();
    t.sort_by(f64::total_cmp);
    (!t.is_empty()).then(|| t[t.len() / 2])
}

/// Where the peak of a GPU is cached: one file per device name and driver.
pub fn cache_path(peak_dir: &Path, device: &str, driver: Option<&str>) -> PathBuf {
    let slug: String = format!("{device}-{}", driver.unwrap_or("driver"))
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    peak_dir.join(format!("{slug}.json"))
}

pub fn load(path: &Path) -> Option<Peak> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Everything a measurement needs.
pub struct Setup<'a> {
    pub launcher: &'a dyn Launcher,
    pub recipe: Recipe<'a>,
    pub ncu: Option<&'a Path>,
    /// Where the binary and its CSV live.
    pub dir: PathBuf,
    /// The grader's ncu lock folder (made by the caller): ncu's TMPDIR, and the turn's file.
    pub ncu_lock: PathBuf,
    pub driver: Option<String>,
    pub timeout: Duration,
}

/// Build and run `peak.cu` plainly, then under ncu.
pub fn measure(setup: &Setup) -> Result<Peak, PeakError> {
    let ncu_path = setup.ncu.ok_or(PeakError::NoNcu)?;
    let source = setup.recipe.harness.include_dir.join("peak.cu");
    let binary = setup.dir.join("peak");
    let built = nvcc::build(
        setup.launcher,
        &setup.recipe,
        Flavor::Timing,
        Inputs::Program {
            sources: std::slice::from_ref(&source),
            flags: &[],
        },
        &binary,
        Reuse::IfUnchanged,
        &|j| j,
    )?;
    // Keyed, so that a recording keeps them and a replay serves them like any tool run.
    let plain_job = Job::new(&built.binary, setup.timeout).key("peak/plain");
    let done = setup.launcher.launch(&plain_job)?;
    if !done.success() {
        return Err(PeakError::Failed {
            exit: done.describe_exit(),
            output: done.output(),
        });
    }
    let plain = parse_plain(&done.stdout.text())?;
    let target = ncu::ProfileTarget {
        name: "peak".into(),
        program: built.binary.clone(),
        // The kernels only: the host-device copies were measured plainly, and ncu times kernels.
        args: vec!["--kernels".into()],
        kernels: vec![COPY_KERNEL.into(), FMA_KERNEL.into()],
        counters: Vec::new(),
        every_kernel: false,
        repeat: 1,
    };
    let csv = setup.dir.join("peak.csv");
    let job = ncu::own_job(ncu_path, &target, (&csv, &setup.ncu_lock), setup.timeout)
        .key("peak/ncu")
        .output(&csv);
    let measured = {
        // No student's ncu job beside it on this GPU (they take the same turn).
        let _turn = ncu::turn(&setup.ncu_lock);
        ncu::measure(setup.launcher, &job, &target, &csv)
    }
    .map_err(|e| PeakError::Ncu(e.to_string()))?;
    let (copy_ns, fma_ns) = match (
        median_ns(&measured.launches, COPY_KERNEL),
        median_ns(&measured.launches, FMA_KERNEL),
    ) {
        (Some(c), Some(f)) => (c, f),
        _ => {
            return Err(PeakError::Ncu(
                measured
                    .tool_failure
                    .clone()
                    .unwrap_or_else(|| measured.why_untimed()),
            ))
        }
    };
    Ok(Peak {
        device: plain.device,
        driver: setup.driver.clone(),
        sms: plain.sms,
        memcpy_gbps: plain.memcpy_gbps,
        copy_kernel_gbps: plain.copy_kernel_gbps,
        fma_gflops: plain.fma_gflops,
        copy_kernel_ncu_gbps: plain.copy_bytes / copy_ns,
        fma_ncu_gflops: plain.fma_flops / fma_ns,
        pcie: plain.pcie,
        measured: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        commands: vec![plain_job.display(), measured.command],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // What peak.cu printed on an H100 80GB HBM3 (driver 580.159.04), 2026-11-22.
    const H100: &str = "device NVIDIA H100 80GB HBM3\nsms 132\ncopy_bytes 2147483648\nfma_flops 35433480192\nmemcpy_gbps 2993.3\ncopy_kernel_gbps 2808.7\nfma_gflops 63455.4\n";
    // The PCIe lines, as a probe of the same copies printed them on an H100 (2026-11-24).
    const PCIE: &str = "h2d_pinned_gbps 52.3\nd2h_pinned_gbps 53.2\nh2d_pageable_gbps 6.4\nd2h_pageable_gbps 10.5\nboth_pinned_gbps 79.0\n";

    #[test]
    fn parses_what_the_peak_program_printed() {
        let p = parse_plain(H100).unwrap();
        assert_eq!(
            (p.device.as_str(), p.sms, p.memcpy_gbps, p.fma_flops),
            ("NVIDIA H100 80GB HBM3", 132, 2993.3, 35_433_480_192.0)
        );
        let e = parse_plain("device X\nsms 1\n").unwrap_err();
        assert!(e.to_string().contains("copy_bytes"), "{e}");
        assert_eq!(
            p.pcie, None,
            "a peak program from before the copies were measured"
        );
        let with = parse_plain(&format!("{H100}{PCIE}")).unwrap().pcie.unwrap();
        assert_eq!(
            (
                with.h2d_pinned_gbps,
                with.h2d_pageable_gbps,
                with.both_pinned_gbps
            ),
            (52.3, 6.4, 79.0)
        );
    }

    #[test]
    fn the_roof_is_the_lower_of_bandwidth_and_compute() {
        let peak = Peak {
            device: "d".into(),
            driver: None,
            sms: 132,
            memcpy_gbps: 3000.0,
            copy_kernel_gbps: 2800.0,
            fma_gflops: 63_000.0,
            copy_kernel_ncu_gbps: 2850.0,
            fma_ncu_gflops: 51_000.0,
            pcie: None,
            measured: String::new(),
            commands: Vec::new(),
        };
        assert_eq!(peak.roof_gflops(0.25), 750.0);
        assert_eq!(peak.roof_gflops(100.0), 51_000.0);
        assert_eq!(peak.ridge(), 17.0);
        let path = cache_path(
            Path::new("/w/peak"),
            "NVIDIA H100 80GB HBM3",
            Some("580.159.04"),
        );
        assert_eq!(
            path,
            Path::new("/w/peak/nvidia-h100-80gb-hbm3-580.159.04.json")
        );
    }
}
