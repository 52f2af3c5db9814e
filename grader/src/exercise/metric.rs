//! The performance track's vocabulary: the few ncu metrics that explain a slow kernel, each computed
//! from raw counters collected in the same ncu pass as the time, with its unit, the direction that is
//! better, and one line in plain words. Shares of peak are of the peak measured on this GPU
//! (`peak.rs`), never of a datasheet.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Counters collected for every timed kernel of a performance exercise: what the roofline needs.
pub const ROOFLINE_COUNTERS: &[&str] = &[
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// How much of each 32-byte sector fetched for global loads the warp used (%).
    LoadEfficiency,
    /// 32-byte sectors per global load request.
    SectorsPerRequest,
    /// Extra shared-memory wavefronts per shared-memory instruction (bank conflicts).
    BankConflicts,
    /// Threads active per executed warp instruction (32: no divergence).
    ThreadsPerInstruction,
    /// Warps resident per active cycle, as a share of the SM's maximum (%).
    Occupancy,
    /// The share of the time the average SM had work (%).
    SmBusy,
    /// Atomic and reduction requests that go to global memory.
    GlobalAtomics,
    /// DRAM bytes per second as a share of the measured memcpy bandwidth (%).
    DramShare,
    /// Bytes read from and written to DRAM per run of the timed kernels.
    DramBytes,
    /// fp32 FLOP per second as a share of the measured FMA peak (%).
    Fp32Share,
    /// The share of the active cycles the tensor cores' MMA pipe was busy (%).
    TensorShare,
    /// The library kernel's time over this one's: 100% is as fast as cuBLAS.
    ShareOfBaseline,
    /// Registers each thread of the kernel holds (ptxas's allocation, as the launch reports it).
    Registers,
    /// Bytes of local memory (register spills, arrays indexed at run time) loaded and stored per run.
    LocalBytes,
    /// Kernel launches (and graph launches) per call, from the call's timeline.
    Launches,
    /// Times the host waited for the GPU in a call (device and stream syncs), from the timeline.
    Syncs,
    /// The share of the whole call during which a kernel ran on the GPU (%), from the timeline.
    KernelShare,
    /// Bytes copied between host and device per call, both ways, from the timeline.
    CopyBytes,
    /// The share of the copies' time during which a kernel ran too (%), from the timeline.
    CopyOverlap,
}

/// The keys under which a version's timeline figures join its counters (`Counters::raw`).
pub mod timeline_keys {
    pub const LAUNCHES: &str = "timeline:launches";
    pub const SYNCS: &str = "timeline:syncs";
    pub const CALL_NS: &str = "timeline:call-ns";
    pub const KERNEL_NS: &str = "timeline:kernel-ns";
    pub const COPY_BYTES: &str = "timeline:copy-bytes";
    pub const COPY_NS: &str = "timeline:copy-ns";
    pub const OVERLAP_NS: &str = "timeline:overlap-ns";
}

/// What a metric's value is computed from, per timed run of the bench.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// The time of the timed kernels per repeat of the bench (the median repeat), ns.
    pub nanoseconds: f64,
    /// Raw counters per repeat: `.sum` counters added over the launches of one repeat, the others
    /// (ratios, percentages, averages) weighted by each launch's time.
    pub raw: BTreeMap<String, f64>,
}

/// The peak numbers a share is taken of.
#[derive(Debug, Clone, Copy)]
pub struct Peaks {
    pub bandwidth_gbps: f64,
    pub fp32_gflops: f64,
}

impl Metric {
    pub const ALL: [Metric; 19] = [
        Metric::LoadEfficiency,
        Metric::SectorsPerRequest,
        Metric::BankConflicts,
        Metric::ThreadsPerInstruction,
        Metric::Occupancy,
        Metric::SmBusy,
        Metric::GlobalAtomics,
        Metric::DramShare,
        Metric::DramBytes,
        Metric::Fp32Share,
        Metric::TensorShare,
        Metric::ShareOfBaseline,
        Metric::Registers,
        Metric::LocalBytes,
        Metric::Launches,
        Metric::Syncs,
        Metric::KernelShare,
        Metric::CopyBytes,
        Metric::CopyOverlap,
    ];

    /// Read from the recorded call of a call timing (`clock = "call"` exercises): CUPTI's records
    /// of it, or the harness's timeline (`judge::recorded_call`), not from ncu.
    pub fn from_timeline(self) -> bool {
        matches!(
            self,
            Metric::Launches
                | Metric::Syncs
                | Metric::KernelShare
                | Metric::CopyBytes
                | Metric::CopyOverlap
        )
    }

    pub fn key(self) -> &'static str {
        match self {
            Metric::LoadEfficiency => "load-efficiency",
            Metric::SectorsPerRequest => "sectors-per-request",
            Metric::BankConflicts => "bank-conflicts",
            Metric::ThreadsPerInstruction => "threads-per-instruction",
            Metric::Occupancy => "occupancy",
            Metric::SmBusy => "sm-busy",
            Metric::GlobalAtomics => "global-atomics",
            Metric::DramShare => "dram-share",
            Metric::DramBytes => "dram-bytes",
            Metric::Fp32Share => "fp32-share",
            Metric::TensorShare => "tensor-share",
            Metric::ShareOfBaseline => "share-of-baseline",
            Metric::Registers => "registers",
            Metric::LocalBytes => "local-bytes",
            Metric::Launches => "launches",
            Metric::Syncs => "syncs",
            Metric::KernelShare => "kernel-share",
            Metric::CopyBytes => "copy-bytes",
            Metric::CopyOverlap => "copy-overlap",
        }
    }

    /// A short heading.
    pub fn label(self) -> &'static str {
        match self {
            Metric::LoadEfficiency => "global load efficiency",
            Metric::SectorsPerRequest => "sectors per load request",
            Metric::BankConflicts => "bank conflicts per shared access",
            Metric::ThreadsPerInstruction => "threads per warp instruction",
            Metric::Occupancy => "achieved occupancy",
            Metric::SmBusy => "SMs busy",
            Metric::GlobalAtomics => "global atomic requests",
            Metric::DramShare => "DRAM bandwidth, % of measured peak",
            Metric::DramBytes => "bytes to and from DRAM",
            Metric::Fp32Share => "fp32 throughput, % of measured peak",
            Metric::TensorShare => "tensor cores busy",
            Metric::ShareOfBaseline => "speed, % of cuBLAS",
            Metric::Registers => "registers per thread",
            Metric::LocalBytes => "local-memory bytes (spills)",
            Metric::Launches => "launches per call",
            Metric::Syncs => "host waits per call",
            Metric::KernelShare => "kernels' share of the call",
            Metric::CopyBytes => "bytes copied per call",
            Metric::CopyOverlap => "copy time overlapped by kernels",
        }
    }

    pub fn is_percent(self) -> bool {
        matches!(
            self,
            Metric::LoadEfficiency
                | Metric::Occupancy
                | Metric::SmBusy
                | Metric::DramShare
                | Metric::Fp32Share
                | Metric::TensorShare
                | Metric::ShareOfBaseline
                | Metric::KernelShare
                | Metric::CopyOverlap
        )
    }

    /// The metric in plain words: what it counts and what good looks like.
    pub fn plain(self) -> &'static str {
        match self {
            Metric::LoadEfficiency => "of every 32-byte sector a warp's loads fetch, the share its threads asked for: 100% when the 32 lanes read neighbouring words, 12.5% when each lane's 4 bytes sit in a sector of their own",
            Metric::SectorsPerRequest => "32-byte sectors one warp-wide load touches: 4 when 32 lanes read 32 neighbouring floats, 16 for float4 loads, 32 when every lane reads a different line",
            Metric::BankConflicts => "extra passes shared memory needs per shared-memory instruction (loads and stores together) because lanes hit the same bank: 0 is conflict-free; a load whose 32 lanes share one bank costs 31",
            Metric::ThreadsPerInstruction => "how many of a warp's 32 threads take part in each instruction it executes: 32 when the warp never diverges, 16 when it runs both sides of a branch with half its lanes each",
            Metric::Occupancy => "warps resident on an SM while it works, as a share of the most it can hold: more warps hide more memory latency",
            Metric::SmBusy => "the share of the kernel's time the average SM had any work: a grid smaller than the GPU leaves SMs idle",
            Metric::GlobalAtomics => "atomic requests that travel to global memory (L2): every one to a busy address waits its turn",
            Metric::DramBytes => "bytes the kernels read from and wrote to DRAM in one run: a pass over the data costs its size each time, and what a kernel keeps on chip (registers, shared memory, L1, L2) it never pays again",
            Metric::DramShare => "bytes moved to and from DRAM per second, as a share of this GPU's measured device-to-device copy bandwidth: near 100% a memory-bound kernel is done",
            Metric::Fp32Share => "single-precision FLOP per second (an FMA counts two), as a share of this GPU's measured FMA peak at ncu's clocks",
            Metric::TensorShare => "of the cycles the SMs were active, the share during which the tensor cores' matrix-multiply pipe (HMMA: wmma and mma.sync) was busy: 0% for a kernel of plain fp32 FMAs, however fast",
            Metric::ShareOfBaseline => "cuBLAS's time over this kernel's, both timed in this run: 100% is as fast as the library",
            Metric::Registers => "registers ptxas gave each thread (`nvcc -Xptxas -v` prints it too): more registers per thread leave room for fewer warps on an SM, and too few make the compiler spill values to local memory",
            Metric::LocalBytes => "bytes loaded from and stored to local memory per run: per-thread memory that lives in DRAM behind the L1, where spilled registers and arrays indexed at run time go; 0 when everything stays in registers",
            Metric::Launches => "kernels (and CUDA graphs) launched in one call of the entry point, counted by the harness: each launch costs the host microseconds, and a sync after it a round trip to the GPU",
            Metric::Syncs => "times the host stopped to wait for the GPU in one call (cudaDeviceSynchronize, cudaStreamSynchronize): each is a round trip, GPU idle while the sleeping host thread wakes and queues the next work",
            Metric::KernelShare => "of the whole call's wall time, the share during which some kernel ran on the GPU: the rest is copies, launches, syncs and host work that ncu's kernel time never shows",
            Metric::CopyBytes => "bytes copied between host and device in one call, both ways: what PCIe must carry, at this GPU's measured copy bandwidth",
            Metric::CopyOverlap => "of the time copies ran, the share during which a kernel ran as well: 0% when copy, compute and copy back take turns; near 100% when the copy engines and the SMs work at once",
        }
    }

    /// Whether a larger value is better.
    pub fn higher_is_better(self) -> bool {
        !matches!(
            self,
            Metric::SectorsPerRequest
                | Metric::BankConflicts
                | Metric::GlobalAtomics
                | Metric::Registers
                | Metric::LocalBytes
                | Metric::Launches
                | Metric::Syncs
                | Metric::CopyBytes
                | Metric::DramBytes
        )
    }

    pub fn needs_baseline(self) -> bool {
        self == Metric::ShareOfBaseline
    }

    /// The raw ncu counters this metric is computed from.
    pub fn counters(self) -> &'static [&'static str] {
        match self {
            Metric::LoadEfficiency => {
                &["smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"]
            }
            Metric::SectorsPerRequest => &[
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
            ],
            Metric::BankConflicts => &[
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
                "smsp__sass_inst_executed_op_shared_ld.sum",
                "smsp__sass_inst_executed_op_shared_st.sum",
            ],
            Metric::ThreadsPerInstruction => {
                &["smsp__thread_inst_executed.sum", "smsp__inst_executed.sum"]
            }
            Metric::Occupancy => &["sm__warps_active.avg.pct_of_peak_sustained_active"],
            Metric::TensorShare => {
                &["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"]
            }
            Metric::SmBusy => &["sm__cycles_active.avg", "sm__cycles_elapsed.avg"],
            Metric::GlobalAtomics => &[
                "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
                "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
            ],
            Metric::Registers => &["launch__registers_per_thread"],
            Metric::LocalBytes => &[
                "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
                "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
            ],
            Metric::DramShare
            | Metric::DramBytes
            | Metric::Fp32Share
            | Metric::ShareOfBaseline
            | Metric::Launches
            | Metric::Syncs
            | Metric::KernelShare
            | Metric::CopyBytes
            | Metric::CopyOverlap => &[],
        }
    }

    /// The value from one version's counters; None where a counter is missing or the ratio has no
    /// denominator (a kernel with no shared-memory access has no bank-conflict rate).
    pub fn value(self, c: &Counters, peaks: Peaks, baseline_ns: Option<f64>) -> Option<f64> {
        let raw = |name: &str| c.raw.get(name).copied();
        let ratio = |a: f64, b: f64| (b > 0.0).then(|| a / b);
        match self {
            Metric::LoadEfficiency
            | Metric::Occupancy
            | Metric::Registers
            | Metric::TensorShare => raw(self.counters()[0]),
            Metric::LocalBytes => Some(raw(self.counters()[0])? + raw(self.counters()[1])?),
            Metric::SectorsPerRequest => ratio(raw(self.counters()[0])?, raw(self.counters()[1])?),
            Metric::BankConflicts => {
                let n = self.counters();
                ratio(raw(n[0])? + raw(n[1])?, raw(n[2])? + raw(n[3])?)
            }
            Metric::ThreadsPerInstruction => {
                ratio(raw(self.counters()[0])?, raw(self.counters()[1])?)
            }
            Metric::SmBusy => {
                ratio(raw(self.counters()[0])?, raw(self.counters()[1])?).map(|r| 100.0 * r)
            }
            Metric::GlobalAtomics => Some(raw(self.counters()[0])? + raw(self.counters()[1])?),
            Metric::DramShare => {
                ratio(dram_bytes(c)?, c.nanoseconds).map(|gbps| 100.0 * gbps / peaks.bandwidth_gbps)
            }
            Metric::DramBytes => dram_bytes(c),
            Metric::Fp32Share => {
                ratio(flops(c)?, c.nanoseconds).map(|gflops| 100.0 * gflops / peaks.fp32_gflops)
            }
            Metric::ShareOfBaseline => ratio(baseline_ns?, c.nanoseconds).map(|r| 100.0 * r),
            Metric::Launches => raw(timeline_keys::LAUNCHES),
            Metric::Syncs => raw(timeline_keys::SYNCS),
            Metric::CopyBytes => raw(timeline_keys::COPY_BYTES),
            Metric::KernelShare => {
                ratio(raw(timeline_keys::KERNEL_NS)?, raw(timeline_keys::CALL_NS)?)
                    .map(|r| 100.0 * r)
            }
            Metric::CopyOverlap => ratio(
                raw(timeline_keys::OVERLAP_NS)?,
                raw(timeline_keys::COPY_NS)?,
            )
            .map(|r| 100.0 * r),
        }
    }

    /// The value in words with its unit: "87.5%", "31.6", "2.1 M".
    pub fn show(self, value: Option<f64>) -> String {
        match value {
            None => "n/a".into(),
            Some(v) if self.is_percent() => format!("{v:.1}%"),
            Some(v) if v >= 1e6 => format!("{:.2} M", v / 1e6),
            Some(v) if v >= 1e4 => format!("{:.1} k", v / 1e3),
            Some(v)
                if matches!(
                    self,
                    Metric::GlobalAtomics
                        | Metric::Registers
                        | Metric::LocalBytes
                        | Metric::Launches
                        | Metric::Syncs
                        | Metric::CopyBytes
                        | Metric::DramBytes
                ) =>
            {
                format!("{v:.0}")
            }
            Some(v) => format!("{v:.2}"),
        }
    }
}

/// Bytes read from and written to DRAM per repeat.
pub fn dram_bytes(c: &Counters) -> Option<f64> {
    Some(c.raw.get("dram__bytes_read.sum")? + c.raw.get("dram__bytes_write.sum")?)
}

/// Single-precision floating-point operations per repeat (an FMA is two).
pub fn flops(c: &Counters) -> Option<f64> {
    let get = |op: &str| {
        c.raw
            .get(&format!(
                "smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"
            ))
            .copied()
    };
    Some(2.0 * get("ffma")? + get("fadd")? + get("fmul")?)
}

/// Every raw counter the given metrics need, and the roofline's where asked (where the clock is the
/// kernel), without repeats. Where the clock is the whole call, the kernels' place on the roofline
/// judges nothing and no lesson draws it, and its counters cost most: the FLOP counts patch the
/// SASS, one more pass of every launch (62-launches' original, 96 launches a call: 12.7 s under
/// ncu with them, 4.3 s with the time and DRAM bytes alone, on an H200;
/// scripts/gpu-ncu-passes.sh).
pub fn needed(metrics: &[Metric], roofline: bool) -> Vec<String> {
    let roofline = if roofline { ROOFLINE_COUNTERS } else { &[] };
    let mut all: Vec<String> = Vec::new();
    for name in metrics
        .iter()
        .flat_map(|m| m.counters().iter())
        .chain(roofline)
    {
        if !all.iter().any(|n| n == name) {
            all.push(name.to_string());
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_computed_from_their_counters_and_the_measured_peak() {
        // The counters of 52-bank-conflicts' original on an H100 (ncu 2025.3.1): 32-way conflicts.
        let c = Counters {
            nanoseconds: 382_000.0,
            raw: [
                (
                    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                    6.64e7,
                ),
                (
                    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
                    4.57e4,
                ),
                ("smsp__sass_inst_executed_op_shared_ld.sum", 2.1e6),
                ("smsp__sass_inst_executed_op_shared_st.sum", 2.1e6),
                ("dram__bytes_read.sum", 2.68e8),
                ("dram__bytes_write.sum", 2.52e8),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        };
        let peaks = Peaks {
            bandwidth_gbps: 2993.3,
            fp32_gflops: 51_300.0,
        };
        let conflicts = Metric::BankConflicts.value(&c, peaks, None).unwrap();
        assert!(
            (conflicts - (6.64e7 + 4.57e4) / 4.2e6).abs() < 1e-9,
            "{conflicts}"
        );
        assert_eq!(Metric::DramBytes.value(&c, peaks, None), Some(5.2e8));
        assert_eq!(Metric::DramBytes.show(Some(5.2e8)), "520.00 M");
        let share = Metric::DramShare.value(&c, peaks, None).unwrap();
        assert!(
            (share - 100.0 * (5.2e8 / 382_000.0) / 2993.3).abs() < 1e-9,
            "{share}"
        );
        assert_eq!(
            Metric::Fp32Share.value(&c, peaks, None),
            None,
            "no FLOP counters collected"
        );
        assert_eq!(
            Metric::ShareOfBaseline.value(&c, peaks, Some(191_000.0)),
            Some(50.0)
        );
        assert_eq!(Metric::ThreadsPerInstruction.value(&c, peaks, None), None);
        let spills = Counters {
            nanoseconds: 1.0,
            raw: [
                ("launch__registers_per_thread", 32.0),
                ("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", 3.0e6),
                ("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", 1.0e6),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        };
        assert_eq!(
            (
                Metric::Registers.value(&spills, peaks, None),
                Metric::LocalBytes.value(&spills, peaks, None)
            ),
            (Some(32.0), Some(4.0e6))
        );
        assert_eq!(Metric::LocalBytes.show(Some(4.0e6)), "4.00 M");
        assert_eq!(Metric::Registers.show(Some(32.0)), "32");
    }

    #[test]
    fn every_metric_has_words_and_the_counters_are_listed_once() {
        for m in Metric::ALL {
            assert!(m.plain().len() > 40 && !m.label().is_empty(), "{m:?}");
        }
        let all = needed(&Metric::ALL, true);
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len());
        let flops = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
        assert!(
            all.iter().any(|n| n == flops),
            "the roofline's counters are there where the kernel is the clock"
        );
        let by_call = needed(&[Metric::DramShare, Metric::CopyOverlap], false);
        assert!(
            !by_call.iter().any(|n| n == flops)
                && Metric::DramShare
                    .counters()
                    .iter()
                    .all(|c| by_call.iter().any(|n| n == c)),
            "where the call is the clock, what its metrics need and no more: {by_call:?}"
        );
    }
}
